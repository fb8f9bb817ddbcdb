// Public initialisers for the typed views, so that code in other modules (integrations written in
// Swift, which receive events as JSON text and build the views themselves) can make them.

extension TrackEvent { public init(_ event: Event) { self.init(raw: event) } }
extension IdentifyEvent { public init(_ event: Event) { self.init(raw: event) } }
extension ScreenEvent { public init(_ event: Event) { self.init(raw: event) } }
extension GroupEvent { public init(_ event: Event) { self.init(raw: event) } }
extension AliasEvent { public init(_ event: Event) { self.init(raw: event) } }
