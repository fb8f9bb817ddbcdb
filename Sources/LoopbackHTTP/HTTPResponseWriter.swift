/// Serialises a response head and body into one buffer, so that it leaves in one `send`.
enum HTTPResponseWriter {
    static func bytes(status: Int, headers: [(String, String)], body: [UInt8], keepAlive: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason(status))\r\n"
        var hasType = false
        for (name, value) in headers {
            let lower = name.lowercased()
            if lower == "content-length" || lower == "connection" { continue }
            if lower == "content-type" { hasType = true }
            head += "\(name): \(value)\r\n"
        }
        if !hasType && !body.isEmpty { head += "Content-Type: text/plain\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        var out = Array(head.utf8)
        out.append(contentsOf: body)
        return out
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 413: return "Payload Too Large"
        case 411: return "Length Required"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default:
            // A status this table lacks still gets a reason of its class, never a made-up word.
            switch status / 100 {
            case 1: return "Informational"
            case 2: return "Success"
            case 3: return "Redirection"
            case 4: return "Client Error"
            default: return "Server Error"
            }
        }
    }
}
