import CAnalyticsABI

/// The C side of each hook: decode the borrowed inputs, call the integration, and turn whatever
/// happens into a status plus error text. Nothing thrown ever leaves these functions.
enum HookCalls {
    /// Runs `body`, mapping `IntegrationError.retryable` to AH_ERR_RETRYABLE and every other
    /// error to AH_ERR_PERMANENT, with the message written to `err`.
    @inline(__always)
    static func run(_ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int, _ body: () throws -> Void) -> ah_status {
        do {
            try body()
            return ah_status(AH_OK)
        } catch {
            ErrorText.write(ErrorText.describe(error), to: err, capacity: errCapacity)
            if case IntegrationError.retryable = error { return ah_status(AH_ERR_RETRYABLE) }
            return ah_status(AH_ERR_PERMANENT)
        }
    }

    /// Parses a borrowed JSON text that must be an object.
    static func object(_ text: UnsafePointer<CChar>, _ length: Int, what: String) throws(IntegrationError) -> JSONObject {
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: max(0, length))
        let value: JSON
        do { value = try JSON(parsingUTF8: bytes) } catch { throw .permanent("\(what) is not valid JSON: \(error)") }
        guard case .object(let object) = value else { throw .permanent("\(what) is not a JSON object") }
        return object
    }

    /// Decodes the event of an event hook and checks that its type is the hook's.
    static func event(_ text: UnsafePointer<CChar>, _ length: Int, hook: String, accepts: (EventType) -> Bool) throws -> Event {
        let event = try Event(payload: object(text, length, what: "the \(hook) event"))
        guard accepts(event.type) else {
            throw IntegrationError.permanent("the \(hook) hook received a \"\(event.type.rawValue)\" event")
        }
        return event
    }
}

// MARK: - The functions in the ah_integration / ah_hooks tables

func hookCreate(_ host: UnsafePointer<ah_host>, _ settings: UnsafePointer<CChar>, _ settingsLength: Int,
                _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> OpaquePointer? {
    guard let type = ExportedTables.registeredType else {
        ErrorText.write("create called before the entry function", to: err, capacity: errCapacity)
        return nil
    }
    guard host.pointee.size >= UInt32(MemoryLayout<ah_host>.size) else {
        ErrorText.write("\(type.key): the host's ah_host table is \(host.pointee.size) bytes, smaller than the ABI 1.0 layout (\(MemoryLayout<ah_host>.size) bytes)", to: err, capacity: errCapacity)
        return nil
    }
    var instance: OpaquePointer?
    let status = HookCalls.run(err, errCapacity) {
        let object = try HookCalls.object(settings, settingsLength, what: "the settings of \(type.key)")
        let finishesLater = type is any TrackLaterHook.Type || type is any IdentifyLaterHook.Type || type is any ScreenLaterHook.Type
            || type is any GroupLaterHook.Type || type is any AliasLaterHook.Type
        let wrapped = IntegrationHost(host, finishesLater: finishesLater)
        instance = IntegrationInstance(integration: try type.init(settings: object, host: wrapped), host: wrapped).opaque
    }
    return status == ah_status(AH_OK) ? instance : nil
}

func hookTrack(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
               _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        try instance.track!.track(TrackEvent(HookCalls.event(json, length, hook: "track") { $0 == .track }))
    }
}

func hookIdentify(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                  _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        try instance.identify!.identify(IdentifyEvent(HookCalls.event(json, length, hook: "identify") { $0 == .identify }))
    }
}

func hookScreen(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        try instance.screen!.screen(ScreenEvent(HookCalls.event(json, length, hook: "screen") { $0 == .screen || $0 == .page }))
    }
}

func hookGroup(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
               _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        try instance.group!.group(GroupEvent(HookCalls.event(json, length, hook: "group") { $0 == .group }))
    }
}

func hookAlias(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
               _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        try instance.alias!.alias(AliasEvent(HookCalls.event(json, length, hook: "alias") { $0 == .alias }))
    }
}

func hookReset(_ self_: OpaquePointer, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) { try instance.reset!.reset() }
}

func hookFlush(_ self_: OpaquePointer, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) { try instance.flush!.flush() }
}

func hookUpdate(_ self_: OpaquePointer, _ settings: UnsafePointer<CChar>, _ length: Int, _ kind: Int32,
                _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        let object = try HookCalls.object(settings, length, what: "the new settings")
        try instance.settings!.update(settings: object, type: kind == Int32(AH_UPDATE_INITIAL) ? .initial : .refresh)
    }
}

func hookLifecycle(_ self_: OpaquePointer, _ phase: Int32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.run(err, errCapacity) {
        switch phase {
        case Int32(AH_LIFECYCLE_STARTED): try instance.lifecycle!.started()
        case Int32(AH_LIFECYCLE_STOPPING): try instance.lifecycle!.stopping()
        default: break  // a phase from a newer minor: nothing to do
        }
    }
}

func hookDestroy(_ self_: OpaquePointer) {
    IntegrationInstance.release(self_)
}
