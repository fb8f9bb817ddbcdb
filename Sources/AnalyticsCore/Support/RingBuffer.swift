/// A growable FIFO with O(1) append and removal at the head (the standard library has no deque).
struct RingBuffer<Element> {
    private var slots: [Element?] = Array(repeating: nil, count: 16)
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    var first: Element? { count == 0 ? nil : slots[head] }

    mutating func append(_ e: Element) {
        if count == slots.count { grow() }
        slots[(head + count) & (slots.count - 1)] = e
        count += 1
    }

    @discardableResult
    mutating func removeFirst() -> Element? {
        guard count > 0 else { return nil }
        let e = slots[head]
        slots[head] = nil
        head = (head + 1) & (slots.count - 1)
        count -= 1
        return e
    }

    /// Removes the first element matching `predicate` (O(n); used only on the rare overflow path).
    @discardableResult
    mutating func removeFirst(where predicate: (Element) -> Bool) -> Element? {
        var kept: [Element] = []
        var removed: Element?
        while let e = removeFirst() {
            if removed == nil && predicate(e) { removed = e } else { kept.append(e) }
        }
        for e in kept { append(e) }
        return removed
    }

    /// Moves every element, in order, to the end of `out`.
    mutating func drain(into out: inout [Element]) {
        while let e = removeFirst() { out.append(e) }
        head = 0
    }

    private mutating func grow() {
        var bigger: [Element?] = Array(repeating: nil, count: slots.count * 2)
        for i in 0..<count { bigger[i] = slots[(head + i) & (slots.count - 1)] }
        slots = bigger
        head = 0
    }
}
