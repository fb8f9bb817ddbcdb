import AnalyticsCore
import Foundation
import Testing

/// The hand-written ISO-8601 reader agrees with Foundation's formatter (which it replaced where
/// one was made per event) and refuses what that refuses.
@Suite struct ISO8601TimestampTests {
    static func foundation(_ text: String) -> Int? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = f.date(from: text) ?? ISO8601DateFormatter().date(from: text)
        return date.map { Int(($0.timeIntervalSince1970 * 1_000_000).rounded()) }
    }

    @Test(arguments: ["2026-11-26T01:02:03.456Z", "2026-11-26T01:02:03Z", "1970-01-01T00:00:00Z", "2024-02-29T23:59:59.999Z",
                      "2026-11-26T01:02:03.456+02:00", "2026-11-26T01:02:03-05:30", "1969-12-31T23:59:59.5Z", "2100-03-01T00:00:00Z"])
    func agreesWithFoundation(_ text: String) {
        #expect(ISO8601Timestamp.microseconds(text) != nil)
        #expect(ISO8601Timestamp.microseconds(text) == Self.foundation(text), "\(text)")
    }

    @Test(arguments: ["", "2026-11-26", "2026-11-26T01:02:03", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2026-11-26T24:00:00Z",
                      "2026-11-26T01:02:03.Z", "2026-11-26T01:02:03Zjunk", "not a date", "2026-11-26T01:02:03+25:00"])
    func refusesWhatIsNotAnInternetDateTime(_ text: String) {
        #expect(ISO8601Timestamp.microseconds(text) == nil, "\(text)")
    }
}
