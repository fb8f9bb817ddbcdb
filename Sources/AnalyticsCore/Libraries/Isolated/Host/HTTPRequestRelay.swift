import Foundation

/// Makes the HTTP requests a library in a runner process starts (`AH_EXT_HTTP_REQUESTS`): the
/// runner forwards each one, the host checks it again (method, headers, the origins the library
/// is granted: `LibraryHTTPPolicy`), sends it and replies when it ends. The runner's table
/// already bounds requests per instance; this bound holds even against a process that writes
/// frames of its own.
final class HTTPRequestRelay: Sendable {
    private let running = Locked(0)
    let policy: LibraryHTTPPolicy

    init(policy: LibraryHTTPPolicy) { self.policy = policy }

    func send(_ bytes: [UInt8], id: UInt32, services: HostServices, process: IsolatedProcess) {
        @Sendable func reply(_ answer: NativeHTTPAnswer) {
            let (status, payload) = HTTPExchangeWire.encode(answer)
            var w = WireWriter()
            w.begin(.reply)
            w.u32(id)
            w.u8(status)
            w.data(payload)
            w.end()
            _ = process.send(w.bytes, deadline: monotonicSeconds() + 5)
        }
        guard let request = HTTPExchangeWire.decodeRequest(bytes) else {
            reply(.refused("malformed HTTP request from the runner"))
            return
        }
        guard services.http != nil else {
            reply(.refused("this host offers no HTTP requests to this library"))
            return
        }
        let admitted = running.withLock { n -> Bool in
            guard n < HTTPRequestsInFlight.maxInFlight else { return false }
            n += 1
            return true
        }
        guard admitted else {
            reply(.failed("\(HTTPRequestsInFlight.maxInFlight) requests of this library are running (the bound per instance)"))
            return
        }
        LibraryHTTPClient.shared.send(request, policy: policy) { [running] answer in
            running.withLock { $0 -= 1 }
            reply(answer)
        }
    }
}
