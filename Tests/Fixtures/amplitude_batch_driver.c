/* Drives the Amplitude library's batch path (the code its hooks will use once the host hands
 * it batches): reads Segment events, one JSON object per line, from stdin, maps them all, and
 * delivers them in one amp_deliver call with the settings given as argv[1] (JSON text).
 * Prints "outcome <i> <0|1|2>" per Amplitude event (delivered, refused, retry later),
 * "requests <n>", "waits <seconds…>" and "problem <text>" when there was one. Exit 0, or 2 for
 * bad input. Built by the tests from the C files of Plugins/Amplitude plus this one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../Plugins/Amplitude/amplitude.h"

static double waits[64];
static int wait_count;

static void record_wait(void *ctx, double seconds) {
    (void)ctx;
    if (wait_count < 64) waits[wait_count++] = seconds;
}

int main(int argc, char **argv) {
    amp_settings settings;
    amp_transport socket_transport = {amp_post_socket, NULL};
    vendor_buf out = {0};
    amp_event_ref *refs;
    char err[4096], note[600], line[1 << 16];
    int count = 0, i, requests;
    size_t at = 0;
    if (argc != 2 || amp_settings_parse(&settings, argv[1], strlen(argv[1]), 0, err, sizeof err) != 0) {
        fprintf(stderr, "settings: %s\n", argc == 2 ? err : "usage: driver SETTINGS_JSON");
        return 2;
    }
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strlen(line);
        size_t before = out.len;
        int before_count = count;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (amp_map_event(&settings, line, n, &out, &count, note, sizeof note, err, sizeof err) < 0) {
            printf("unmapped %s\n", err);
            out.len = before;
            count = before_count;
        }
    }
    refs = (amp_event_ref *)calloc((size_t)(count ? count : 1), sizeof *refs);
    for (i = 0; i < count; i++) {
        refs[i].json = out.data + at;
        refs[i].len = strlen(out.data + at);
        at += refs[i].len + 1;
    }
    requests = amp_deliver(&settings, &socket_transport, refs, count, record_wait, NULL, err, sizeof err);
    for (i = 0; i < count; i++) printf("outcome %d %d\n", i, refs[i].outcome);
    printf("requests %d\nwaits", requests);
    for (i = 0; i < wait_count; i++) printf(" %g", waits[i]);
    printf("\n");
    if (err[0]) printf("problem %s\n", err);
    free(refs);
    vendor_buf_free(&out);
    return 0;
}
