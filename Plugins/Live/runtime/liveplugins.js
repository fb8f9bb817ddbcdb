/*
 * The LivePlugins runtime: the JavaScript API of Analytics Live (analytics, Analytics,
 * LivePlugin, LivePluginType, UpdateType, console, storage), set up in every new context before
 * the bundle runs. Embedded into libliveplugins.so at build time (live_preludes.c).
 *
 * The library reaches this file through the non-enumerable, read-only globals
 * __livePluginsProcess / __livePluginsUpdate / __livePluginsReset / __livePluginsFlush, and this
 * file reaches the library only through __live_native(op, a, b), which it captures and removes
 * from the global object so that bundle code cannot call it.
 */
(function (global) {
    "use strict";
    const native = global.__live_native;
    delete global.__live_native;
    const config = JSON.parse(native("config"));

    const LivePluginType = Object.freeze({
        before: "before", enrichment: "enrichment", after: "after", utility: "utility",
    });
    const UpdateType = Object.freeze({ initial: true, refresh: false });
    const pluginTypes = new Set(Object.values(LivePluginType));

    function text(value) {
        if (typeof value === "string") return value;
        if (value instanceof Error) return String(value);
        if (value === undefined) return "undefined";
        try {
            const json = JSON.stringify(value);
            return json === undefined ? String(value) : json;
        } catch (e) {
            return String(value);
        }
    }
    function logger(level) {
        return function (...args) { native("log", level, args.map(text).join(" ")); };
    }
    const console = Object.freeze({
        log: logger("info"), info: logger("info"), debug: logger("debug"),
        warn: logger("warn"), error: logger("error"),
    });

    // storage: basic JSON values, kept in the library's storage directory across launches.
    let stored = {};
    try {
        const parsed = JSON.parse(native("storageLoad") || "{}");
        if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) stored = parsed;
        else throw new TypeError("not an object");
    } catch (e) {
        native("warning", "storage: the saved values are unreadable (" + e + "); starting empty");
    }
    const copy = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
    const storage = Object.freeze({
        getValue(key) {
            const k = String(key);
            return Object.prototype.hasOwnProperty.call(stored, k) ? copy(stored[k]) : undefined;
        },
        setValue(key, value) {
            if (value === undefined) return this.removeValue(key);
            const json = JSON.stringify(value);
            if (json === undefined) throw new TypeError("storage.setValue: the value has no JSON form");
            const next = Object.assign({}, stored);
            next[String(key)] = JSON.parse(json);
            native("storageSave", JSON.stringify(next));
            stored = next;
        },
        removeValue(key) {
            const k = String(key);
            if (!Object.prototype.hasOwnProperty.call(stored, k)) return;
            const next = Object.assign({}, stored);
            delete next[k];
            native("storageSave", JSON.stringify(next));
            stored = next;
        },
    });

    class LivePlugin {
        #type;
        #destination;
        constructor(type, destination) {
            this.#type = type;
            this.#destination = destination === undefined ? null : destination;
        }
        get type() { return this.#type; }
        get destination() { return this.#destination; }

        update(settings, type) {}
        // The host calls execute; it hands every event to process, which dispatches on its type
        // (analytics-swift-live dispatches from execute, its README documents process: both work).
        execute(event) { return this.process(event); }
        process(event) {
            switch (event && event.type) {
                case "track": return this.track(event);
                case "identify": return this.identify(event);
                case "screen": case "page": return this.screen(event);
                case "group": return this.group(event);
                case "alias": return this.alias(event);
                default: return event;
            }
        }
        track(event) { return event; }
        identify(event) { return event; }
        screen(event) { return event; }
        group(event) { return event; }
        alias(event) { return event; }
        reset() {}
        flush() {}
    }

    const plugins = new Map();
    let nextPluginId = 1;

    // Where events sent now come from: "js", or "signals" while signals.js runs processSignal
    // (through __livePluginsSetOrigin), so that the host does not turn those back into signals.
    let origin = "js";
    // `context`: the optional last argument of track/identify/screen/group (as analytics-swift-live
    // takes it), merged into the event's context; the origin marker is always the host's.
    function send(event, context) {
        const given = optionalObject(context, event.type + ": context");
        event.context = Object.assign({}, given, { __eventOrigin: { type: origin, version: config.version } });
        native("send", JSON.stringify(event));
    }
    function optionalObject(value, what) {
        if (value === undefined || value === null) return {};
        if (typeof value !== "object" || Array.isArray(value)) throw new TypeError(what + " must be an object");
        return value;
    }

    // analytics-swift-live's `new Analytics(writeKey)` wraps the app's client with that key, or
    // starts a second client for a new key. A host runs one client: its key (or none) gives
    // `analytics` itself; another key cannot get a client of its own here, and says so at once
    // rather than accept events it could not deliver.
    const clients = new Map();
    class Analytics {
        constructor(writeKey) {
            const key = writeKey === undefined || writeKey === null ? config.writeKey : String(writeKey);
            const existing = clients.get(key) || (config.writeKey === "" ? clients.get("") : undefined);
            if (existing) return existing;
            if (clients.size > 0 && config.writeKey !== "" && key !== config.writeKey) {
                throw new Error("new Analytics(\"" + key + "\"): this host runs one client, for write key \"" +
                                config.writeKey + "\"; a client for another write key is not available in " +
                                "LivePlugins (use `analytics`, or new Analytics() for this host's client)");
            }
            clients.set(key, this);
        }
        get userId() { return native("userId"); }
        get anonymousId() { return native("anonymousId"); }
        get traits() { return JSON.parse(native("traits") || "{}"); }

        track(event, properties, context) {
            if (typeof event !== "string" || event === "") throw new TypeError("track: the event name must be a non-empty string");
            send({ type: "track", event: event, properties: optionalObject(properties, "track: properties") }, context);
        }
        identify(userId, traits, context) {
            const e = { type: "identify", traits: optionalObject(traits, "identify: traits") };
            if (userId !== undefined && userId !== null) e.userId = String(userId);
            send(e, context);
        }
        screen(title, category, properties, context) {
            const e = { type: "screen", name: title === undefined || title === null ? "" : String(title),
                        properties: optionalObject(properties, "screen: properties") };
            if (category !== undefined && category !== null) e.category = String(category);
            send(e, context);
        }
        group(groupId, traits, context) {
            if (groupId === undefined || groupId === null || groupId === "") throw new TypeError("group: a groupId is required");
            send({ type: "group", groupId: String(groupId), traits: optionalObject(traits, "group: traits") }, context);
        }
        alias(newId) {
            if (newId === undefined || newId === null || newId === "") throw new TypeError("alias: a new id is required");
            const previous = this.userId;
            send({ type: "alias", userId: String(newId), previousId: previous === null ? this.anonymousId : previous });
        }
        reset() { native("reset"); }
        flush() { native("flush"); }
        add(plugin) {
            if (plugin === null || typeof plugin !== "object") throw new TypeError("add: expected a LivePlugin");
            const type = plugin.type;
            if (!pluginTypes.has(type)) throw new TypeError("add: unknown plugin type " + text(type) + " (use LivePluginType)");
            const destination = plugin.destination;
            if (destination !== null && destination !== undefined && typeof destination !== "string") {
                throw new TypeError("add: destination must be a destination key or null");
            }
            const id = nextPluginId++;
            const name = (plugin.constructor && plugin.constructor.name) || "LivePlugin";
            plugins.set(id, plugin);
            try {
                native("add", String(id), JSON.stringify({
                    type: type, destination: destination === undefined ? null : destination, name: name,
                    failClosed: plugin.failClosed === true, handles: handledTypes(plugin),
                }));
            } catch (e) {
                plugins.delete(id);
                throw e;
            }
            return plugin;
        }
    }
    const analytics = new Analytics(config.writeKey);

    // The event types a plugin does something with, decided when it is added: every type when it
    // has its own execute or process, else those whose method is not LivePlugin's (which returns
    // the event). The library does not call into JavaScript for the other types: the event goes
    // on unchanged, as LivePlugin's method would give it back.
    const dispatched = { track: ["track"], identify: ["identify"], screen: ["screen", "page"], group: ["group"], alias: ["alias"] };
    function handledTypes(plugin) {
        const base = LivePlugin.prototype;
        if (plugin.execute !== base.execute || plugin.process !== base.process) return "all";
        const types = [];
        for (const method of Object.keys(dispatched)) {
            if (plugin[method] !== base[method]) types.push(...dispatched[method]);
        }
        return types;
    }

    function pluginWith(id) {
        const plugin = plugins.get(id);
        if (plugin === undefined) throw new Error("no plugin " + id);
        return plugin;
    }
    function entry(name, fn) {
        Object.defineProperty(global, name, { value: fn, writable: false, enumerable: false, configurable: false });
    }
    // The event's context, read only if the plugin touches it. `contextText`, when given, is the
    // event's last member, `context`, cut out of the event's text by the library: about half of
    // an event's text, which most plugins never look at. In its place the event gets a Proxy
    // whose target stays an empty object until the first operation of any kind on it, which
    // fills the target from the text and then acts on it: to the plugin it is the context object
    // (same keys, values, order, prototype, identity across reads; freezing, spreading and
    // JSON.stringify work as on the object). When the plugin returns this same event with the
    // Proxy still untouched at `context` (wherever the key now is), the answer carries a marker
    // there that only this runtime knows, and the library puts the original text back.
    class LazyContext {
        constructor(text) { this.text = text; }
        fill(target) {
            if (this.text === null) return;
            const text = this.text;
            this.text = null;
            Object.assign(target, JSON.parse(text));
        }
        get(t, k, r) { this.fill(t); return Reflect.get(t, k, r); }
        set(t, k, v, r) { this.fill(t); return Reflect.set(t, k, v, r); }
        has(t, k) { this.fill(t); return Reflect.has(t, k); }
        deleteProperty(t, k) { this.fill(t); return Reflect.deleteProperty(t, k); }
        ownKeys(t) { this.fill(t); return Reflect.ownKeys(t); }
        getOwnPropertyDescriptor(t, k) { this.fill(t); return Reflect.getOwnPropertyDescriptor(t, k); }
        defineProperty(t, k, d) { this.fill(t); return Reflect.defineProperty(t, k, d); }
        getPrototypeOf(t) { this.fill(t); return Reflect.getPrototypeOf(t); }
        setPrototypeOf(t, p) { this.fill(t); return Reflect.setPrototypeOf(t, p); }
        isExtensible(t) { this.fill(t); return Reflect.isExtensible(t); }
        preventExtensions(t) { this.fill(t); return Reflect.preventExtensions(t); }
    }
    const contextMarker = config.contextToken;

    // One event as JSON text in, JSON text (or null: drop) out.
    entry("__livePluginsProcess", function (id, text, contextText) {
        const plugin = pluginWith(id);
        const event = JSON.parse(text);
        let lazy = null, placeholder = null;
        if (contextText !== undefined) {
            lazy = new LazyContext(contextText);
            placeholder = new Proxy({}, lazy);
            event.context = placeholder;
        }
        const result = typeof plugin.execute === "function" ? plugin.execute(event) : plugin.process(event);
        if (result === null || result === undefined) return null;
        if (typeof result !== "object" || Array.isArray(result)) {
            throw new TypeError("returned " + (Array.isArray(result) ? "an array" : typeof result) +
                                ", not an event object (return the event, or null to drop it)");
        }
        if (lazy !== null && lazy.text !== null && result === event && Object.getOwnPropertyDescriptor(event, "context")?.value === placeholder) {
            event.context = contextMarker;
        }
        return JSON.stringify(result);
    });
    entry("__livePluginsUpdate", function (id, update) {
        const plugin = pluginWith(id);
        if (typeof plugin.update === "function") plugin.update(update.settings, update.initial ? UpdateType.initial : UpdateType.refresh);
    });
    entry("__livePluginsReset", function (id) {
        const plugin = pluginWith(id);
        if (typeof plugin.reset === "function") plugin.reset();
    });
    // Sets the origin of the events sent from now on ("signals" or "js"); returns the previous one.
    entry("__livePluginsSetOrigin", function (type) {
        const previous = origin;
        origin = type === "signals" ? "signals" : "js";
        return previous;
    });
    entry("__livePluginsFlush", function (id) {
        const plugin = pluginWith(id);
        if (typeof plugin.flush === "function") plugin.flush();
    });

    const globals = { LivePluginType, UpdateType, LivePlugin, Analytics, analytics, console, storage };
    for (const name of Object.keys(globals)) {
        Object.defineProperty(global, name, { value: globals[name], writable: true, enumerable: false, configurable: true });
    }
})(this);
