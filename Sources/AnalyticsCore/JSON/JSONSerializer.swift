/// Compact JSON output, appended to a byte buffer so that hot paths (upload batches, the C ABI)
/// can reuse one allocation for many values.
extension JSON {
    public func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        JSONWriter.write(self, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        JSONWriter.write(self, to: &out)
        return out
    }

    public func write(to out: inout [UInt8]) { JSONWriter.write(self, to: &out) }
}

extension JSONObject {
    public func serialized() -> String { JSON.object(self).serialized() }
    public func serializedBytes() -> [UInt8] { JSON.object(self).serializedBytes() }
}

enum JSONWriter {
    static func write(_ value: JSON, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b):
            if b { out.append(contentsOf: [0x74, 0x72, 0x75, 0x65]) } else { out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65]) }
        case .number(let n): writeNumber(n, to: &out)
        case .string(let s): writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            var first = true
            for item in a {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                write(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            writeObject(o, to: &out)
        }
    }

    static func writeObject(_ o: JSONObject, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for m in o.storage {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(m.key, to: &out)
            out.append(UInt8(ascii: ":"))
            write(m.value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Integers print without a fraction ("42", not "42.0"); other values use Swift's shortest
    /// round-tripping form. NaN and infinities have no JSON spelling and print as null (calls with
    /// them are rejected before they get here).
    static func writeNumber(_ n: Double, to out: inout [UInt8]) {
        guard n.isFinite else { out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]); return }
        if n.rounded() == n && abs(n) < 1e15 {
            var v = Int64(n)
            if v == 0 { out.append(UInt8(ascii: "0")); return }
            if v < 0 { out.append(UInt8(ascii: "-")); v = -v }
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var count = 0
            withUnsafeMutableBytes(of: &digits) { d in
                while v > 0 { d[count] = UInt8(v % 10) + 48; v /= 10; count += 1 }
                var i = count - 1
                while i >= 0 { out.append(d[i]); i -= 1 }
            }
            return
        }
        out.append(contentsOf: n.description.utf8)
    }

    static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { buf in
            var runStart = 0
            for i in 0..<buf.count {
                let c = buf[i]
                if c >= 0x20 && c != 0x22 && c != 0x5C { continue }
                if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<i])) }
                runStart = i + 1
                switch c {
                case 0x22: out.append(0x5C); out.append(0x22)
                case 0x5C: out.append(0x5C); out.append(0x5C)
                case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
                case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
                default:
                    out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 0xF)]])
                }
            }
            if runStart < buf.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<buf.count])) }
        }
        out.append(UInt8(ascii: "\""))
    }
}
