import Glibc

/// Finds, opens and validates integration libraries. Nothing is created here: instances need
/// settings, which arrive later (`NativeLibrary.makeInstance`).
///
/// A bad library never stops the host: each one is refused with its own `PluginLoadError`, and the
/// scan returns the libraries that are fine next to the problems.
package struct PluginLoader: Sendable {
    package struct Configuration: Sendable {
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
    package struct ScanResult: Sendable {
        public var libraries: [NativeLibrary]
        public var problems: [PluginLoadError]
    }

    package var configuration: Configuration

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Loads every `*.so` of `directory`. Libraries that declare the same key are all refused,
    /// each naming the others, since neither can be preferred safely.
    package func scan(directory: String) -> ScanResult {
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

    /// Loads one library file, checking its permissions first (unless allowed). With `descriptor`
    /// (a runner: the file the host opened and handed over), the library is opened through it and
    /// `file` only names it.
    package func load(file: String, descriptor: Int32? = nil) throws(PluginLoadError) -> NativeLibrary {
        if !configuration.allowGroupOrOtherWritable {
            if let why = FilePermissions.insecurity(of: file, what: "library file") {
                throw PluginLoadError(file: file, reason: .insecurePermissions(why))
            }
        }
        return try loadValidated(file: file, descriptor: descriptor)
    }

    private func loadValidated(file: String, descriptor: Int32? = nil) throws(PluginLoadError) -> NativeLibrary {
        // A path without a slash would make dlopen search the system's library path.
        let library = try DynamicLibrary.open(file.contains("/") ? file : "./" + file, descriptor: descriptor)
        return try ABINegotiation.negotiate(library, hostToolchain: configuration.hostSwiftToolchain)
    }
}

/// The one safety check made before code is loaded: a library, or the directory it sits in, that
/// someone other than its owner can write is a way to run their code inside the host.
enum FilePermissions {
    /// Why `path` is unsafe to load from (nil when its mode has no group/other write bit).
    /// Symbolic links are followed: the file that would be mapped is the one that counts.
    static func insecurity(of path: String, what: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let groupWritable = st.st_mode & S_IWGRP != 0
        let otherWritable = st.st_mode & S_IWOTH != 0
        guard groupWritable || otherWritable else { return nil }
        let who = groupWritable && otherWritable ? "group and others" : groupWritable ? "group" : "others"
        return "\(what) is writable by \(who) (mode \(String(st.st_mode & 0o7777, radix: 8)))"
    }
}

/// A shared object opened for the rest of the process's life.
///
/// Opened with `RTLD_NOW` (unresolved symbols fail here, not mid-event), `RTLD_LOCAL` (a
/// library's symbols cannot satisfy another's) and `RTLD_NODELETE`, and never closed: unmapping a
/// library that contains Swift code crashes the process later.
struct DynamicLibrary: @unchecked Sendable {
    let path: String
    private let handle: UnsafeMutableRawPointer

    /// Opens `path` (which must contain a slash, so no search path is consulted), or the file
    /// `descriptor` refers to, through `/proc/self/fd` (the kernel reopens that file itself, checking
    /// its own mode but none of the directories above it); `path` then names it in messages.
    static func open(_ path: String, descriptor: Int32? = nil) throws(PluginLoadError) -> DynamicLibrary {
        SwiftToolchain.provideDebugSupport()
        _ = dlerror()
        guard let handle = dlopen(descriptor.map { "/proc/self/fd/\($0)" } ?? path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            var text = dlerror().map { String(cString: $0) } ?? "dlopen failed without a reason"
            if text.contains(SwiftToolchain.debugSupportLibrary) {
                text += " (a Swift library built in debug, which needs the toolchain's \(SwiftToolchain.debugSupportLibrary): "
                    + "this installation has none; build it with -c release)"
            }
            throw PluginLoadError(file: path, reason: .notASharedObject(text))
        }
        return DynamicLibrary(path: path, handle: handle)
    }

    /// The address of an exported symbol, or nil.
    func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        dlsym(handle, name)
    }
}
