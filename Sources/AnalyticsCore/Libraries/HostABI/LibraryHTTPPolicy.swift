import Foundation
import Glibc

/// What the host's HTTP requests (`AH_EXT_HTTP_REQUESTS`) may reach for one library, and how
/// much of an answer it holds for it. In process mode the library's request is the hostile
/// input of a jailed process, which must not use the host as its way out: only the origins it is
/// granted (`http:ORIGIN` in `isolation.allow`, and the origins of the URLs its own settings name,
/// such as an `apiHost` or a webhook's URL), each checked again after name resolution and on
/// every redirect. In-process libraries (and a library granted `network`) may reach any origin;
/// every library gets the same caps: a response of at most `maxResponseBytes`, timeouts in steps.
package struct LibraryHTTPPolicy: Sendable, Equatable {
    /// Any origin, any address (in-process, or granted `network`).
    package var unrestricted: Bool
    /// Origins granted by name ("https://api.example.com:443"), normalized by `origin(of:)`.
    package var origins: Set<String>
    /// `http:*`: any origin whose addresses are all public.
    package var anyPublic: Bool
    /// Largest response body held for the library (bytes).
    package var maxResponseBytes: Int

    /// The default cap of a response body: 4 MiB.
    package static let defaultMaxResponseBytes = 4 << 20
    /// Never more than a frame to a runner can carry (with room for the headers).
    package static let largestResponseBytes = IsolationWire.maxFrame - (1 << 20)

    package init(unrestricted: Bool, origins: Set<String> = [], anyPublic: Bool = false, maxResponseBytes: Int = defaultMaxResponseBytes) {
        self.unrestricted = unrestricted
        self.origins = origins
        self.anyPublic = anyPublic
        self.maxResponseBytes = max(1, min(maxResponseBytes, Self.largestResponseBytes))
    }

    /// "scheme://host:port", lower-cased, with the scheme's default port; nil when `url` is not
    /// an http(s) URL with a host.
    package static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var host = url.host?.lowercased(), !host.isEmpty else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// The origins of the http(s) URLs a library's settings name (at most 64, 4 levels deep):
    /// what the operator pointed it at is what it may reach.
    package static func origins(named settings: JSONObject) -> Set<String> {
        var found: Set<String> = []
        func visit(_ value: JSON, depth: Int) {
            guard depth < 4, found.count < 64 else { return }
            switch value {
            case .string(let text):
                let lower = text.lowercased()
                if lower.hasPrefix("http://") || lower.hasPrefix("https://"), let url = URL(string: text), let o = origin(of: url) { found.insert(o) }
            case .array(let items): for item in items.prefix(256) { visit(item, depth: depth + 1) }
            case .object(let o): for (k, v) in o where k != "isolation" { visit(v, depth: depth + 1) }
            default: break
            }
        }
        visit(.object(settings), depth: 0)
        return found
    }

    /// Why the library may not request `url`, or nil. Resolves the host (blocking): call off any
    /// thread that must not wait.
    package func problem(with url: URL) -> String? {
        guard let origin = Self.origin(of: url) else { return "\"\(url.absoluteString)\" is not an http or https URL" }
        if unrestricted { return nil }
        let named = origins.contains(origin)
        guard named || anyPublic else {
            let granted = origins.isEmpty ? "none" : origins.sorted().joined(separator: ", ")
            return "\(origin) is not an origin this library may reach through the host (granted: \(granted); "
                + "its settings' URLs, or \"http:\(origin)\" in isolation.allow)"
        }
        // An origin named by an address of this machine or its network (or "localhost") is
        // granted as named; any other must resolve to public addresses only.
        let host = URLComponents(url: url, resolvingAgainstBaseURL: false)?.host ?? url.host ?? ""
        if named && (Self.literalAddress(host).map { !Self.isPublic($0) } ?? false || host.lowercased() == "localhost") { return nil }
        let resolved = Self.resolve(host)
        if resolved.isEmpty { return nil }  // the request itself fails and says why
        if let inner = resolved.first(where: { !Self.isPublic($0) }) {
            return "\(origin) resolves to \(Self.text(inner)), \(Self.kind(inner)) address; only an origin that names such an "
                + "address itself is granted it (\"http:\(url.scheme?.lowercased() ?? "http")://\(Self.text(inner))…\")"
        }
        return nil
    }

    /// An address as 16 bytes (IPv4 as ::ffff:a.b.c.d).
    typealias Address = [UInt8]

    static func literalAddress(_ host: String) -> Address? {
        var bare = host
        if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return mapped(v4) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func mapped(_ v4: in_addr) -> Address {
        var a = Address(repeating: 0, count: 16)
        a[10] = 0xff; a[11] = 0xff
        withUnsafeBytes(of: v4.s_addr) { for i in 0..<4 { a[12 + i] = $0[i] } }
        return a
    }

    /// Every address `host` resolves to (empty when it does not).
    static func resolve(_ host: String) -> [Address] {
        if let literal = literalAddress(host) { return [literal] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var out: [Address] = []
        var next = list
        while let entry = next, out.count < 64 {
            if let sa = entry.pointee.ai_addr {
                if entry.pointee.ai_family == AF_INET {
                    out.append(sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { mapped($0.pointee.sin_addr) })
                } else if entry.pointee.ai_family == AF_INET6 {
                    out.append(sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in withUnsafeBytes(of: p.pointee.sin6_addr) { Array($0) } })
                }
            }
            next = entry.pointee.ai_next
        }
        return out
    }

    static func isV4(_ a: Address) -> Bool { a[0..<10].allSatisfy { $0 == 0 } && a[10] == 0xff && a[11] == 0xff }

    /// nil for a public address, else what it is.
    static func privateKind(_ a: Address) -> String? {
        if isV4(a) {
            let (b0, b1) = (a[12], a[13])
            switch b0 {
            case 0: return "an unspecified"
            case 127: return "a loopback"
            case 10: return "a private"
            case 169 where b1 == 254: return "a link-local"
            case 172 where (16...31).contains(b1): return "a private"
            case 192 where b1 == 168: return "a private"
            case 100 where (64...127).contains(b1): return "a shared (carrier-grade NAT)"
            case 224...255: return "a multicast or reserved"
            default: return nil
            }
        }
        if a[0..<15].allSatisfy({ $0 == 0 }) { return a[15] == 1 ? "a loopback" : "an unspecified" }
        if a[0] == 0xfe && a[1] & 0xc0 == 0x80 { return "a link-local" }
        if a[0] & 0xfe == 0xfc { return "a private (unique local)" }
        if a[0] == 0xff { return "a multicast" }
        return nil
    }

    static func isPublic(_ a: Address) -> Bool { privateKind(a) == nil }
    static func kind(_ a: Address) -> String { privateKind(a) ?? "a public" }

    static func text(_ a: Address) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        if isV4(a) {
            var v4 = in_addr()
            withUnsafeMutableBytes(of: &v4.s_addr) { for i in 0..<4 { $0[i] = a[12 + i] } }
            inet_ntop(AF_INET, &v4, &buffer, 64)
        } else {
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { for i in 0..<16 { $0[i] = a[i] } }
            inet_ntop(AF_INET6, &v6, &buffer, 64)
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
