import Foundation

// The call shapes of analytics-swift (`track(name:properties:)`, `identify(userId:traits:)`, …),
// next to the typed JSON ones. Properties and traits given as `[String: Any]` or as an
// `Encodable` value are converted to JSON once, here; a value without a JSON form is left out and
// reported to the error handler (naming its path), and the rest of the call goes ahead.

extension Analytics {
    // MARK: track

    public func track(name: String) {
        track(name, properties: nil)
    }

    /// `properties` as a dictionary literal (`["plan": plan, "seats": 3]`) or any `[String: Any]`.
    public func track(name: String, properties: [String: Any]?) {
        track(name, properties: converted(properties, "properties", call: "track \"\(name)\""))
    }

    /// `properties` as an `Encodable` value (a struct of yours, or typed ``JSONObject``), encoded with
    /// `JSONEncoder`.
    public func track<P: Encodable>(name: String, properties: P?) {
        track(name, properties: encoded(properties, "properties", call: "track \"\(name)\""))
    }

    // MARK: identify

    public func identify(userId: String) {
        identify(userId: userId, traits: nil as JSONObject?, integrations: nil)
    }

    public func identify(userId: String, traits: [String: Any]?) {
        identify(userId: userId, traits: converted(traits, "traits", call: "identify"), integrations: nil)
    }

    public func identify<T: Encodable>(userId: String, traits: T?) {
        identify(userId: userId, traits: encoded(traits, "traits", call: "identify"), integrations: nil)
    }

    /// Traits alone: they are merged into the saved ones and sent with the current identity.
    public func identify(traits: [String: Any]) {
        identify(userId: nil, traits: converted(traits, "traits", call: "identify"), integrations: nil)
    }

    public func identify<T: Encodable>(traits: T) {
        identify(userId: nil, traits: encoded(traits, "traits", call: "identify"), integrations: nil)
    }

    // MARK: screen

    public func screen(title: String, category: String? = nil) {
        screen(title, category: category, properties: nil)
    }

    public func screen(title: String, category: String? = nil, properties: [String: Any]?) {
        screen(title, category: category, properties: converted(properties, "properties", call: "screen \"\(title)\""))
    }

    public func screen<P: Encodable>(title: String, category: String? = nil, properties: P?) {
        screen(title, category: category, properties: encoded(properties, "properties", call: "screen \"\(title)\""))
    }

    // MARK: group

    public func group(groupId: String) {
        group(groupId: groupId, traits: nil as JSONObject?, integrations: nil)
    }

    public func group(groupId: String, traits: [String: Any]?) {
        group(groupId: groupId, traits: converted(traits, "traits", call: "group \"\(groupId)\""), integrations: nil)
    }

    public func group<T: Encodable>(groupId: String, traits: T?) {
        group(groupId: groupId, traits: encoded(traits, "traits", call: "group \"\(groupId)\""), integrations: nil)
    }

    // MARK: alias

    /// analytics-swift's label for ``alias(_:integrations:)``.
    public func alias(newId: String) {
        alias(newId, integrations: nil)
    }

    // MARK: Conversion at the edge

    /// The dictionary as a JSON object; members without a JSON form are reported and left out.
    func converted(_ dictionary: [String: Any]?, _ field: String, call: String) -> JSONObject? {
        guard let dictionary else { return nil }
        let (object, problems) = AnyValueConversion.object(dictionary, path: field)
        reportConversion(problems, call: call)
        return object
    }

    /// The value's JSON encoding, which must be an object; otherwise it is reported and left out.
    func encoded<T: Encodable>(_ value: T?, _ field: String, call: String) -> JSONObject? {
        guard let value else { return nil }
        // Typed JSON passes through as it is (no encoding round trip).
        if let object = value as? JSONObject { return object }
        if case .object(let object)? = value as? JSON { return object }
        let (json, problems) = AnyValueConversion.json(encoding: value, path: field)
        reportConversion(problems, call: call)
        switch json {
        case .object(let object)?: return object
        case nil: return [:]
        case let other?:
            reportConversion([.init(path: field, reason: "a \(T.self) encodes to \(JSON.kindName(other)), not an object")], call: call)
            return [:]
        }
    }

    private func reportConversion(_ problems: [AnyValueConversion.Problem], call: String) {
        for problem in problems {
            report(.invalidEvent("\(call): \(problem) (left out; the rest of the call was sent)"))
        }
    }
}
