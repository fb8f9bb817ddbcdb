/* live_heap.c: the between-calls heap bound (see live_heap.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "live_heap.h"
#include "live_internal.h"

/* /proc/self/statm, opened once per process: reading an open file costs about 2 µs, opening
 * and closing it each time about 14 µs (measured here). */
static int statm_fd = -1;
static long page_size = 4096;
static pthread_once_t statm_once = PTHREAD_ONCE_INIT;
static void open_statm(void) {
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (sysconf(_SC_PAGESIZE) > 0) page_size = sysconf(_SC_PAGESIZE);
}

/* The process's mapped and resident bytes; -1 when /proc cannot be read (every look then
 * measures exactly). */
static int process_size(uint64_t *mapped, uint64_t *resident) {
    pthread_once(&statm_once, open_statm);
    if (statm_fd < 0) return -1;
    char text[128];
    ssize_t n = pread(statm_fd, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = 0;
    unsigned long long size = 0, rss = 0;
    if (sscanf(text, "%llu %llu", &size, &rss) != 2) return -1;
    *mapped = size * (uint64_t)page_size;
    *resident = rss * (uint64_t)page_size;
    return 0;
}

static uint64_t grown(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

int live_heap_guard_check(live_heap_guard *g, live_engine *engine, size_t bound, double now, int periodic,
                          size_t *heap_bytes) {
    if (!bound) return 0;
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
