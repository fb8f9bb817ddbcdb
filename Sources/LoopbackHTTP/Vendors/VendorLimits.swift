import AnalyticsCore

/// A vendor's documented limits on the properties of one record, as the fakes check them: what a
/// real vendor would cut or drop without a word, a fake lists (``AmplitudeFake/overLimits``,
/// ``MixpanelFake/overLimits``), so a test fails when a library sends it.
struct VendorPropertyLimits: Sendable {
    var maxKeys: Int
    var maxNameLength: Int
    var maxStringLength: Int
    /// Objects and arrays within one property's value (1: a flat object); 0: no limit.
    var maxDepth: Int
    /// Lengths count characters (Unicode scalars); else UTF-8 bytes.
    var characters: Bool

    func length(_ text: String) -> Int { characters ? text.unicodeScalars.count : text.utf8.count }

    /// Why `properties` is past the limits, or nil.
    func problem(_ properties: JSONObject) -> String? {
        if properties.count > maxKeys { return "\(properties.count) properties, more than \(maxKeys)" }
        for (name, value) in properties {
            if length(name) > maxNameLength { return "a property name of \(length(name)), longer than \(maxNameLength)" }
            if maxDepth > 0, depth(value) > maxDepth { return "property \(name) nested \(depth(value)) deep, more than \(maxDepth)" }
            if let long = longString(value) { return "a string of \(long) in \(name), longer than \(maxStringLength)" }
        }
        return nil
    }

    private func depth(_ value: JSON) -> Int {
        if let object = value.objectValue { return 1 + (object.values.map(depth).max() ?? 0) }
        if let array = value.arrayValue { return 1 + (array.map(depth).max() ?? 0) }
        return 0
    }

    private func longString(_ value: JSON) -> Int? {
        if let text = value.stringValue { return length(text) > maxStringLength ? length(text) : nil }
        if let object = value.objectValue { return object.values.lazy.compactMap(longString).first }
        if let array = value.arrayValue { return array.lazy.compactMap(longString).first }
        return nil
    }
}
