/// The mark on events made while processing a signal (`context.__eventOrigin`), so that they do
/// not become instrumentation signals themselves: without it, an event generator that answers
/// an instrumentation signal with an event would feed itself forever. The JavaScript runtime
/// stamps exactly ``type``; the client checks exactly ``type``.
package enum SignalsOrigin {
    package static let type = "signals"

    /// True when the event carries `context.__eventOrigin.type == "signals"`.
    package static func isFromSignals(_ event: Event) -> Bool {
        event.payload["context"]?["__eventOrigin"]?["type"]?.stringValue == type
    }

    /// Marks a payload as made from a signal (keeps the rest of its context).
    package static func stamp(_ payload: inout JSONObject, version: JSON? = nil) {
        var context = payload["context"]?.objectValue ?? [:]
        var origin: JSONObject = ["type": .string(type)]
        if let version { origin["version"] = version }
        context["__eventOrigin"] = .object(origin)
        payload["context"] = .object(context)
    }
}
