/// A JSON object that keeps its keys in insertion order.
///
/// Order matters here: a payload must leave the host as it came in (lossless round trip), and the
/// destination-filter language compares objects by their JSON text, as Segment's servers do.
/// Events carry a dozen keys at most per level, so a linear scan beats hashing.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: String, value: JSON)

    /// One member. A concrete struct, not a tuple: copying and destroying arrays of it is direct
    /// code instead of the runtime's generic tuple witnesses (measured on the event hot path).
    @usableFromInline struct Member: Sendable {
        @usableFromInline var key: String
        @usableFromInline var value: JSON
        @usableFromInline init(key: String, value: JSON) { self.key = key; self.value = value }
    }

    @usableFromInline var storage: [Member]

    public init() { storage = [] }
    public init<S: Sequence>(_ pairs: S) where S.Element == (String, JSON) {
        storage = []
        for (k, v) in pairs { self[k] = v }
    }
    public init(dictionaryLiteral elements: (String, JSON)...) { self.init(elements) }
    /// Builds from pairs known to have distinct keys (the parser's fast path).
    init(members: [Member]) { storage = members }

    /// Appends a key the caller knows is absent (building payloads without a lookup).
    mutating func appendUnique(_ key: String, _ value: JSON) { storage.append(Member(key: key, value: value)) }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.isEmpty }
    public var keys: [String] { storage.map(\.key) }
    public var values: [JSON] { storage.map(\.value) }

    @inlinable
    func index(of key: String) -> Int? {
        for i in storage.indices where storage[i].key == key { return i }
        return nil
    }

    /// Reads a member; assigning nil removes it; assigning a new key appends it at the end.
    @inlinable
    public subscript(key: String) -> JSON? {
        get {
            for e in storage where e.key == key { return e.value }
            return nil
        }
        set {
            if let i = index(of: key) {
                if let v = newValue { storage[i].value = v } else { storage.remove(at: i) }
            } else if let v = newValue {
                storage.append(Member(key: key, value: v))
            }
        }
    }

    public func contains(_ key: String) -> Bool { index(of: key) != nil }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSON? {
        guard let i = index(of: key) else { return nil }
        return storage.remove(at: i).value
    }

    /// Keys of `other` overwrite ours; new keys are appended in `other`'s order.
    public mutating func merge(_ other: JSONObject) {
        for m in other.storage { self[m.key] = m.value }
    }

    public func merging(_ other: JSONObject) -> JSONObject {
        var copy = self
        copy.merge(other)
        return copy
    }

    public struct Iterator: IteratorProtocol {
        @usableFromInline var base: IndexingIterator<[Member]>
        @inlinable public mutating func next() -> Element? { base.next().map { ($0.key, $0.value) } }
    }

    public func makeIterator() -> Iterator { Iterator(base: storage.makeIterator()) }

    // Equality ignores key order (two objects with the same members are the same value);
    // code that needs order-sensitive comparison compares serialized text.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for m in lhs.storage {
            guard let o = rhs[m.key], o == m.value else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for m in storage {
            var h = Hasher()
            h.combine(m.key)
            h.combine(m.value)
            combined ^= h.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}
