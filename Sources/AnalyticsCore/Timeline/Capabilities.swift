import Synchronization
/// What the timeline may ask of a plugin beyond the ``Plugin`` and ``DestinationPlugin`` protocols.
/// The timeline asks these capabilities, never which concrete class a plugin is: a library called
/// in this process and the same library in its runner process adopt the same ones, so they are
/// treated alike (the reason "process mode behaves as in-process" can hold at all).

/// A destination that also produces events (a loaded library calling `send_event`) hears that the
/// host is stopping while every destination still runs, so what it sends then is delivered.
protocol StopAnnouncing: DestinationPlugin {
    /// Called on the destination's worker, before its queue is drained and it is shut down.
    func announceStopping()
}

/// A destination that can be left behind when one of its calls never returns.
protocol AbandonableDestination: DestinationPlugin {
    /// It will never be called again, not even to end it (its call may still be running); returns
    /// how the report names it ("library /path/libx.so").
    func abandon() -> String
    /// The name of its call that handles events of this type ("track"; "screen" for page).
    func callName(for type: EventType) -> String
    /// The call in progress while it was stopping, if any ("destroy").
    var stoppingStep: String? { get }
}

/// A destination that receives the whole settings document (a library with
/// `AH_ROLE_WHOLE_SETTINGS`) gets events unless `integrations[key]` is exactly false: not being
/// named in the settings does not keep events away from it.
protocol WholeSettingsDestination: DestinationPlugin {
    var receivesWholeSettings: Bool { get }
}

/// A destination that can tell before an event is queued that it would do nothing with it (a
/// library without the hook for that type, and nothing in its timeline but filters): fan-out
/// counts the event skipped instead of queueing a call that would be a no-op.
protocol EventTypeSelective: DestinationPlugin {
    func ignores(_ type: EventType) -> Bool
}

/// A plugin that is not a destination but produces events (a library that adds timeline plugins
/// and may `send_event`, even from `lifecycle(stopping)`): shutdown stops it with the producers,
/// while every destination still runs, so that what it sends is delivered.
protocol StopsWithProducers: Plugin {}

/// A plugin that only keeps or drops events (a destination filter): a timeline holding nothing
/// else cannot change an event, so a destination that would ignore the event may be skipped.
protocol KeepsOrDropsOnly: Plugin {}

/// A plugin that at times passes every event on as it is (a destination filter while the settings
/// give it no rules): delivery plans leave it out meanwhile, and it bumps its timeline's
/// ``PlanVersion`` when that changes.
protocol PassesEverythingAtTimes: Plugin {
    var passesEverything: Bool { get }
}

/// The version of a timeline's plugins: a worker's delivery plan is made again when it moved. A
/// class of its own, so that a plugin can hold it without holding (or weakly referring to) the
/// timeline: a weak reference moves an object's counts to a side table, and every retain of the
/// timeline, one per event, then takes the slow path.
final class PlanVersion: Sendable {
    private let value = Atomic<Int>(0)
    var current: Int { value.load(ordering: .acquiring) }
    func bump() { value.add(1, ordering: .releasing) }
}

/// A destination that needs an event's JSON text only (a loaded library), nothing back, when
/// nothing else is in its timeline: fan-out then queues it the event as its shared text
/// (``EncodedEvent``: one reference where an event holds two), and its worker lends it that.
protocol TakesEncodedEvents: DestinationPlugin {
    /// `execute` without the values and without the result.
    func take(_ event: EncodedEvent)
}

/// A destination whose events the host keeps on disk until it has their final answers (a library
/// offering ABI 1.3 `AH_EXT_DURABLE`, or any library whose settings say `"durable": true`): its
/// worker stores accepted events in a ``DurableFeed`` under the client's storage directory.
protocol DurablyQueued: DestinationPlugin {
    /// nil: its events live in memory like any destination's.
    var durability: NativeDurability? { get }
}

/// A plugin of a destination's timeline that lets events through later (middleware that answers
/// after returning): the destination's worker calls it back, in order with its other items, to
/// hand on what is ready.
protocol ReleasesLater: AnyObject, Sendable {
    func releaseReady(on worker: DestinationWorker)
}
