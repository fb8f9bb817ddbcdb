/// The events gathered for one batch call (ABI 1.3 `AH_EXT_BATCH`) in this process: their texts
/// copied end to end as they arrive, and the type of each. No reference to an event is kept: an
/// event is shared by every destination it was fanned out to, and each reference taken and let go
/// would write its counts from every worker, for every event. The buffers keep their capacity from
/// run to run.
struct BatchRun {
    private(set) var texts: [UInt8] = []
    private(set) var items: [(type: EventType, start: Int, count: Int)] = []

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    mutating func append(_ event: EncodedEvent) {
        event.withText { append(event.type, $0) }
    }

    mutating func append(_ type: EventType, _ text: UnsafeRawBufferPointer) {
        items.append((type, texts.count, text.count))
        texts.append(contentsOf: text)
    }

    /// Item `i` of `other` (a retry of some of its events).
    mutating func append(_ i: Int, of other: BatchRun) {
        let item = other.items[i]
        other.texts.withUnsafeBytes { append(item.type, UnsafeRawBufferPointer(rebasing: $0[item.start..<item.start + item.count])) }
    }

    mutating func removeAll() {
        texts.removeAll(keepingCapacity: true)
        items.removeAll(keepingCapacity: true)
    }
}
