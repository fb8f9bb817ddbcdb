import CAnalyticsABI

/// The steps between "a file opened" and "a library the host may use": find the entry function,
/// call it with the host's ABI version, read what it returned within the sizes it declared, and
/// check everything before anything else is called.
enum ABINegotiation {
    typealias EntryFunction = @convention(c) (UInt32, UnsafeMutablePointer<CChar>, Int) -> UnsafePointer<ah_integration>?

    /// `ah_integration` as in ABI 1.0: up to and including `hooks` (1.2 appended `get_extension`).
    static let integrationMinimumSize = MemoryLayout<ah_integration>.offset(of: \ah_integration.get_extension)!
    /// `ah_hooks` as in ABI 1.0: up to and including `destroy`.
    static let hooksMinimumSize = MemoryLayout<ah_hooks>.offset(of: \ah_hooks.lifecycle)!

    static func negotiate(_ library: DynamicLibrary, hostToolchain: String) throws(PluginLoadError) -> NativeLibrary {
        let file = library.path
        func fail(_ reason: PluginLoadError.Reason) -> PluginLoadError { PluginLoadError(file: file, reason: reason) }

        let host = ABIVersion.host
        let entryName = "analytics_host_plugin_v\(host.major)"
        guard let symbol = library.symbol(entryName) else {
            if let other = otherGeneration(in: library, besides: host.major) {
                throw fail(.abiMajorMismatch(library: other, host: host.major,
                                             detail: "it exports analytics_host_plugin_v\(other), not \(entryName)"))
            }
            throw fail(.noEntrySymbol(entryName))
        }
        let entry = unsafeBitCast(symbol, to: EntryFunction.self)

        let errorBuffer = ErrorBuffer()
        guard let described = entry(host.raw, errorBuffer.base, errorBuffer.capacity) else {
            let why = errorBuffer.message
            throw fail(.entryRefused(why.isEmpty ? "it returned NULL without a reason" : why))
        }

        // The first two fields are the same in every generation: read them alone before trusting
        // the rest of the layout.
        let raw = UnsafeRawPointer(described)
        let declaredSize = Int(raw.loadUnaligned(as: UInt32.self))
        let declaredVersion = ABIVersion(raw: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        guard declaredVersion.major == host.major else {
            throw fail(.abiMajorMismatch(library: declaredVersion.major, host: host.major,
                                         detail: "its ah_integration declares ABI \(declaredVersion)"))
        }
        guard declaredSize >= integrationMinimumSize else {
            throw fail(.invalidIntegration("ah_integration.size is \(declaredSize) bytes, smaller than the ABI \(host.major).0 layout (\(integrationMinimumSize) bytes)"))
        }
        let integration = copyPrefix(of: raw, declaredSize: declaredSize, into: ah_integration())

        guard let keyPointer = integration.key else { throw fail(.invalidIntegration("key is NULL")) }
        guard let key = String(validatingCString: keyPointer) else { throw fail(.invalidIntegration("key is not valid UTF-8")) }
        if let problem = keyProblem(key) { throw fail(.invalidIntegration("key \"\(key)\" \(problem)")) }
        guard let versionPointer = integration.version, let version = String(validatingCString: versionPointer) else {
            throw fail(.invalidIntegration("version of \"\(key)\" is NULL or not valid UTF-8"))
        }
        let language = integration.language.flatMap { String(validatingCString: $0) } ?? "c"
        let toolchain = integration.toolchain.flatMap { String(validatingCString: $0) }
        guard let create = integration.create else { throw fail(.invalidIntegration("create of \"\(key)\" is NULL")) }
        guard let hooksPointer = integration.hooks else { throw fail(.invalidIntegration("hooks of \"\(key)\" is NULL")) }

        let hooksRaw = UnsafeRawPointer(hooksPointer)
        let hooksSize = Int(hooksRaw.loadUnaligned(as: UInt32.self))
        guard hooksSize >= hooksMinimumSize else {
            throw fail(.invalidIntegration("ah_hooks.size of \"\(key)\" is \(hooksSize) bytes, smaller than the ABI \(host.major).0 layout (\(hooksMinimumSize) bytes)"))
        }
        let hooks = copyPrefix(of: hooksRaw, declaredSize: hooksSize, into: ah_hooks())
        guard hooks.destroy != nil else { throw fail(.invalidIntegration("destroy of \"\(key)\" is NULL (it is required)")) }

        if language == AH_LANGUAGE_SWIFT {
            guard let toolchain, toolchain == hostToolchain else {
                throw fail(.swiftToolchainMismatch(library: toolchain ?? "(none declared)", host: hostToolchain))
            }
        }

        // ABI 1.2: capability tables. `get_extension` exists only within the declared size (a
        // 1.0/1.1 library's struct ends before it and is a destination, as it always was).
        let getExtension = integration.get_extension
        var role = NativeRole.destination
        if let getExtension, let table = getExtension(AH_EXT_ROLE) {
            let roleRaw = UnsafeRawPointer(table)
            let roleSize = Int(roleRaw.loadUnaligned(as: UInt32.self))
            guard roleSize >= MemoryLayout<ah_role>.size else {
                throw fail(.invalidIntegration("ah_role.size of \"\(key)\" is \(roleSize) bytes, smaller than the \(AH_EXT_ROLE) layout (\(MemoryLayout<ah_role>.size) bytes)"))
            }
            role = NativeRole(flags: roleRaw.loadUnaligned(fromByteOffset: MemoryLayout<ah_role>.offset(of: \ah_role.flags)!, as: UInt32.self))
            if role.isEmpty { throw fail(.invalidIntegration("ah_role.flags of \"\(key)\" has no known AH_ROLE_* bit")) }
        }

        let application = try NativeApplicationTable.lookup(getExtension, key: key, file: file)
        var implemented = NativeHooks(hooks)
        if application?.hook != nil { implemented.insert(.application) }
        let batch = try NativeBatchTable.lookup(getExtension, key: key, file: file)
        if batch != nil { implemented.insert(.batch) }
        let notices = try NativeNoticesTable.lookup(getExtension, key: key, file: file)
        if notices != nil { implemented.insert(.notice) }
        let durable = try NativeDurability.lookup(getExtension, key: key, file: file)
        var info = NativeLibraryInfo(file: file, key: key, version: version, abiVersion: declaredVersion,
                                     language: language, toolchain: toolchain, hooks: implemented, role: role, durable: durable)
        info.settingsSchema = try NativeSettingsSchemaTable.lookup(getExtension, key: key, file: file)
        return NativeLibrary(info: info, library: library,
                             create: create, hooks: hooks, application: application, batch: batch, notices: notices)
    }

    /// Another generation's entry symbol, so a v2 library is reported as a mismatch, not as
    /// "not a plugin".
    static func otherGeneration(in library: DynamicLibrary, besides major: UInt32) -> UInt32? {
        (0...9).lazy.map(UInt32.init).first { $0 != major && library.symbol("analytics_host_plugin_v\($0)") != nil }
    }

    /// Keys are names people type into settings: printable, no surrounding spaces, not too long.
    static func keyProblem(_ key: String) -> String? {
        if key.isEmpty { return "is empty" }
        if key.utf8.count > 128 { return "is longer than 128 bytes" }
        if key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return "contains control characters" }
        if key.first!.isWhitespace || key.last!.isWhitespace { return "has leading or trailing spaces" }
        return nil
    }

    /// Copies the first `declaredSize` bytes of a library's struct over a zeroed host-layout value:
    /// fields the library's (older) layout lacks stay NULL, fields of a newer layout are ignored.
    static func copyPrefix<T>(of source: UnsafeRawPointer, declaredSize: Int, into zero: T) -> T {
        var value = zero
        withUnsafeMutableBytes(of: &value) { destination in
            destination.copyMemory(from: UnsafeRawBufferPointer(start: source, count: min(declaredSize, destination.count)))
        }
        return value
    }
}

/// An ABI version as it crosses the C boundary: major in the high 16 bits, minor in the low 16.
/// Majors must match exactly; minors only tell which struct fields exist.
public struct ABIVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let major: UInt32
    public let minor: UInt32

    public init(major: UInt32, minor: UInt32) {
        self.major = major
        self.minor = minor
    }

    public init(raw: UInt32) { self.init(major: raw >> 16, minor: raw & 0xFFFF) }

    public var raw: UInt32 { major << 16 | (minor & 0xFFFF) }

    /// The version described by the `include/analytics_plugin.h` this host was compiled with.
    public static let host = ABIVersion(major: UInt32(AH_ABI_MAJOR), minor: UInt32(AH_ABI_MINOR))

    public var description: String { "\(major).\(minor)" }

    public static func < (a: ABIVersion, b: ABIVersion) -> Bool { a.raw < b.raw }
}

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
