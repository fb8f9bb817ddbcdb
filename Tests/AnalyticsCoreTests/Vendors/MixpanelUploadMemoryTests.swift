import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// The Mixpanel library's upload paths (batches, refused records, splits, retryable answers with
/// Retry-After, a synchronous call after finish-later ones) under AddressSanitizer and
/// UndefinedBehaviorSanitizer, driven by a host written in C (Tests/Fixtures/mixpanel_upload_driver.c)
/// whose HTTP answers come from a script, on threads of their own.
@Suite struct MixpanelUploadMemoryTests {
    static let driver: Result<String, any Error> = Result {
        let dir = makeTempDirectory("loader")
        let output = dir + "/mixpanel_upload_driver"
        try FixtureBuilder.run("/usr/bin/gcc", ["-std=c99", "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                                "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror", "-I", FixtureBuilder.root + "/include",
                                                "-o", output, FixtureBuilder.root + "/Tests/Fixtures/mixpanel_upload_driver.c"] + MixpanelBuild.sources + ["-pthread"])
        return output
    }

    func run(_ arguments: [String]) throws -> [String: String] {
        let output = try FixtureBuilder.capture(try Self.driver.get(), arguments)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        #expect(!output.stderr.contains("ERROR: AddressSanitizer") && !output.stderr.contains("runtime error"), "\(output.stderr)")
        var values: [String: String] = [:]
        for line in output.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            values[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return values
    }

    @Test func everyCallIsAnsweredOnceWhateverMixpanelAnswers() throws {
        let r = try run(["120", "200", "413", "400:3", "429:2", "503"])
        let ok = Int(r["ok"] ?? "") ?? -1, permanent = Int(r["permanent"] ?? "") ?? -1, retryable = Int(r["retryable"] ?? "") ?? -1
        #expect(ok + permanent + retryable == 120, "\(r)")
        #expect(permanent >= 1 && retryable >= 1 && ok >= 1, "\(r)")
        #expect(r["retry_after"] == "2000", "the 429's Retry-After went to the host: \(r)")
        #expect(r["sync"] == "0", "the synchronous call after them: \(r)")
        #expect((Int(r["records"] ?? "") ?? 0) >= 120)
        #expect(r["trimmed"] == "13", "every call with a long string and a deep object was cut to Mixpanel's limits: \(r)")
    }

    @Test func refusalsNamingNothingSplitDownToTheBadRecord() throws {
        let r = try run(["40", "200"] + Array(repeating: "400", count: 12))
        let ok = Int(r["ok"] ?? "") ?? -1, permanent = Int(r["permanent"] ?? "") ?? -1
        #expect(ok + permanent == 40 && r["retryable"] == "0", "\(r)")
        #expect(permanent >= 1 && ok >= 1, "\(r)")
        #expect(Int(r["requests"] ?? "") ?? 0 >= 13, "each refusal split its request: \(r)")
    }
}
