/*
 * live_signals.c: the Signals module of LivePlugins. It subscribes to the host's signals
 * (AH_EXT_SIGNALS, offered when the application enabled signals), held until a bundle is
 * active; then each signal goes, on the host's signals thread, to the context's
 * __signalsReceive (runtime/signals.js), which buffers it and runs the bundle's
 * processSignal under the context lock and time limit (live_call_global). Signals emitted before
 * the first bundle loaded are kept by the host (bounded, the shed ones counted) and replayed in
 * order when it does.
 */
#include <stdlib.h>
#include <string.h>

#include "live.h"

typedef struct live_signals {
    live_instance *live;
    const ah_host *host;
    const ah_host_signals *table;
    uint64_t id;
    /* Only on the host's signals thread. */
    uint64_t processed, failed, missed;
} live_signals;

extern const live_module live_signals_module;

static size_t module_index(void) {
    size_t i = 0;
    while (live_modules[i] && live_modules[i] != &live_signals_module) i++;
    return i;
}

static void deliver(void *ctx, const char *json, size_t len) {
    live_signals *s = ctx;
    live_js_error error;
    switch (live_call_global(s->live, "__signalsReceive", json, len, NULL, &error)) {
    case LIVE_VALUE:
    case LIVE_NOTHING: s->processed++; break;
    case LIVE_NO_FUNCTION: s->missed++; break;  /* no bundle active: nothing to process it */
    default: s->failed++; break;                /* logged by live_call_global, with the reason */
    }
}

static int start(live_instance *live, const char *options, size_t options_len, char *err, size_t err_cap) {
    const ah_host *host = live_host(live);
    (void)options; (void)options_len;
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) return 0;
    const ah_host_signals *table = host->get_extension(host->ctx, AH_EXT_SIGNALS);
    if (!table) return 0;  /* the application did not enable signals */
    live_signals *s = calloc(1, sizeof *s);
    if (!s) return 0;
    s->live = live;
    s->host = host;
    s->table = table;
    ah_signal_subscriber sub;
    memset(&sub, 0, sizeof sub);
    sub.size = sizeof sub;
    sub.flags = AH_SIGNALS_START_HELD;
    sub.name = "LivePlugins";
    sub.ctx = s;
    sub.deliver = deliver;
    if (table->subscribe(host->ctx, &sub, &s->id, err, err_cap) != AH_OK) {
        live_log(live, AH_LOG_WARN, "signals: cannot subscribe (%s); processSignal will not run", err);
        err[0] = 0;
        free(s);
        return 0;
    }
    live_set_module_state(live, module_index(), s);
    return 0;
}

static void activated(live_instance *live) {
    live_signals *s = live_module_state(live, module_index());
    if (!s) return;
    char config[512];
    int64_t n = s->table->configuration(s->host->ctx, config, sizeof config);
    if (n > 0 && (size_t)n < sizeof config) live_call_global(live, "__signalsConfigure", config, (size_t)n, NULL, NULL);
    s->table->set_ready(s->host->ctx, s->id, 1);
}

static void stop(live_instance *live) {
    live_signals *s = live_module_state(live, module_index());
    if (!s) return;
    s->table->unsubscribe(s->host->ctx, s->id);  /* no delivery starts after this returns */
    live_log(live, AH_LOG_DEBUG, "signals: %llu processed, %llu failed, %llu without a bundle",
             (unsigned long long)s->processed, (unsigned long long)s->failed, (unsigned long long)s->missed);
    live_set_module_state(live, module_index(), NULL);
    free(s);
}

const live_module live_signals_module = {
    .name = "signals",
    .start = start,
    .stop = stop,
    .activated = activated,
    .native = NULL,
};
