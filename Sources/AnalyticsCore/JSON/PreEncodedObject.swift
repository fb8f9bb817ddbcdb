import Synchronization

/// One JSON object whose text is known in advance: the client's static `context`, which every
/// event carries unchanged. The writer recognises it by identity — an object sharing that exact
/// storage (copy-on-write never mutates a shared buffer) — and copies the bytes instead of
/// walking it. Any changed copy has its own storage and is written normally.
final class PreEncodedObject: Sendable {
    let object: JSONObject
    let bytes: [UInt8]
    private let identity: UInt
    private let count: Int

    init(_ object: JSONObject) {
        self.object = object
        bytes = JSON.object(object).serializedBytes()
        identity = object.storage.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        count = object.count
    }

    @inline(__always)
    func matches(_ other: JSONObject) -> Bool {
        guard other.count == count, count > 0 else { return false }
        return other.storage.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == identity
    }

    private static let slot = Locked<PreEncodedObject?>(nil)
    private static let published = Atomic<Bool>(false)

    /// The registered object (the most recent client's context), if any.
    static var current: PreEncodedObject? {
        guard published.load(ordering: .acquiring) else { return nil }
        return slot.withLock { $0 }
    }

    static func register(_ object: PreEncodedObject) {
        slot.withLock { $0 = object }
        published.store(true, ordering: .releasing)
    }
}
