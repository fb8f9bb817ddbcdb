/// Why a signal given as JSON (a `--signals` line, `ah_host_signals.emit`) was refused: the
/// message names the field and what was wrong with it.
public struct SignalError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "invalid signal: \(message)" }
}
