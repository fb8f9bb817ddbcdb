import AnalyticsCore

/// Collects what a callback reports (errors, log lines, queue problems), from any thread.
public final class Recorder<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])

    public init() {}

    /// Everything recorded so far, in order.
    public var all: [Element] { items.withLock { $0 } }

    public func append(_ item: Element) { items.withLock { $0.append(item) } }

    /// A callback that records what it is given.
    public var handler: @Sendable (Element) -> Void { { [self] item in append(item) } }
}

extension Recorder where Element == String {
    /// A log handler that records each line (the level is not kept).
    public var logHandler: @Sendable (LogLevel, String) -> Void { { [self] _, line in append(line) } }
}

extension Recorder where Element == AnalyticsError {
    public var messages: [String] { all.map(\.description) }
}

/// Errors a client reported.
public typealias ErrorLog = Recorder<AnalyticsError>
/// Log lines a client wrote.
public typealias LogLines = Recorder<String>
