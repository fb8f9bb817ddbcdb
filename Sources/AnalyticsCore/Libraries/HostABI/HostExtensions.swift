import CAnalyticsABI

/// The capability tables behind `ah_host.get_extension` (ABI 1.2). Each table is a static set of
/// C function pointers allocated once for the process; its functions receive the `ah_host`'s
/// `ctx` (the instance's `HostTable`) and find the instance's services through it.
/// An id is offered only when that instance's `HostServices` has the service.
///
/// To offer a new capability: add its table below and one entry to `lookup`.
enum HostExtensions {
    static func lookup(_ services: HostServices, id: UnsafePointer<CChar>) -> UnsafeRawPointer? {
        switch String(cString: id) {
        case AH_EXT_TIMELINE: return services.timeline == nil ? nil : UnsafeRawPointer(timeline)
        case AH_EXT_CLIENT: return services.client == nil ? nil : UnsafeRawPointer(client)
        case AH_EXT_HTTP: return services.http == nil ? nil : UnsafeRawPointer(http)
        case AH_EXT_CLIENTS: return services.clients == nil ? nil : UnsafeRawPointer(HostClientsTable.table)
        case AH_EXT_HTTP_REQUESTS: return services.http == nil ? nil : UnsafeRawPointer(httpRequests)
        case AH_EXT_FINISH_LATER: return UnsafeRawPointer(finishLater)
        case AH_EXT_HOST_INFO: return UnsafeRawPointer(hostInfo)
        case AH_EXT_RETRY_AFTER: return UnsafeRawPointer(retryAfter)
        default: return nil
        }
    }

    nonisolated(unsafe) static let timeline: UnsafePointer<ah_host_timeline> = table(ah_host_timeline(
        size: UInt32(MemoryLayout<ah_host_timeline>.size), add: timelineAdd, remove: timelineRemove))

    nonisolated(unsafe) static let client: UnsafePointer<ah_host_client> = table(ah_host_client(
        size: UInt32(MemoryLayout<ah_host_client>.size), traits: clientTraits, reset: clientReset, flush: clientFlush,
        storage_directory: clientStorageDirectory, options: clientOptions))

    nonisolated(unsafe) static let http: UnsafePointer<ah_host_http> = table(ah_host_http(
        size: UInt32(MemoryLayout<ah_host_http>.size), get: httpGet))

    private static func table<T>(_ value: T) -> UnsafePointer<T> {
        let pointer = UnsafeMutablePointer<T>.allocate(capacity: 1)
        pointer.initialize(to: value)
        return UnsafePointer(pointer)
    }

    /// snprintf-like: writes `text` truncated and NUL-terminated into a caller's buffer.
    static func write(_ text: String, into buffer: UnsafeMutablePointer<CChar>?, capacity: Int) {
        _ = HostTable.copy(text, into: buffer, capacity: capacity)
    }
}

// MARK: AH_EXT_TIMELINE

/// Smallest `ah_timeline_plugin` the host accepts: the /1 layout up to and including `release`.
private let timelinePluginSize = MemoryLayout<ah_timeline_plugin>.size

private func timelineAdd(_ ctx: UnsafeMutableRawPointer?, _ plugin: UnsafePointer<ah_timeline_plugin>,
                         _ outId: UnsafeMutablePointer<UInt64>, _ err: UnsafeMutablePointer<CChar>?, _ errCap: Int) -> ah_status {
    guard let registry = HostTable.from(ctx, "timeline.add")?.services.timeline else {
        HostExtensions.write("this host offers no timeline to this instance", into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    }
    let raw = UnsafeRawPointer(plugin)
    let size = Int(raw.loadUnaligned(as: UInt32.self))
    guard size >= timelinePluginSize else {
        HostExtensions.write("ah_timeline_plugin.size is \(size) bytes, smaller than the \(AH_EXT_TIMELINE) layout (\(timelinePluginSize) bytes)",
                             into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    }
    let description = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_timeline_plugin())
    do throws(NativePluginRegistry.AddError) {
        outId.pointee = try registry.add(description)
        return ah_status(AH_OK)
    } catch {
        switch error {
        case .invalid(let why):
            HostExtensions.write(why, into: err, capacity: errCap)
            registry.report("add refused: \(why)")
            return ah_status(AH_ERR_PERMANENT)
        case .stopping(let why):
            HostExtensions.write(why, into: err, capacity: errCap)
            return ah_status(AH_ERR_RETRYABLE)
        }
    }
}

private func timelineRemove(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64) -> ah_status {
    guard let registry = HostTable.from(ctx, "timeline.remove")?.services.timeline else { return ah_status(AH_ERR_PERMANENT) }
    return registry.remove(id: id) ? ah_status(AH_OK) : ah_status(AH_ERR_PERMANENT)
}

// MARK: AH_EXT_CLIENT

private func clientTraits(_ ctx: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    let traits = HostTable.from(ctx, "client.traits")?.services.client?.traits() ?? [:]
    return HostTable.copy(traits.serialized(), into: buf, capacity: cap)
}

private func clientReset(_ ctx: UnsafeMutableRawPointer?) -> ah_status {
    guard let client = HostTable.from(ctx, "client.reset")?.services.client else { return ah_status(AH_ERR_PERMANENT) }
    return client.reset().status
}

private func clientFlush(_ ctx: UnsafeMutableRawPointer?) -> ah_status {
    guard let client = HostTable.from(ctx, "client.flush")?.services.client else { return ah_status(AH_ERR_PERMANENT) }
    return client.flush().status
}

private func clientStorageDirectory(_ ctx: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    HostTable.copy(HostTable.from(ctx, "client.storage_directory")?.services.client?.storageDirectory(), into: buf, capacity: cap)
}

private func clientOptions(_ ctx: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    let options = HostTable.from(ctx, "client.options")?.services.client?.options() ?? [:]
    return HostTable.copy(options.serialized(), into: buf, capacity: cap)
}

// MARK: AH_EXT_HTTP

/// Bytes handed to a library's sink per call.
private let sinkChunk = 64 * 1024

private func httpGet(_ ctx: UnsafeMutableRawPointer?, _ url: UnsafePointer<CChar>, _ urlLength: Int, _ timeoutMs: UInt32,
                     _ sink: UnsafePointer<ah_byte_sink>, _ statusCode: UnsafeMutablePointer<Int32>,
                     _ err: UnsafeMutablePointer<CChar>?, _ errCap: Int) -> ah_status {
    guard let http = HostTable.from(ctx, "http.get")?.services.http else {
        HostExtensions.write("this host offers no HTTP client to this instance", into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    }
    let text = String(decoding: UnsafeRawBufferPointer(start: url, count: max(0, urlLength)), as: UTF8.self)
    let timeout = timeoutMs == 0 ? 15 : Double(timeoutMs) / 1000
    if let stream = http.stream {
        // The body goes to the sink as it arrives: the library's size cap stops the transfer.
        let write = sink.pointee.write
        let sinkContext = sink.pointee.ctx
        let (outcome, stopped) = stream(text, timeout) { piece in
            piece.withUnsafeBufferPointer { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = min(sinkChunk, bytes.count - offset)
                    let status = UnsafeRawPointer(bytes.baseAddress! + offset).withMemoryRebound(to: CChar.self, capacity: n) { write(sinkContext, $0, n) }
                    if status != ah_status(AH_OK) { return false }
                    offset += n
                }
                return true
            }
        }
        switch outcome {
        case .malformedURL(let why):
            HostExtensions.write(why, into: err, capacity: errCap)
            return ah_status(AH_ERR_PERMANENT)
        case .failed(let why):
            HostExtensions.write(why, into: err, capacity: errCap)
            return ah_status(AH_ERR_RETRYABLE)
        case .response(let status, _):
            statusCode.pointee = Int32(clamping: status)
            if stopped {
                HostExtensions.write("the sink stopped the transfer of \(text) (HTTP \(status))", into: err, capacity: errCap)
                return ah_status(AH_ERR_PERMANENT)
            }
            return ah_status(AH_OK)
        }
    }
    switch http.get(text, timeout) {
    case .malformedURL(let why):
        HostExtensions.write(why, into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    case .failed(let why):
        HostExtensions.write(why, into: err, capacity: errCap)
        return ah_status(AH_ERR_RETRYABLE)
    case .response(let status, let body):
        statusCode.pointee = Int32(clamping: status)
        let write = sink.pointee.write
        let sinkContext = sink.pointee.ctx
        let stopped = body.withUnsafeBufferPointer { bytes -> Bool in
            guard let base = bytes.baseAddress else { return false }
            var offset = 0
            while offset < bytes.count {
                let n = min(sinkChunk, bytes.count - offset)
                let status = UnsafeRawPointer(base + offset).withMemoryRebound(to: CChar.self, capacity: n) { write(sinkContext, $0, n) }
                if status != ah_status(AH_OK) { return true }
                offset += n
            }
            return false
        }
        if stopped {
            HostExtensions.write("the sink stopped the transfer of \(text) (HTTP \(status))", into: err, capacity: errCap)
            return ah_status(AH_ERR_PERMANENT)
        }
        return ah_status(AH_OK)
    }
}

extension NativeHookResult {
    /// The status code a host service answers with.
    var status: ah_status {
        switch self {
        case .ok: return ah_status(AH_OK)
        case .retryable: return ah_status(AH_ERR_RETRYABLE)
        case .permanent: return ah_status(AH_ERR_PERMANENT)
        }
    }
}
