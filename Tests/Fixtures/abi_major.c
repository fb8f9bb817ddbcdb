/* Fixture: a library built for ABI major 2. By default it exports the v1 entry name but declares
 * 2.0 in its description; with -DV2_SYMBOL it exports only `analytics_host_plugin_v2`, as a real
 * next-generation library would. */
#include <stddef.h>
#include "analytics_plugin.h"

static const ah_integration integration = {
    sizeof(ah_integration), (2u << 16) | 0u, "FutureThing", "2.0.0", AH_LANGUAGE_C, NULL, NULL, NULL, NULL,
};

#ifdef V2_SYMBOL
AH_EXPORT const ah_integration *analytics_host_plugin_v2(uint32_t host_abi_version, char *err, size_t cap);
AH_EXPORT const ah_integration *analytics_host_plugin_v2(uint32_t host_abi_version, char *err, size_t cap) {
#else
AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
#endif
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
