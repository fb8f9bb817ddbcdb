/* The line that a vendor library's uploads wait in for the host's HTTP client (ABI 1.3's HTTP
 * requests): one request of an instance runs at a time (within the host's per-instance bound), so
 * the vendor ingests a user's events in the order they happened; the others wait, oldest first,
 * and the next one starts from the `done` of the one running. What goes into a request and how
 * its answer is read stays with each library.
 * Threads and lifetime: the line has no lock of its own; every call is made under the lock of the
 * library object that holds it (the caller's mutex), from whichever thread holds that lock. The
 * line only links the caller's requests; their memory stays the caller's. */
#include "vendor_support.h"

void vendor_line_init(vendor_request_line *line, const ah_host_http_requests *http) {
    line->head = line->tail = NULL;
    line->in_flight = 0;
    line->slots = http->max_in_flight >= 1 ? 1 : 0;
}

int vendor_line_enter(vendor_request_line *line, vendor_line_link *request) {
    if (line->in_flight < line->slots) {
        line->in_flight++;
        return 1;
    }
    request->next = NULL;
    if (line->tail) line->tail->next = request;
    else line->head = request;
    line->tail = request;
    return 0;
}

vendor_line_link *vendor_line_next(vendor_request_line *line) {
    vendor_line_link *request = line->head;
    if (!request || line->in_flight >= line->slots) return NULL;
    line->head = request->next;
    if (!line->head) line->tail = NULL;
    line->in_flight++;
    return request;
}

void vendor_line_leave(vendor_request_line *line) { line->in_flight--; }

vendor_line_link *vendor_line_take(vendor_request_line *line) {
    vendor_line_link *request = line->head;
    if (!request) return NULL;
    line->head = request->next;
    if (!line->head) line->tail = NULL;
    return request;
}
