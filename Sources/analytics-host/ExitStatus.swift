/// The exit statuses of `analytics-host run`, in one place (the contract: docs/command-line.md). Each
/// branch of the host contributes its counts to ``RunOutcome``; ``ExitStatus/of(_:)`` picks the
/// status by the fixed priority 2, 3, 5, 1, 4: a
/// server's rejection of accepted events is never hidden behind a rejected input line.
enum ExitStatus: Int32, CaseIterable {
    /// Every line accepted and every event delivered (or handed to its destination).
    case success = 0
    /// Some input lines were rejected (malformed JSON, invalid event, bad UTF-8, over the size limit).
    case linesRejected = 1
    /// Usage error, unreadable or invalid settings, unusable storage — detected before reading input.
    case unusable = 2
    /// A plugin library could not be loaded or created, or reported problems while it ran (errors
    /// it logged, e.g. a LivePlugins bundle that did not load; plugins whose calls failed).
    case pluginProblem = 3
    /// Events still queued for later (not uploaded within the drain time; kept on disk), or
    /// abandoned undelivered (a hung hook).
    case stillQueued = 4
    /// Events rejected for good (by a server, e.g. HTTP 400, or failed permanently by a destination).
    case rejectedForGood = 5

    /// When several apply, the first of this order is reported.
    static let priority: [ExitStatus] = [.unusable, .pluginProblem, .rejectedForGood, .linesRejected, .stillQueued]

    /// What a run ended with, as counts.
    struct RunOutcome {
        var unusable = false
        var pluginProblems = 0
        var rejectedLines = 0
        /// Events no destination will ever deliver (server refusals, permanent failures).
        var failedForGood = 0
        /// Events kept for a later run, and events abandoned undelivered.
        var stillQueued = 0
        var abandoned = 0
    }

    static func of(_ outcome: RunOutcome) -> ExitStatus {
        for status in priority {
            switch status {
            case .unusable where outcome.unusable: return status
            case .pluginProblem where outcome.pluginProblems > 0: return status
            case .linesRejected where outcome.rejectedLines > 0: return status
            case .rejectedForGood where outcome.failedForGood > 0: return status
            case .stillQueued where outcome.stillQueued + outcome.abandoned > 0: return status
            default: continue
            }
        }
        return .success
    }

    /// The help text's table.
    static let help = """
        Exit status (the first that applies, in the order 2, 3, 5, 1, 4):
          0  every line accepted and every event delivered (or handed to its destination)
          1  some input lines rejected (each is reported with its line number)
          2  usage error, unreadable settings or input, unusable storage (locked by another process,
             cannot be created or written) — all detected before any input is read
          3  a plugin library could not be loaded or created, or reported problems while it ran
             (errors it logged, plugins that failed on events: listed in the summary)
          4  events still queued for a later run (not uploaded within --drain-timeout; kept on disk)
             or abandoned undelivered
          5  events rejected for good (by the server, e.g. HTTP 400, or permanently by a destination)
        """
}
