/// A ``JSONObject`` is `Codable` so that typed properties go through the `Encodable` call shapes
/// of analytics-swift (`track(name:properties:)` with a `JSONObject` value) unchanged.
extension JSONObject: Codable {
    public init(from decoder: any Decoder) throws {
        guard case .object(let object) = try JSON(from: decoder) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected a JSON object"))
        }
        self = object
    }

    public func encode(to encoder: any Encoder) throws {
        try JSON.object(self).encode(to: encoder)
    }
}
