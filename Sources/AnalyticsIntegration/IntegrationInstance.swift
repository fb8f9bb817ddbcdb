import CAnalyticsABI

/// What an `ah_instance *` points at: the integration object and the host it was given. Retained
/// once by `create`, released by `destroy` (which runs the integration's `deinit`).
final class IntegrationInstance {
    let integration: any Integration
    let host: IntegrationHost

    init(integration: any Integration, host: IntegrationHost) {
        self.integration = integration
        self.host = host
    }

    var opaque: OpaquePointer { OpaquePointer(Unmanaged.passRetained(self).toOpaque()) }

    @inline(__always)
    static func from(_ pointer: OpaquePointer) -> IntegrationInstance {
        Unmanaged<IntegrationInstance>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    static func release(_ pointer: OpaquePointer) {
        Unmanaged<IntegrationInstance>.fromOpaque(UnsafeRawPointer(pointer)).release()
    }
}
