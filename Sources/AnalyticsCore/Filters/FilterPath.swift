/// A dotted path into an event (`properties.price`, `products.0.sku`), split once when a rule is
/// compiled so that evaluating a filter never re-parses text.
///
/// A segment names an object member; when it is a canonical array index (`0`, `12`, not `01`) it
/// also indexes arrays, as JavaScript property access does on the server.
struct FilterPath: Sendable, CustomStringConvertible {
    struct Segment: Sendable {
        let key: String
        /// Set when `key` is a canonical non-negative integer.
        let index: Int?
    }

    let segments: [Segment]
    let description: String

    init(_ text: String) {
        description = text
        segments = text.split(separator: ".", omittingEmptySubsequences: false).map { part in
            Segment(key: String(part), index: FilterPath.canonicalIndex(part))
        }
    }

    /// `"0"`, `"7"`, `"42"` but not `"07"`, `"-1"`, `"+1"` or `""`.
    private static func canonicalIndex(_ s: Substring) -> Int? {
        guard let first = s.utf8.first, s.utf8.count <= 15 else { return nil }
        if first == UInt8(ascii: "0") { return s.utf8.count == 1 ? 0 : nil }
        var v = 0
        for b in s.utf8 {
            guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
            v = v * 10 + Int(b - UInt8(ascii: "0"))
        }
        return v
    }

    // MARK: Reading

    /// The value at this path; nil (JavaScript's `undefined`) when any step is missing.
    @inline(__always)
    func value(in payload: JSONObject) -> JSON? {
        guard let first = segments.first, var current = payload.member(first.key) else { return nil }
        var i = 1
        while i < segments.count {
            guard let next = FilterPath.step(current, segments[i]) else { return nil }
            current = next
            i += 1
        }
        return current
    }

    @inline(__always)
    static func step(_ value: JSON, _ segment: Segment) -> JSON? {
        switch value {
        case .object(let o): return o.member(segment.key)
        case .array(let a):
            guard let i = segment.index, i < a.count else { return nil }
            return a[i]
        default: return nil
        }
    }

    // MARK: Writing

    /// Runs `body` on the value at this path, in place (no copy of the surrounding containers
    /// when they are uniquely owned). Does nothing when the path is missing.
    func modify(in payload: inout JSONObject, _ body: (inout JSON) -> Void) {
        guard let first = segments.first else { return }
        payload.modifyValue(forKey: first.key) { FilterPath.modify(&$0, segments[1...], body) }
    }

    private static func modify(_ value: inout JSON, _ rest: ArraySlice<Segment>, _ body: (inout JSON) -> Void) {
        guard let segment = rest.first else { body(&value); return }
        switch value {
        case .object(var o):
            guard o.contains(segment.key) else { return }
            value = .null
            o.modifyValue(forKey: segment.key) { modify(&$0, rest.dropFirst(), body) }
            value = .object(o)
        case .array(var a):
            guard let i = segment.index, i < a.count else { return }
            value = .null
            modify(&a[i], rest.dropFirst(), body)
            value = .array(a)
        default:
            return
        }
    }

    /// Stores `newValue` at this path, creating missing or non-container intermediate steps as
    /// objects (or arrays when the next segment is an index), as the server's map transformer does.
    /// A step that names a key (not an index) of an array writes nothing and leaves the array as it
    /// was: in JavaScript that key becomes a property of the array, which its JSON does not show.
    func set(_ newValue: JSON, in payload: inout JSONObject) {
        guard let first = segments.first else { return }
        if segments.count == 1 { payload[first.key] = newValue; return }
        if !payload.contains(first.key) { payload[first.key] = FilterPath.emptyContainer(for: segments[1]) }
        payload.modifyValue(forKey: first.key) { FilterPath.set(newValue, into: &$0, segments[1...]) }
    }

    private static func set(_ newValue: JSON, into value: inout JSON, _ rest: ArraySlice<Segment>) {
        guard let segment = rest.first else { value = newValue; return }
        let after = rest.dropFirst()
        switch value {
        case .array where segment.index == nil:
            return
        case .array(var a):
            let i = segment.index!
            value = .null
            while a.count <= i { a.append(after.isEmpty ? .null : emptyContainer(for: after.first!)) }
            set(newValue, into: &a[i], after)
            value = .array(a)
        case .object(var o):
            value = .null
            if !o.contains(segment.key) { o[segment.key] = after.first.map(emptyContainer) ?? .null }
            o.modifyValue(forKey: segment.key) { set(newValue, into: &$0, after) }
            value = .object(o)
        default:
            var o = JSONObject()
            o[segment.key] = after.first.map(emptyContainer) ?? .null
            o.modifyValue(forKey: segment.key) { set(newValue, into: &$0, after) }
            value = .object(o)
        }
    }

    private static func emptyContainer(for next: Segment) -> JSON {
        next.index != nil ? .array([]) : .object(JSONObject())
    }

    /// Removes the value at this path: deletes an object member; an array element becomes null
    /// (a JavaScript `delete` leaves a hole that serializes as null).
    func remove(from payload: inout JSONObject) {
        guard let last = segments.last else { return }
        if segments.count == 1 { payload.removeValue(forKey: last.key); return }
        let parent = FilterPath(segments: Array(segments.dropLast()))
        parent.modify(in: &payload) { value in
            switch value {
            case .object(var o):
                guard o.contains(last.key) else { return }
                value = .null
                o.removeValue(forKey: last.key)
                value = .object(o)
            case .array(var a):
                guard let i = last.index, i < a.count else { return }
                value = .null
                a[i] = .null
                value = .array(a)
            default:
                return
            }
        }
    }

    private init(segments: [Segment]) {
        self.segments = segments
        description = segments.map(\.key).joined(separator: ".")
    }
}

extension JSONObject {
    /// Mutates one member in place: the member is moved out while `body` runs, so a nested
    /// container it holds stays uniquely referenced and is not copied.
    @discardableResult
    mutating func modifyValue<R>(forKey key: String, _ body: (inout JSON) -> R) -> R? {
        guard let i = index(of: key) else { return nil }
        var v = storage[i].value
        storage[i].value = .null
        let r = body(&v)
        storage[i].value = v
        return r
    }

    /// A member, looked up comparing lengths before text (most keys differ in length, and
    /// String's own `==` takes a slow path for every mismatch).
    @inline(__always)
    func member(_ key: String) -> JSON? {
        let n = key.utf8.count
        for e in storage where e.key.utf8.count == n && e.key == key { return e.value }
        return nil
    }

    /// Keeps the members whose key passes `keep`, in order, building fresh storage in one pass.
    mutating func keepMembers(where keep: (String) -> Bool) {
        var kept: [Member] = []
        kept.reserveCapacity(storage.count)
        for e in storage where keep(e.key) { kept.append(e) }
        storage = kept
    }
}
