import CAnalyticsABI

/// A library's `AH_EXT_DURABLE` table (ABI 1.3): it asks that the host keep its events on disk
/// until each one is finished. Read once at load time, within the size the library declared.
package struct NativeDurability: Sendable, Equatable {
    /// The queue's disk cap the library asked for; nil: the host's default.
    package var maxDiskBytes: Int?

    package init(maxDiskBytes: Int? = nil) { self.maxDiskBytes = maxDiskBytes }

    /// The largest cap the host honours (1 TiB): a larger wish is this. The queue's arithmetic
    /// adds sizes to the cap, so it must stay far from `Int.max`.
    package static let maxHonouredDiskBytes = 1 << 40

    /// A cap a library asked for, as the host honours it.
    static func honoured(_ bytes: UInt64) -> Int { Int(clamping: min(bytes, UInt64(maxHonouredDiskBytes))) }

    /// The library's wish, nil when it offers no table. A table shorter than its /1 layout is
    /// refused like any malformed struct (the library is not loaded).
    static func lookup(_ getExtension: (@convention(c) (UnsafePointer<CChar>) -> UnsafeRawPointer?)?,
                       key: String, file: String) throws(PluginLoadError) -> NativeDurability? {
        guard let getExtension, let table = getExtension(AH_EXT_DURABLE) else { return nil }
        let raw = UnsafeRawPointer(table)
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        guard size >= MemoryLayout<ah_durable>.size else {
            throw PluginLoadError(file: file, reason: .invalidIntegration(
                "ah_durable.size of \"\(key)\" is \(size) bytes, smaller than the \(AH_EXT_DURABLE) layout (\(MemoryLayout<ah_durable>.size) bytes)"))
        }
        let copy = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_durable())
        return NativeDurability(maxDiskBytes: copy.max_disk_bytes == 0 ? nil : honoured(copy.max_disk_bytes))
    }

    /// Whether a destination keeps its events on disk: its settings' `"durable"` (true or false)
    /// decides when present, else the library's own wish. nil: events live in memory.
    static func resolve(settings: JSONObject, library: NativeDurability?) -> NativeDurability? {
        switch settings["durable"] {
        case .bool(true)?: return library ?? NativeDurability()
        case .bool(false)?: return nil
        default: return library
        }
    }
}
