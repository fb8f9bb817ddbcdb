/* A minimal host in C (test helper): loads one integration library through the ABI and feeds it
 * events read from stdin, one "<type> <json>" per line, then flushes and destroys the instance.
 * Usage: console_driver <library.so> <settings-json>. Exit status 0 when every call returned AH_OK. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "analytics_plugin.h"

static void host_log(void *ctx, int32_t level, const char *text, size_t len) {
    (void)ctx;
    fprintf(stdout, "log %d %.*s\n", (int)level, (int)len, text);
}
static ah_status host_send(void *ctx, const char *json, size_t len) { (void)ctx; (void)json; (void)len; return AH_OK; }
static int64_t host_id(void *ctx, char *buf, size_t cap) { (void)ctx; if (cap) buf[0] = 0; return -1; }
static const void *host_extension(void *ctx, const char *id) { (void)ctx; (void)id; return NULL; }

int main(int argc, char **argv) {
    static char line[65536];
    char err[AH_ERROR_CAPACITY_MIN];
    ah_host host = { sizeof(ah_host), AH_ABI_VERSION, NULL, host_log, host_send, host_id, host_id, host_extension };
    void *lib;
    ah_entry_fn entry;
    const ah_integration *integration;
    ah_instance *instance;
    int failures = 0;
    if (argc != 3) { fprintf(stdout, "usage: console_driver lib.so settings\n"); return 2; }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stdout, "dlopen: %s\n", dlerror()); return 2; }
    *(void **)(&entry) = dlsym(lib, AH_ENTRY_SYMBOL);
    if (!entry) { fprintf(stdout, "no entry\n"); return 2; }
    err[0] = 0;
    integration = entry(AH_ABI_VERSION, err, sizeof err);
    if (!integration) { fprintf(stdout, "refused: %s\n", err); return 2; }
    instance = integration->create(&host, argv[2], strlen(argv[2]), err, sizeof err);
    if (!instance) { fprintf(stdout, "create failed: %s\n", err); return 2; }
    while (fgets(line, sizeof line, stdin)) {
        char *json = strchr(line, ' ');
        const ah_hooks *h = integration->hooks;
        ah_status (*hook)(ah_instance *, const char *, size_t, char *, size_t) = NULL;
        size_t len;
        if (!json) continue;
        *json++ = 0;
        len = strcspn(json, "\n");
        if (!strcmp(line, "track")) hook = h->track;
        else if (!strcmp(line, "identify")) hook = h->identify;
        else if (!strcmp(line, "screen")) hook = h->screen;
        else if (!strcmp(line, "group")) hook = h->group;
        else if (!strcmp(line, "alias")) hook = h->alias;
        err[0] = 0;
        if (hook && hook(instance, json, len, err, sizeof err) != AH_OK) { fprintf(stdout, "hook failed: %s\n", err); failures++; }
    }
    err[0] = 0;
    if (integration->hooks->flush && integration->hooks->flush(instance, err, sizeof err) != AH_OK) failures++;
    integration->hooks->destroy(instance);
    return failures ? 1 : 0;
}
