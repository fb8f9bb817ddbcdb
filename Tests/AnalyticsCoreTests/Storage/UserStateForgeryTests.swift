import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `user.json` carries a MAC keyed with the storage's secret: an identity written into it by
/// anything but the host is reported ("not written by this host"), set aside and not used; one
/// from before the key existed is taken once and signed.
@Suite struct UserStateForgeryTests {
    func client(_ dir: String, errors: ErrorLog) -> Analytics {
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.autoAddSegmentDestination = false
        config.errorHandler = errors.handler
        return Analytics(configuration: config)
    }

    func text(_ dir: String) -> String { (try? String(contentsOfFile: dir + "/user.json", encoding: .utf8)) ?? "" }

    @Test func aRewrittenUserFileIsReportedAndNotUsed() throws {
        let dir = makeTempDirectory("user-forgery")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = client(dir, errors: ErrorLog())
        first.identify(userId: "alice")
        first.shutdown()
        #expect(text(dir).contains("\"hostMAC\":\""), "\(text(dir))")
        let anonymous = first.anonymousId

        // After the host exited: another identity, without a MAC, then with a wrong one.
        for forged in [#"{"anonymousId":"evil","userId":"mallory","traits":{}}"#,
                       text(dir).replacingOccurrences(of: "alice", with: "mallo")] {
            try forged.write(toFile: dir + "/user.json", atomically: true, encoding: .utf8)
            let errors = ErrorLog()
            let next = client(dir, errors: errors)
            #expect(next.userId == nil && next.anonymousId != "evil" && next.anonymousId != anonymous, "not used")
            #expect(errors.messages.contains { $0.contains(dir + "/user.json: not written by this host") }, "\(errors.messages)")
            #expect((try? String(contentsOfFile: dir + "/user.json.rejected", encoding: .utf8)) == forged, "kept for inspection")
            next.shutdown()
        }
    }

    @Test func aUserFileFromBeforeTheKeyIsTakenOnceAndSigned() throws {
        let dir = makeTempDirectory("user-migration")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"anonymousId":"anon-1","userId":"bob","traits":{"plan":"pro"}}"#.write(toFile: dir + "/user.json", atomically: true, encoding: .utf8)
        let errors = ErrorLog()
        let first = client(dir, errors: errors)
        #expect(first.userId == "bob" && first.anonymousId == "anon-1")
        first.shutdown()
        #expect(text(dir).contains("\"hostMAC\":\""), "signed when taken: \(text(dir))")
        let second = client(dir, errors: errors)
        #expect(second.userId == "bob" && second.anonymousId == "anon-1")
        second.shutdown()
        #expect(errors.messages.isEmpty, "\(errors.messages)")
    }
}
