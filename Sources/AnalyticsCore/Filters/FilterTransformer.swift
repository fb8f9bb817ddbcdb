/// One compiled transformer of a routing rule: what happens to an event that a matcher selected.
enum FilterTransformer: Sendable {
    case drop
    /// Removes the listed keys from the object at each path (each object element when the path
    /// holds an array; a nil path is the top level).
    case dropProperties([(path: FilterPath?, keys: [String])])
    /// Keeps only the listed keys, the same way.
    case allowProperties([(path: FilterPath?, keys: [String])])
    case sample(percent: Double, path: FilterPath?)
    case map([MapAction])
    /// `hash_properties` is performed by Segment's servers only; clients pass the event on.
    case hashProperties

    struct MapAction: Sendable {
        enum Source: Sendable {
            case copy(FilterPath), move(FilterPath), set(JSON), none
        }
        let target: FilterPath
        let source: Source
        let toString: Bool
    }

    enum Result {
        case kept(changed: Bool)
        case dropped(String)
    }

    /// Why a transformer's JSON is unusable; `position` is relative to the transformer.
    struct Failure: Error, Sendable {
        let position: String
        let reason: String
    }

    // MARK: Compiling

    static func compile(_ json: JSON) throws(Failure) -> FilterTransformer {
        guard case .object(let o) = json else {
            throw Failure(position: "", reason: "a transformer must be an object, found \(JSON.kindName(json))")
        }
        guard case .string(let type)? = o["type"] else {
            throw Failure(position: ".type", reason: "missing or non-string transformer type")
        }
        let config = o["config"]
        func configObject(_ key: String) throws(Failure) -> JSONObject {
            guard case .object(let c)? = config else {
                throw Failure(position: ".config", reason: "\"\(type)\" needs a config object")
            }
            guard case .object(let inner)? = c[key] else {
                throw Failure(position: ".config.\(key)", reason: "\"\(type)\" needs an object at config.\(key)")
            }
            return inner
        }
        func keyLists(_ key: String) throws(Failure) -> [(path: FilterPath?, keys: [String])] {
            var lists: [(path: FilterPath?, keys: [String])] = []
            for (path, value) in try configObject(key) {
                guard case .array(let items) = value else {
                    throw Failure(position: ".config.\(key)[\"\(path)\"]", reason: "expected an array of property names, found \(JSON.kindName(value))")
                }
                var keys: [String] = []
                for (i, item) in items.enumerated() {
                    guard case .string(let k) = item else {
                        throw Failure(position: ".config.\(key)[\"\(path)\"][\(i)]", reason: "property names must be strings, found \(JSON.kindName(item))")
                    }
                    keys.append(k)
                }
                lists.append((path.isEmpty ? nil : FilterPath(path), keys))
            }
            return lists
        }

        switch type {
        case "drop":
            return .drop
        case "drop_properties":
            return .dropProperties(try keyLists("drop"))
        case "allow_properties":
            return .allowProperties(try keyLists("allow"))
        case "sample_event":
            let sample = try configObject("sample")
            guard case .number(let percent)? = sample["percent"] else {
                throw Failure(position: ".config.sample.percent", reason: "sample_event needs a numeric percent")
            }
            var path: FilterPath?
            switch sample["path"] {
            case nil, .null?: path = nil
            case .string(let p)?: path = p.isEmpty ? nil : FilterPath(p)
            case let other?:
                throw Failure(position: ".config.sample.path", reason: "the sample path must be a string, found \(JSON.kindName(other))")
            }
            return .sample(percent: percent.value, path: path)
        case "map_properties":
            var actions: [MapAction] = []
            for (target, spec) in try configObject("map") {
                let at = ".config.map[\"\(target)\"]"
                guard case .object(let s) = spec else {
                    throw Failure(position: at, reason: "a map entry must be an object, found \(JSON.kindName(spec))")
                }
                func pathMember(_ name: String) throws(Failure) -> FilterPath? {
                    switch s[name] {
                    case nil: return nil
                    case .string(let p)?: return p.isEmpty ? nil : FilterPath(p)
                    case let other?:
                        throw Failure(position: "\(at).\(name)", reason: "\(name) takes a path string, found \(JSON.kindName(other))")
                    }
                }
                let source: MapAction.Source
                if let from = try pathMember("copy") {
                    source = .copy(from)
                } else if let from = try pathMember("move") {
                    source = .move(from)
                } else if let value = s["set"] {
                    source = .set(value)
                } else {
                    source = .none
                }
                var toString = false
                switch s["to_string"] {
                case nil: break
                case .bool(let b)?: toString = b
                case let other?:
                    throw Failure(position: "\(at).to_string", reason: "to_string must be a boolean, found \(JSON.kindName(other))")
                }
                actions.append(MapAction(target: FilterPath(target), source: source, toString: toString))
            }
            return .map(actions)
        case "hash_properties":
            return .hashProperties
        default:
            throw Failure(position: ".type", reason: "unknown transformer \"\(type)\"")
        }
    }

    // MARK: Applying

    /// Runs the transformer on `payload` (copy-on-write: an event no transformer changes keeps
    /// sharing its storage).
    func apply(to payload: inout JSONObject, random: @Sendable () -> Double) -> Result {
        switch self {
        case .drop:
            return .dropped("drop")
        case .dropProperties(let lists):
            var changed = false
            for (path, keys) in lists {
                changed = FilterTransformer.editObjects(at: path, in: &payload,
                    needsEdit: { o in o.contains { FilterTransformer.listed($0.key, in: keys) } },
                    keep: { !FilterTransformer.listed($0, in: keys) }) || changed
            }
            return .kept(changed: changed)
        case .allowProperties(let lists):
            var changed = false
            for (path, keys) in lists {
                changed = FilterTransformer.editObjects(at: path, in: &payload,
                    needsEdit: { o in o.contains { !FilterTransformer.listed($0.key, in: keys) } },
                    keep: { FilterTransformer.listed($0, in: keys) }) || changed
            }
            return .kept(changed: changed)
        case .sample(let percent, let path):
            if percent <= 0 { return .dropped("sample_event at 0%") }
            if percent >= 1 { return .kept(changed: false) }
            let keep: Bool
            if let path {
                // A missing value is hashed too (as nothing), so those events all get one answer.
                keep = ConsistentSampler.keeps(path.value(in: payload), percent: percent)
            } else {
                // No path: a fair coin of the right weight.
                keep = random() < percent
            }
            return keep ? .kept(changed: false) : .dropped("sampled out by sample_event at \(percent * 100)%")
        case .map(let actions):
            let snapshot = payload
            var changed = false
            for action in actions where FilterTransformer.parentExists(action.target, in: snapshot) {
                switch action.source {
                case .copy(let from):
                    if let v = from.value(in: snapshot) { action.target.set(v, in: &payload); changed = true }
                case .move(let from):
                    if let v = from.value(in: snapshot) { action.target.set(v, in: &payload) }
                    from.remove(from: &payload)
                    changed = true
                case .set(let v):
                    action.target.set(v, in: &payload)
                    changed = true
                case .none:
                    break
                }
                if action.toString, let text = FilterTransformer.scalarText(action.target.value(in: payload)) {
                    action.target.set(.string(text), in: &payload)
                    changed = true
                }
            }
            return .kept(changed: changed)
        case .hashProperties:
            return .kept(changed: false)
        }
    }

    /// Keeps only the members whose key passes `keep` in the object at `path` (or in each object
    /// of the array there), touching the event only when `needsEdit` says something will change,
    /// so an untouched event keeps sharing its storage.
    private static func editObjects(at path: FilterPath?, in payload: inout JSONObject,
                                    needsEdit: (JSONObject) -> Bool, keep: (String) -> Bool) -> Bool {
        func edit(_ o: inout JSONObject) { o.keepMembers(where: keep) }
        guard let path else {
            guard needsEdit(payload) else { return false }
            edit(&payload)
            return true
        }
        switch path.value(in: payload) {
        case .object(let o)?:
            guard needsEdit(o) else { return false }
        case .array(let a)?:
            guard a.contains(where: { if case .object(let o) = $0 { return needsEdit(o) }; return false }) else { return false }
        default:
            return false
        }
        path.modify(in: &payload) { value in
            switch value {
            case .object(var o):
                value = .null
                edit(&o)
                value = .object(o)
            case .array(var a):
                value = .null
                for i in a.indices {
                    guard case .object(var o) = a[i] else { continue }
                    a[i] = .null
                    edit(&o)
                    a[i] = .object(o)
                }
                value = .array(a)
            default:
                break
            }
        }
        return true
    }

    @inline(__always)
    private static func listed(_ key: String, in keys: [String]) -> Bool {
        let n = key.utf8.count
        for k in keys where k.utf8.count == n && k == key { return true }
        return false
    }

    /// A map target is written only when its parent exists (as an object or array) in the
    /// snapshot; top-level targets always are.
    private static func parentExists(_ target: FilterPath, in snapshot: JSONObject) -> Bool {
        guard target.segments.count > 1 else { return true }
        var current: JSON = .object(snapshot)
        for segment in target.segments.dropLast() {
            guard let next = FilterPath.step(current, segment) else { return false }
            current = next
        }
        switch current {
        case .object, .array: return true
        default: return false
        }
    }

    /// `to_string`: numbers and booleans become their text as JavaScript's `String(x)` writes it
    /// (numbers from their value); strings, objects, arrays, null and missing values are left alone.
    private static func scalarText(_ value: JSON?) -> String? {
        switch value {
        case .bool(let b)?: return b ? "true" : "false"
        case .number(let n)?: return JavaScriptNumberText.string(n.value)
        default: return nil
        }
    }
}
