import CAnalyticsABI

/// Exports an ``Integration`` through the C ABI. A Swift integration library needs exactly one
/// line besides its type (Swift's `@_cdecl` exports only public functions, so the line is one):
///
/// ```swift
/// @_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(Webhooks.self, hostABI, err, errCapacity) }
/// ```
///
/// The returned pointer is the library's `ah_integration`, built on the first call and kept for
/// the life of the process (the host never unloads a library), so repeated calls return the same
/// pointer. A library exports one integration.
public enum IntegrationExport {
    /// The body of the entry function: checks the host's ABI major, then returns the tables, or
    /// NULL with the reason written to `err`. Cheap and free of side effects besides building the
    /// tables once. Safe from any thread.
    public static func entry<T: Integration>(
        _ type: T.Type, _ hostABIVersion: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int
    ) -> UnsafeRawPointer? {
        let host = ABIVersion(raw: hostABIVersion)
        let mine = ABIVersion.host
        guard host.major == mine.major else {
            ErrorText.write("\(T.key) is built for ABI \(mine) (major \(mine.major)) but the host speaks ABI \(host); rebuild it against the host's analytics_plugin.h", to: err, capacity: errCapacity)
            return nil
        }
        switch ExportedTables.tables(for: T.self) {
        case .success(let tables): return UnsafeRawPointer(tables)
        case .failure(let problem):
            ErrorText.write(problem.message, to: err, capacity: errCapacity)
            return nil
        }
    }
}
