/// Writes a message into a host-owned `err` buffer: truncated to fit on a UTF-8 character
/// boundary and always NUL-terminated (when there is room for anything at all).
enum ErrorText {
    static func write(_ message: String, to buffer: UnsafeMutablePointer<CChar>?, capacity: Int) {
        guard let buffer, capacity > 0 else { return }
        let utf8 = message.utf8
        var count = min(utf8.count, capacity - 1)
        if count < utf8.count {
            // Back off to the start of a character: continuation bytes are 0b10xxxxxx.
            let bytes = Array(utf8.prefix(count + 1))
            while count > 0 && bytes[count] & 0xC0 == 0x80 { count -= 1 }
        }
        var written = 0
        for byte in utf8.prefix(count) {
            buffer[written] = CChar(bitPattern: byte)
            written += 1
        }
        buffer[written] = 0
    }

    /// The text a thrown error leaves for the host.
    static func describe(_ error: any Error) -> String {
        if let known = error as? IntegrationError { return known.message }
        let text = String(describing: error)
        return text.isEmpty ? String(reflecting: type(of: error)) : text
    }
}
