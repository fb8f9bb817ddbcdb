import AnalyticsIntegration

/// The settings `Metrics.parse` reads, declared for the host (ABI 1.3 `AH_EXT_SETTINGS_SCHEMA`).
extension Metrics: DeclaredSettings {
    public static let declaredSettings: [SettingDeclaration] = [
        .string("path", required: true, "the JSON summary file, replaced atomically at each flush (relative to the settings file)"),
        .string("summaryEvent", "also send a track event with this name carrying the counts"),
    ]
}
