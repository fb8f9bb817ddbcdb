extension ProcessDestination {
    /// A runner's `AH_EXT_CLIENTS` call, answered by the host's second clients: (status, reply).
    static func answerClients(_ function: IsolationWire.Function, id: UInt64, bytes: [UInt8],
                              _ clients: NativeClientsService?) -> (UInt8, [UInt8]) {
        guard let clients else { return (IsolationWire.permanent, Array("this host offers no second clients".utf8)) }
        func answer(_ result: NativeHookResult) -> (UInt8, [UInt8]) {
            switch result {
            case .ok: return (IsolationWire.ok, [])
            case .retryable(let m): return (IsolationWire.retryable, Array(m.utf8))
            case .permanent(let m): return (IsolationWire.permanent, Array(m.utf8))
            }
        }
        func optional(_ text: String?) -> (UInt8, [UInt8]) {
            text.map { (IsolationWire.ok, Array($0.utf8)) } ?? (IsolationWire.absent, [])
        }
        switch function {
        case .clientsOpen:
            switch clients.open(String(decoding: bytes, as: UTF8.self)) {
            case .success(let id): return (IsolationWire.ok, Array(String(id).utf8))
            case .failure(let e): return (e.retryable ? IsolationWire.retryable : IsolationWire.permanent, Array(e.message.utf8))
            }
        case .clientsSend: return answer(clients.sendEvent(id, bytes))
        case .clientsUserId: return optional(clients.userId(id))
        case .clientsAnonymousId: return optional(clients.anonymousId(id))
        case .clientsTraits: return optional(clients.traits(id)?.serialized())
        case .clientsReset: return answer(clients.reset(id))
        case .clientsFlush: return answer(clients.flush(id))
        default: return (IsolationWire.permanent, Array("not a clients call".utf8))
        }
    }
}
