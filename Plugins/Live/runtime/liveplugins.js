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

    // analytics-swift's PluginType raw values, which analytics-swift-live hands to JavaScript:
    // a plugin's `type` is one of these numbers (the library maps them to the host's stages).
    const LivePluginType = Object.freeze({ before: 0, enrichment: 1, after: 3, utility: 4 });
    // What update(settings, type) receives: the strings analytics-swift-live and -kotlin-live pass.
    const UpdateType = Object.freeze({ initial: "Initial", refresh: "Refresh" });
    const stageNames = new Map([[0, "before"], [1, "enrichment"], [3, "after"], [4, "utility"]]);

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
    // The ids of the event a plugin is processing now (or of the signal processSignal handles):
    // an event sent meanwhile carries those it lacks when its client keeps no user (the host's
    // server mode, where each event names its own person), so it belongs to the person whose
    // event made it, never to nobody and never to someone stored.
    let processing = null;
    // A warning in the host's log (bad arguments: the call does nothing, as in the references,
    // but never silently).
    function warn(message) { native("warning", message); }
    // A JSON object argument, or undefined when it is absent or not an object (null, a string,
    // an array...: the references read those as "no properties"; said in the log).
    function objectArgument(value, what) {
        if (value === undefined || value === null) return undefined;
        if (typeof value !== "object" || Array.isArray(value)) {
            warn(what + " is " + (Array.isArray(value) ? "an array" : typeof value) + ", not an object: ignored");
            return undefined;
        }
        return value;
    }
    // The argument a call needs as a string, or undefined (then the call sends nothing, as the
    // references do, and says why in the log).
    function stringArgument(value, call, what) {
        if (typeof value === "string") return value;
        warn(call + ": " + what + " must be a string, found " + (value === null ? "null" : typeof value) + ": nothing sent");
        return undefined;
    }

    // The user as the bundle last changed it. Events the bundle sends reach the host after the
    // call returns (and identify/alias change the host's user only when the host processes
    // them), so `identify("x")` then `userId` in the same call would read the old id: this
    // overlay answers "x" until the host reports it, or reports some other change of its own.
    class PendingValue {
        constructor() { this.set = false; this.value = undefined; this.before = undefined; }
        put(value, hostNow) { if (!this.set) this.before = hostNow; this.set = true; this.value = value; }
        read(hostNow, same) {
            if (!this.set) return hostNow;
            if (same(hostNow, this.value) || !same(hostNow, this.before)) { this.set = false; return hostNow; }
            return this.value;
        }
    }
    const sameText = (a, b) => a === b;
    const sameJSON = (a, b) => JSON.stringify(a) === JSON.stringify(b);

    // analytics-swift-live's `new Analytics(writeKey)`: the app's client for its own write key
    // (or none); for another key a second client that sends to Segment.io under that key, with
    // its own queue (the host's AH_EXT_CLIENTS capability), one per key.
    const clients = new Map();
    class Analytics {
        #client;       // "" for the host's client, else the second client's id
        #userId = new PendingValue();
        #traits = new PendingValue();
        constructor(writeKey) {
            const key = writeKey === undefined || writeKey === null ? config.writeKey : String(writeKey);
            const mine = key === config.writeKey || config.writeKey === "" && clients.size === 0;
            const existing = clients.get(mine ? "" : key);
            if (existing) return existing;
            this.#client = mine ? "" : native("clientOpen", key);
            clients.set(mine ? "" : key, this);
        }
        #hostUserId() { return native("userId", this.#client); }
        #hostTraits() { return JSON.parse(native("traits", this.#client) || "{}"); }
        get userId() { return this.#userId.read(this.#hostUserId(), sameText); }
        get anonymousId() { return native("anonymousId", this.#client); }
        get traits() { return this.#traits.read(this.#hostTraits(), sameJSON); }

        // `context` (the last argument of track/identify/screen/group, as analytics-swift-live
        // takes it) is merged into the event's context; the origin marker is always the host's.
        // An event made while processing one that JavaScript made carries how deep it is
        // (`depth`, 2 and more; the library refuses it past maxEventDepth).
        #send(event, context) {
            if (processing !== null && native("anonymousId", this.#client) === null) {
                if (event.userId === undefined && typeof processing.userId === "string") event.userId = processing.userId;
                if (event.anonymousId === undefined && typeof processing.anonymousId === "string") event.anonymousId = processing.anonymousId;
            }
            const marker = { type: origin, version: config.version };
            const depth = Number(native("depth"));
            if (depth > 1) marker.depth = depth;
            event.context = Object.assign({}, objectArgument(context, event.type + ": context"), { __eventOrigin: marker });
            native("send", JSON.stringify(event), this.#client);
        }
        track(event, properties, context) {
            const name = stringArgument(event, "track", "the event name");
            if (name === undefined) return;
            this.#send({ type: "track", event: name, properties: objectArgument(properties, "track: properties") || {} }, context);
        }
        identify(userId, traits, context) {
            const id = stringArgument(userId, "identify", "the userId");
            if (id === undefined) return;
            const t = objectArgument(traits, "identify: traits");
            const e = { type: "identify", userId: id, traits: t || {} };
            const hostTraits = this.#hostTraits();
            const merged = Object.assign({}, this.#traits.read(hostTraits, sameJSON), t || {});
            this.#send(e, context);
            this.#userId.put(id, this.#hostUserId());
            this.#traits.put(merged, hostTraits);
        }
        screen(title, category, properties, context) {
            const name = stringArgument(title, "screen", "the title");
            if (name === undefined) return;
            const e = { type: "screen", name: name, properties: objectArgument(properties, "screen: properties") || {} };
            if (typeof category === "string") e.category = category;
            this.#send(e, context);
        }
        // analytics.js's page([category], [name], [properties], [options]), its arguments read as
        // analytics.js reads them: one string is the name, two are the category and the name; the
        // first object the properties, the second the options (their `context`, else themselves,
        // is merged into the event's context).
        page(...args) {
            const strings = args.filter((a) => typeof a === "string");
            const objects = args.filter((a) => a !== null && typeof a === "object" && !Array.isArray(a));
            const e = { type: "page", properties: objects[0] || {} };
            if (strings.length >= 2) { e.category = strings[0]; e.name = strings[1]; } else if (strings.length === 1) e.name = strings[0];
            const options = objects[1];
            this.#send(e, options && options.context !== null && typeof options.context === "object" ? options.context : options);
        }
        group(groupId, traits, context) {
            const id = stringArgument(groupId, "group", "the groupId");
            if (id === undefined) return;
            this.#send({ type: "group", groupId: id, traits: objectArgument(traits, "group: traits") || {} }, context);
        }
        alias(newId, context) {
            const id = stringArgument(newId, "alias", "the new id");
            if (id === undefined) return;
            const previous = this.userId ?? processing?.userId ?? null;
            this.#send({ type: "alias", userId: id, previousId: previous === null ? this.anonymousId ?? processing?.anonymousId ?? null : previous }, context);
            this.#userId.put(id, this.#hostUserId());
        }
        reset() {
            native("reset", this.#client);
            // As the web signals runtime does: a reset forgets the signals buffered so far.
            if (this.#client === "" && typeof global.__signalsReset === "function") global.__signalsReset();
            this.#userId.put(null, this.#hostUserId());
            this.#traits.put({}, this.#hostTraits());
        }
        flush() { native("flush", this.#client); }
        // Adds a LivePlugin to this host's timeline, or to the timeline of its `destination`.
        // true when added; false (said in the log) for a plugin without a LivePluginType or on a
        // second client (which runs no plugins). A destination the settings do not name is said
        // in the log; the plugin waits for it (the settings may create it later).
        add(plugin) {
            const refuse = (why) => { warn("add: " + why + ": not added"); return false; };
            if (plugin === null || typeof plugin !== "object") return refuse("expected a LivePlugin, found " + (plugin === null ? "null" : typeof plugin));
            const name = (plugin.constructor && plugin.constructor.name) || "LivePlugin";
            if (this.#client !== "") return refuse("plugin " + name + ": a second client (new Analytics(writeKey)) runs no plugins");
            const stage = stageNames.get(plugin.type);
            if (stage === undefined) return refuse("plugin " + name + " has type " + (typeof plugin.type === "string" ? JSON.stringify(plugin.type) : text(plugin.type)) + ", not a LivePluginType");
            const destination = typeof plugin.destination === "string" ? plugin.destination : null;
            if (destination !== null) {
                const known = native("destinations");
                if (!JSON.parse(known).includes(destination)) {
                    warn("add: plugin " + name + " names destination \"" + destination + "\", which the settings do not name " +
                         "(their integrations: " + known + "); it waits for a destination with that key");
                }
            }
            const id = nextPluginId++;
            plugins.set(id, plugin);
            try {
                native("add", String(id), JSON.stringify({
                    type: stage, destination: destination, name: name,
                    failClosed: plugin.failClosed === true, handles: handledTypes(plugin),
                }));
            } catch (e) {
                plugins.delete(id);
                throw e;
            }
            return true;
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
        const previous = processing;
        processing = { userId: event.userId, anonymousId: event.anonymousId };
        let result;
        try {
            result = typeof plugin.execute === "function" ? plugin.execute(event) : plugin.process(event);
        } finally {
            processing = previous;
        }
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
    // Sets the origin of the events sent from now on ("signals" or "js") and the ids they take
    // (see `processing`); returns the previous two, which restore them.
    entry("__livePluginsSetOrigin", function (type, ids) {
        const previous = [origin, processing];
        origin = type === "signals" ? "signals" : "js";
        processing = ids === undefined ? null : ids;
        return previous;
    });
    entry("__livePluginsFlush", function (id) {
        const plugin = pluginWith(id);
        if (typeof plugin.flush === "function") plugin.flush();
    });

    // analytics-kotlin-live's and substrata's data bridge: values the application shares with
    // JavaScript (the dataBridge option), read as `DataBridge["key"]`; what the bundle writes
    // stays in its context.
    const DataBridge = config.dataBridge !== null && typeof config.dataBridge === "object" ? config.dataBridge : {};
    const globals = { LivePluginType, UpdateType, LivePlugin, Analytics, analytics, console, storage, DataBridge, dataBridge: DataBridge };
    for (const name of Object.keys(globals)) {
        Object.defineProperty(global, name, { value: globals[name], writable: true, enumerable: false, configurable: true });
    }
})(this);
