/* live_heap.c: the between-calls heap bound (see live_heap.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "live_heap.h"
#include "live_internal.h"

/* The process's mapped and resident bytes; 0 when /proc cannot be read (every look then measures). */
static int process_size(uint64_t *mapped, uint64_t *resident) {
    static long page;
    if (!page) page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    char text[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return -1;
    text[n] = 0;
    unsigned long long size = 0, rss = 0;
    if (sscanf(text, "%llu %llu", &size, &rss) != 2) return -1;
    *mapped = size * (uint64_t)page;
    *resident = rss * (uint64_t)page;
    return 0;
}

static uint64_t grown(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

int live_heap_guard_check(live_heap_guard *g, live_engine *engine, size_t bound, int periodic, size_t *heap_bytes) {
    if (!bound) return 0;
    double now = live_now_seconds();
    uint64_t mapped = 0, resident = 0;
    if (g->ready && !periodic) {
        g->calls++;
        if (g->calls < LIVE_HEAP_PROBE_CALLS && (now - g->looked_at) * LIVE_HEAP_TOUCH_RATE < (double)g->allowance)
            return 0;
        g->calls = 0;
        g->looked_at = now;
        if (process_size(&mapped, &resident) == 0) {
            uint64_t gain = grown(mapped, g->mapped);
            if (grown(resident, g->resident) > gain) gain = grown(resident, g->resident);
            uint64_t headroom = bound > g->heap ? bound - g->heap : 0;
            if (gain < headroom) {
                g->allowance = headroom - gain;
                return 0;
            }
        }
    }
    /* Exact: a full collection, then the heap's size, then the process's size as the new base. */
    size_t heap = live_engine_measure_heap(engine);
    g->measurements++;
    g->heap = heap;
    g->ready = 1;
    g->calls = 0;
    g->looked_at = live_now_seconds();
    if (process_size(&mapped, &resident) != 0) mapped = resident = 0;
    g->mapped = mapped;
    g->resident = resident;
    g->allowance = bound > heap ? bound - heap : 0;
    if (heap_bytes) *heap_bytes = heap;
    return heap > bound;
}
