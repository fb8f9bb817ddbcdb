import Foundation
import Glibc

/// The parts of `context` that describe this machine and program, read once from the system:
/// os from /etc/os-release and uname, locale from the environment, timezone from /etc/localtime.
enum SystemContext {
    static let libraryName = "analytics-host"
    static let libraryVersion = HostVersion.string

    /// `context.library`: this client, the one part of `context` that is the host's in server mode too.
    static var library: JSON { ["name": .string(libraryName), "version": .string(libraryVersion)] }

    static func make(application: ApplicationInfo?) -> JSONObject {
        var context: JSONObject = [:]
        if let app = application {
            context["app"] = ["name": .string(app.name), "version": .string(app.version), "build": .string(app.build)]
        }
        context["library"] = library
        var os: JSONObject = ["name": "Linux"]
        let release = osRelease()
        if let v = release["VERSION_ID"] ?? release["VERSION"] { os["version"] = .string(v) }
        if let name = release["NAME"] { os["distribution"] = .string(name) }
        var uts = utsname()
        if uname(&uts) == 0 {
            os["kernel"] = .string(field(&uts.release))
            context["device"] = ["type": "linux", "model": .string(field(&uts.machine))]
        }
        context["os"] = .object(os)
        context["locale"] = .string(locale())
        if let tz = timezone() { context["timezone"] = .string(tz) }
        return context
    }

    private static func field<T>(_ value: inout T) -> String {
        withUnsafeBytes(of: &value) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// KEY=value pairs of /etc/os-release (quotes removed).
    static func osRelease(path: String = "/etc/os-release") -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "="), !line.hasPrefix("#") else { continue }
            var value = line[line.index(after: eq)...]
            if value.count >= 2, let f = value.first, f == "\"" || f == "'", value.last == f {
                value = value.dropFirst().dropLast()
            }
            result[String(line[..<eq])] = String(value)
        }
        return result
    }

    /// "en-US" from LC_ALL / LC_MESSAGES / LANG ("en_US.UTF-8"); "en-US" when unset or "C".
    static func locale(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let raw = [environment["LC_ALL"], environment["LC_MESSAGES"], environment["LANG"]]
            .compactMap { $0 }.first { !$0.isEmpty } ?? ""
        let base = raw.split(separator: ".").first.map(String.init) ?? ""
        if base.isEmpty || base == "C" || base == "POSIX" { return "en-US" }
        return base.replacingOccurrences(of: "_", with: "-")
    }

    /// IANA name: $TZ, else the target of /etc/localtime, else /etc/timezone.
    static func timezone(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let tz = environment["TZ"], !tz.isEmpty { return tz.hasPrefix(":") ? String(tz.dropFirst()) : tz }
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/etc/localtime"),
           let r = target.range(of: "zoneinfo/") {
            return String(target[r.upperBound...])
        }
        if let text = try? String(contentsOfFile: "/etc/timezone", encoding: .utf8) {
            let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !name.isEmpty { return name }
        }
        return "UTC"
    }
}
