/// Fills in `context` (library, os, device, app, locale, timezone) on every event. The machine's
/// part is computed once; keys the caller already set win.
package final class ContextPlugin: Plugin {
    package let type = PluginType.before
    let staticContext: JSONObject

    init(application: ApplicationInfo?) {
        let encoded = PreEncodedObject(SystemContext.make(application: application))
        staticContext = encoded.object
        PreEncodedObject.register(encoded)
    }

    package func execute(_ event: Event) -> Event? {
        var event = event
        if let given = event.payload["context"]?.objectValue, !given.isEmpty {
            var merged = staticContext
            merged.merge(given)
            event.payload["context"] = .object(merged)
        } else {
            event.payload["context"] = .object(staticContext)
        }
        return event
    }
}
