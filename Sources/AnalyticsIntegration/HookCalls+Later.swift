import CAnalyticsABI

/// The C side of the hooks' completion forms: take the host's token for the call, hand the hook
/// a ``Completion``, and answer what it gave during the call, or AH_PENDING when it will answer
/// later (a throw answers at once).
extension HookCalls {
    static func runLater(_ instance: IntegrationInstance, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int,
                         _ body: (Completion) throws -> Void) -> ah_status {
        let box = CompletionBox(token: instance.host.finishLater?.token() ?? 0, host: instance.host)
        do {
            try body(Completion(box: box))
        } catch {
            box.close()
            ErrorText.write(ErrorText.describe(error), to: err, capacity: errCapacity)
            if case IntegrationError.retryable = error { return ah_status(AH_ERR_RETRYABLE) }
            return ah_status(AH_ERR_PERMANENT)
        }
        guard let (status, reason) = box.returned() else { return ah_status(AH_PENDING) }
        if status != ah_status(AH_OK) { ErrorText.write(reason, to: err, capacity: errCapacity) }
        return status
    }
}

func hookTrackLater(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                    _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.runLater(instance, err, errCapacity) { completion in
        try instance.trackLater!.track(TrackEvent(HookCalls.event(json, length, hook: "track") { $0 == .track }), completion: completion)
    }
}

func hookIdentifyLater(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                       _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.runLater(instance, err, errCapacity) { completion in
        try instance.identifyLater!.identify(IdentifyEvent(HookCalls.event(json, length, hook: "identify") { $0 == .identify }), completion: completion)
    }
}

func hookScreenLater(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                     _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.runLater(instance, err, errCapacity) { completion in
        try instance.screenLater!.screen(ScreenEvent(HookCalls.event(json, length, hook: "screen") { $0 == .screen || $0 == .page }),
                                         completion: completion)
    }
}

func hookGroupLater(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                    _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.runLater(instance, err, errCapacity) { completion in
        try instance.groupLater!.group(GroupEvent(HookCalls.event(json, length, hook: "group") { $0 == .group }), completion: completion)
    }
}

func hookAliasLater(_ self_: OpaquePointer, _ json: UnsafePointer<CChar>, _ length: Int,
                    _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> ah_status {
    let instance = IntegrationInstance.from(self_)
    return HookCalls.runLater(instance, err, errCapacity) { completion in
        try instance.aliasLater!.alias(AliasEvent(HookCalls.event(json, length, hook: "alias") { $0 == .alias }), completion: completion)
    }
}
