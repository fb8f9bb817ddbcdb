/// Where a client gets its settings.
public enum SettingsLocation: Sendable, Equatable {
    /// Only `Configuration.defaultSettings` (or the built-in Segment-only settings).
    case defaultsOnly
    /// A JSON file in the CDN shape, read at start and on every refresh (edit it to reconfigure).
    case file(String)
    /// `<host>/v1/projects/<writeKey>/settings`, cached on disk. The client starts at once on the
    /// cached copy (or the defaults) and applies the fetched settings as a refresh.
    case cdn(host: String)

    public static let segmentCDN = SettingsLocation.cdn(host: "cdn-settings.segment.com")
}
