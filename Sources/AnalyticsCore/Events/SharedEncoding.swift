import Synchronization

/// JSON text of an event, computed at most once for all the destinations that receive the same
/// unchanged event. The client attaches an empty one before fan-out; the first destination worker
/// that needs the text computes it (off the caller's thread), the others reuse it.
///
/// One allocation per event, and no lock: every destination worker of a fanned-out event reads the
/// text, so a mutex here (and a reference count taken on the text) would be cache lines written
/// by every worker for every event. The first reader claims the work with one atomic exchange
/// and publishes the text with a release store; a reader that finds it published only reads. A
/// reader that finds another one still writing writes its own copy rather than wait (rare: the
/// workers of most destinations run one after another on the cores the caller leaves them).
struct SharedEncoding: @unchecked Sendable {
    private final class Storage: @unchecked Sendable {
        static let empty = 0, writing = 1, published = 2
        let stage = Atomic<Int>(Storage.empty)
        /// Written once, by the claimant, before `stage` becomes `published`; read-only after, and
        /// freed with the storage. Memory of its own rather than an array: reading an array kept in
        /// a class takes a reference to its buffer, and that count is a cache line every
        /// destination worker would write for every event.
        @exclusivity(unchecked) var text = UnsafeRawBufferPointer(start: nil, count: 0)
        /// What the text can be derived from until then: an earlier version of the payload with
        /// its text (an event a destination filter edited), so that only the changed members are
        /// written (`JSONObject.serializedBytes(derivedFrom:text:)`). Touched by the claimant only,
        /// which lets it go once the text is written.
        @exclusivity(unchecked) var base: (payload: JSONObject, text: [UInt8])?
        /// The payload the text is of, when the storage was made holding it (fan-out's, for
        /// destinations that take the text alone): set before the storage is shared, then only read.
        let source: JSONObject?

        init(base: (payload: JSONObject, text: [UInt8])?, source: JSONObject? = nil) {
            self.base = base
            self.source = source
        }

        deinit { text.deallocate() }

        /// The text, if published.
        @inline(__always)
        var publishedText: UnsafeRawBufferPointer? {
            stage.load(ordering: .acquiring) == Storage.published ? text : nil
        }

        /// The claimant writes the text and publishes it.
        func claimantWrite(_ payload: JSONObject) -> UnsafeRawBufferPointer {
            if let base {
                self.base = nil
                text = payload.serializedMemory(derivedFrom: base.payload, text: base.text)
            } else {
                text = payload.serializedMemory()
            }
            stage.store(Storage.published, ordering: .releasing)
            return text
        }
    }

    private let storage: Storage

    static func make() -> SharedEncoding { SharedEncoding(storage: Storage(base: nil)) }

    /// An encoding that holds `payload` itself: whoever has the encoding alone can still write
    /// the text (and give the event back) when no sharer has yet.
    static func make(holding payload: JSONObject) -> SharedEncoding {
        SharedEncoding(storage: Storage(base: nil, source: payload))
    }

    /// An encoding whose text is `text`, published at once (an event read back from a durable
    /// queue and handed on as the text it was stored as).
    static func make(publishedText text: ArraySlice<UInt8>) -> SharedEncoding {
        let storage = Storage(base: nil)
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: text.count, alignment: 1)
        text.withUnsafeBytes { memory.copyMemory(from: $0) }
        storage.text = UnsafeRawBufferPointer(memory)
        storage.stage.store(Storage.published, ordering: .releasing)
        return SharedEncoding(storage: storage)
    }

    /// The payload, when the encoding holds it.
    var source: JSONObject? { storage.source }

    /// Calls `body` with the text of the payload this encoding holds (`make(holding:)`).
    func withSourceText<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        withBytes(of: storage.source ?? [:], body)
    }

    /// An encoding for an edited copy of `payload`, whose text is `text`.
    static func make(derivedFrom payload: JSONObject, text: [UInt8]) -> SharedEncoding {
        SharedEncoding(storage: Storage(base: (payload, text)))
    }

    /// The text of `payload` (every sharer holds the same payload), computed on first use.
    func bytes(of payload: JSONObject) -> [UInt8] {
        withBytes(of: payload) { [UInt8]($0) }
    }

    /// The published text, read in place: valid while this encoding (the event holding it) is.
    /// Neither a lock nor a reference count is touched, so the many destination workers reading
    /// one fanned-out event write nothing they share.
    @inline(__always)
    var publishedText: UnsafeRawBufferPointer? {
        // The caller holds this encoding: the storage outlives the read without a retain of its own.
        Unmanaged.passUnretained(storage)._withUnsafeGuaranteedRef { $0.publishedText }
    }

    /// `publishedText` of the encoding (or optional encoding: the same one pointer) at
    /// `address`, read without copying it: a copy is a retain of its storage, a count every
    /// destination worker of the event would write.
    @inline(__always)
    static func publishedText(at address: UnsafeRawPointer) -> UnsafeRawBufferPointer? {
        guard let object = address.load(as: UnsafeRawPointer?.self) else { return nil }
        return Unmanaged<Storage>.fromOpaque(object)._withUnsafeGuaranteedRef { $0.publishedText }
    }

    /// Calls `body` with the text of `payload`, computed on first use.
    func withBytes<R>(of payload: JSONObject, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let storage = self.storage
        if let text = storage.publishedText { return body(text) }
        guard storage.stage.compareExchange(expected: Storage.empty, desired: Storage.writing, ordering: .acquiring).exchanged else {
            // Another reader is writing it (or just published it): use our own copy.
            if let text = storage.publishedText { return body(text) }
            return payload.serializedBytes().withUnsafeBytes(body)
        }
        return body(storage.claimantWrite(payload))
    }

    /// Computes the text now if no sharer has (the client, before fan-out to several readers).
    func compute(_ payload: JSONObject) {
        if storage.publishedText == nil { withBytes(of: payload) { _ in } }
    }

    /// The length of the text if some sharer already computed it.
    var computedCount: Int? { storage.publishedText?.count }

    /// The text an edited copy is written from: the published one, or, when this encoding holds
    /// its payload (several readers share it: the text is needed anyway), written now.
    var textToDeriveFrom: [UInt8]? {
        if let text = storage.publishedText { return [UInt8](text) }
        guard storage.source != nil else { return nil }
        return withSourceText { [UInt8]($0) }
    }
}
