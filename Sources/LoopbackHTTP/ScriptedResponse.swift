import AnalyticsCore

/// What the loopback server does with the next request.
public enum ScriptedResponse: Sendable {
    /// Answer with this status, headers and body (Content-Length is added).
    case respond(status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
    /// Read the request, then never answer (until the server stops): a hung server.
    case hang
    /// Read the request, then close the connection without answering.
    case close

    public static func status(_ code: Int, headers: [(String, String)] = [], body: String = "") -> ScriptedResponse {
        .respond(status: code, headers: headers, body: Array(body.utf8))
    }

    public static func json(_ text: String, status: Int = 200) -> ScriptedResponse {
        .respond(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
    }

    static let ok = ScriptedResponse.json(#"{"success":true}"#)

    /// A refusal in the shape Segment's tracking API and its clients use:
    /// `{"success":false,"code":"…","message":"…"}` (clients read `code`, and `message` for people).
    public static func error(status: Int, code: String, message: String, headers: [(String, String)] = []) -> ScriptedResponse {
        .respond(status: status, headers: [("Content-Type", "application/json")] + headers,
                 body: Array(errorBody(code: code, message: message).utf8))
    }

    public static func errorBody(code: String, message: String) -> String {
        JSON.object(["success": false, "code": .string(code), "message": .string(message)]).serialized()
    }
}
