/* What both vendor libraries do with the host alike: find an extension table the host offers (and
 * check that it is as large as the library was compiled against), hand a vendor's Retry-After to
 * the host, tell a transient HTTP status from a final one, keep a whole response body, and ask
 * for the host's durable queue.
 * Threads and lifetime: no state of its own. Tables belong to the host and live as long as the
 * ah_host they came from; vendor_pass_retry_after may be called from any thread (a `done` of the
 * host's HTTP requests included), as AH_EXT_RETRY_AFTER allows. */
#include <stdlib.h>
#include <string.h>
#include "vendor_support.h"

const void *vendor_host_table(const ah_host *host, const char *id, size_t min_size) {
    const void *table;
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) return NULL;
    table = host->get_extension(host->ctx, id);
    /* Every extension table starts with its size as the host compiled it. */
    if (!table || *(const uint32_t *)table < min_size) return NULL;
    return table;
}

void vendor_pass_retry_after(const ah_host *host, const ah_host_retry_after *retry, const ah_http_response *r) {
    size_t i;
    if (!retry) return;
    for (i = 0; r->headers && i < r->header_count; i++) {
        const ah_http_header *h = &r->headers[i];
        if (h->name && h->value && h->name_len == 11 && memcmp(h->name, "retry-after", 11) == 0) {
            char text[32], *end;
            size_t n = h->value_len < sizeof text - 1 ? h->value_len : sizeof text - 1;
            double seconds;
            memcpy(text, h->value, n);
            text[n] = 0;
            /* Seconds only: an HTTP date is left to the host's own backoff. */
            seconds = strtod(text, &end);
            if (end != text && seconds > 0 && seconds < 86400) retry->retry_after(host->ctx, (uint32_t)(seconds * 1000));
        }
    }
}

int vendor_transient_status(int status) {
    return status == 408 || status == 429 || (status >= 500 && status < 600 && status != 501 && status != 505);
}

char *vendor_body_copy(const ah_http_response *r) {
    char *text;
    if (!r->body || !r->body_len) return NULL;
    if (!(text = (char *)malloc(r->body_len + 1))) return NULL;
    memcpy(text, r->body, r->body_len);
    text[r->body_len] = 0;
    return text;
}

/* Events wait in the host's durable queue (ABI 1.3) until the vendor acknowledged the request
 * that carried them: with finish-later, what a library holds is never the only copy, so a
 * SIGKILL loses nothing; the host's default disk cap. */
static const ah_durable durable = {sizeof(ah_durable), 0, 0};

const void *vendor_durable_extension(const char *id) {
    return strcmp(id, AH_EXT_DURABLE) == 0 ? &durable : NULL;
}
