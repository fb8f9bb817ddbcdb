import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// The loader against real shared objects built from `Tests/Fixtures` by gcc during the run.
@Suite struct LoaderTests {
    /// Scans a fresh directory prepared by `setup`, then removes it.
    func scan(configuration: PluginLoader.Configuration = .init(),
              _ setup: (String) throws -> Void) throws -> PluginLoader.ScanResult {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        try setup(dir)
        return PluginLoader(configuration: configuration).scan(directory: dir)
    }

    func onlyProblem(_ result: PluginLoader.ScanResult) -> PluginLoadError? {
        #expect(result.libraries.isEmpty)
        #expect(result.problems.count == 1)
        return result.problems.first
    }

    @Test func goodLibraryIsDescribedWithItsHooks() throws {
        let result = try scan { try FixtureBuilder.library("noop", in: $0) }
        #expect(result.problems.isEmpty)
        let info = try #require(result.libraries.first).info
        #expect(info.key == "Noop")
        #expect(info.version == "1.0.0")
        #expect(info.abiVersion == ABIVersion.host)
        #expect(info.language == "c")
        #expect(info.toolchain == nil)
        #expect(info.file.hasSuffix("/libnoop.so"))
        #expect(info.hooks.names == ["identify", "track", "screen", "group", "alias", "reset", "flush", "update", "destroy", "lifecycle"])
    }

    @Test func textFileNamedSoIsNotASharedObject() throws {
        let result = try scan { dir in
            try String(repeating: "this is a text file, not an ELF object\n", count: 4)
                .write(toFile: dir + "/libfake.so", atomically: true, encoding: .utf8)
            try FixtureBuilder.library("noop", in: dir)
        }
        #expect(result.libraries.map(\.key) == ["Noop"], "the good library still loads")
        let problem = try #require(result.problems.first)
        #expect(result.problems.count == 1)
        #expect(problem.file.hasSuffix("/libfake.so"))
        guard case .notASharedObject(let text) = problem.reason else { Issue.record("\(problem)"); return }
        #expect(text.contains("invalid ELF header"))
        #expect(problem.description.contains("libfake.so: not a loadable shared object: "))
    }

    @Test func libraryWithoutEntrySymbolIsRefused() throws {
        let problem = try #require(onlyProblem(try scan { try FixtureBuilder.library("no_entry", in: $0) }))
        #expect(problem.reason == .noEntrySymbol("analytics_host_plugin_v1"))
        #expect(problem.description.hasSuffix("libno_entry.so: no entry symbol analytics_host_plugin_v1; is this an analytics-host integration library?"))
    }

    @Test func abiMajorDeclaredInDescriptionIsRefused() throws {
        let problem = try #require(onlyProblem(try scan { try FixtureBuilder.library("abi_major", in: $0) }))
        #expect(problem.reason == .abiMajorMismatch(library: 2, host: 1, detail: "its ah_integration declares ABI 2.0"))
        #expect(problem.description.contains("ABI major mismatch: library is built for ABI 2, host speaks ABI 1"))
    }

    @Test func nextGenerationEntrySymbolIsReportedAsMajorMismatch() throws {
        let problem = try #require(onlyProblem(try scan {
            try FixtureBuilder.library("abi_major", in: $0, as: "libv2.so", defines: ["V2_SYMBOL"])
        }))
        #expect(problem.reason == .abiMajorMismatch(
            library: 2, host: 1, detail: "it exports analytics_host_plugin_v2, not analytics_host_plugin_v1"))
    }

    @Test func swiftToolchainMismatchIsRefused() throws {
        let problem = try #require(onlyProblem(try scan { try FixtureBuilder.library("swift_toolchain", in: $0) }))
        guard case .swiftToolchainMismatch(let library, let host) = problem.reason else { Issue.record("\(problem)"); return }
        #expect(library.hasPrefix("Swift 5.9 (clang 15.0.0"))
        #expect(host == SwiftToolchain.current)
        #expect(problem.description.contains("Swift toolchain mismatch: library built with \"Swift 5.9"))
    }

    @Test func swiftLibraryWithTheHostsToolchainLoads() throws {
        let toolchain = "Swift 6.3 (clang test-toolchain)"
        let result = try scan(configuration: .init(hostSwiftToolchain: toolchain)) {
            try FixtureBuilder.library("swift_toolchain", in: $0, defines: ["TOOLCHAIN=\"\(toolchain)\""])
        }
        #expect(result.problems.isEmpty)
        let info = try #require(result.libraries.first).info
        #expect(info.language == "swift")
        #expect(info.toolchain == toolchain)
        #expect(SwiftToolchain.current.hasPrefix("Swift 6."))
        #expect(SwiftToolchain.current.contains("clang "))
    }

    @Test func duplicateKeysRefuseBothLibrariesNamingEachOther() throws {
        let result = try scan { dir in
            try FixtureBuilder.library("noop", in: dir, as: "liba.so", defines: ["KEY=\"Same\""])
            try FixtureBuilder.library("noop", in: dir, as: "libb.so", defines: ["KEY=\"Same\""])
            try FixtureBuilder.library("noop", in: dir, as: "libc.so", defines: ["KEY=\"Other\""])
        }
        #expect(result.libraries.map(\.key) == ["Other"])
        #expect(result.problems.count == 2)
        let a = try #require(result.problems.first { $0.file.hasSuffix("/liba.so") })
        let b = try #require(result.problems.first { $0.file.hasSuffix("/libb.so") })
        #expect(a.reason == .duplicateKey(key: "Same", otherFiles: [b.file]))
        #expect(b.reason == .duplicateKey(key: "Same", otherFiles: [a.file]))
        #expect(a.description.contains("duplicate integration key \"Same\", also declared by \(b.file); neither is loaded"))
    }

    @Test func createFailureCarriesTheLibrarysText() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("create_fails", in: dir))
        let host = RecordingHost()
        do {
            _ = try library.makeInstance(settings: ["region": "eu"], services: host.services)
            Issue.record("create should have failed")
        } catch {
            #expect(error.reason == .createFailed(key: "NeedsKey", message: "settings have no \"apiKey\" (got 15 bytes of settings)"))
            #expect(error.description.hasSuffix("libcreate_fails.so: create of integration \"NeedsKey\" failed: settings have no \"apiKey\" (got 15 bytes of settings)"))
        }
        let instance = try library.makeInstance(settings: ["apiKey": "k"], services: host.services)
        #expect(instance.isAlive)
    }

    @Test(arguments: [
        (1, "invalid integration description: key is NULL"),
        (2, "invalid integration description: ah_integration.size is 12 bytes, smaller than the ABI 1.0 layout"),
        (3, "invalid integration description: destroy of \"Broken\" is NULL (it is required)"),
        (4, "entry function refused this host: needs ABI 1.9 or newer, host speaks 1.3"),
    ])
    func malformedDescriptionsAreRefused(variant: Int, fragment: String) throws {
        let problem = try #require(onlyProblem(try scan {
            try FixtureBuilder.library("bad_integration", in: $0, defines: ["VARIANT=\(variant)"])
        }))
        #expect(problem.description.contains(fragment), "\(problem)")
    }

    @Test func olderMinorLoadsAndNewerHooksAreNeverRead() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("old_minor", in: dir))
        #expect(library.info.abiVersion == ABIVersion(major: 1, minor: 0))
        #expect(library.info.hooks == [.track, .destroy])
        let host = RecordingHost()
        let instance = try library.makeInstance(services: host.services)
        #expect(instance.lifecycle(.started) == .ok)
        let event = Event.make(.track, ["event": "Old"])
        #expect(instance.deliver(event) == .ok)
        #expect(instance.flush() == .ok)
        #expect(host.logLines == ["old track \(event.serializedBytes.count) bytes"])
    }

    @Test func newerMinorLoadsIgnoringFieldsTheHostDoesNotKnow() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("newer_minor", in: dir))
        #expect(library.info.abiVersion == ABIVersion(major: 1, minor: ABIVersion.host.minor + 5))
        #expect(library.info.key == "Futurist")
        #expect(library.info.hooks == [.track, .destroy])
        let host = RecordingHost()
        let instance = try library.makeInstance(services: host.services)
        #expect(instance.deliver(.make(.track, ["event": "New"])) == .ok)
        #expect(host.logLines == ["newer track"])
    }

    @Test func hostServicesReachTheSwiftClosures() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("send_back", in: dir))
        let host = RecordingHost(userId: "user-42")
        let instance = try library.makeInstance(services: host.services)
        let event = Event.make(.track, ["event": "Original"])
        #expect(instance.deliver(event) == .ok)
        let sent = host.sent.withLock { $0 }
        #expect(sent.count == 1)
        let echo = try JSON(parsing: try #require(sent.first))
        #expect(echo["event"] == "Echo")
        #expect(echo["userId"] == "user-42")
        #expect(echo["anonymousId"] == "anon-7")
        #expect(echo[path: "properties.bytes"] == .number(Double(event.serializedBytes.count)))
        #expect(host.logLines == ["echo created", "echoed user=user-42 (7) anon=anon-7 (6) status=0"])
        #expect(host.logs.withLock { $0.map(\.0) } == [.debug, .info])

        host.userId.withLock { $0 = nil }
        #expect(instance.deliver(event) == .ok)
        #expect(host.logLines.last == "echoed user=<none> (-1) anon=anon-7 (6) status=0")
    }

    @Test func hostRefusingAnEventIsSeenByTheLibrary() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("send_back", in: dir))
        let host = RecordingHost(sendResult: .retryable("queue full"))
        let instance = try library.makeInstance(services: host.services)
        #expect(instance.deliver(.make(.track, ["event": "X"])) == .retryable("host refused the echo (status 1)"))
    }

    @Test func longIdsAreTruncatedButTheirLengthIsReported() {
        var buffer = [CChar](repeating: 1, count: 4)
        let length = HostServicesTable.copy("abcdefgh", into: &buffer, capacity: 4)
        #expect(length == 8)
        #expect(buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) } == Array("abc".utf8))
        #expect(HostServicesTable.copy(nil, into: &buffer, capacity: 4) == -1)
        #expect(buffer[0] == 0)
        #expect(HostServicesTable.copy("x", into: nil, capacity: 0) == 1)
    }

    @Test func statusCodesBecomeResultsWithTheLibrarysText() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("flaky", in: dir))
        #expect(library.info.hooks == [.identify, .track, .group, .alias, .destroy])
        let instance = try library.makeInstance(settings: ["failures": 2], services: RecordingHost().services)
        let track = Event.make(.track, ["event": "Retry Me"])
        #expect(instance.deliver(track) == .retryable("upstream unavailable (attempt 1)"))
        #expect(instance.deliver(track) == .retryable("upstream unavailable (attempt 2)"))
        #expect(instance.deliver(track) == .ok)
        #expect(instance.deliver(.make(.group, ["groupId": "g"])) == .permanent("group calls are not supported by this destination"))
        #expect(instance.deliver(.make(.identify)) == .permanent("identify returned unknown status 42: odd"))
        #expect(instance.deliver(.make(.alias, ["previousId": "p"])) == .permanent("alias failed without a reason"))
        // Hooks the library left NULL are successful no-ops.
        #expect(instance.deliver(.make(.screen, ["name": "Home"])) == .ok)
        #expect(instance.deliver(.make(.page, ["name": "Home"])) == .ok)
        #expect(instance.reset() == .ok)
        #expect(instance.flush() == .ok)
        #expect(instance.update(settings: ["failures": 0], kind: .refresh) == .ok)
        #expect(instance.lifecycle(.stopping) == .ok)
    }

    @Test func destroyIsIdempotentAndLaterCallsAreNoOps() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("flaky", in: dir))
        let instance = try library.makeInstance(services: RecordingHost().services)
        instance.destroy()
        instance.destroy()
        #expect(!instance.isAlive)
        #expect(instance.deliver(.make(.group, ["groupId": "g"])) == .ok)
    }

    @Test func severalInstancesOfOneLibraryAreIndependent() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("flaky", in: dir))
        let one = try library.makeInstance(settings: ["failures": 1], services: RecordingHost().services)
        let two = try library.makeInstance(settings: ["failures": 0], services: RecordingHost().services)
        let track = Event.make(.track, ["event": "E"])
        #expect(two.deliver(track) == .ok)
        #expect(one.deliver(track) == .retryable("upstream unavailable (attempt 1)"))
        #expect(one.deliver(track) == .ok)
    }

    @Test func groupOrOtherWritableFilesAndDirectoriesAreRefusedUnlessAllowed() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let file = try FixtureBuilder.library("noop", in: dir)

        chmod(file, 0o666)
        let refusedFile = PluginLoader().scan(directory: dir)
        #expect(refusedFile.libraries.isEmpty)
        #expect(refusedFile.problems.map(\.description) == [
            "\(file): refused: library file is writable by group and others (mode 666); fix the permissions (chmod go-w) or allow it explicitly (Configuration.allowInsecurePluginPermissions; analytics-host: --allow-insecure-plugins)",
        ])
        do {
            _ = try PluginLoader().load(file: file)
            Issue.record("load should refuse a writable file")
        } catch {
            #expect(error.reason == .insecurePermissions("library file is writable by group and others (mode 666)"))
        }

        chmod(file, 0o755)
        chmod(dir, 0o775)
        let refusedDirectory = PluginLoader().scan(directory: dir)
        #expect(refusedDirectory.libraries.isEmpty)
        #expect(refusedDirectory.problems.first?.file == dir)
        #expect(refusedDirectory.problems.first?.reason == .insecurePermissions("plugins directory is writable by group (mode 775)"))

        chmod(file, 0o646)
        let allowed = PluginLoader(configuration: .init(allowGroupOrOtherWritable: true)).scan(directory: dir)
        #expect(allowed.problems.isEmpty)
        #expect(allowed.libraries.map(\.key) == ["Noop"])
    }

    @Test func missingOrUnusableDirectoryIsAProblemNotACrash() throws {
        let missing = PluginLoader().scan(directory: "/nonexistent/plugins")
        #expect(missing.libraries.isEmpty)
        #expect(missing.problems.map(\.description) == ["/nonexistent/plugins: plugins directory does not exist"])

        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        try "x".write(toFile: dir + "/file", atomically: true, encoding: .utf8)
        let notDirectory = PluginLoader().scan(directory: dir + "/file")
        #expect(notDirectory.problems.map(\.reasonText) == ["plugins directory cannot be read: not a directory"])

        mkdir(dir + "/weird.so", 0o755)
        let empty = PluginLoader().scan(directory: dir)
        #expect(empty.problems.map(\.description) == ["\(dir)/weird.so: not a regular file"])
    }

    @Test func theHeaderCompilesAsC99AndCxx() throws {
        let include = FixtureBuilder.root + "/include"
        let source = FixtureBuilder.root + "/Tests/Fixtures/abi_check.c"
        try FixtureBuilder.run("/usr/bin/gcc", ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", include, "-fsyntax-only", source])
        try FixtureBuilder.run("/usr/bin/g++", ["-x", "c++", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", include, "-fsyntax-only", source])
    }
}
