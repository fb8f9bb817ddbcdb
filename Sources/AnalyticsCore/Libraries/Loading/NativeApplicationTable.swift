import CAnalyticsABI

/// A library's `AH_EXT_APPLICATION` table (application events), read once at load time within
/// the size the library declared.
struct NativeApplicationTable: Sendable {
    typealias Hook = @convention(c) (OpaquePointer, Int32, UnsafePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int) -> ah_status

    /// `application_event`, or nil when the table leaves it NULL.
    let hook: Hook?

    /// The table of a library, nil when it offers none. A table shorter than its /1 layout is
    /// refused like any malformed struct (the library is not loaded).
    static func lookup(_ getExtension: (@convention(c) (UnsafePointer<CChar>) -> UnsafeRawPointer?)?,
                       key: String, file: String) throws(PluginLoadError) -> NativeApplicationTable? {
        guard let getExtension, let table = getExtension(AH_EXT_APPLICATION) else { return nil }
        let raw = UnsafeRawPointer(table)
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        guard size >= MemoryLayout<ah_application>.size else {
            throw PluginLoadError(file: file, reason: .invalidIntegration(
                "ah_application.size of \"\(key)\" is \(size) bytes, smaller than the \(AH_EXT_APPLICATION) layout (\(MemoryLayout<ah_application>.size) bytes)"))
        }
        let copy = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_application())
        return NativeApplicationTable(hook: copy.application_event)
    }
}
