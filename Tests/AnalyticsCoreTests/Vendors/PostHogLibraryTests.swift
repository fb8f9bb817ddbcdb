import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// libPostHogIntegration.so, as `make plugins` links it, loaded by the real loader and driven
/// through its hooks to the strict PostHog fake.
@Suite struct PostHogLibraryTests {
    @Test func declaresItsKeyAndHooks() throws {
        let library = try SwiftPluginFiles.load("PostHogIntegration")
        #expect(library.key == "PostHog")
        #expect(library.info.language == "swift")
        #expect(library.info.hooks.names == ["identify", "track", "screen", "group", "alias", "flush", "update", "destroy"])
    }

    @Test func theSpecCallsReachPostHogAsCaptureEvents() throws {
        let fake = try PostHogFake()
        let instance = try SwiftPluginFiles.load("PostHogIntegration").makeInstance(
            settings: ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL)], services: RecordingHost().services)
        let calls = [
            #"{"type":"identify","userId":"u-1","anonymousId":"a-1","messageId":"m-1","timestamp":"2026-11-25T10:00:00.000Z","traits":{"name":"Zoë 😀","big":18446744073709551615}}"#,
            #"{"type":"group","userId":"u-1","groupId":"g-7","messageId":"m-2","traits":{"name":"Initech"}}"#,
            #"{"type":"track","userId":"u-1","event":"Order Completed","messageId":"m-3","context":{"groupId":"g-7"},"properties":{"revenue":19.99,"currency":"EUR"}}"#,
            #"{"type":"screen","userId":"u-1","name":"Basket","messageId":"m-4"}"#,
            #"{"type":"page","userId":"u-1","name":"Pricing","messageId":"m-5","properties":{"url":"https://example.com/p"}}"#,
            #"{"type":"alias","userId":"u-2","previousId":"u-1","messageId":"m-6"}"#,
        ]
        for call in calls { #expect(instance.deliver(wireEvent(call)) == .ok, "\(call)") }
        let events = fake.events
        #expect(events.map { $0["event"]?.stringValue } == ["$identify", "$groupidentify", "Order Completed", "$screen", "$pageview", "$create_alias"])
        #expect(events[0]["properties"]?["$set"]?["name"] == "Zoë 😀")
        #expect(fake.server.requests[0].bodyText.contains(#""big":18446744073709551615"#))
        #expect(events[2]["properties"]?["$groups"] == ["company": "g-7"], "the event's own context.groupId")
        #expect(events[3]["properties"]?["$groups"] == nil, "nothing of one event reaches another")
        #expect(events[2]["properties"]?["revenue"] == 19.99)
        #expect(events[5]["distinct_id"] == "u-1" && events[5]["properties"]?["alias"] == "u-2")
        #expect(Set(events.compactMap { $0["uuid"]?.stringValue }).count == 6)

        instance.destroy()
    }

    @Test func answersRetryableWhilePostHogIsDownAndPermanentForWhatItRefuses() throws {
        let fake = try PostHogFake()
        let instance = try SwiftPluginFiles.load("PostHogIntegration").makeInstance(
            settings: ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL), "maxAttempts": 1], services: RecordingHost().services)
        fake.failNext(.status(502, body: "bad gateway"))
        let event = wireEvent(#"{"type":"track","userId":"u-1","event":"Kept","messageId":"m-1"}"#)
        guard case .retryable(let reason) = instance.deliver(event) else { Issue.record("a 502 must be retryable"); return }
        #expect(reason.contains("502"))
        #expect(instance.deliver(event) == .ok, "the host's retry delivers it")
        fake.poisonedEvents = ["Poison"]
        guard case .permanent(let refusal) = instance.deliver(wireEvent(#"{"type":"track","userId":"u-1","event":"Poison"}"#)) else {
            Issue.record("a 400 must be permanent"); return
        }
        #expect(refusal.contains("400") && refusal.contains("Poison"))
        guard case .permanent(let missing) = instance.deliver(wireEvent(#"{"type":"track","event":"No Ids"}"#)) else {
            Issue.record("an event without ids must be permanent"); return
        }
        #expect(missing.contains("distinct_id"))
        #expect(fake.events.map { $0["event"]?.stringValue } == ["Kept"])
    }

    @Test func refusesToStartWithoutAnApiKey() throws {
        #expect {
            _ = try SwiftPluginFiles.load("PostHogIntegration").makeInstance(settings: ["postHogInstance": "https://eu.i.posthog.com"], services: RecordingHost().services)
        } throws: { error in
            "\(error)".contains("\"apiKey\"")
        }
    }
}
