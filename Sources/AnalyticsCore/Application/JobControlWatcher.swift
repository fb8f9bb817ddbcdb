import Dispatch
import Foundation

/// Job control as application events (`Configuration.applicationEventsFromJobControl`):
/// SIGTSTP (Ctrl-Z) → willResignActive, didEnterBackground (which flushes), then the process
/// stops itself with SIGSTOP, as the default action would have; SIGCONT (`fg`, `kill -CONT`) →
/// willEnterForeground, didBecomeActive. The events are sent from a dispatch queue, never from
/// a signal handler.
///
/// `@unchecked Sendable`: the dispatch sources are set up in `init` and afterwards only
/// cancelled, which dispatch allows from any thread.
final class JobControlWatcher: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let queue = DispatchQueue(label: "analytics-host.job-control")

    init(analytics: Analytics) {
        // SIGTSTP is ignored so that the process stops only after plugins heard it; SIGCONT keeps
        // its default action (continuing), a dispatch source only observes it.
        signal(SIGTSTP, SIG_IGN)
        let weak = WeakAnalytics(analytics)
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: queue)
        stop.setEventHandler {
            guard let analytics = weak.value else { return }
            analytics.application(.willResignActive)
            analytics.application(.didEnterBackground)
            raise(SIGSTOP)
        }
        let resume = DispatchSource.makeSignalSource(signal: SIGCONT, queue: queue)
        resume.setEventHandler {
            guard let analytics = weak.value else { return }
            analytics.application(.willEnterForeground)
            analytics.application(.didBecomeActive)
        }
        sources = [stop, resume]
        for source in sources { source.resume() }
    }

    /// Stops watching; SIGTSTP gets its default action back.
    func stop() {
        for source in sources { source.cancel() }
        signal(SIGTSTP, SIG_DFL)
    }
}
