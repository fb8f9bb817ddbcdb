/// A weak reference to the client, for plugins (the client owns its plugins, not the reverse).
public struct WeakAnalytics: Sendable {
    public weak var value: Analytics?
    public init(_ value: Analytics? = nil) { self.value = value }
}
