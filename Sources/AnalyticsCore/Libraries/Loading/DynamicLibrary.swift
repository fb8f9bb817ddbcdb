import Glibc

/// A shared object opened for the rest of the process's life.
///
/// Opened with `RTLD_NOW` (unresolved symbols fail here, not mid-event), `RTLD_LOCAL` (a
/// library's symbols cannot satisfy another's) and `RTLD_NODELETE`, and never closed: unmapping a
/// library that contains Swift code crashes the process later.
struct DynamicLibrary: @unchecked Sendable {
    let path: String
    private let handle: UnsafeMutableRawPointer

    /// Opens `path` (which must contain a slash, so no search path is consulted).
    static func open(_ path: String) throws(PluginLoadError) -> DynamicLibrary {
        _ = dlerror()
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            let text = dlerror().map { String(cString: $0) } ?? "dlopen failed without a reason"
            throw PluginLoadError(file: path, reason: .notASharedObject(text))
        }
        return DynamicLibrary(path: path, handle: handle)
    }

    /// The address of an exported symbol, or nil.
    func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        dlsym(handle, name)
    }
}
