import Foundation
@testable import AnalyticsCore

/// Host services that record what libraries ask of them.
final class RecordingHost: Sendable {
    let logs = Locked<[(NativeLogLevel, String)]>([])
    let sent = Locked<[[UInt8]]>([])
    let userId: Locked<String?>
    let anonymousId: String
    let sendResult: NativeHookResult

    init(userId: String? = "user-42", anonymousId: String = "anon-7", sendResult: NativeHookResult = .ok) {
        self.userId = Locked(userId)
        self.anonymousId = anonymousId
        self.sendResult = sendResult
    }

    var services: HostServices {
        HostServices(
            log: { [logs] level, text in logs.withLock { $0.append((level, text)) } },
            sendEvent: { [sent, sendResult] bytes in
                sent.withLock { $0.append(bytes) }
                return sendResult
            },
            userId: { [userId] in userId.withLock { $0 } },
            anonymousId: { [anonymousId] in anonymousId })
    }

    var logLines: [String] { logs.withLock { $0.map(\.1) } }
}

extension Event {
    static func make(_ type: EventType, _ fields: JSONObject = [:]) -> Event {
        var payload: JSONObject = ["type": .string(type.rawValue), "messageId": "m-1", "anonymousId": "anon-7"]
        payload.merge(fields)
        return try! Event(payload: payload)
    }
}
