import AnalyticsIntegration

/// The settings `PostHogConfiguration` reads, declared for the host (ABI 1.3
/// `AH_EXT_SETTINGS_SCHEMA`). Keep it true to PostHogConfiguration.
extension PostHog: DeclaredSettings {
    public static let declaredSettings: [SettingDeclaration] = [
        .string("apiKey", required: true, "the project API key (phc_…)"),
        .string("postHogInstance", default: PostHogConfiguration.defaultBase, "the instance's base URL (Segment's name)"),
        .string("apiHost", "a base URL that wins over postHogInstance (a proxy, a test server)"),
        .string("groupType", default: "company", "the group type of a group call"),
        .boolean("geoipDisable", default: false, "never locate events by address (events without context.ip never are)"),
        .boolean("geoip_disable", "Segment's spelling of geoipDisable"),
        .boolean("gzip", default: true, "gzip request bodies"),
        .number("timeoutSeconds", default: 10, "per-request timeout, in (0, 300]"),
        .number("maxAttempts", default: 3, "tries per batch, 1 to 10"),
    ]
}
