/// Which hosts' traffic becomes network signals: allowed by `allowedNetworkHosts` and not
/// blocked by `blockedNetworkHosts` (plus Segment's own hosts, always). A pattern is `*` (every
/// host), `*.example.com` (every subdomain of example.com, not example.com itself) or an exact
/// host name; matching ignores case.
package struct NetworkHostRules: Sendable, Equatable {
    package var allowed: [String]
    package var blocked: [String]

    package init(allowed: [String] = ["*"], blocked: [String] = []) {
        self.allowed = allowed.map { $0.lowercased() }
        self.blocked = (blocked + SignalsConfiguration.segmentHosts).map { $0.lowercased() }
    }

    package init(_ configuration: SignalsConfiguration) {
        self.init(allowed: configuration.allowedNetworkHosts, blocked: configuration.blockedNetworkHosts)
    }

    package func observes(host: String) -> Bool {
        let h = host.lowercased()
        return allowed.contains { NetworkHostRules.matches($0, h) } && !blocked.contains { NetworkHostRules.matches($0, h) }
    }

    static func matches(_ pattern: String, _ host: String) -> Bool {
        if pattern == "*" { return true }
        if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1 }
        return pattern == host
    }
}
