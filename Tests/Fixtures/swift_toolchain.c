/* Fixture: a C library that claims to be written in Swift with some toolchain (-DTOOLCHAIN to
 * choose which), to exercise the host's toolchain check without building a Swift library. */
#include <stdlib.h>
#include "analytics_plugin.h"

#ifndef TOOLCHAIN
#define TOOLCHAIN "Swift 5.9 (clang 15.0.0 (https://github.com/apple/llvm-project.git 0000000))"
#endif

struct ah_instance { int unused; };

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    (void)host; (void)s; (void)len; (void)err; (void)cap;
    return (ah_instance *)calloc(1, sizeof(ah_instance));
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "SwiftThing", "0.3.0", AH_LANGUAGE_SWIFT, TOOLCHAIN, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
