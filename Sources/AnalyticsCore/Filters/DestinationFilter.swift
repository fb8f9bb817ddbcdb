/// The routing rules that apply to one destination, ready to run on each event.
///
/// For each matcher of each rule, in settings order: when it matches, its transformers run in
/// order on the event, and later matchers see the changed event; a drop ends evaluation. A filter
/// built from an invalid rule drops everything (fails closed) with the reason.
package struct DestinationFilter: Sendable {
    enum Body: Sendable {
        case steps([(rule: Int, step: RoutingRules.Step)])
        case failure(String)
    }

    let body: Body
    let random: @Sendable () -> Double

    init(steps: [(rule: Int, step: RoutingRules.Step)], random: @escaping @Sendable () -> Double) {
        body = .steps(steps)
        self.random = random
    }

    init(failure: String, random: @escaping @Sendable () -> Double) {
        body = .failure(failure)
        self.random = random
    }

    /// A filter that keeps every event unchanged.
    package static let passThrough = DestinationFilter(steps: [], random: { 0 })

    /// True when no rule applies, so callers can skip the filter entirely.
    package var isPassThrough: Bool {
        if case .steps(let s) = body { return s.isEmpty }
        return false
    }

    /// Why every event is dropped, when a rule for this destination is invalid.
    package var failure: String? {
        if case .failure(let why) = body { return why }
        return nil
    }

    /// Runs the rules on one event. An event that no transformer changes is returned as it came
    /// (sharing its storage and cached encoding).
    package func apply(_ event: Event) -> FilterOutcome {
        let steps: [(rule: Int, step: RoutingRules.Step)]
        switch body {
        case .failure(let why): return .dropped(reason: why)
        case .steps(let s): steps = s
        }
        if steps.isEmpty { return .kept(event) }

        var payload = event.payload
        var changed = false
        for (rule, step) in steps {
            switch step.matcher {
            case .all: break
            case .never: continue
            case .expression(let e): guard e.matches(payload) else { continue }
            }
            for transformer in step.transformers {
                switch transformer.apply(to: &payload, random: random) {
                case .kept(let c): changed = changed || c
                case .dropped(let why): return .dropped(reason: "filter rule \(rule): \(why)")
                }
            }
        }
        guard changed else { return .kept(event) }
        guard case .string(let name)? = payload.member("type"),
            let type = name == event.type.rawValue ? event.type : EventType(rawValue: name)
        else {
            return .dropped(reason: "filter rules removed the event's type or replaced it with an unknown one")
        }
        var edited = Event(type: type, payload: payload)
        edited.deriveEncoding(from: event)
        return .kept(edited)
    }
}

/// What a destination filter did with one event.
package enum FilterOutcome: Sendable {
    /// The event goes on to the destination, possibly transformed.
    case kept(Event)
    /// The event does not reach this destination (other destinations are unaffected).
    case dropped(reason: String)

    package var event: Event? {
        if case .kept(let e) = self { return e }
        return nil
    }
}
