import CAnalyticsABI

/// A validated integration library: opened, negotiated, described. Creating instances is separate
/// (it needs settings), and a library may have several instances. Never unloaded.
public final class NativeLibrary: @unchecked Sendable {
    /// What the library declared (file, key, version, ABI, language/toolchain, hooks).
    public let info: NativeLibraryInfo

    let library: DynamicLibrary
    /// The library's `create`, checked non-NULL.
    let create: CreateFunction
    /// The library's hooks table, copied and zero-extended to this host's layout.
    let hooks: ah_hooks
    /// The library's `AH_EXT_APPLICATION` table, if it offers one.
    let application: NativeApplicationTable?
    /// The library's `AH_EXT_BATCH` table (ABI 1.3), if it offers one.
    let batch: NativeBatchTable?
    /// The library's `AH_EXT_NOTICES` table (ABI 1.3), if it offers one.
    let notices: NativeNoticesTable?
    /// `create` of one library is never called concurrently (header rule).
    private let createLock = Locked(())

    typealias CreateFunction = @convention(c) (
        UnsafePointer<ah_host>, UnsafePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int
    ) -> OpaquePointer?

    init(info: NativeLibraryInfo, library: DynamicLibrary, create: CreateFunction, hooks: ah_hooks,
         application: NativeApplicationTable? = nil, batch: NativeBatchTable? = nil,
         notices: NativeNoticesTable? = nil) {
        self.notices = notices
        self.info = info
        self.application = application
        self.batch = batch
        self.library = library
        self.create = create
        self.hooks = hooks
    }

    public var key: String { info.key }
    public var file: String { info.file }

    /// Creates an instance with this integration's settings object (`integrations[key]`).
    /// A failing `create` becomes `.createFailed` carrying the library's own error text.
    public func makeInstance(settings: JSONObject = [:], services: HostServices) throws(PluginLoadError) -> NativeIntegration {
        let table = HostServicesTable(services)
        let text = settings.serializedBytes()
        let errorBuffer = ErrorBuffer()
        let instance: OpaquePointer? = createLock.withLock { _ in
            errorBuffer.clear()
            return text.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    create(table.table, chars.baseAddress!, chars.count, errorBuffer.base, errorBuffer.capacity)
                }
            }
        }
        guard let instance else {
            // Plugins a failed `create` added and did not remove are taken away (and released).
            services.timeline?.removeAll()
            table.instanceEnding()
            table.revoke()  // in case the library kept the table anyway
            let message = errorBuffer.message
            throw PluginLoadError(file: info.file, reason: .createFailed(
                key: info.key, message: message.isEmpty ? "create returned NULL without a reason" : message))
        }
        return NativeIntegration(library: self, instance: instance, services: table, errorBuffer: errorBuffer)
    }
}
