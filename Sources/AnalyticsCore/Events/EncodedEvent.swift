/// What a library's event hook needs of an event: its type and its JSON text, read in place.
protocol EventText {
    var type: EventType { get }
    func withText<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R
}

extension Event: EventText {
    @inline(__always)
    func withText<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { withSerializedBytes(body) }
}

/// An event as its JSON text alone, shared by every destination that takes text (written once,
/// by the first of their workers to need it): what a loaded library's destination hands on (the
/// library reads text, never the host's values). One reference where an `Event` with an encoding
/// holds two: each destination's copy writes half the shared reference counts, counts written
/// from every worker for every event.
struct EncodedEvent: EventText, @unchecked Sendable {
    let type: EventType
    /// Published, or holding its payload (so the text can be written from it).
    private let encoding: SharedEncoding

    /// `event` as text: its shared text when written already, else written now for this copy.
    init(_ event: Event) {
        var event = event
        event.shareEncoding()
        event.computeSharedEncoding()
        if let encoded = EncodedEvent(published: event) {
            self = encoded
            return
        }
        // Another destination's worker is still writing the shared text: this copy writes its
        // own (rather than wait), in an encoding only it holds, so it is published at once.
        event.encoding = nil
        event.shareEncoding()
        event.computeSharedEncoding()
        self.init(type: event.type, published: event.encoding!)
    }

    /// `event`'s text if it is written already (the client wrote it for several destinations).
    init?(published event: Event) {
        guard let encoding = event.encoding, encoding.publishedText != nil else { return nil }
        self.init(type: event.type, published: encoding)
    }

    /// `event` by its encoding alone, which holds the payload: the first destination's worker to
    /// need the text writes it, off the caller's thread (fan-out, where the client made that
    /// encoding).
    init?(holding event: Event) {
        guard let encoding = event.encoding, encoding.source != nil || encoding.publishedText != nil else { return nil }
        self.init(type: event.type, published: encoding)
    }

    /// An event stored as `text` (a durable queue's record, written by the host from a valid
    /// event), taken as it is: only its members' bounds and its `"type"` are read, nothing is
    /// decoded. nil when that does not find an object with a known type (the caller then parses).
    init?(storedText text: ArraySlice<UInt8>) {
        let type = text.withUnsafeBufferPointer { t -> EventType? in
            guard let members = JSONMemberScanner.members(of: t) else { return nil }
            var found: EventType?
            for m in members.reversed() {
                // The key `"type"` written plainly, its value a plain string.
                guard m.valueStart - m.start >= 7, t[m.start + 1] == UInt8(ascii: "t"), t[m.start + 2] == UInt8(ascii: "y"),
                      t[m.start + 3] == UInt8(ascii: "p"), t[m.start + 4] == UInt8(ascii: "e"), t[m.start + 5] == UInt8(ascii: "\"")
                else { continue }
                guard t[m.valueStart] == UInt8(ascii: "\""), m.valueEnd - m.valueStart <= 10 else { return nil }
                let name = UnsafeBufferPointer(rebasing: t[(m.valueStart + 1)..<(m.valueEnd - 1)])
                if name.contains(UInt8(ascii: "\\")) { return nil }
                found = EventType(rawValue: String(decoding: name, as: UTF8.self))
                break
            }
            return found
        }
        guard let type else { return nil }
        self.init(type: type, published: SharedEncoding.make(publishedText: text))
    }

    private init(type: EventType, published encoding: SharedEncoding) {
        self.type = type
        self.encoding = encoding
    }

    /// Calls `body` with the text, read in place once written (nothing copied, no reference
    /// taken); the first caller writes it from the payload the encoding holds.
    @inline(__always)
    func withText<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let text = withUnsafePointer(to: self, { SharedEncoding.publishedText(at: UnsafeRawPointer($0.pointer(to: \.encoding)!)) }) {
            return body(text)
        }
        return encoding.withSourceText(body)
    }

    /// The event again, for what needs values (a plugin added to the destination's timeline
    /// since, a report naming the event): the payload the encoding holds, else read back from
    /// the text.
    var event: Event {
        if let source = encoding.source {
            var event = Event(type: type, payload: source)
            event.encoding = encoding
            return event
        }
        let payload = withText { text -> JSONObject in
            guard case .object(let object)? = try? JSON(parsing: [UInt8](text)) else { return [:] }
            return object
        }
        var event = Event(type: type, payload: payload)
        event.encoding = encoding
        return event
    }
}
