/// How an `AH_EXT_HTTP_REQUESTS` request and its answer cross between the runner and the host
/// (a `call` frame of function `httpSend`, answered by a `reply` frame when the exchange ends,
/// possibly after other calls were answered).
enum HTTPExchangeWire {
    static func encode(_ request: NativeHTTPRequest) -> [UInt8] {
        var w = WireWriter()
        w.text(request.method)
        w.text(request.url)
        w.u8(request.gzip ? 1 : 0)
        // A library's number: anything, so clamped before the conversion (the host rounds it up anyway).
        w.i64(request.timeout.isNaN ? 15_000 : Int64(max(0, min(request.timeout, 1e6)) * 1000))
        w.u32(UInt32(request.headers.count))
        for h in request.headers {
            w.text(h.name)
            w.text(h.value)
        }
        w.data(request.body)
        return w.bytes
    }

    static func decodeRequest(_ bytes: [UInt8]) -> NativeHTTPRequest? {
        var r = WireReader(bytes)
        let method = r.text()
        let url = r.text()
        let gzip = r.u8() != 0
        let timeout = Double(r.i64()) / 1000
        let count = Int(r.u32())
        guard !r.failed, count <= 1000 else { return nil }
        var headers: [NativeHTTPHeader] = []
        for _ in 0..<count { headers.append(NativeHTTPHeader(r.text(), r.text())) }
        let body = r.data()
        guard !r.failed, r.atEnd else { return nil }
        return NativeHTTPRequest(method: method, url: url, headers: headers, body: body, gzip: gzip, timeout: timeout)
    }

    /// The answer travels as the reply's bytes; the reply's status byte says which case it is.
    static func encode(_ answer: NativeHTTPAnswer) -> (UInt8, [UInt8]) {
        var w = WireWriter()
        switch answer {
        case .response(let status, let headers, let body):
            w.u32(UInt32(clamping: max(0, status)))
            w.u32(UInt32(headers.count))
            for h in headers {
                w.text(h.name)
                w.text(h.value)
            }
            w.data(body)
            return (IsolationWire.ok, w.bytes)
        case .failed(let why): return (IsolationWire.retryable, Array(why.utf8))
        case .refused(let why): return (IsolationWire.permanent, Array(why.utf8))
        }
    }

    static func decodeAnswer(_ status: UInt8, _ bytes: [UInt8]) -> NativeHTTPAnswer {
        switch status {
        case IsolationWire.ok:
            var r = WireReader(bytes)
            let code = Int(r.u32())
            let count = Int(r.u32())
            guard !r.failed, count <= 10_000 else { return .failed("malformed HTTP answer from the host") }
            var headers: [NativeHTTPHeader] = []
            for _ in 0..<count { headers.append(NativeHTTPHeader(r.text(), r.text())) }
            let body = r.data()
            if r.failed { return .failed("malformed HTTP answer from the host") }
            return .response(status: code, headers: headers, body: body)
        case IsolationWire.retryable: return .failed(String(decoding: bytes, as: UTF8.self))
        default: return .refused(String(decoding: bytes, as: UTF8.self))
        }
    }
}
