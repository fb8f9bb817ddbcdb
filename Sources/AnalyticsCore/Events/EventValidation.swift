extension Event {
    /// Checks what the spec requires of each call, so bad input is refused with a reason at call
    /// time instead of failing later at the server.
    public func validate() throws(EventError) {
        try validateFields()
        for (key, value) in payload {
            if !value.isFinite {
                throw .invalid("\"\(key)\" contains a non-finite number (NaN or infinity has no JSON form)")
            }
            // The event object is the first level.
            if value.nests(deeperThan: BatchLimits.maxEventDepth - 1) {
                throw .invalid("\"\(key)\" nests objects and arrays deeper than \(BatchLimits.maxEventDepth) levels "
                               + "(counting the event itself), which the tracking API refuses")
            }
        }
    }

    /// The checks of ``validate()`` but the walk over every number: for a replacement read from
    /// JSON text (the parser refuses numbers a double cannot hold) whose other members are the
    /// original event's own values, as a plugin that keeps the event gives them.
    func validateFields() throws(EventError) {
        switch type {
        case .track:
            guard let e = event, !e.isEmpty else { throw .invalid("track needs a non-empty \"event\" name") }
        case .group:
            guard let g = groupId, !g.isEmpty else { throw .invalid("group needs a non-empty \"groupId\"") }
        case .alias:
            guard let u = userId, !u.isEmpty else { throw .invalid("alias needs a non-empty \"userId\"") }
        case .identify, .screen, .page:
            break
        }
        if userId == nil && anonymousId == nil {
            throw .invalid("\(type.rawValue) has neither userId nor anonymousId")
        }
    }
}
