/// Why one integration library (or the plugins directory) could not be used.
///
/// Every failure names the file it is about and a reason a person can act on; the host logs it
/// and keeps going with the libraries that did load.
package struct PluginLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The library file (or the plugins directory) the problem is about.
    package let file: String
    package let reason: Reason

    package init(file: String, reason: Reason) {
        self.file = file
        self.reason = reason
    }

    package enum Reason: Sendable, Equatable {
        /// The plugins directory does not exist.
        case directoryMissing
        /// The plugins directory exists but cannot be listed (the system's reason).
        case directoryUnreadable(String)
        /// The file or its directory is writable by group or others (which of them is said).
        case insecurePermissions(String)
        /// A `*.so` entry that is not a regular file (a directory, a socket, a dangling link).
        case notARegularFile
        /// `dlopen` refused the file; the text is `dlerror()`'s.
        case notASharedObject(String)
        /// The library does not export the entry function of this ABI generation.
        case noEntrySymbol(String)
        /// The library was built for another ABI major.
        case abiMajorMismatch(library: UInt32, host: UInt32, detail: String)
        /// The entry function returned NULL (its reason, or a note that it gave none).
        case entryRefused(String)
        /// The integration description is malformed (missing key, NULL create, struct too small…).
        case invalidIntegration(String)
        /// A Swift library built with a different toolchain than the host's.
        case swiftToolchainMismatch(library: String, host: String)
        /// Another library in the same scan declares the same key (its files are named).
        case duplicateKey(key: String, otherFiles: [String])
        /// The library's `create` failed; the text is the library's own.
        case createFailed(key: String, message: String)
        /// Loading it in `analytics-plugin-runner` (the scanner, or a process-mode instance)
        /// failed: the runner crashed, exited or hung (what happened, and when).
        case runnerFailed(String)
    }

    package var description: String { "\(file): \(reasonText)" }

    /// The reason alone, in words.
    package var reasonText: String {
        switch reason {
        case .directoryMissing:
            return "plugins directory does not exist"
        case .directoryUnreadable(let why):
            return "plugins directory cannot be read: \(why)"
        case .insecurePermissions(let why):
            return "refused: \(why); fix the permissions (chmod go-w) or allow it explicitly (Configuration.allowInsecurePluginPermissions; analytics-host: --allow-insecure-plugins)"
        case .notARegularFile:
            return "not a regular file"
        case .notASharedObject(let dlerror):
            return "not a loadable shared object: \(dlerror)"
        case .noEntrySymbol(let symbol):
            return "no entry symbol \(symbol); is this an analytics-host integration library?"
        case .abiMajorMismatch(let library, let host, let detail):
            return "ABI major mismatch: library is built for ABI \(library), host speaks ABI \(host) (\(detail)); rebuild the library against this host's analytics_plugin.h"
        case .entryRefused(let why):
            return "entry function refused this host: \(why)"
        case .invalidIntegration(let why):
            return "invalid integration description: \(why)"
        case .swiftToolchainMismatch(let library, let host):
            return "Swift toolchain mismatch: library built with \"\(library)\", host built with \"\(host)\"; Swift has no stable ABI on Linux, rebuild the library with the host's toolchain"
        case .duplicateKey(let key, let others):
            return "duplicate integration key \"\(key)\", also declared by \(others.joined(separator: ", ")); neither is loaded"
        case .createFailed(let key, let message):
            return "create of integration \"\(key)\" failed: \(message)"
        case .runnerFailed(let what):
            return what
        }
    }
}

extension Analytics {
    /// Why the settings name a key that no integration provides: its library was refused (the one
    /// named like the key, e.g. libfile.so for "File"), some libraries were refused, or it is a
    /// cloud-mode destination that runs on Segment's servers.
    static func unprovidedKeyMessage(_ key: String, refused problems: [PluginLoadError]) -> (LogLevel, String) {
        let libraries = problems.filter { $0.file.hasSuffix(".so") }
        func stem(_ file: String) -> String {
            var name = Substring(file.split(separator: "/").last ?? "")
            if name.hasPrefix("lib") { name = name.dropFirst(3) }
            return String(name.dropLast(3)).lowercased().filter { $0.isLetter || $0.isNumber }
        }
        let wanted = key.lowercased().filter { $0.isLetter || $0.isNumber }
        if let match = libraries.first(where: { stem($0.file) == wanted }) {
            return (.warning, "settings name \"\(key)\" but its library \(match.file) was refused (the reason is above): \"\(key)\" is not created")
        }
        if !libraries.isEmpty {
            let n = libraries.count
            return (.warning, "settings name \"\(key)\" but no loaded integration provides it; \(n) \(n == 1 ? "library was" : "libraries were") refused "
                + "(reported above), it may be \(n == 1 ? "that one" : "one of them"); otherwise a cloud-mode destination")
        }
        return (.info, "settings name \"\(key)\" but no integration provides it here (a cloud-mode destination?)")
    }
}
