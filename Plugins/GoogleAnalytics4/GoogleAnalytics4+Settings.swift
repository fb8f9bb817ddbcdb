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
        .number("maxWaitSeconds", default: 5, "how long a client's events may wait for more of theirs, in (0, 5]"),
        .number("engagementTimeMsec", default: 1, "engagement_time_msec of every event (GA4 counts no user without it)"),
        .boolean("lowercaseEventNames", default: false, "custom event names in lower case"),
        .object("userProperties", "trait name → GA4 user property name (none are sent unless named here)"),
    ]
}
