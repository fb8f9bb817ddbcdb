import Testing
@testable import AnalyticsCore

/// The schemas `check-settings` and `run` apply: unknown keys are warnings naming the nearest
/// known key; a routing rule without destinationName, or with an unknown key, is an error; a
/// library's declared settings are checked for type and presence.
@Suite struct SettingsSchemaTests {
    func problems(_ json: JSON, libraries: [String: SettingsSchema] = [:]) -> [SettingsProblem] {
        SettingsValidator.allProblems(in: json, source: "t", libraries: libraries)
    }

    @Test func nearestNameFindsCloseTyposOnly() {
        #expect(NearestName.suggestion(for: "apiHots", among: ["apiKey", "apiHost", "httpConfig"]) == "apiHost")
        #expect(NearestName.suggestion(for: "destinatonName", among: ["destinationName", "matchers"]) == "destinationName")
        #expect(NearestName.suggestion(for: "rn", among: ["run", "plugins", "receive"]) == "run")
        #expect(NearestName.suggestion(for: "APIKEY", among: ["apiKey"]) == "apiKey", "case does not count")
        #expect(NearestName.suggestion(for: "x", among: ["path"]) == nil)
        #expect(NearestName.suggestion(for: "somethingElse", among: ["apiKey", "apiHost"]) == nil)
        #expect(NearestName.distance(Array("ab"), Array("ba")) == 1, "a swap of neighbours is one edit")
        #expect(NearestName.distance(Array("kitten"), Array("sitting")) == 3)
    }

    @Test func aMisspelledSegmentSettingIsAWarningWithDidYouMean() throws {
        let found = problems(["integrations": ["Segment.io": ["apiKey": "k", "apiHots": "http://127.0.0.1:9/v1"]]])
        #expect(found.count == 1)
        let p = try #require(found.first)
        #expect(p.isWarning && p.path == "integrations.Segment.io.apiHots")
        #expect(p.message.contains(#"did you mean "apiHost"?"#), "\(p.message)")
        // The CDN's own keys are known, and a correct document has nothing to say.
        #expect(problems(["integrations": ["Segment.io": ["apiKey": "k", "unbundledIntegrations": [], "addBundledMetadata": true,
                                                          "maybeBundledConfigIds": [:], "versionSettings": [:]]],
                          "analyticsNextEnabled": true, "enabledMiddleware": [:]]).isEmpty)
    }

    @Test func routingRuleTyposAndMissingDestinationNameAreErrors() {
        let rule: JSON = ["destinatonName": "File", "matchers": [["type": "all", "ir": ""]], "transformers": [[["type": "drop"]]]]
        let found = problems(["integrations": ["File": [:]], "middlewareSettings": ["routingRules": [rule]]])
        let unknown = found.first { $0.path == "middlewareSettings.routingRules[0].destinatonName" }
        #expect(unknown?.severity == .error && unknown?.message.contains(#"did you mean "destinationName"?"#) == true, "\(found)")
        let missing = found.first { $0.path == "middlewareSettings.routingRules[0].destinationName" }
        #expect(missing?.severity == .error && missing?.message.hasPrefix("missing") == true, "\(found)")
        // The CDN's scope and target_type are known; a rule naming its destination passes.
        let good: JSON = ["destinationName": "File", "scope": "destinations", "target_type": "workspace::project::destination::config",
                          "matchers": [["type": "all", "ir": "", "config": ["expr": ""]]], "transformers": [[["type": "drop"]]]]
        #expect(problems(["integrations": ["File": [:]], "middlewareSettings": ["routingRules": [good]]]).isEmpty)
    }

    @Test func planAndIsolationTypos() {
        let found = problems(["integrations": ["A": ["isolation": ["mode": "proces", "alow": ["network"]]]],
                              "plan": ["track": ["E": ["enabeld": false, "enabled": "no"]], "trakc": [:]]])
        func at(_ path: String) -> SettingsProblem? { found.first { $0.path == path } }
        #expect(at("plan.track.E.enabeld")?.isWarning == true && at("plan.track.E.enabeld")?.message.contains(#""enabled""#) == true)
        #expect(at("plan.track.E.enabled")?.severity == .error, "a string where the plan needs a boolean")
        #expect(at("plan.trakc")?.message.contains(#"did you mean "track"?"#) == true, "\(found)")
        #expect(at("integrations.A.isolation.mode")?.severity == .error && at("integrations.A.isolation.mode")?.message.contains(#"did you mean "process"?"#) == true)
        #expect(at("integrations.A.isolation.alow")?.message.contains(#"did you mean "allow"?"#) == true, "\(found)")
    }

    @Test func aLibrarysDeclaredSettingsAreChecked() {
        let schema = SettingsSchema([.string("apiKey", required: true, "the key"), .number("flushAt", default: 20, "per upload"),
                                     .array("traitsToSetOnce", "traits")])
        let found = problems(["integrations": ["Vendor": ["flushAt": "20", "traitsToSetOnse": [], "durable": true, "isolation": "process"],
                                               "Braze": ["anything": 1]]],
                             libraries: ["Vendor": schema])
        func at(_ path: String) -> SettingsProblem? { found.first { $0.path == path } }
        #expect(at("integrations.Vendor.apiKey")?.severity == .error && at("integrations.Vendor.apiKey")?.message.hasPrefix("missing") == true)
        #expect(at("integrations.Vendor.flushAt")?.message.hasPrefix("expected a number, found a string") == true, "\(found)")
        #expect(at("integrations.Vendor.traitsToSetOnse")?.isWarning == true
                && at("integrations.Vendor.traitsToSetOnse")?.message.contains(#"did you mean "traitsToSetOnce"?"#) == true)
        #expect(at("integrations.Vendor.durable") == nil && at("integrations.Vendor.isolation") == nil, "the host's own keys are known")
        #expect(found.allSatisfy { !$0.path.hasPrefix("integrations.Braze") }, "no library, no schema: nothing is unknown")
        #expect(found.count == 3, "\(found)")
        // A null value counts as absent; a present required value of the right type passes.
        #expect(problems(["integrations": ["Vendor": ["apiKey": "k", "flushAt": .null]]], libraries: ["Vendor": schema]).isEmpty)
    }

    @Test func settingTypesAcceptSeveralKinds() {
        let types: SettingTypes = [.string, .array]
        #expect(types.accepts("x") && types.accepts(["x"]) && !types.accepts(1) && types.accepts(.null))
        #expect(types.description == "string|array" && SettingTypes.any.description == "any")
        #expect(SettingTypes(names: ["string", "array"]) == types && SettingTypes(names: ["date"]) == nil)
    }
}
