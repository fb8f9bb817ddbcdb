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
