import Dispatch

/// What `AH_EXT_CLIENTS` offers an instance (second clients for other write keys), as Swift
/// closures, every one [any thread] and none calling into a library. In process mode the runner
/// forwards each over the wire to the host's.
package struct NativeClientsService: Sendable {
    /// The id of the client for a write key (made on first use), or why not.
    package var open: @Sendable (String) -> Result<UInt64, NativeClientsError>
    /// An event (JSON object text) into client `id`'s pipeline.
    package var sendEvent: @Sendable (UInt64, [UInt8]) -> NativeHookResult
    /// Client `id`'s userId / anonymousId (nil for an unknown id or none) and traits.
    package var userId: @Sendable (UInt64) -> String?
    package var anonymousId: @Sendable (UInt64) -> String?
    package var traits: @Sendable (UInt64) -> JSONObject?
    /// Client `id`'s reset (now) and flush (asked for, not waited on).
    package var reset: @Sendable (UInt64) -> NativeHookResult
    package var flush: @Sendable (UInt64) -> NativeHookResult
}

/// Why a second client was not opened: `retryable` when it may work later (the host is
/// stopping, its storage cannot be opened now).
package struct NativeClientsError: Error, Sendable {
    package var message: String
    package var retryable: Bool
}

extension NativeClientsService {
    /// The second clients of `analytics` (held weakly, as every host service is), for the
    /// library `key` (noted beside the queues of the clients it opens).
    static func forwarding(to analytics: Analytics, key: String) -> NativeClientsService {
        let weak = WeakAnalytics(analytics)
        let gone = NativeHookResult.retryable("the client is gone")
        return NativeClientsService(
            open: { writeKey in
                guard let analytics = weak.value else { return .failure(NativeClientsError(message: "the client is gone", retryable: true)) }
                do throws(SecondClients.OpenError) {
                    return .success(try analytics.openSecondClient(writeKey: writeKey, library: key))
                } catch {
                    switch error {
                    case .refused(let why): return .failure(NativeClientsError(message: why, retryable: false))
                    case .unavailable(let why): return .failure(NativeClientsError(message: why, retryable: true))
                    }
                }
            },
            sendEvent: { id, bytes in
                guard let analytics = weak.value else { return gone }
                guard let client = analytics.secondClients.client(id) else { return .permanent("no second client with id \(id)") }
                return HostServices.sendBack(bytes, to: client, key: "new Analytics(\"\(client.configuration.writeKey)\")")
            },
            userId: { id in weak.value?.secondClients.client(id)?.userId },
            anonymousId: { id in weak.value?.secondClients.client(id)?.storedAnonymousId },
            traits: { id in weak.value?.secondClients.client(id)?.traits },
            reset: { id in
                guard let client = weak.value?.secondClients.client(id) else { return .permanent("no second client with id \(id)") }
                client.resetUserNowAndPluginsLater()
                return .ok
            },
            flush: { id in
                guard let client = weak.value?.secondClients.client(id) else { return .permanent("no second client with id \(id)") }
                DispatchQueue.global().async { client.flush() }
                return .ok
            })
    }
}
