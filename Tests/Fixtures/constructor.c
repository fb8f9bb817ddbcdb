/* Fixture: a library whose constructor misbehaves before the host sees anything, by define:
 *   -DEXIT_IN_CONSTRUCTOR   calls _exit(7);
 *   -DCRASH_IN_CONSTRUCTOR  segfaults;
 *   -DPRINT_IN_CONSTRUCTOR  prints a line to standard output (and is otherwise a valid, no-op
 *                           destination with key "Printer"). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "Printer"
#endif

__attribute__((constructor)) static void misbehave(void) {
#if defined(EXIT_IN_CONSTRUCTOR)
    _exit(7);
#elif defined(CRASH_IN_CONSTRUCTOR)
    raise(SIGSEGV);
#elif defined(PRINT_IN_CONSTRUCTOR)
    printf("{\"not\": \"the host's output\"}\n");
    fflush(stdout);
#endif
}

struct ah_instance { int unused; };

static void destroy(ah_instance *self) { free(self); }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)host; (void)settings; (void)len; (void)err; (void)cap;
    return (ah_instance *)calloc(1, sizeof(ah_instance));
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
