import Foundation

/// Where and how batches are uploaded.
package struct UploadConfiguration: Sendable {
    package var writeKey: String
    /// `api.segment.io/v1` (https is assumed) or a full base such as `http://127.0.0.1:8080/v1`.
    package var apiHost: String
    /// Seconds without a response before an attempt counts as failed (and is retried).
    package var requestTimeout: Double
    package var retryPolicy: RetryPolicy
    package var userAgent: String
    /// zlib level for the request body: 1 (fastest, default) … 9; 0 sends the body uncompressed
    /// (no `Content-Encoding`), which only pays off on fast local links.
    package var compressionLevel: Int32

    package init(writeKey: String, apiHost: String = "api.segment.io/v1", requestTimeout: Double = 15,
                retryPolicy: RetryPolicy = .standard, userAgent: String = "analytics-host (Linux)",
                compressionLevel: Int32 = 1) {
        self.writeKey = writeKey
        self.apiHost = apiHost
        self.requestTimeout = requestTimeout
        self.retryPolicy = retryPolicy
        self.userAgent = userAgent
        self.compressionLevel = max(0, min(9, compressionLevel))
    }

    /// `<apiHost>/b`, with `https://` added when no scheme is given.
    package func batchURL() throws(UploadEndpointError) -> URL {
        try Self.url(base: apiHost, path: "b")
    }

    /// Joins `base` (scheme optional, https by default) and `path`.
    static func url(base: String, path: String) throws(UploadEndpointError) -> URL {
        var text = base.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { throw UploadEndpointError(host: base, reason: "empty host") }
        if !text.contains("://") { text = "https://" + text }
        while text.hasSuffix("/") { text.removeLast() }
        text += "/" + path
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "https" || scheme == "http", url.host != nil
        else { throw UploadEndpointError(host: base, reason: "not an http(s) URL") }
        return url
    }
}

/// The configured host does not make a usable URL.
package struct UploadEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var reason: String
    package var description: String { "invalid host '\(host)': \(reason)" }
}
