import CAnalyticsABI
import Glibc

/// `AH_EXT_HOST_INFO` (ABI 1.3): the host's name and version, and whether a log level is kept.
extension HostExtensions {
    nonisolated(unsafe) static let hostInfo: UnsafePointer<ah_host_info> = {
        let pointer = UnsafeMutablePointer<ah_host_info>.allocate(capacity: 1)
        pointer.initialize(to: ah_host_info(size: UInt32(MemoryLayout<ah_host_info>.size),
                                            name: UnsafePointer(strdup(SystemContext.libraryName)!),
                                            version: UnsafePointer(strdup(HostVersion.string)!),
                                            log_enabled: hostLogEnabled))
        return UnsafePointer(pointer)
    }()
}

private func hostLogEnabled(_ ctx: UnsafeMutableRawPointer?, _ level: Int32) -> Int32 {
    guard let table = HostServicesTable.from(ctx, "host_info.log_enabled") else { return 0 }
    return table.services.logEnabled(NativeLogLevel(rawValue: level) ?? .info) ? 1 : 0
}

extension NativeLogLevel {
    /// What a client keeps: its `logThreshold`; without one, everything when it has a log
    /// handler, and warnings and errors when it prints them itself.
    static func threshold(of configuration: Configuration) -> @Sendable (NativeLogLevel) -> Bool {
        let least: NativeLogLevel
        switch configuration.logThreshold ?? (configuration.logHandler == nil ? .warning : .debug) {
        case .debug: least = .debug
        case .info: least = .info
        case .warning: least = .warn
        case .error: least = .error
        }
        return { $0 >= least }
    }
}
