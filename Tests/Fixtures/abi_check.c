/* Compile-only check (make abi-check, and a test): the ABI header is valid C99 and C++ under
 * -Wall -Wextra -pedantic -Werror, and its layout rules hold. Uses every declaration once. */
#include "analytics_plugin.h"

/* Layout rules: size first, 1.1 fields after every 1.0 field. */
typedef char ah_check_integration_size_first[offsetof(ah_integration, size) == 0 ? 1 : -1];
typedef char ah_check_hooks_size_first[offsetof(ah_hooks, size) == 0 ? 1 : -1];
typedef char ah_check_host_size_first[offsetof(ah_host, size) == 0 ? 1 : -1];
typedef char ah_check_lifecycle_last[offsetof(ah_hooks, lifecycle) > offsetof(ah_hooks, destroy) ? 1 : -1];
typedef char ah_check_version[AH_ABI_VERSION_MAJOR(AH_ABI_VERSION) == AH_ABI_MAJOR ? 1 : -1];

struct ah_instance { const ah_host *host; };

static ah_status check_event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len; (void)err; (void)cap;
    self->host->log(self->host->ctx, AH_LOG_DEBUG, "x", 1);
    return AH_OK;
}
static ah_status check_plain(ah_instance *self, char *err, size_t cap) { (void)self; (void)err; (void)cap; return AH_ERR_RETRYABLE; }
static ah_status check_update(ah_instance *self, const char *s, size_t len, int32_t kind, char *err, size_t cap) {
    (void)self; (void)s; (void)len; (void)err; (void)cap;
    return kind == AH_UPDATE_INITIAL || kind == AH_UPDATE_REFRESH ? AH_OK : AH_ERR_PERMANENT;
}
static ah_status check_lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)self; (void)err; (void)cap;
    return phase == AH_LIFECYCLE_STARTED || phase == AH_LIFECYCLE_STOPPING ? AH_OK : AH_ERR_PERMANENT;
}
static void check_destroy(ah_instance *self) { (void)self; }
static ah_instance *check_create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    (void)s; (void)len; (void)err; (void)cap;
    if (!AH_HAS_FIELD(host, ah_host, anonymous_id)) return NULL;
    return NULL;
}

static const ah_hooks check_hooks = {
    sizeof(ah_hooks), check_event, check_event, check_event, check_event, check_event,
    check_plain, check_plain, check_update, check_destroy, check_lifecycle,
};
/* 1.2: capability tables in both directions. */
typedef char ah_check_host_extension_last[offsetof(ah_host, get_extension) > offsetof(ah_host, anonymous_id) ? 1 : -1];
typedef char ah_check_integration_extension_last[offsetof(ah_integration, get_extension) > offsetof(ah_integration, hooks) ? 1 : -1];
static const ah_role check_role = { sizeof(ah_role), AH_ROLE_DESTINATION | AH_ROLE_WHOLE_SETTINGS };
static int32_t check_process(void *ctx, const char *json, size_t len, const ah_event_output *out, char *err, size_t cap) {
    (void)ctx; (void)err; (void)cap;
    if (out->write(out->ctx, json, len) != AH_OK) return AH_EVENT_ERROR;
    return len ? AH_EVENT_REPLACE : (len == 1 ? AH_EVENT_DROP : AH_EVENT_KEEP);
}
static ah_status check_sink(void *ctx, const char *bytes, size_t len) { (void)ctx; (void)bytes; (void)len; return AH_OK; }
static void check_plugin_ctx(void *ctx) { (void)ctx; }
static void check_plugin_update(void *ctx, const char *s, size_t len, int32_t kind) { (void)ctx; (void)s; (void)len; (void)kind; }
/* Uses every 1.2 host table once (never called: this file is only compiled). */
void ah_check_host_tables(const ah_host *host);
void ah_check_host_tables(const ah_host *host) {
    const ah_host_timeline *timeline = (const ah_host_timeline *)host->get_extension(host->ctx, AH_EXT_TIMELINE);
    const ah_host_client *client = (const ah_host_client *)host->get_extension(host->ctx, AH_EXT_CLIENT);
    const ah_host_http *http = (const ah_host_http *)host->get_extension(host->ctx, AH_EXT_HTTP);
    ah_timeline_plugin plugin = { sizeof(ah_timeline_plugin), AH_PLUGIN_ENRICHMENT, AH_PLUGIN_THREAD_SAFE | AH_PLUGIN_FAIL_CLOSED,
        "check", NULL, NULL, check_process, check_plugin_update, check_plugin_ctx, check_plugin_ctx, check_plugin_ctx };
    uint64_t id = 0;
    char err[AH_ERROR_CAPACITY_MIN];
    if (timeline && timeline->add(host->ctx, &plugin, &id, err, sizeof err) == AH_OK) timeline->remove(host->ctx, id);
    if (client) { client->traits(host->ctx, NULL, 0); client->reset(host->ctx); client->flush(host->ctx);
                  client->storage_directory(host->ctx, NULL, 0); client->options(host->ctx, NULL, 0); }
    if (http) {
        ah_byte_sink sink = { NULL, check_sink };
        int32_t status = 0;
        http->get(host->ctx, "http://127.0.0.1/", 17, 1000, &sink, &status, err, sizeof err);
    }
    (void)AH_PLUGIN_BEFORE; (void)AH_PLUGIN_AFTER; (void)AH_PLUGIN_UTILITY;
}
/* 1.3: the settings a library reads (designated initializers are C99 but not C++ before 20:
 * positional, as a C++ author writes them). */
static const ah_setting check_settings[] = {
    { "apiKey", AH_SETTING_STRING, 1, NULL, "the key" },
    { "flushAt", AH_SETTING_NUMBER, 0, "20", "events per upload" },
    { "types", AH_SETTING_ARRAY | AH_SETTING_STRING | AH_SETTING_OBJECT | AH_SETTING_BOOLEAN, 0, NULL, "which types" },
};
static const ah_settings_schema check_schema = {
    sizeof(ah_settings_schema), sizeof(ah_setting), sizeof check_settings / sizeof check_settings[0], 0, check_settings,
};
typedef char ah_check_schema_size_first[offsetof(ah_settings_schema, size) == 0 ? 1 : -1];
static const void *check_get_extension(const char *id) {
    if (id[0] == 's') return &check_schema;
    (void)AH_EXT_SETTINGS_SCHEMA;
    return id[0] == 'a' ? (const void *)&check_role : NULL;
}

static const ah_integration check_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Check", "0", AH_LANGUAGE_C, NULL, check_create, &check_hooks,
    check_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    ah_entry_fn self_check = analytics_host_plugin_v1;
    (void)self_check; (void)err; (void)cap;
    if (AH_ABI_VERSION_MAJOR(host_abi_version) != AH_ABI_MAJOR) return NULL;
    return ah_compiler_ident()[0] ? &check_integration : NULL;
}
