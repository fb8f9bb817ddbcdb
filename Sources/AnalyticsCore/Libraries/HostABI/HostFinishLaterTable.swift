import CAnalyticsABI

/// `AH_EXT_FINISH_LATER` (ABI 1.3): the C side of `PendingCalls`, offered to every instance.
extension HostExtensions {
    nonisolated(unsafe) static let finishLater: UnsafePointer<ah_host_finish_later> = {
        let pointer = UnsafeMutablePointer<ah_host_finish_later>.allocate(capacity: 1)
        pointer.initialize(to: ah_host_finish_later(size: UInt32(MemoryLayout<ah_host_finish_later>.size),
                                                    max_pending: UInt32(PendingCalls.defaultMaxPending),
                                                    token: finishLaterToken, complete: finishLaterComplete))
        return UnsafePointer(pointer)
    }()
}

private func finishLaterToken(_ ctx: UnsafeMutableRawPointer?) -> UInt64 {
    HostServicesTable.from(ctx, "finish_later.token")?.pendingCalls.token() ?? 0
}

private func finishLaterComplete(_ ctx: UnsafeMutableRawPointer?, _ token: UInt64, _ status: ah_status,
                                 _ reason: UnsafePointer<CChar>?, _ reasonLength: Int) -> ah_status {
    guard let table = HostServicesTable.from(ctx, "finish_later.complete") else { return ah_status(AH_ERR_PERMANENT) }
    let text = reason.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: max(0, reasonLength)), as: UTF8.self) } ?? ""
    let result: NativeHookResult
    switch status {
    case ah_status(AH_OK): result = .ok
    case ah_status(AH_ERR_RETRYABLE): result = .retryable(text.isEmpty ? "completed retryable without a reason" : text)
    case ah_status(AH_ERR_PERMANENT): result = .permanent(text.isEmpty ? "completed with a permanent failure without a reason" : text)
    default: result = .permanent("completed with unknown status \(status)" + (text.isEmpty ? "" : ": \(text)"))
    }
    return table.pendingCalls.complete(token, result) ? ah_status(AH_OK) : ah_status(AH_ERR_PERMANENT)
}
