import CAnalyticsABI

/// `AH_EXT_RETRY_AFTER`: the C side of `RetryHint`, offered to every instance.
extension HostExtensions {
    nonisolated(unsafe) static let retryAfter: UnsafePointer<ah_host_retry_after> = {
        let pointer = UnsafeMutablePointer<ah_host_retry_after>.allocate(capacity: 1)
        pointer.initialize(to: ah_host_retry_after(size: UInt32(MemoryLayout<ah_host_retry_after>.size), retry_after: retryAfterSet))
        return UnsafePointer(pointer)
    }()
}

private func retryAfterSet(_ ctx: UnsafeMutableRawPointer?, _ delayMs: UInt32) -> ah_status {
    guard let table = HostTable.from(ctx, "retry_after.retry_after") else { return ah_status(AH_ERR_PERMANENT) }
    return table.retryHint.set(delay: Double(delayMs) / 1000) ? ah_status(AH_OK) : ah_status(AH_ERR_PERMANENT)
}
