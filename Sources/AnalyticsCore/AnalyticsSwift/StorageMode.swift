import Foundation

/// Where a client keeps what must survive until delivered (analytics-swift's storage modes).
public enum StorageMode: Sendable, Equatable {
    /// `Configuration.storageDirectory` (the default: survives restarts).
    case disk
    /// This directory instead of `storageDirectory`.
    case diskAtURL(URL)
    /// Memory only, for tests and short-lived tools: a private directory on the RAM-backed tmpfs
    /// `/dev/shm` (the temporary directory when there is none), removed by `shutdown()`. Nothing
    /// survives the process. At most about `maxEvents` events wait for upload: the Segment.io
    /// queue is capped at `maxEvents` × the 32 KiB event limit, past which the oldest are dropped
    /// and reported, as at any disk cap.
    case memory(Int)
}

extension Configuration {
    /// The configuration with ``storageMode`` applied to `storageDirectory` (and the queue cap).
    func resolvingStorageMode() -> Configuration {
        var c = self
        switch storageMode {
        case .disk:
            break
        case .diskAtURL(let url):
            c.storageDirectory = url.path
        case .memory(let maxEvents):
            let base = FileManager.default.fileExists(atPath: "/dev/shm") && access("/dev/shm", W_OK) == 0
                ? "/dev/shm/" : NSTemporaryDirectory()
            c.storageDirectory = (base as NSString).appendingPathComponent("analytics-host-memory-\(getpid())-\(UUID().uuidString)")
            c.maxQueueBytes = min(maxQueueBytes, max(1, maxEvents) * BatchLimits.maxEventBytes)
        }
        return c
    }
}
