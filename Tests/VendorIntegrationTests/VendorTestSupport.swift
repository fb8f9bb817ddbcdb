import AnalyticsCore
import Foundation
import Testing

/// An event from its wire text (tests write events as they travel).
func wire(_ text: String) -> Event {
    do {
        guard let object = try JSON(parsing: text).objectValue else { fatalError("not an object: \(text)") }
        return try Event(payload: object)
    } catch {
        fatalError("bad test event \(text): \(error)")
    }
}

/// The context a mobile source sends (analytics-swift's shape).
let mobileContext = #"{"app":{"name":"Shop","version":"3.2.1","build":"321","namespace":"com.example.shop"},"os":{"name":"iOS","version":"18.1"},"device":{"manufacturer":"Apple","model":"iPhone16,2","type":"ios","id":"dev-1234567"},"screen":{"width":1179,"height":2556},"network":{"carrier":"Orange"},"ip":"203.0.113.9","locale":"fr-FR","timezone":"Europe/Paris","library":{"name":"analytics-swift","version":"1.7.0"}}"#

/// Records the waits a sender asked for instead of sleeping.
final class WaitRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Double] = []
    var waits: [Double] { lock.lock(); defer { lock.unlock() }; return recorded }
    func wait(_ seconds: Double) { lock.lock(); recorded.append(seconds); lock.unlock() }
}
