import CAnalyticsABI

/// What an `ah_instance *` points at: the integration object and the host it was given. Retained
/// once by `create`, released by `destroy` (which runs the integration's `deinit`).
///
/// The hook views are cast once here, not per call: a hook's C function exists in the table only
/// when the type conforms (see ``ExportedTables``), so its view is non-nil whenever it is called.
final class IntegrationInstance {
    let integration: any Integration
    let host: IntegrationHost
    let track: (any TrackHook)?
    let identify: (any IdentifyHook)?
    let screen: (any ScreenHook)?
    let group: (any GroupHook)?
    let alias: (any AliasHook)?
    let reset: (any ResetHook)?
    let flush: (any FlushHook)?
    let settings: (any SettingsHook)?
    let lifecycle: (any LifecycleHook)?
    let trackLater: (any TrackLaterHook)?
    let identifyLater: (any IdentifyLaterHook)?
    let screenLater: (any ScreenLaterHook)?
    let groupLater: (any GroupLaterHook)?
    let aliasLater: (any AliasLaterHook)?
    let notices: (any NoticesHook)?

    init(integration: any Integration, host: IntegrationHost) {
        self.integration = integration
        self.host = host
        track = integration as? any TrackHook
        identify = integration as? any IdentifyHook
        screen = integration as? any ScreenHook
        group = integration as? any GroupHook
        alias = integration as? any AliasHook
        reset = integration as? any ResetHook
        flush = integration as? any FlushHook
        settings = integration as? any SettingsHook
        lifecycle = integration as? any LifecycleHook
        trackLater = integration as? any TrackLaterHook
        identifyLater = integration as? any IdentifyLaterHook
        screenLater = integration as? any ScreenLaterHook
        groupLater = integration as? any GroupLaterHook
        aliasLater = integration as? any AliasLaterHook
        notices = integration as? any NoticesHook
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
