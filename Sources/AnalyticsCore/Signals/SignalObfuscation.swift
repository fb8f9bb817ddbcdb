/// Hides what a signal's `data` says before it leaves the process, keeping its shape: every
/// string becomes "***" and every number 0, at any depth, except the documented enumerations
/// (`action`, `component` and `target.component`, and `type` of instrumentation signals) that
/// say what happened
/// without saying to whom. Keys, booleans and nulls stay, so a debugger still shows the structure.
package enum SignalObfuscation {
    package static let mask = "***"

    package static func obfuscate(_ signal: Signal) -> Signal {
        var copy = signal
        var data = JSONObject()
        for (key, value) in signal.data {
            if key == "action" || key == "component" || (key == "type" && signal.type == .instrumentation) {
                data[key] = value
            } else if key == "target", signal.type == .interaction, let target = value.objectValue {
                data[key] = .object(JSONObject(target.map { ($0.key, $0.key == "component" ? $0.value : obfuscate($0.value)) }))
            } else {
                data[key] = obfuscate(value)
            }
        }
        copy.data = data
        return copy
    }

    package static func obfuscate(_ value: JSON) -> JSON {
        switch value {
        case .string: return .string(mask)
        case .number: return .number(0)
        case .array(let a): return .array(a.map(obfuscate))
        case .object(let o): return .object(JSONObject(o.map { ($0.key, obfuscate($0.value)) }))
        case .bool, .null: return value
        }
    }
}
