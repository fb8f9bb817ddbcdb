/// A request as the loopback server received it. Header names keep their case; look-ups ignore it.
public struct RecordedRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    /// The body after gunzipping (when `Content-Encoding: gzip`); empty when bodies are not recorded.
    public var body: [UInt8]
    /// Bytes on the wire (before gunzipping).
    public var wireBodySize: Int
    /// Set when the body claimed gzip but could not be inflated.
    public var decodeError: String?

    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
