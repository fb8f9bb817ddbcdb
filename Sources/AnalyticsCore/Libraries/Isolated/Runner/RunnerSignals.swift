import CAnalyticsABI

/// `AH_EXT_SIGNALS` inside `analytics-plugin-runner`: the library's subscribers are served by a hub
/// of the runner's own (a ``Signals`` without broadcasters, fed with the host's signals as they
/// were stamped there), so holding, replay and unsubscribing behave exactly as in-process; emit and
/// the configuration are the host's.
struct RunnerSignals: SignalsRelay {
    let out: PluginRunner.Output
    let hub: Signals
    private let forwarding = Locked(false)

    /// `configuration`: the host's, as the start frame carries it.
    init(out: PluginRunner.Output, configuration: JSONObject) {
        self.out = out
        var local = SignalsConfiguration()
        local.broadcasters = []
        local.maximumBufferSize = configuration["maximumBufferSize"]?.intValue ?? local.maximumBufferSize
        hub = Signals(configuration: local)
    }

    func emit(_ json: [UInt8]) -> Result<Void, TableError> {
        let (status, reply) = out.call(.signalEmit, 0, json, wait: true)
        switch status {
        case IsolationWire.ok: return .success(())
        case IsolationWire.retryable: return .failure(TableError(ah_status(AH_ERR_RETRYABLE), String(decoding: reply, as: UTF8.self)))
        default: return .failure(TableError(ah_status(AH_ERR_PERMANENT), String(decoding: reply, as: UTF8.self)))
        }
    }

    func configurationText() -> String? {
        let (status, reply) = out.call(.signalConfiguration, wait: true)
        return status == IsolationWire.ok ? String(decoding: reply, as: UTF8.self) : nil
    }

    /// Before `subscribe` returns: the host forwards from now on.
    func subscribed() {
        let first = forwarding.withLock { on -> Bool in defer { on = true }; return !on }
        if first { _ = out.call(.signalForward, 1, wait: true) }
    }

    /// A `signal` frame: one of the host's signals for the library's subscribers.
    func deliver(_ payload: [UInt8]) {
        var r = WireReader(payload)
        let bytes = r.data()
        guard !r.failed, let o = (try? JSON(parsing: bytes))?.objectValue, let signal = Signal(json: o) else { return }
        hub.relay(signal)
    }
}
