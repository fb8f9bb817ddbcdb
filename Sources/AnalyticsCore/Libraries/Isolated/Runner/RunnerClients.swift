/// `AH_EXT_CLIENTS` inside analytics-plugin-runner: every call crosses to the host (a `call`
/// frame, waited on), whose second clients answer (`ProcessDestination.answerClients`).
enum RunnerClients {
    static func forwarding(_ out: PluginRunner.Output) -> NativeClientsService {
        return NativeClientsService(
            open: { key in
                let (status, reply) = out.call(.clientsOpen, 0, Array(key.utf8), wait: true)
                if status == IsolationWire.ok, let id = UInt64(RunnerClients.text(reply)) { return .success(id) }
                return .failure(NativeClientsError(message: RunnerClients.text(reply), retryable: status == IsolationWire.retryable))
            },
            sendEvent: { id, bytes in
                let (status, reply) = out.call(.clientsSend, Int64(bitPattern: id), bytes, wait: true)
                return PluginRunner.Server.result(status, reply)
            },
            userId: { id in
                let (status, reply) = out.call(.clientsUserId, Int64(bitPattern: id), wait: true)
                return status == IsolationWire.ok ? RunnerClients.text(reply) : nil
            },
            anonymousId: { id in
                let (status, reply) = out.call(.clientsAnonymousId, Int64(bitPattern: id), wait: true)
                return status == IsolationWire.ok ? RunnerClients.text(reply) : nil
            },
            traits: { id in
                let (status, reply) = out.call(.clientsTraits, Int64(bitPattern: id), wait: true)
                return status == IsolationWire.ok ? (try? JSON(parsing: reply))?.objectValue : nil
            },
            reset: { id in
                let (status, reply) = out.call(.clientsReset, Int64(bitPattern: id), wait: true)
                return PluginRunner.Server.result(status, reply)
            },
            flush: { id in
                let (status, reply) = out.call(.clientsFlush, Int64(bitPattern: id), wait: true)
                return PluginRunner.Server.result(status, reply)
            })
    }

    private static func text(_ reply: [UInt8]) -> String { String(decoding: reply, as: UTF8.self) }
}
