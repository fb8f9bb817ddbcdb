/// Text that comes from a library (keys, versions, error messages, log lines) printed so that it
/// cannot forge output lines or drive the terminal: control characters (C0, DEL, C1) are written
/// as escapes (`\n`, `\r`, `\t`, `\x1b`, `\u{85}`), everything else as is.
enum TerminalText {
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            case _ where isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
