import Synchronization

/// JSON text of an event, computed at most once for all the destinations that receive the same
/// unchanged event. The client attaches an empty one before fan-out; the first destination worker
/// that needs the text computes it (off the caller's thread), the others reuse it.
///
/// One allocation per event, and no lock: every destination worker of a fanned-out event reads the
/// text, so a mutex here (and a reference count taken on the text) would be cache lines written
/// by every worker for every event. The first reader claims the work with one atomic exchange
/// and publishes the text with a release store; a reader that finds it published only reads. A
/// reader that finds another one still writing writes its own copy rather than wait (rare: with
/// several destinations the client writes the text before fan-out).
struct SharedEncoding: @unchecked Sendable {
    private final class Storage: @unchecked Sendable {
        static let empty = 0, writing = 1, published = 2
        let stage = Atomic<Int>(Storage.empty)
        /// Written once, by the claimant, before `stage` becomes `published`; read-only after.
        @exclusivity(unchecked) var text: [UInt8] = []
        /// What the text can be derived from until then: an earlier version of the payload with
        /// its text (an event a destination filter edited), so that only the changed members are
        /// written (`JSONObject.serializedBytes(derivedFrom:text:)`). Touched by the claimant only,
        /// which lets it go once the text is written.
        @exclusivity(unchecked) var base: (payload: JSONObject, text: [UInt8])?

        init(base: (payload: JSONObject, text: [UInt8])?) { self.base = base }

        /// The claimant's text.
        func claimantWrite(_ payload: JSONObject) -> [UInt8] {
            guard let base else { return payload.serializedBytes() }
            self.base = nil
            return payload.serializedBytes(derivedFrom: base.payload, text: base.text)
        }
    }

    private let storage: Storage

    static func make() -> SharedEncoding { SharedEncoding(storage: Storage(base: nil)) }

    /// An encoding for an edited copy of `payload`, whose text is `text`.
    static func make(derivedFrom payload: JSONObject, text: [UInt8]) -> SharedEncoding {
        SharedEncoding(storage: Storage(base: (payload, text)))
    }

    /// The text of `payload` (every sharer holds the same payload), computed on first use.
    func bytes(of payload: JSONObject) -> [UInt8] {
        if storage.stage.load(ordering: .acquiring) == Storage.published { return storage.text }
        return withBytes(of: payload) { raw, made in made ?? [UInt8](raw) }
    }

    /// Calls `body` with the text of `payload`, computed on first use, without copying it or
    /// taking a reference to it when it is already published. `body`'s second argument is the
    /// text as an array when this call made it (nil otherwise; the pointer is always valid).
    @inline(__always)
    func withBytes<R>(of payload: JSONObject, _ body: (UnsafeRawBufferPointer, [UInt8]?) -> R) -> R {
        let storage = self.storage
        if storage.stage.load(ordering: .acquiring) == Storage.published {
            return storage.text.withUnsafeBytes { body($0, nil) }
        }
        guard storage.stage.compareExchange(expected: Storage.empty, desired: Storage.writing, ordering: .acquiring).exchanged else {
            // Another reader is writing it (or just published it): use our own copy.
            if storage.stage.load(ordering: .acquiring) == Storage.published {
                return storage.text.withUnsafeBytes { body($0, nil) }
            }
            let mine = payload.serializedBytes()
            return mine.withUnsafeBytes { body($0, mine) }
        }
        let made = storage.claimantWrite(payload)
        storage.text = made
        storage.stage.store(Storage.published, ordering: .releasing)
        return made.withUnsafeBytes { body($0, made) }
    }

    /// The text if some sharer already computed it.
    var computedText: [UInt8]? {
        storage.stage.load(ordering: .acquiring) == Storage.published ? storage.text : nil
    }
}
