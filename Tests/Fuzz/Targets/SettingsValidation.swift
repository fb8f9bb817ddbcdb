// Settings validation on arbitrary documents: the validator, the routing-rule compiler, the
// tracking plan and the httpConfig reader never crash; a document is accepted exactly when it
// parses and the validator finds nothing; a destination whose rule is invalid fails closed and
// one with only valid rules does not; retry settings stay inside their documented ranges.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/Settings.dict -max_len=16384
@testable import AnalyticsCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSettingsValidation(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let parsed = try? JSON(parsing: bytes)
    let problems = parsed.map { SettingsValidator.problems(in: $0, source: "fuzz") }

    switch SettingsSource.parse(bytes, source: "fuzz") {
    case .success(let object):
        fuzzCheck(problems?.isEmpty == true, "accepted although the validator found \(problems ?? [])")
        fuzzCheck(parsed == .object(object), "accepted settings differ from the parsed document")
    case .failure(let error):
        fuzzCheck(!error.problems.isEmpty, "refused without a reason")
        fuzzCheck(parsed == nil || problems?.isEmpty == false, "refused a document the validator accepts: \(error)")
        for p in error.problems { fuzzCheck(!p.message.isEmpty && p.source == "fuzz", "problem without message or source: \(p)") }
    }
    guard case .object(let settings)? = parsed else { return 0 }

    // Routing rules: every defect is reported and closes the destinations it applies to.
    let rules = RoutingRules(settings: settings, random: { 0.5 })
    let list = settings["middlewareSettings"]?["routingRules"]?.arrayValue ?? []
    let bystander = "fuzz bystander destination"
    var namedBroken: Set<String> = []
    var globalBroken = false
    for problem in rules.problems {
        fuzzCheck(!problem.reason.isEmpty && !problem.path.isEmpty, "routing problem without path or reason: \(problem)")
        guard let index = problem.ruleIndex else { globalBroken = true; continue }
        fuzzCheck(list.indices.contains(index), "problem names rule \(index) of \(list.count)")
        if case .string(let name)? = list[index]["destinationName"] { namedBroken.insert(name) } else { globalBroken = true }
    }
    for name in namedBroken {
        fuzzCheck(rules.filter(forDestination: name).failure != nil, "destination \(name) with an invalid rule does not fail closed")
    }
    let bystanderFailure = rules.filter(forDestination: bystander).failure
    fuzzCheck((bystanderFailure != nil) == globalBroken,
              "a destination no rule names: failure \(bystanderFailure ?? "none"), but global rules broken: \(globalBroken)")
    if rules.problems.isEmpty {
        for name in rules.namedDestinations {
            fuzzCheck(rules.filter(forDestination: name).failure == nil, "valid rules, yet \(name) fails closed")
        }
    }

    // The tracking plan and the Segment.io retry policy read the same document leniently.
    let plan = TrackingPlan(settings: Settings(settings))
    _ = plan.allows(event: "Order Completed", destination: "Amplitude")
    let (policy, warnings) = RetryPolicy.parse(settings: settings)
    for w in warnings { fuzzCheck(!w.isEmpty, "empty retry-policy warning") }
    fuzzCheck((0...1000).contains(policy.rateLimitMaxRetryCount) && (0...1000).contains(policy.maxRetryCount),
              "retry counts out of range: \(policy)")
    fuzzCheck((1...3600).contains(policy.maxRetryInterval) && (60...604_800).contains(policy.maxRateLimitDuration)
              && (0.1...300).contains(policy.baseBackoffInterval) && (0.1...86_400).contains(policy.maxBackoffInterval)
              && (60...604_800).contains(policy.maxTotalBackoffDuration) && (0...100).contains(policy.jitterPercent),
              "retry intervals out of range: \(policy)")
    for failures in [1, 2, 30, 1000] {
        let wait = policy.backoff(failures: failures, random: 0.999)
        fuzzCheck(wait.isFinite && wait >= 0 && wait <= policy.maxBackoffInterval, "backoff \(wait) after \(failures) failures")
    }
    return 0
}
