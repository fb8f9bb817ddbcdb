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
static const ah_integration check_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Check", "0", AH_LANGUAGE_C, NULL, check_create, &check_hooks,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    ah_entry_fn self_check = analytics_host_plugin_v1;
    (void)self_check; (void)err; (void)cap;
    if (AH_ABI_VERSION_MAJOR(host_abi_version) != AH_ABI_MAJOR) return NULL;
    return ah_compiler_ident()[0] ? &check_integration : NULL;
}
