/// Fills in `context` on every event.
///
/// Device mode (``IdentityMode/device``): library, os, device, app, locale and timezone; the
/// machine's part is computed once; keys the caller already set win.
///
/// Server mode: `context.library` only, appended after the event's own keys when it has none, so
/// the event's own context is otherwise kept as it came (values and key order). The machine the
/// host runs on is not the users' machine: its os, model, locale or timezone would become every
/// user's in the vendors' dashboards.
package final class ContextPlugin: Plugin {
    package let type = PluginType.before
    /// What an event without a context gets (and, in device mode, what one with a context is merged into).
    let staticContext: JSONObject
    private let identity: IdentityMode
    private let library: JSON

    init(identity: IdentityMode = .device, application: ApplicationInfo?) {
        self.identity = identity
        library = SystemContext.library
        let encoded = PreEncodedObject(identity == .device ? SystemContext.make(application: application) : ["library": library])
        staticContext = encoded.object
        PreEncodedObject.register(encoded)
    }

    package func execute(_ event: Event) -> Event? {
        var event = event
        if let given = event.payload["context"]?.objectValue, !given.isEmpty {
            switch identity {
            case .device:
                var merged = staticContext
                merged.merge(given)
                event.payload["context"] = .object(merged)
            case .server:
                guard given["library"] == nil else { return event }
                var context = given
                context.appendUnique("library", library)
                event.payload["context"] = .object(context)
            }
        } else {
            event.payload["context"] = .object(staticContext)
        }
        return event
    }
}
