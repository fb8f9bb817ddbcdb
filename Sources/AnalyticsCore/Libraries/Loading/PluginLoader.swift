/// Finds, opens and validates integration libraries. Nothing is created here: instances need
/// settings, which arrive later (`NativeLibrary.makeInstance`).
///
/// A bad library never stops the host: each one is refused with its own `PluginLoadError`, and the
/// scan returns the libraries that are fine next to the problems.
public struct PluginLoader: Sendable {
    public struct Configuration: Sendable {
        /// Load libraries (and directories) that group or others can write. Off by default: such
        /// a file lets another user run code inside the host.
        public var allowGroupOrOtherWritable: Bool
        /// The toolchain Swift-written libraries must have been built with.
        public var hostSwiftToolchain: String

        public init(allowGroupOrOtherWritable: Bool = false, hostSwiftToolchain: String = SwiftToolchain.current) {
            self.allowGroupOrOtherWritable = allowGroupOrOtherWritable
            self.hostSwiftToolchain = hostSwiftToolchain
        }
    }

    /// The outcome of a scan: what loaded, and what did not and why.
    public struct ScanResult: Sendable {
        public var libraries: [NativeLibrary]
        public var problems: [PluginLoadError]
    }

    public var configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Loads every `*.so` of `directory`. Libraries that declare the same key are all refused,
    /// each naming the others, since neither can be preferred safely.
    public func scan(directory: String) -> ScanResult {
        let listing = PluginDirectory.list(directory, allowInsecure: configuration.allowGroupOrOtherWritable)
        var problems = listing.problems
        var loaded: [NativeLibrary] = []
        for file in listing.files {
            do throws(PluginLoadError) {
                loaded.append(try loadValidated(file: file))
            } catch {
                problems.append(error)
            }
        }
        var filesByKey: [String: [String]] = [:]
        for library in loaded { filesByKey[library.key, default: []].append(library.file) }
        var libraries: [NativeLibrary] = []
        for library in loaded {
            let files = filesByKey[library.key]!
            if files.count == 1 {
                libraries.append(library)
            } else {
                problems.append(PluginLoadError(file: library.file, reason: .duplicateKey(
                    key: library.key, otherFiles: files.filter { $0 != library.file })))
            }
        }
        return ScanResult(libraries: libraries, problems: problems)
    }

    /// Loads one library file, checking its permissions first (unless allowed).
    public func load(file: String) throws(PluginLoadError) -> NativeLibrary {
        if !configuration.allowGroupOrOtherWritable {
            if let why = FilePermissions.insecurity(of: file, what: "library file") {
                throw PluginLoadError(file: file, reason: .insecurePermissions(why))
            }
        }
        return try loadValidated(file: file)
    }

    private func loadValidated(file: String) throws(PluginLoadError) -> NativeLibrary {
        // A path without a slash would make dlopen search the system's library path.
        let library = try DynamicLibrary.open(file.contains("/") ? file : "./" + file)
        return try ABINegotiation.negotiate(library, hostToolchain: configuration.hostSwiftToolchain)
    }
}
