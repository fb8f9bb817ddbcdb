import Foundation

/// A durable destination's events on disk and what its worker handed over from them.
///
/// Why it looks like this: accepting an event for such a destination means appending it to a
/// ``DurableQueue`` of its own (it survives SIGKILL), and an event may leave that queue only once
/// the destination has its final answer. Answers may come out of order (a library finishing
/// later completes whole uploads at once), while the queue crosses off by one persisted position;
/// so the worker hands over a window of events after that position, numbered by tickets
/// (`base` is the ticket of the first), and the position moves past the longest finished prefix.
/// The queue reads from its acknowledged position only, so the next events are read by peeking
/// the window plus what follows and skipping the window. Should the position move under the
/// window (the disk cap removed the oldest segment, or damaged bytes were skipped), the events
/// still on disk are handed over again from there: duplicates, never loss.
///
/// Touched on the destination's worker only, except `append` (any producer; the queue is
/// thread-safe).
final class DurableFeed: @unchecked Sendable {
    let key: String
    let queue: DurableQueue
    /// Events an earlier run left on disk, found when the queue opened.
    let backlog: Int
    private let report: @Sendable (AnalyticsError) -> Void

    /// Where the window begins (the acknowledged position when last read); nil: not known, take
    /// whatever the next read starts at (nothing is handed over then).
    private var windowStart: DurableQueue.Position?
    /// Where the window ends (the next read goes on from there); nil with an empty window.
    private var windowEnd: DurableQueue.Position?
    /// Ticket of the window's first event.
    private var base: UInt64 = 1
    /// Per event of the window, in order: whether its answer is final.
    private var done: [Bool] = []
    private var nextTicket: UInt64 = 1

    /// Most events handed over and not crossed off at once (memory, and what a restart repeats).
    /// Above the host's bound on pending calls (``PendingCalls/defaultMaxPending``): a library
    /// that gathers a user's events (GA4) answers out of order, and a smaller window stalled the
    /// worker until the oldest group's wait ran out (4,096 events per `maxWaitSeconds`, measured).
    static let window = 32_768
    /// Most payload bytes read at once.
    static let maxReadBytes = 16 << 20

    /// Opens (or creates) the queue of destination `key` in `directory`.
    init(key: String, directory: String, maxDiskBytes: Int?, report: @escaping @Sendable (AnalyticsError) -> Void) throws(QueueError) {
        self.key = key
        self.report = report
        queue = try DurableQueue(directory: directory, configuration: Self.configuration(maxDiskBytes: maxDiskBytes ?? Self.defaultMaxDiskBytes)) { error in
            report(.storage("destination \(key): queue \(error)"))
        }
        backlog = queue.pendingEvents
    }

    /// The disk cap when the library asks for none.
    static let defaultMaxDiskBytes = 64 << 20

    /// A destination's queue: events up to 1 MiB each, 4 MiB segments.
    static func configuration(maxDiskBytes: Int) -> DurableQueue.Configuration {
        DurableQueue.Configuration(maxDiskBytes: maxDiskBytes, segmentBytes: 4 << 20, maxRecordBytes: 1 << 20)
    }

    /// The queue's directory for destination `key` under a client's storage directory.
    static func directory(storage: String, key: String) -> String {
        (storage as NSString).appendingPathComponent("destinations/" + HostServices.Client.directoryName(for: key))
    }

    /// Stores one accepted event (it survives SIGKILL once this returns).
    func append(_ bytes: [UInt8]) throws(QueueError) { try queue.append(bytes) }

    /// Events handed over and not crossed off.
    var handed: Int { done.count }
    var room: Int { max(0, Self.window - done.count) }

    /// One event read back for handing over: its ticket and the event, as values or as its
    /// stored text (both nil when the stored text is not an event any more: reported, and to be
    /// finished at once).
    struct Entry {
        let ticket: UInt64
        let event: Event?
        var encoded: EncodedEvent? = nil
    }

    /// The next (at most `limit`) events after the window, which they join. Empty when the disk
    /// holds nothing more (or the window is full). `asText`: the destination takes text alone, so
    /// an event is handed on as the text it was stored as, not parsed into values (it is, should
    /// it need values after all).
    func next(limit: Int, asText: Bool = false) -> [Entry] {
        let want = min(limit, room)
        guard want > 0 else { return [] }
        // Only what follows the window is read (reading the window again on every call made each
        // event cost the window's size).
        let after = done.isEmpty || windowStart == nil ? nil : windowEnd
        let batch: DurableQueue.Batch
        do {
            if let after {
                batch = try queue.peekBatch(after: after, maxEvents: want, maxBytes: Self.maxReadBytes)
            } else {
                batch = try queue.peekBatch(maxEvents: want, maxBytes: Self.maxReadBytes)
            }
        } catch {
            report(.storage("destination \(key): reading its queue: \(error); the events stay on disk for a later attempt"))
            return []
        }
        defer { queue.release(batch) }
        if let after {
            // Read from the acknowledged position instead: the window is no longer on disk.
            if batch.start != after { restart(at: batch.start) }
        } else {
            restart(at: batch.start)
        }
        guard batch.count > 0 else { return [] }
        windowEnd = batch.end
        var entries: [Entry] = []
        entries.reserveCapacity(batch.count)
        for index in 0..<batch.count {
            let ticket = base + UInt64(done.count)
            done.append(false)
            nextTicket = max(nextTicket, ticket + 1)
            if asText, let encoded = EncodedEvent(storedText: batch[index]) {
                entries.append(Entry(ticket: ticket, event: nil, encoded: encoded))
            } else {
                entries.append(Entry(ticket: ticket, event: Self.event(from: batch[index])))
            }
        }
        return entries
    }

    /// Records final answers (tickets of an earlier window are ignored), then crosses off the
    /// finished prefix. Returns how many events left the queue.
    @discardableResult
    func finish(_ tickets: [UInt64]) -> Int {
        for ticket in tickets where ticket >= base && ticket < base + UInt64(done.count) {
            done[Int(ticket - base)] = true
        }
        var prefix = 0
        while prefix < done.count && done[prefix] { prefix += 1 }
        guard prefix > 0 else { return 0 }
        do {
            let batch = try queue.peekBatch(maxEvents: prefix, maxBytes: .max)
            guard batch.start == windowStart, batch.count == prefix else {
                queue.release(batch)
                restart(at: batch.start)
                return 0
            }
            try queue.acknowledge(batch)
            done.removeFirst(prefix)
            base += UInt64(prefix)
            windowStart = nil
            if !done.isEmpty {
                // The acknowledged position may have moved on to the next segment's start.
                let probe = try queue.peekBatch(maxEvents: 1, maxBytes: 1)
                queue.release(probe)
                windowStart = probe.start
            }
            return prefix
        } catch {
            report(.storage("destination \(key): crossing off \(prefix) finished events: \(error) (they may be handed over again after a restart)"))
            return 0
        }
    }

    /// Events stored and not crossed off (what the destination still owes).
    var pendingEvents: Int { queue.pendingEvents }

    /// Forces the queue to the device and releases its directory.
    func close() {
        do { try queue.close() } catch { report(.storage("destination \(key): closing its queue: \(error)")) }
    }

    /// The position moved under the window: what is still on disk is handed over again from
    /// `start`, under new tickets (answers for the old ones are ignored).
    private func restart(at start: DurableQueue.Position) {
        windowEnd = nil
        if !done.isEmpty {
            report(.storage("destination \(key): its queue moved on under \(done.count) events handed over and not finished "
                + "(the disk cap or damaged bytes removed some, reported apart); those still on disk are handed over again"))
        }
        windowStart = start
        base = nextTicket
        done.removeAll()
    }

    /// The stored text as an event, keeping that text as its encoding (no second serialization).
    static func event(from bytes: ArraySlice<UInt8>) -> Event? {
        let text = Array(bytes)
        guard case .object(let payload)? = try? JSON(parsing: text), var event = try? Event(payload: payload) else { return nil }
        event.encoding = SharedEncoding.make(derivedFrom: payload, text: text)
        return event
    }
}
