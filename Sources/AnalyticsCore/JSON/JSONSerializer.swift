/// Compact JSON output. Every event crossing the C ABI or going to the upload queue is written
/// once, so the writer works on a raw growable buffer: one capacity check per string or number
/// instead of one per byte.
extension JSON {
    public func serialized() -> String {
        String(decoding: serializedBytes(), as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.write(self)
        return writer.finish()
    }

    /// The text JavaScript's `JSON.stringify` would give after `JSON.parse` for numbers: each from
    /// its double, kept texts ignored, `-0` as `0` (the filter language compares objects this way).
    func javaScriptTextBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 512, numbersByValue: true)
        writer.write(self)
        return writer.finish()
    }

    /// Appends this value's JSON text to `out`.
    public func write(to out: inout [UInt8]) {
        var writer = JSONWriter(capacity: 512)
        writer.write(self)
        writer.append(to: &out)
    }
}

extension JSONObject {
    public func serialized() -> String { JSON.object(self).serialized() }
    public func serializedBytes() -> [UInt8] { JSON.object(self).serializedBytes() }

    /// This object's text, given an earlier version of it and that version's text (see
    /// `JSONWriter.object(_:derivedFrom:text:)`).
    func serializedBytes(derivedFrom old: JSONObject, text: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: text.count + 64)
        text.withUnsafeBufferPointer { writer.object(self, derivedFrom: old, text: $0) }
        return writer.finish()
    }

    /// This object's text in memory the caller now owns (and deallocates): no array made, for
    /// a text kept as long as its event (an event's shared encoding).
    func serializedMemory() -> UnsafeRawBufferPointer {
        var writer = JSONWriter(capacity: 512)
        writer.write(.object(self))
        return writer.finishHandingOver()
    }

    /// `serializedBytes(derivedFrom:text:)` in memory the caller now owns.
    func serializedMemory(derivedFrom old: JSONObject, text: [UInt8]) -> UnsafeRawBufferPointer {
        var writer = JSONWriter(capacity: text.count + 64)
        text.withUnsafeBufferPointer { writer.object(self, derivedFrom: old, text: $0) }
        return writer.finishHandingOver()
    }
}

struct JSONWriter: ~Copyable {
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    /// Read once per value written (it is behind a lock).
    private let fragment = PreEncodedObject.current

    /// Numbers written from their double alone (see ``JSON/javaScriptTextBytes()``).
    private let numbersByValue: Bool

    init(capacity: Int, numbersByValue: Bool = false) {
        self.capacity = capacity
        self.numbersByValue = numbersByValue
        buffer = .allocate(capacity: capacity)
    }

    /// False once `finishHandingOver` gave the buffer away.
    private var ownsBuffer = true

    deinit { if ownsBuffer { buffer.deallocate() } }

    /// The text written, in the writer's own buffer, which the caller now owns.
    consuming func finishHandingOver() -> UnsafeRawBufferPointer {
        ownsBuffer = false
        return UnsafeRawBufferPointer(start: buffer, count: count)
    }

    /// The text written, as a new array.
    consuming func finish() -> [UInt8] {
        let n = count
        let source = buffer
        return [UInt8](unsafeUninitializedCapacity: n) { dest, initialized in
            dest.baseAddress!.initialize(from: source, count: n)
            initialized = n
        }
    }

    func append(to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count))
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(count + extra) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        bigger.initialize(from: buffer, count: count)
        buffer.deallocate()
        buffer = bigger
        capacity = newCapacity
    }

    @inline(__always)
    private mutating func byte(_ b: UInt8) {
        reserve(1)
        buffer[count] = b
        count += 1
    }

    private mutating func literal(_ s: StaticString) {
        let n = s.utf8CodeUnitCount
        reserve(n)
        (buffer + count).initialize(from: s.utf8Start, count: n)
        count += n
    }

    mutating func write(_ value: JSON) {
        switch value {
        case .null: literal("null")
        case .bool(let b): if b { literal("true") } else { literal("false") }
        case .number(let n):
            if numbersByValue { number(n.value == 0 ? 0 : n.value) }
            else if let literal = n.literal { raw(literal.text) } else { number(n.value) }
        case .string(let s): string(s)
        case .array(let a):
            byte(UInt8(ascii: "["))
            a.withUnsafeBufferPointer { items in
                for i in items.indices {
                    if i > 0 { byte(UInt8(ascii: ",")) }
                    write(items[i])
                }
            }
            byte(UInt8(ascii: "]"))
        case .object(let o):
            object(o)
        }
    }

    private mutating func object(_ o: JSONObject) {
        if !numbersByValue, let fragment, fragment.matches(o) {
            fragment.bytes.withUnsafeBufferPointer { b in
                reserve(b.count)
                (buffer + count).initialize(from: b.baseAddress!, count: b.count)
                count += b.count
            }
            return
        }
        byte(UInt8(ascii: "{"))
        o.storage.withUnsafeBufferPointer { members in
            for i in members.indices {
                if i > 0 { byte(UInt8(ascii: ",")) }
                string(members[i].key)
                byte(UInt8(ascii: ":"))
                write(members[i].value)
            }
        }
        byte(UInt8(ascii: "}"))
    }

    /// Writes `new` — an edited copy of `old`, whose text this writer wrote as `text` — copying
    /// the text of every member the two share unchanged, and descending into a changed object
    /// member. A destination filter that drops one property then costs a scan and a few copies,
    /// not a whole encoding. The result is byte for byte what `write(.object(new))` gives.
    mutating func object(_ new: JSONObject, derivedFrom old: JSONObject, text: UnsafeBufferPointer<UInt8>) {
        let fragment = self.fragment
        let ranges = old.storage.withUnsafeBufferPointer { previous in
            JSONMemberScanner.members(of: text) { i in
                guard let fragment, i < previous.count, case .object(let o) = previous[i].value, fragment.matches(o) else { return nil }
                return fragment.bytes.count
            }
        }
        guard !numbersByValue, let ranges, ranges.count == old.count else {
            object(new)
            return
        }
        byte(UInt8(ascii: "{"))
        var cursor = 0
        new.storage.withUnsafeBufferPointer { members in
            old.storage.withUnsafeBufferPointer { previous in
                for i in members.indices {
                    if i > 0 { byte(UInt8(ascii: ",")) }
                    let key = members[i].key
                    var k = -1
                    if cursor < previous.count, previous[cursor].key == key { k = cursor } else {
                        for j in previous.indices where previous[j].key == key { k = j; break }
                    }
                    guard k >= 0 else {
                        string(key); byte(UInt8(ascii: ":")); write(members[i].value)
                        continue
                    }
                    cursor = k + 1
                    let range = ranges[k]
                    if JSONWriter.same(members[i].value, previous[k].value) {
                        copy(text, from: range.start, to: range.valueEnd)
                    } else if case .object(let now) = members[i].value, case .object(let before) = previous[k].value {
                        copy(text, from: range.start, to: range.valueStart)
                        object(now, derivedFrom: before,
                               text: UnsafeBufferPointer(rebasing: text[range.valueStart..<range.valueEnd]))
                    } else {
                        string(key); byte(UInt8(ascii: ":")); write(members[i].value)
                    }
                }
            }
        }
        byte(UInt8(ascii: "}"))
    }

    /// Whether two values certainly have the same text: the same storage for objects and arrays
    /// (copy-on-write never changes a shared buffer), equal scalars (a number with its kept text).
    private static func same(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x), .number(let y)):
            return x.value.bitPattern == y.value.bitPattern && x.literal?.text == y.literal?.text
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.storage.withUnsafeBufferPointer { p in
                y.storage.withUnsafeBufferPointer { q in p.baseAddress == q.baseAddress }
            }
        case (.array(let x), .array(let y)):
            return x.count == y.count && x.withUnsafeBufferPointer { p in
                y.withUnsafeBufferPointer { q in p.baseAddress == q.baseAddress }
            }
        default: return false
        }
    }

    @inline(__always)
    private mutating func copy(_ text: UnsafeBufferPointer<UInt8>, from: Int, to: Int) {
        let n = to - from
        reserve(n)
        (buffer + count).initialize(from: text.baseAddress! + from, count: n)
        count += n
    }

    /// Writes ``JSONNumber/canonicalText(_:)`` (the two must agree: the parser keeps a number's
    /// text exactly when they differ). Integers print without a fraction ("42", not "42.0"), `-0`
    /// keeps its sign; other values use Swift's shortest round-tripping form. NaN and infinities
    /// have no JSON spelling and print as null (calls with them are rejected before they get here).
    private mutating func number(_ n: Double) {
        guard n.isFinite else { literal("null"); return }
        if n.rounded() == n && abs(n) < 1e15 {
            var v = Int64(n)
            reserve(17)
            if v == 0 {
                if n.sign == .minus { buffer[count] = UInt8(ascii: "-"); count += 1 }
                buffer[count] = UInt8(ascii: "0"); count += 1
                return
            }
            if v < 0 { buffer[count] = UInt8(ascii: "-"); count += 1; v = -v }
            var digits = 0
            var t = v
            while t > 0 { digits += 1; t /= 10 }
            var i = count + digits - 1
            while v > 0 { buffer[i] = UInt8(truncatingIfNeeded: v % 10) + 48; v /= 10; i -= 1 }
            count += digits
            return
        }
        raw(n.description)
    }

    /// Text copied as it is (a number's kept literal, already valid JSON).
    private mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { u in
            reserve(u.count)
            (buffer + count).initialize(from: u.baseAddress!, count: u.count)
            count += u.count
        }
    }

    private static let hex: StaticString = "0123456789abcdef"

    /// Whether any of the 8 bytes in `w` is a control byte, `"` or `\` (SWAR: a borrow can only
    /// flag a word that really holds one, so a false answer is exact).
    @inline(__always)
    private static func needsEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let control = (w &- ones &* 0x20) & ~w & highs
        let q = w ^ (ones &* 0x22)
        let quote = (q &- ones) & ~q & highs
        let b = w ^ (ones &* 0x5C)
        let backslash = (b &- ones) & ~b & highs
        return (control | quote | backslash) != 0
    }

    private mutating func string(_ s: String) {
        // Native strings expose their UTF-8 in place; others (bridged, rare) are copied once.
        if let done: Void = s.utf8.withContiguousStorageIfAvailable({ utf8($0) }) {
            return done
        }
        var copy = s
        copy.withUTF8 { utf8($0) }
    }

    private mutating func utf8(_ u: UnsafeBufferPointer<UInt8>) {
        let n = u.count
        // Worst case every byte becomes \u00XX.
        reserve(n * 6 + 2)
        let out = buffer
        var o = count
        out[o] = UInt8(ascii: "\""); o += 1
        guard let src = u.baseAddress else {
            out[o] = UInt8(ascii: "\""); count = o + 1
            return
        }
        var i = 0
        while i < n {
            // Find the end of the run that needs no escaping, 8 bytes at a time.
            var j = i
            while j + 8 <= n, !JSONWriter.needsEscape(UnsafeRawPointer(src + j).loadUnaligned(as: UInt64.self)) { j += 8 }
            while j < n {
                let c = src[j]
                if c < 0x20 || c == 0x22 || c == 0x5C { break }
                j += 1
            }
            (out + o).update(from: src + i, count: j - i)
            o += j - i
            if j == n { break }
            let c = src[j]
            out[o] = 0x5C
            switch c {
            case 0x22: out[o + 1] = 0x22; o += 2
            case 0x5C: out[o + 1] = 0x5C; o += 2
            case 0x0A: out[o + 1] = UInt8(ascii: "n"); o += 2
            case 0x0D: out[o + 1] = UInt8(ascii: "r"); o += 2
            case 0x09: out[o + 1] = UInt8(ascii: "t"); o += 2
            case 0x08: out[o + 1] = UInt8(ascii: "b"); o += 2
            case 0x0C: out[o + 1] = UInt8(ascii: "f"); o += 2
            default:
                out[o + 1] = UInt8(ascii: "u"); out[o + 2] = 0x30; out[o + 3] = 0x30
                out[o + 4] = JSONWriter.hex.utf8Start[Int(c >> 4)]
                out[o + 5] = JSONWriter.hex.utf8Start[Int(c & 0xF)]
                o += 6
            }
            i = j + 1
        }
        out[o] = UInt8(ascii: "\""); o += 1
        count = o
    }
}
