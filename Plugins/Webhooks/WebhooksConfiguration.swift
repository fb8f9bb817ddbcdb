import AnalyticsIntegration
import Foundation

/// The Webhooks settings, checked: every URL is http(s) with a host, every header is a valid
/// HTTP field. A bad entry refuses the whole configuration with the entry's path in the message.
struct WebhooksConfiguration {
    struct Target {
        var url: URL
        var headers: [(name: String, value: String)]
    }

    var targets: [Target] = []
    var sharedSecret: [UInt8]?
    var timeoutSeconds = 10.0
    /// Sent on every request; configured headers come after and win.
    let commonHeaders: [(name: String, value: String)] = [
        (name: "Content-Type", value: "application/json"),
        (name: "User-Agent", value: "analytics-host-webhooks/\(Webhooks.version)"),
    ]

    init(settings: JSONObject) throws(IntegrationError) {
        if let hooks = settings["hooks"], !hooks.isNull {
            guard let list = hooks.arrayValue else { throw .permanent("Webhooks setting \"hooks\" must be an array") }
            for (i, entry) in list.enumerated() {
                guard let object = entry.objectValue else { throw .permanent("Webhooks setting hooks[\(i)] must be an object") }
                guard let text = try Self.string(object["hook"], "hooks[\(i)].hook"), !text.isEmpty else { continue }
                let url = try Self.url(text, "hooks[\(i)].hook")
                let headers = try Self.headers(object["headers"], "hooks[\(i)].headers")
                targets.append(Target(url: url, headers: headers))
            }
        }
        if let text = try Self.string(settings["globalHook"], "globalHook"), !text.isEmpty {
            let url = try Self.url(text, "globalHook")
            if !targets.contains(where: { $0.url == url }) { targets.append(Target(url: url, headers: [])) }
        }
        guard !targets.isEmpty else {
            throw .permanent("Webhooks has no URL: set \"hooks\": [{\"hook\": \"https://…\"}] (or \"globalHook\") in its settings")
        }
        if let secret = try Self.string(settings["sharedSecret"], "sharedSecret"), !secret.isEmpty {
            sharedSecret = Array(secret.utf8)
        }
        if let timeout = settings["timeoutSeconds"], !timeout.isNull {
            guard let seconds = timeout.doubleValue, seconds > 0, seconds <= 600 else {
                throw .permanent("Webhooks setting \"timeoutSeconds\" must be a number of seconds in (0, 600], not \(timeout)")
            }
            timeoutSeconds = seconds
        }
    }

    private static func string(_ value: JSON?, _ path: String) throws(IntegrationError) -> String? {
        guard let value, !value.isNull else { return nil }
        guard let text = value.stringValue else { throw .permanent("Webhooks setting \(path) must be a string, not \(value)") }
        return text.trimmingCharacters(in: .whitespaces)
    }

    private static func url(_ text: String, _ path: String) throws(IntegrationError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw .permanent("Webhooks setting \(path) \"\(text)\" is not an http(s) URL")
        }
        return url
    }

    private static func headers(_ value: JSON?, _ path: String) throws(IntegrationError) -> [(name: String, value: String)] {
        guard let value, !value.isNull else { return [] }
        guard let list = value.arrayValue else { throw .permanent("Webhooks setting \(path) must be an array of {\"key\", \"value\"}") }
        var headers: [(name: String, value: String)] = []
        for (i, entry) in list.enumerated() {
            guard let object = entry.objectValue else { throw .permanent("Webhooks setting \(path)[\(i)] must be an object") }
            guard let name = try string(object["key"], "\(path)[\(i)].key"), !name.isEmpty else { continue }
            let text: String
            switch object["value"] {
            case .string(let s)?: text = s
            case nil, .null?: text = ""
            case let other?: text = other.serialized()  // numbers and booleans as written
            }
            guard name.utf8.allSatisfy(isTokenByte) else {
                throw .permanent("Webhooks setting \(path)[\(i)].key \"\(name)\" is not a valid HTTP header name")
            }
            guard !text.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
                throw .permanent("Webhooks setting \(path)[\(i)].value of \"\(name)\" contains a line break")
            }
            headers.append((name: name, value: text))
        }
        return headers
    }

    /// RFC 9110 token characters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
