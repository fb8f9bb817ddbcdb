import CAnalyticsABI

/// A library's `AH_EXT_NOTICES` table (ABI 1.3: the host tells it what it refused or abandoned),
/// read once at load time within the size the library declared.
struct NativeNoticesTable: Sendable {
    typealias Hook = @convention(c) (OpaquePointer, Int32, UnsafePointer<CChar>, Int) -> Void

    let hook: Hook

    static func lookup(_ getExtension: (@convention(c) (UnsafePointer<CChar>) -> UnsafeRawPointer?)?,
                       key: String, file: String) throws(PluginLoadError) -> NativeNoticesTable? {
        guard let getExtension, let table = getExtension(AH_EXT_NOTICES) else { return nil }
        let raw = UnsafeRawPointer(table)
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        guard size >= MemoryLayout<ah_notices>.size else {
            throw PluginLoadError(file: file, reason: .invalidIntegration(
                "ah_notices.size of \"\(key)\" is \(size) bytes, smaller than the \(AH_EXT_NOTICES) layout (\(MemoryLayout<ah_notices>.size) bytes)"))
        }
        let copy = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_notices())
        return copy.notice.map { NativeNoticesTable(hook: $0) }
    }

    func tell(_ instance: OpaquePointer, _ kind: Int32, _ text: String) {
        let bytes = Array(text.utf8CString)
        bytes.withUnsafeBufferPointer { hook(instance, kind, $0.baseAddress!, $0.count - 1) }
    }
}
