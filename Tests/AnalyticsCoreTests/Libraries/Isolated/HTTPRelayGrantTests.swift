import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// The host's HTTP requests (`AH_EXT_HTTP_REQUESTS`) as a grant of their own in process mode: a
/// library reaches the origins its settings name and those `http:` grants, nothing else (this
/// machine's services, the cloud's metadata address), checked again at each redirect; every
/// library, in either mode, gets a response of at most `maxHTTPResponseBytes`. With the real
/// uploader library (Tests/Fixtures/uploader.c) against servers on 127.0.0.1.
@Suite struct HTTPRelayGrantTests {
    func client(_ settings: JSONObject, mode: IsolationMode = .process,
                configure: (inout Configuration) -> Void = { _ in }) throws -> ExtensionClient {
        try ExtensionClient(libraries: [ExtensionClient.Library(fixture: "uploader", name: "uploader")],
                            settings: ["integrations": ["Uploader": .object(settings)]], mode: mode, configure: configure)
    }

    func done(_ c: ExtensionClient) throws -> String {
        #expect(eventually { !c.lines(of: "Uploader", starting: "done ").isEmpty }, "\(c.lines(of: "Uploader"))")
        return try #require(c.lines(of: "Uploader", starting: "done ").first)
    }

    @Test func anOriginItsSettingsDoNotNameIsRefusedAndNothingIsSent() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try client(["hostPort": .string("127.0.0.1:\(server.port)"), "path": "/internal"])
        defer { _ = c.analytics.shutdown() }
        let line = try done(c)
        #expect(line.hasPrefix("done id=1 outcome=2 status=0"), "\(line)")
        #expect(line.contains("http://127.0.0.1:\(server.port) is not an origin this library may reach through the host"), "\(line)")
        #expect(server.requests.isEmpty, "nothing reached the server")
    }

    @Test func anHTTPGrantForTheOriginLetsItThrough() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: "fine"))
        let c = try client(["hostPort": .string("127.0.0.1:\(server.port)"), "path": "/granted",
                            "isolation": ["mode": "process", "allow": [.string("http:http://127.0.0.1:\(server.port)")]]])
        defer { _ = c.analytics.shutdown() }
        #expect(try done(c) == "done id=1 outcome=0 status=200 retry-after= body=fine err=")
        #expect(server.requests.first?.path == "/granted")
    }

    @Test func aRedirectToAnOriginNotGrantedIsRefused() throws {
        let granted = try LoopbackHTTPServer()
        let other = try LoopbackHTTPServer()
        defer { granted.stop(); other.stop() }
        granted.enqueue(.status(302, headers: [("Location", other.baseURL + "/elsewhere")]))
        let c = try client(["url": .string(granted.baseURL + "/start")])
        defer { _ = c.analytics.shutdown() }
        let line = try done(c)
        #expect(line.hasPrefix("done id=1 outcome=2 status=0"), "\(line)")
        #expect(line.contains("redirected to \(other.baseURL)/elsewhere: http://127.0.0.1:\(other.port) is not an origin"), "\(line)")
        #expect(other.requests.isEmpty, "the redirect was not followed")
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aResponseOverTheCapIsRefusedNotHeld(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: String(repeating: "x", count: 64 << 10)))
        let c = try client(["url": .string(server.baseURL + "/big")], mode: mode) { $0.isolation.maxHTTPResponseBytes = 4096 }
        defer { _ = c.analytics.shutdown() }
        let line = try done(c)
        #expect(line.hasPrefix("done id=1 outcome=2 status=0"), "\(line)")
        #expect(line.contains("the response is larger than 4096 bytes, the most the host holds for a library"), "\(line)")
    }

    /// Addresses of this machine and its network are granted by name only: `http:*` (any public
    /// origin) does not reach them, the metadata service's link-local address included.
    @Test func privateAndLinkLocalAddressesNeedAGrantThatNamesThem() throws {
        let anyPublic = LibraryHTTPPolicy(unrestricted: false, anyPublic: true)
        for url in ["http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8080/", "http://[::1]:9000/", "http://10.1.2.3/",
                    "http://192.168.0.1/", "http://[fe80::1]/", "http://localhost:631/"] {
            let problem = anyPublic.problem(with: try #require(URL(string: url)))
            #expect(problem?.contains("address") == true, "\(url): \(problem ?? "allowed")")
        }
        let named = LibraryHTTPPolicy(unrestricted: false, origins: ["http://169.254.169.254:80"])
        #expect(named.problem(with: try #require(URL(string: "http://169.254.169.254/x"))) == nil, "named, it is granted")
        #expect(named.problem(with: try #require(URL(string: "http://169.254.169.254:81/x")))?.contains("is not an origin") == true)
        #expect(LibraryHTTPPolicy(unrestricted: true).problem(with: try #require(URL(string: "http://127.0.0.1/"))) == nil, "in-process")
        #expect(LibraryHTTPPolicy(unrestricted: false, maxResponseBytes: Int.max).maxResponseBytes == LibraryHTTPPolicy.largestResponseBytes,
                "never more than a frame")
    }

    @Test func theOriginsASettingsDocumentNamesAreGranted() {
        let settings: JSONObject = ["apiHost": "https://API.example.com", "hooks": [["hook": "http://127.0.0.1:9000/in"]],
                                    "name": "not a url", "isolation": ["allow": ["http:https://ignored.example"]]]
        #expect(LibraryHTTPPolicy.origins(named: settings) == ["https://api.example.com:443", "http://127.0.0.1:9000"])
        let grants = JailGrants(settings: ["isolation": ["allow": ["http:https://vendor.example:8443/path", "http:*", "http:nonsense"]]])
        #expect(grants.http == ["https://vendor.example:8443", "*"])
        #expect(grants.problems.count == 1 && grants.problems[0].contains("\"http:nonsense\""), "\(grants.problems)")
    }

    /// A library's timeout is any number: it comes out as one of a few steps (a session each),
    /// never trapping.
    @Test func requestTimeoutsComeInStepsWhateverTheLibrarySays() {
        for seconds in [-1.0, 0, 0.001, 1, 1.5, 7, 299, 301, 1e300, .infinity, -.infinity, .nan] {
            #expect(HTTPClient.timeoutSteps.contains(HTTPClient.timeoutStep(seconds)), "\(seconds)")
        }
        #expect(HTTPClient.timeoutStep(1.5) == 2)
        #expect(HTTPClient.timeoutStep(1e300) == 300)
    }
}
