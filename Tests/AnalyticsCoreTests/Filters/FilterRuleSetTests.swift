import Testing
@testable import AnalyticsCore

@Suite struct FilterRuleSetTests {
    let event: Event
    init() throws { event = try FilterFixture.event() }

    static let dropEmail: JSON = ["type": "drop_properties", "config": ["drop": ["properties": ["email"]]]]

    @Test func noSettingsMeansPassThrough() throws {
        for settings: JSONObject in [[:], ["middlewareSettings": [:]], ["middlewareSettings": ["routingRules": nil]], ["middlewareSettings": ["routingRules": []]]] {
            let rules = RoutingRules(settings: settings)
            #expect(rules.problems.isEmpty)
            let filter = rules.filter(forDestination: "Amplitude")
            #expect(filter.isPassThrough)
            #expect(filter.apply(event).event?.payload.serialized() == event.payload.serialized())
        }
        #expect(DestinationFilter.passThrough.isPassThrough)
    }

    @Test func segmentStyleSettingsTextFromTheReference() throws {
        let settings = try FilterFixture.settings(#"""
        {"integrations":{"Segment.io":{"apiKey":"k"},"Amplitude":{}},
         "middlewareSettings":{"routingRules":[
           {"destinationName":"Amplitude",
            "matchers":[{"type":"fql","ir":"[\"=\",\"event\",{\"value\":\"Order Completed\"}]"}],
            "transformers":[[{"type":"drop_properties","config":{"drop":{"properties":["email"]}}}]]}]}}
        """#)
        let rules = RoutingRules(settings: settings)
        #expect(rules.problems.isEmpty)
        #expect(rules.namedDestinations == ["Amplitude"])
        let out = try #require(rules.filter(forDestination: "Amplitude").apply(event).event)
        #expect(out.properties["email"] == nil)
        #expect(rules.filter(forDestination: "Mixpanel").isPassThrough)
    }

    @Test func globalRulesApplyEverywhereNamedRulesOnlyToTheirDestination() throws {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.always([Self.dropEmail]),
            FilterFixture.rule(ir: #"["=","event",{"value":"Order Completed"}]"#, destination: "Amplitude"),
        ]))
        #expect(rules.problems.isEmpty)
        // Amplitude: global rule then its own drop.
        guard case .dropped(let reason) = rules.filter(forDestination: "Amplitude").apply(event) else {
            Issue.record("Amplitude should drop Order Completed")
            return
        }
        #expect(reason.contains("filter rule 1"))
        // Mixpanel: only the global rule.
        let mixpanel = try #require(rules.filter(forDestination: "Mixpanel").apply(event).event)
        #expect(mixpanel.properties["email"] == nil)
        #expect(mixpanel.properties["price"] == 10)
        // The Segment upload key is exposed; global rules reach it only if the caller asks.
        #expect(RoutingRules.segmentDestinationKey == "Segment.io")
        #expect(!rules.filter(forDestination: RoutingRules.segmentDestinationKey).isPassThrough)
        // The caller's event is untouched (value semantics).
        #expect(event.properties["email"] == "a@b.c")
    }

    @Test func severalMatchersOnOneRuleSeeEarlierChanges() throws {
        let rule: JSON = [
            "destinationName": "Amplitude",
            "matchers": [
                ["type": "all"],
                ["type": "fql", "ir": #"["=","properties.stage",{"value":"one"}]"#],
                ["type": "fql", "ir": #"["=","properties.stage",{"value":"never"}]"#],
                ["type": "fql", "ir": ""],
            ],
            "transformers": [
                [["type": "map_properties", "config": ["map": ["properties.stage": ["set": "one"]]]]],
                [["type": "map_properties", "config": ["map": ["properties.stage2": ["copy": "properties.stage"]]]], Self.dropEmail],
                [["type": "drop"]],
                [["type": "drop"]],
            ],
        ]
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [rule]))
        #expect(rules.problems.isEmpty)
        let out = try #require(rules.filter(forDestination: "Amplitude").apply(event).event)
        #expect(out.properties["stage"] == "one")
        #expect(out.properties["stage2"] == "one")
        #expect(out.properties["email"] == nil)
    }

    @Test func laterRulesSeeEarlierRulesChanges() throws {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.always([["type": "map_properties", "config": ["map": ["event": ["set": "Renamed"]]]]]),
            FilterFixture.rule(ir: #"["=","event",{"value":"Renamed"}]"#),
        ]))
        #expect(rules.filter(forDestination: "X").apply(event).event == nil)
    }

    // MARK: Fail closed

    struct Broken: CustomTestStringConvertible, Sendable {
        let rule: JSON
        let path: String
        let reasonFragment: String
        var testDescription: String { path + " — " + reasonFragment }
    }

    static let broken: [Broken] = [
        Broken(rule: FilterFixture.rule(ir: #"["~","event",{"value":1}]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "ir[0]: unknown operator \"~\""),
        Broken(rule: FilterFixture.rule(ir: #"["and",["=","event",{"value":1}],["regex","event",{"value":"x"}]]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "ir[2][0]: unknown operator \"regex\""),
        Broken(rule: FilterFixture.rule(ir: #"["=","event""#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "not valid JSON"),
        Broken(rule: FilterFixture.rule(ir: #"["=","event"]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "takes 2 arguments, found 1"),
        Broken(rule: FilterFixture.rule(ir: #"["=","event",5]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "ir[2]: expected a path string"),
        Broken(rule: FilterFixture.rule(ir: #"["=","event",{"val":1}]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "\"value\" member"),
        Broken(rule: FilterFixture.rule(ir: #"["in","event","properties.tags"]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "list literal"),
        Broken(rule: FilterFixture.rule(ir: #"["in","event",{"value":[1]}]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "ir[2].value[0]"),
        Broken(rule: FilterFixture.rule(ir: #"[1,2]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "operator must be a string"),
        Broken(rule: FilterFixture.rule(ir: #"[]"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "empty expression"),
        Broken(rule: FilterFixture.rule(ir: #"42"#, destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "found a number"),
        Broken(rule: ["destinationName": "Amplitude", "matchers": [["type": "fql", "ir": 7]], "transformers": [[]]],
               path: "middlewareSettings.routingRules[2].matchers[0].ir", reasonFragment: "JSON-encoded string"),
        Broken(rule: ["destinationName": "Amplitude", "matchers": [["type": "regex"]], "transformers": [[]]],
               path: "middlewareSettings.routingRules[2].matchers[0].type", reasonFragment: "unknown matcher type \"regex\""),
        Broken(rule: FilterFixture.rule(ir: #"["=","event",{"value":1}]"#, transformers: [["type": "drop"], ["type": "encrypt"]], destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].transformers[0][1].type", reasonFragment: "unknown transformer \"encrypt\""),
        Broken(rule: FilterFixture.always([["type": "drop_properties", "config": ["drop": ["properties": "email"]]]], destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].transformers[0][0].config.drop[\"properties\"]", reasonFragment: "array of property names"),
        Broken(rule: FilterFixture.always([["type": "allow_properties", "config": ["allow": ["properties": [1]]]]], destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].transformers[0][0].config.allow[\"properties\"][0]", reasonFragment: "must be strings"),
        Broken(rule: FilterFixture.always([["type": "sample_event", "config": ["sample": ["percent": "50%"]]]], destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].transformers[0][0].config.sample.percent", reasonFragment: "numeric percent"),
        Broken(rule: FilterFixture.always([["type": "map_properties", "config": ["map": ["a": ["copy": 3]]]]], destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].transformers[0][0].config.map[\"a\"].copy", reasonFragment: "path string"),
        Broken(rule: FilterFixture.always([["type": "drop_properties"]], destination: "Amplitude"),
               path: "middlewareSettings.routingRules[2].transformers[0][0].config", reasonFragment: "config object"),
        Broken(rule: ["destinationName": "Amplitude", "matchers": [["type": "all"], ["type": "all"]], "transformers": [[]]],
               path: "middlewareSettings.routingRules[2]", reasonFragment: "2 matchers but 1 transformer lists"),
        Broken(rule: ["destinationName": "Amplitude", "matchers": [["type": "all"]]],
               path: "middlewareSettings.routingRules[2].transformers", reasonFragment: "missing"),
    ]

    @Test(arguments: broken)
    func brokenRuleFailsClosedForItsDestinationOnly(_ b: Broken) throws {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.always([Self.dropEmail]),
            FilterFixture.rule(ir: #"["=","event",{"value":"Nope"}]"#, destination: "Mixpanel"),
            b.rule,
        ]))
        let problem = try #require(rules.problems.first)
        #expect(rules.problems.count == 1, "\(rules.problems)")
        #expect(problem.ruleIndex == 2)
        #expect(problem.path == b.path)
        #expect(problem.reason.contains(b.reasonFragment), "\(problem.reason)")

        let amplitude = rules.filter(forDestination: "Amplitude")
        let failure = try #require(amplitude.failure)
        #expect(failure.hasPrefix("filter rule 2 is invalid: \(b.path)"))
        guard case .dropped(let reason) = amplitude.apply(event) else {
            Issue.record("a destination with a broken rule must drop every event")
            return
        }
        #expect(reason == failure)

        // Other destinations are unaffected.
        let mixpanel = try #require(rules.filter(forDestination: "Mixpanel").apply(event).event)
        #expect(mixpanel.properties["email"] == nil)
    }

    @Test func brokenGlobalRuleFailsClosedEverywhere() {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.rule(ir: #"["nope"]"#),
        ]))
        #expect(rules.problems.map(\.ruleIndex) == [0])
        for key in ["Amplitude", "Mixpanel", "Segment.io"] {
            #expect(rules.filter(forDestination: key).failure?.hasPrefix("filter rule 0 is invalid: middlewareSettings.routingRules[0].matchers[0].ir") == true)
        }
    }

    @Test func unreadableRuleOrListFailsClosedEverywhere() {
        let notAnObject = RoutingRules(settings: FilterFixture.settings(rules: [FilterFixture.always([]), 5]))
        #expect(notAnObject.problems == [RoutingRuleProblem(ruleIndex: 1, path: "middlewareSettings.routingRules[1]", reason: "a rule must be an object, found a number")])
        #expect(notAnObject.filter(forDestination: "A").failure != nil)

        let badName = RoutingRules(settings: FilterFixture.settings(rules: [["destinationName": 3, "matchers": [], "transformers": []]]))
        #expect(badName.problems.first?.path == "middlewareSettings.routingRules[0].destinationName")
        #expect(badName.filter(forDestination: "Anything").failure != nil)

        let notAList = RoutingRules(settings: ["middlewareSettings": ["routingRules": "all"]])
        #expect(notAList.problems.first?.ruleIndex == nil)
        #expect(notAList.problems.first?.path == "middlewareSettings.routingRules")
        guard case .dropped(let reason) = notAList.filter(forDestination: "A").apply(event) else {
            Issue.record("must fail closed")
            return
        }
        #expect(reason.contains("routingRules"))
    }

    @Test func allProblemsAreCollectedNotJustTheFirst() {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            ["destinationName": "A", "matchers": [["type": "x"], ["type": "fql", "ir": "[\"?\"]"]],
             "transformers": [[["type": "y"]], []]],
            FilterFixture.rule(ir: "[", destination: "B"),
        ]))
        #expect(rules.problems.map(\.path) == [
            "middlewareSettings.routingRules[0].matchers[0].type",
            "middlewareSettings.routingRules[0].transformers[0][0].type",
            "middlewareSettings.routingRules[0].matchers[1].ir",
            "middlewareSettings.routingRules[1].matchers[0].ir",
        ])
        #expect(rules.problems.map(\.ruleIndex) == [0, 0, 0, 1])
        #expect(rules.filter(forDestination: "A").failure?.contains("unknown matcher type") == true)
        #expect(rules.filter(forDestination: "C").isPassThrough)
    }
}
