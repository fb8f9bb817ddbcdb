import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Glibc
import Testing

/// Plugins/VendorSupport is compiled into both C vendor libraries. Its functions must stay each
/// library's own: hidden even in a build that forgets -fvisibility=hidden, so that two vendor
/// libraries in one process (or one loaded RTLD_GLOBAL) never bind to each other's copy, and the
/// only symbol a vendor library exports stays the ABI entry function.
@Suite struct VendorSupportTests {
    /// Every function vendor_support.h declares, read from the header (a new one is covered too).
    static func declaredFunctions() throws -> [String] {
        let header = try String(contentsOfFile: FixtureBuilder.root + "/Plugins/VendorSupport/vendor_support.h", encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"\b(vendor_[a-z_0-9]+)\("#)
        let names = pattern.matches(in: header, range: NSRange(header.startIndex..., in: header)).compactMap { match in
            Range(match.range(at: 1), in: header).map { String(header[$0]) }
        }
        return Array(Set(names)).sorted()
    }

    @Test(arguments: ["Amplitude", "Mixpanel"])
    func sharedFunctionsAreHiddenWithoutTheVisibilityFlag(vendor: String) throws {
        let names = try Self.declaredFunctions()
        #expect(names.contains("vendor_json_parse") && names.count >= 20, "\(names)")
        let dir = makeTempDirectory("vendor-support")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/lib\(vendor.lowercased()).so"
        try FixtureBuilder.run("/usr/bin/gcc", ["-std=c99", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
                                                "-I", FixtureBuilder.root + "/include", "-o", output]
                               + FixtureBuilder.vendorSources(vendor) + ["-lm", "-pthread"])
        let handle = try #require(dlopen(output, RTLD_NOW | RTLD_GLOBAL), "\(String(cString: dlerror()))")
        defer { dlclose(handle) }
        #expect(dlsym(handle, "analytics_host_plugin_v1") != nil)
        let exported = names.filter { dlsym(handle, $0) != nil }
        #expect(exported.isEmpty, "\(vendor) exports \(exported)")
    }

    /// Both libraries as `make plugins` builds them, loaded into one process by the real loader:
    /// each instance's errors still name its own library (its own copy of the shared reader).
    @Test func bothLibrariesLoadTogetherAndKeepTheirOwnNames() throws {
        let dir = makeTempDirectory("vendor-support")
        defer { FixtureBuilder.remove(dir) }
        let loader = PluginLoader()
        let amplitude = try loader.load(file: try AmplitudeBuild.library(in: dir))
        let mixpanel = try loader.load(file: try MixpanelBuild.library())
        for (library, name) in [(amplitude, "Amplitude"), (mixpanel, "Mixpanel")] {
            do {
                _ = try library.makeInstance(settings: settingsObject(#"{"apiHost":"ftp://nowhere"}"#), services: MixpanelBuild.services())
                Issue.record("\(name) accepted settings without a key")
            } catch {
                #expect("\(error)".contains("\(name): settings need a non-empty"), "\(error)")
            }
        }
    }
}
