import AnalyticsIntegration

/// The settings `GoogleAnalytics4.Configuration` reads, declared for the host (ABI 1.3
/// `AH_EXT_SETTINGS_SCHEMA`). Exactly one of measurementId (or measurementID) and firebaseAppId
/// is needed, which create checks itself.
extension GoogleAnalytics4: DeclaredSettings {
    public static let declaredSettings: [SettingDeclaration] = [
        .string("apiSecret", required: true, "the Measurement Protocol API secret"),
        .string("measurementId", "a web stream's measurement ID (G-…)"),
        .string("measurementID", "GA4 Web's spelling of measurementId"),
        .string("firebaseAppId", "an app stream's Firebase app ID"),
        .string("apiHost", default: "https://www.google-analytics.com", "the base URL (a proxy, a test server)"),
        .number("timeoutSeconds", default: 10, "per-request timeout"),
    ]
}
