import CAnalyticsABI

/// `AH_EXT_CLIENTS`: the C table over ``NativeClientsService`` (one static table for the
/// process; each function finds the instance's services through `ctx`).
enum HostClientsTable {
    nonisolated(unsafe) static let table: UnsafePointer<ah_host_clients> = {
        let pointer = UnsafeMutablePointer<ah_host_clients>.allocate(capacity: 1)
        pointer.initialize(to: ah_host_clients(
            size: UInt32(MemoryLayout<ah_host_clients>.size), open: clientsOpen, send_event: clientsSend,
            user_id: clientsUserId, anonymous_id: clientsAnonymousId, traits: clientsTraits,
            reset: clientsReset, flush: clientsFlush))
        return UnsafePointer(pointer)
    }()
}

private func clients(_ ctx: UnsafeMutableRawPointer?, _ name: StaticString) -> NativeClientsService? {
    HostTable.from(ctx, name)?.services.clients
}

private func clientsOpen(_ ctx: UnsafeMutableRawPointer?, _ key: UnsafePointer<CChar>?, _ keyLength: Int,
                         _ outId: UnsafeMutablePointer<UInt64>, _ err: UnsafeMutablePointer<CChar>?, _ errCap: Int) -> ah_status {
    guard let service = clients(ctx, "clients.open") else {
        HostExtensions.write("this host offers no second clients to this instance", into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    }
    let text = key.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: max(0, keyLength)), as: UTF8.self) } ?? ""
    switch service.open(text) {
    case .success(let id):
        outId.pointee = id
        return ah_status(AH_OK)
    case .failure(let e):
        HostExtensions.write(e.message, into: err, capacity: errCap)
        return ah_status(e.retryable ? AH_ERR_RETRYABLE : AH_ERR_PERMANENT)
    }
}

private func clientsSend(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64, _ json: UnsafePointer<CChar>?, _ length: Int) -> ah_status {
    guard let service = clients(ctx, "clients.send_event") else { return ah_status(AH_ERR_PERMANENT) }
    guard let json, length > 0 else { return ah_status(AH_ERR_PERMANENT) }
    let bytes = Array(UnsafeRawBufferPointer(start: json, count: length))
    return service.sendEvent(id, bytes).status
}

private func clientsUserId(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    HostTable.copy(clients(ctx, "clients.user_id")?.userId(id), into: buf, capacity: cap)
}

private func clientsAnonymousId(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    HostTable.copy(clients(ctx, "clients.anonymous_id")?.anonymousId(id), into: buf, capacity: cap)
}

private func clientsTraits(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    HostTable.copy(clients(ctx, "clients.traits")?.traits(id)?.serialized(), into: buf, capacity: cap)
}

private func clientsReset(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64) -> ah_status {
    clients(ctx, "clients.reset")?.reset(id).status ?? ah_status(AH_ERR_PERMANENT)
}

private func clientsFlush(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64) -> ah_status {
    clients(ctx, "clients.flush")?.flush(id).status ?? ah_status(AH_ERR_PERMANENT)
}
