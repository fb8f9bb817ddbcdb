import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Builds the Amplitude library (and the driver of its batch path) from Plugins/Amplitude and
/// Plugins/VendorSupport with the flags of `make plugins`, into a test's temporary directory.
enum AmplitudeBuild {
    static var sources: [String] { FixtureBuilder.vendorSources("Amplitude") }

    static let flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wmissing-prototypes", "-Werror", "-I", FixtureBuilder.root + "/include"]

    /// Built once per test process (gcc on two shared cores is the slow part of these tests);
    /// `dir` is unused but keeps call sites uniform with the driver's.
    static func library(in dir: String) throws -> String { try built.get() }

    private static let built: Result<String, any Error> = Result {
        let dir = makeTempDirectory("loader")
        let output = dir + "/libamplitude.so"
        try FixtureBuilder.run("/usr/bin/gcc", flags + ["-shared", "-fPIC", "-fvisibility=hidden", "-o", output] + sources + ["-lm", "-pthread"])
        return output
    }

    static func driver(in dir: String) throws -> String { try builtDriver.get() }

    private static let builtDriver: Result<String, any Error> = Result {
        let dir = makeTempDirectory("loader")
        let output = dir + "/amplitude_batch_driver"
        try FixtureBuilder.run("/usr/bin/gcc", flags + ["-o", output, FixtureBuilder.root + "/Tests/Fixtures/amplitude_batch_driver.c"] + sources + ["-lm", "-pthread"])
        return output
    }

    /// Host services with the host's HTTP client (ABI 1.3's HTTP requests), or without it.
    static func services(hostHTTP: Bool = true) -> HostServices {
        var services = RecordingHost().services
        if hostHTTP { services.http = HostServices.HTTP.using(HTTPClient()) }
        return services
    }

    /// A loaded instance talking to `fake`, with `extra` settings.
    static func instance(_ fake: AmplitudeFake, _ extra: String = "", dir: String, hostHTTP: Bool = true) throws -> NativeIntegration {
        let library = try PluginLoader().load(file: try library(in: dir))
        let settings = settingsObject(#"{"apiKey":"\#(fake.apiKey)","apiHost":"\#(fake.baseURL)"\#(extra.isEmpty ? "" : "," + extra)}"#)
        return try library.makeInstance(settings: settings, services: services(hostHTTP: hostHTTP))
    }
}

/// What the batch driver printed.
struct AmplitudeDriverRun {
    var outcomes: [Int]
    var requests: Int
    var waits: [Double]
    var problem: String?
    var unmapped: [String]

    init(_ text: String) {
        var outcomes: [Int] = [], requests = -1, waits: [Double] = [], problem: String?, unmapped: [String] = []
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            switch parts[0] {
            case "outcome": outcomes.append(Int(parts[1].split(separator: " ")[1])!)
            case "requests": requests = Int(parts[1])!
            case "waits": waits = parts.count > 1 ? parts[1].split(separator: " ").compactMap { Double($0) } : []
            case "problem": problem = parts[1]
            case "unmapped": unmapped.append(parts[1])
            default: break
            }
        }
        self.outcomes = outcomes; self.requests = requests; self.waits = waits; self.problem = problem; self.unmapped = unmapped
    }

    static func run(_ driver: String, settings: String, events: [String]) throws -> AmplitudeDriverRun {
        let output = try FixtureBuilder.capture(driver, [settings], stdin: Data((events.joined(separator: "\n") + "\n").utf8))
        #expect(output.status == 0, "driver: \(output.stderr)")
        return AmplitudeDriverRun(output.stdout)
    }
}

/// The milliseconds since 1970 of an ISO-8601 timestamp, computed independently of the library.
func epochMilliseconds(_ text: String) -> Int {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let date = formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)!
    return Int((date.timeIntervalSince1970 * 1000).rounded())
}
