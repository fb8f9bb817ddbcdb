/* Drives the Mixpanel library's upload paths under AddressSanitizer, with a host of its own
 * written in C: AH_EXT_HTTP_REQUESTS answers each request on a thread of its own from a script
 * (argv[2..]: "200", "413", "400:I" naming record I of the request in failed_records, "429:S"
 * with Retry-After S, "503"; then 200s), AH_EXT_FINISH_LATER hands out tokens inside the hooks
 * and counts completions, AH_EXT_RETRY_AFTER records the delays. argv[1]: how many track calls
 * (each finishes later), then one synchronous call answered by the next scripted response.
 * Prints "requests N", "records R" (records sent over all requests), "ok A", "permanent P",
 * "retryable T", "sync S" (the synchronous call's status), "retry_after MS..." and exits 0;
 * AddressSanitizer aborts on any memory error. Built by the tests with the C files of Plugins/Mixpanel. */
#define _DEFAULT_SOURCE
/* A string past Mixpanel's 255 bytes (with the prefix the driver adds). */
#define LONG_TEXT "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" \
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" \
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "analytics_plugin.h"

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static char **script;
static int script_count, script_next, requests, records, in_hook, completed[3], retry_count, answering;
static uint64_t next_token = 1, hook_token;
static uint32_t retry_delays[32];

typedef struct answer_job {
    ah_http_done_fn done;
    void *user;
    char *body;      /* the request's body, copied */
    char *response;  /* the scripted response */
} answer_job;

static int count_records(const char *body) {
    int n = 0;
    const char *p = body;
    while ((p = strstr(p, "\"$insert_id\"")) != NULL) { n++; p++; }
    return n;
}

static void *answer(void *arg) {
    answer_job *job = (answer_job *)arg;
    ah_http_response r;
    ah_http_header header = {"retry-after", 11, NULL, 0};
    char body[512];
    int status = atoi(job->response);
    const char *colon = strchr(job->response, ':');
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.outcome = AH_OK;
    r.status_code = status;
    snprintf(body, sizeof body, "{\"code\":%d,\"status\":\"x\"}", status);
    if (status == 400 && colon)
        snprintf(body, sizeof body, "{\"code\":400,\"error\":\"bad\",\"failed_records\":[{\"index\":%d,\"$insert_id\":\"x\",\"field\":\"properties.time\",\"message\":\"too far ahead\"}],\"num_records_imported\":1,\"status\":\"Bad Request\"}", atoi(colon + 1));
    if (status == 429 && colon) { header.value = colon + 1; header.value_len = strlen(colon + 1); r.headers = &header; r.header_count = 1; }
    r.body = body;
    r.body_len = strlen(body);
    usleep(1000);
    job->done(job->user, 1, &r);
    free(job->body);
    free(job->response);
    free(job);
    pthread_mutex_lock(&lock);
    answering--;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static ah_status http_start(void *ctx, const ah_http_request *request, ah_http_done_fn done, void *user, uint64_t *out_id,
                            char *err, size_t cap) {
    answer_job *job = (answer_job *)calloc(1, sizeof *job);
    pthread_t thread;
    (void)ctx; (void)err; (void)cap;
    job->done = done;
    job->user = user;
    job->body = (char *)malloc(request->body_len + 1);
    memcpy(job->body, request->body, request->body_len);
    job->body[request->body_len] = 0;
    pthread_mutex_lock(&lock);
    requests++;
    answering++;
    records += count_records(job->body);
    job->response = strdup(script_next < script_count ? script[script_next++] : "200");
    pthread_mutex_unlock(&lock);
    if (out_id) *out_id = 1;
    pthread_create(&thread, NULL, answer, job);
    pthread_detach(thread);
    return AH_OK;
}

static uint64_t fl_token(void *ctx) {
    uint64_t t = 0;
    (void)ctx;
    pthread_mutex_lock(&lock);
    if (in_hook) { if (!hook_token) hook_token = next_token++; t = hook_token; }
    pthread_mutex_unlock(&lock);
    return t;
}

static ah_status fl_complete(void *ctx, uint64_t token, ah_status status, const char *reason, size_t len) {
    (void)ctx; (void)token; (void)reason; (void)len;
    pthread_mutex_lock(&lock);
    if (status >= 0 && status <= 2) completed[status]++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return AH_OK;
}

static ah_status retry_after(void *ctx, uint32_t delay_ms) {
    (void)ctx;
    pthread_mutex_lock(&lock);
    if (retry_count < 32) retry_delays[retry_count++] = delay_ms;
    pthread_mutex_unlock(&lock);
    return AH_OK;
}

static const ah_host_http_requests http_table = {sizeof(ah_host_http_requests), 4, http_start};
static const ah_host_finish_later fl_table = {sizeof(ah_host_finish_later), 1000, fl_token, fl_complete};
static const ah_host_retry_after retry_table = {sizeof(ah_host_retry_after), retry_after};

static const void *get_extension(void *ctx, const char *id) {
    (void)ctx;
    if (strcmp(id, AH_EXT_HTTP_REQUESTS) == 0) return &http_table;
    if (strcmp(id, AH_EXT_FINISH_LATER) == 0) return &fl_table;
    if (strcmp(id, AH_EXT_RETRY_AFTER) == 0) return &retry_table;
    return NULL;
}

/* Warnings that an event was cut to Mixpanel's limits, counted (printed as "trimmed"). */
static int trimmed;
static void host_log(void *ctx, int32_t level, const char *text, size_t len) {
    static const char mark[] = "Mixpanel's limits";
    size_t i;
    (void)ctx;
    if (level != AH_LOG_WARN || !text) return;
    for (i = 0; i + sizeof mark - 1 <= len; i++)
        if (memcmp(text + i, mark, sizeof mark - 1) == 0) {
            pthread_mutex_lock(&lock);
            trimmed++;
            pthread_mutex_unlock(&lock);
            return;
        }
}

int main(int argc, char **argv) {
    char err[2048], event[2048];
    const ah_integration *integration = analytics_host_plugin_v1(AH_ABI_VERSION, err, sizeof err);
    ah_host host;
    ah_instance *instance;
    static const char settings[] = "{\"token\":\"t\",\"apiSecret\":\"s\",\"apiHost\":\"http://127.0.0.1:9\",\"batchSize\":50}";
    int calls, i, pending = 0, sync;
    struct timespec deadline;
    if (argc < 2 || !integration) return 2;
    calls = atoi(argv[1]);
    script = argv + 2;
    script_count = argc - 2;
    memset(&host, 0, sizeof host);
    host.size = sizeof host;
    host.abi_version = AH_ABI_VERSION;
    host.log = host_log;
    host.get_extension = get_extension;
    if (!(instance = integration->create(&host, settings, sizeof settings - 1, err, sizeof err))) { fprintf(stderr, "create: %s\n", err); return 2; }
    for (i = 0; i < calls; i++) {
        ah_status status;
        snprintf(event, sizeof event, "{\"type\":\"track\",\"event\":\"E %d \\u00e9 \\ud83d\\ude00\",\"userId\":\"user-%d\",\"messageId\":\"m-%d\",\"properties\":{\"n\":%d,\"big\":12345678901234567890%s}}", i, i % 7, i, i,
                 i % 5 == 0 ? ",\"revenue\":1.5" /* a profile $append that waits for its event */
                 : i % 7 == 3 ? ",\"long\":\"\\u00e9\\ud83d\\ude00 past 255 bytes: " LONG_TEXT "\",\"deep\":{\"a\":{\"b\":{\"c\":{\"d\":1}}}}"
                 : ""); /* cut and left out to fit Mixpanel's limits */
        pthread_mutex_lock(&lock);
        in_hook = 1;
        hook_token = 0;
        pthread_mutex_unlock(&lock);
        status = integration->hooks->track(instance, event, strlen(event), err, sizeof err);
        pthread_mutex_lock(&lock);
        in_hook = 0;
        pthread_mutex_unlock(&lock);
        if (status == AH_PENDING) pending++;
        else { fprintf(stderr, "call %d answered %d: %s\n", i, status, err); return 1; }
    }
    integration->hooks->flush(instance, err, sizeof err);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 20;
    pthread_mutex_lock(&lock);
    while (completed[0] + completed[1] + completed[2] < pending)
        if (pthread_cond_timedwait(&changed, &lock, &deadline) != 0) break;
    pthread_mutex_unlock(&lock);
    /* A synchronous call (no token): answered by the next scripted response. */
    snprintf(event, sizeof event, "{\"type\":\"identify\",\"userId\":\"user-1\",\"messageId\":\"m-sync\",\"traits\":{\"name\":\"Zo\\u00eb\"}}");
    sync = integration->hooks->identify(instance, event, strlen(event), err, sizeof err);
    /* As the host: every `done` has returned before `destroy`. */
    pthread_mutex_lock(&lock);
    while (answering > 0) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    integration->hooks->destroy(instance);
    pthread_mutex_lock(&lock);
    printf("requests %d\nrecords %d\nok %d\npermanent %d\nretryable %d\nsync %d\nretry_after", requests, records,
           completed[0], completed[2], completed[1], sync);
    for (i = 0; i < retry_count; i++) printf(" %u", retry_delays[i]);
    printf("\ntrimmed %d\n", trimmed);
    pthread_mutex_unlock(&lock);
    return 0;
}
