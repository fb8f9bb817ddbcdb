/// Where and how the Segment.io destination uploads, read from its settings object
/// (`integrations["Segment.io"]`: `apiKey`, `apiHost`, `httpConfig`) with the configuration's
/// overrides applied. Re-read on every settings update, so a refresh can move the host or change
/// the retry policy without restarting the client.
struct SegmentDestinationEndpoint: Equatable {
    static let defaultAPIHost = "api.segment.io/v1"

    var upload: UploadConfiguration
    /// Problems in `httpConfig` (each names its JSON path); the defaults apply to those fields.
    var warnings: [String]

    init(settings: JSONObject, configuration: Configuration) {
        var warnings: [String] = []
        let writeKey = settings["apiKey"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? configuration.writeKey
        var host = SegmentDestinationEndpoint.defaultAPIHost
        if let value = settings["apiHost"], !value.isNull {
            if let text = value.stringValue, !text.isEmpty { host = text } else {
                warnings.append("integrations.Segment.io.apiHost: expected a non-empty string, using \(host)")
            }
        }
        if let override = configuration.segment.apiHost { host = override }
        let policy = RetryPolicy(httpConfig: settings["httpConfig"], warnings: &warnings)
        upload = UploadConfiguration(writeKey: writeKey, apiHost: host,
                                     requestTimeout: configuration.segment.requestTimeout, retryPolicy: policy,
                                     compressionLevel: configuration.segment.compressionLevel)
        self.warnings = warnings
    }

    static func == (a: SegmentDestinationEndpoint, b: SegmentDestinationEndpoint) -> Bool {
        a.upload.writeKey == b.upload.writeKey && a.upload.apiHost == b.upload.apiHost
            && a.upload.retryPolicy == b.upload.retryPolicy && a.warnings == b.warnings
    }
}
