/*
 * The Signals runtime: the JavaScript API of Analytics Live's Signals (SignalType, the action
 * constants, RawSignal and its subclasses, the Signals buffer and the global `signals`), set up
 * in every new context after liveplugins.js and before the bundle. Embedded into
 * libliveplugins.so (live_preludes.c); fed by live_signals.c, which receives every signal from
 * the host (AH_EXT_SIGNALS) and calls the read-only global __signalsReceive with it.
 *
 * For each signal: it joins the buffer of the global `signals` in place (this file's, or the one a
 * bundle installed instead, e.g. Segment's signals runtime), then the bundle's global
 * processSignal(signal, {analytics, signals}) runs, if the bundle defines one.
 * Events sent while processSignal runs carry context.__eventOrigin.type "signals", so the host
 * does not turn them back into instrumentation signals.
 */
(function (global) {
    "use strict";
    const SEGMENT_SIGNALS_RUNTIME_VERSION = "1.0.0";

    const SignalType = Object.freeze({
        Interaction: "interaction",
        Navigation: "navigation",
        Network: "network",
        LocalData: "localData",
        Instrumentation: "instrumentation",
        UserDefined: "userDefined",
    });
    const NavigationAction = Object.freeze({
        Forward: "forward", Backward: "backward", Modal: "modal", Entering: "entering",
        Leaving: "leaving", Page: "page", Popup: "popup",
    });
    const NetworkAction = Object.freeze({ Request: "request", Response: "response" });
    const LocalDataAction = Object.freeze({
        Loaded: "loaded", Updated: "updated", Saved: "saved", Deleted: "deleted", Undefined: "undefined",
    });
    const EventType = Object.freeze({
        Track: "track", Page: "page", Screen: "screen", Identify: "identify", Group: "group", Alias: "alias",
    });

    function currentAnonymousId() {
        try {
            const client = global.analytics;
            return client && typeof client.anonymousId === "string" ? client.anonymousId : "";
        } catch (e) {
            return "";
        }
    }

    class RawSignal {
        constructor(type, data) {
            this.anonymousId = currentAnonymousId();
            this.type = type;
            this.data = data === undefined ? {} : data;
            this.timestamp = new Date();
            this.index = -1;  // set by signals.add()
        }
    }
    class NavigationSignal extends RawSignal {
        constructor(action, screen) { super(SignalType.Navigation, { action: action, screen: screen }); }
    }
    class InteractionSignal extends RawSignal {
        // `info` is the documented name; `title` (the name native signals use, and the seed's
        // trackAddToCart reads) carries the same value, so generators work on both.
        constructor(component, info, object) {
            super(SignalType.Interaction, { component: component, info: info, title: info, data: object });
        }
    }
    class NetworkSignal extends RawSignal {
        constructor(action, url, object) { super(SignalType.Network, { action: action, url: url, data: object }); }
    }
    class LocalDataSignal extends RawSignal {
        constructor(action, identifier, object) {
            super(SignalType.LocalData, { action: action, identifier: identifier, data: object });
        }
    }
    class InstrumentationSignal extends RawSignal {
        constructor(rawEvent) {
            const type = rawEvent && Object.values(EventType).includes(rawEvent.type) ? rawEvent.type : "unknown";
            super(SignalType.Instrumentation, { type: type, rawEvent: rawEvent });
        }
    }
    class UserDefinedSignal extends RawSignal {
        constructor(data) { super(SignalType.UserDefined, data); }
    }

    class Signals {
        constructor() {
            this.signalBuffer = [];   // newest first
            this.signalCounter = 0;
            this.maxBufferSize = 1000;
        }
        // A signal made in JavaScript: numbered here.
        add(signal) {
            signal.index = this.getNextIndex();
            this._push(signal);
        }
        getNextIndex() { return this.signalCounter++; }
        _getNextIndex() { return this.getNextIndex(); }
        // A signal from the host: keeps the host's index (the counter moves past it).
        _add(signal) {
            if (typeof signal.index === "number" && signal.index >= this.signalCounter) this.signalCounter = signal.index + 1;
            this._push(signal);
        }
        _push(signal) {
            const buffer = this.signalBuffer;
            buffer.unshift(signal);
            const max = Math.max(0, Math.floor(Number(this.maxBufferSize)) || 0);
            if (buffer.length > max) buffer.length = max;
        }
        // Where a search after `fromSignal` starts: just past it (older signals); past every
        // newer signal when it is no longer in the buffer; the newest when there is none.
        _startAfter(fromSignal) {
            const buffer = this.signalBuffer;
            if (fromSignal === undefined || fromSignal === null) return 0;
            let at = buffer.indexOf(fromSignal);
            if (at < 0 && typeof fromSignal.index === "number") {
                at = buffer.findIndex((s) => s.index === fromSignal.index);
                if (at < 0) {
                    const older = buffer.findIndex((s) => typeof s.index === "number" && s.index < fromSignal.index);
                    return older < 0 ? buffer.length : older;
                }
            }
            return at < 0 ? 0 : at + 1;
        }
        // The most recent signal older than `fromSignal` (any when null) of `signalType` (any
        // when null) for which `predicate` (optional) is true; undefined when there is none.
        find(fromSignal, signalType, predicate) {
            const buffer = this.signalBuffer;
            for (let i = this._startAfter(fromSignal); i < buffer.length; i++) {
                const s = buffer[i];
                if (signalType !== undefined && signalType !== null && s.type !== signalType) continue;
                if (typeof predicate === "function" && !predicate(s)) continue;
                return s;
            }
            return undefined;
        }
        // Every signal older than `fromSignal` (all when null) of `signalType` (any when null)
        // for which `predicate` (optional) is true, newest first.
        filter(fromSignal, signalType, predicate) {
            const buffer = this.signalBuffer, found = [];
            for (let i = this._startAfter(fromSignal); i < buffer.length; i++) {
                const s = buffer[i];
                if (signalType !== undefined && signalType !== null && s.type !== signalType) continue;
                if (typeof predicate === "function" && !predicate(s)) continue;
                found.push(s);
            }
            return found;
        }
        // find(), then `applyPredicate(found)` when something was found; returns what was found.
        findAndApply(fromSignal, signalType, searchPredicate, applyPredicate) {
            const found = this.find(fromSignal, signalType, searchPredicate);
            if (found !== undefined && typeof applyPredicate === "function") applyPredicate(found);
            return found;
        }
    }
    const signals = new Signals();

    function entry(name, fn) {
        Object.defineProperty(global, name, { value: fn, writable: false, enumerable: false, configurable: false });
    }
    // The `signals` in place now: this runtime's, or the one the bundle installed instead (the
    // official signals runtime assigns its own to the global), which is then the one fed.
    function current() {
        const s = global.signals;
        return s !== null && typeof s === "object" ? s : signals;
    }
    // The host's signals configuration (maximumBufferSize, ...).
    entry("__signalsConfigure", function (config) {
        if (config && typeof config.maximumBufferSize === "number" && config.maximumBufferSize >= 0) {
            const s = current();
            s.maxBufferSize = config.maximumBufferSize;
            if (Object.prototype.hasOwnProperty.call(s, "_maxBufferSize")) s._maxBufferSize = config.maximumBufferSize;
        }
    });
    // Bundles written for the earlier shapes (the Analytics Live README's generators read a tap's
    // `data.title` and a response's `data.data`) read the same values from a 3.x signal through
    // aliases that are not enumerable: what a bundle forwards or stringifies stays the 3.x shape.
    function aliasEarlierShape(signal) {
        const d = signal !== null && typeof signal === "object" ? signal.data : undefined;
        if (d === null || typeof d !== "object") return;
        if (signal.type === SignalType.Interaction) {
            const t = d.target;
            if (t === null || typeof t !== "object") return;
            for (const name of ["component", "title", "data"]) {
                if (!(name in d)) Object.defineProperty(d, name, { value: t[name], writable: true, enumerable: false, configurable: true });
            }
        } else if (signal.type === SignalType.Network && !("data" in d) && "body" in d) {
            Object.defineProperty(d, "data", { value: d.body, writable: true, enumerable: false, configurable: true });
        }
    }
    // One signal from the host: into the buffer of the `signals` in place (its `_add`, as the
    // mobile references call, else its `add`), then the bundle's processSignal.
    entry("__signalsReceive", function (signal) {
        aliasEarlierShape(signal);
        const s = current();
        if (typeof s._add === "function") s._add(signal);
        else if (typeof s.add === "function") s.add(signal);
        const process = global.processSignal;
        if (typeof process !== "function") return;
        // Events made from a signal belong to the signal's user (its anonymousId).
        const previous = global.__livePluginsSetOrigin("signals", { anonymousId: signal.anonymousId || undefined });
        try {
            process(signal, { analytics: global.analytics, signals: s });
        } finally {
            global.__livePluginsSetOrigin(...previous);
        }
    });

    // analytics.reset(): the buffer of the `signals` in place is emptied (its clear(), as the web
    // runtime's buffer has, else its signalBuffer).
    entry("__signalsReset", function () {
        const s = current();
        if (typeof s.clear === "function") s.clear();
        else if (Array.isArray(s.signalBuffer)) s.signalBuffer.length = 0;
    });

    const globals = {
        SEGMENT_SIGNALS_RUNTIME_VERSION, SignalType, NavigationAction, NetworkAction, LocalDataAction, EventType,
        RawSignal, NavigationSignal, InteractionSignal, NetworkSignal, LocalDataSignal, InstrumentationSignal,
        UserDefinedSignal, Signals, signals,
    };
    for (const name of Object.keys(globals)) {
        Object.defineProperty(global, name, { value: globals[name], writable: true, enumerable: false, configurable: true });
    }
})(this);
