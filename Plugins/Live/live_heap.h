/*
 * live_heap.h: keeping a bundle's JavaScript heap under maxHeapBytes between calls, cheaply.
 *
 * Measuring the heap exactly costs a full collection and a walk of the heap (about a millisecond
 * for a small heap, several for a large one): far too much after every call (a plugin call costs
 * a few microseconds). So the exact measurement runs only when the heap could have passed the
 * bound since the last one:
 *   - the heap can only grow into memory the process gains (new pages touched, address space
 *     mapped), and touching memory takes time: at most LIVE_HEAP_TOUCH_RATE bytes per second.
 *     After each call the guard reads the clock (a few tens of nanoseconds); once the time since
 *     the last look could account for the headroom left, or every LIVE_HEAP_PROBE_CALLS calls,
 *     it reads the process's size (/proc/self/statm: about a microsecond);
 *   - when the process gained as much as the headroom (resident or mapped) since the last exact
 *     measurement, it measures exactly (a full collection, then the heap's size);
 *   - and at least every heapCheckSeconds, whatever the process did.
 * What it cannot see before the periodic measurement: memory the engine reuses from what it
 * freed earlier (the allocator keeps freed pages), and memory never written (a large zeroed
 * ArrayBuffer, which costs address space only until it is written).
 */
#ifndef LIVE_HEAP_H
#define LIVE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "live_engine.h"

/* An upper bound on how fast one call can write fresh memory (bytes per second): several times
 * what JavaScript reached here (about 5 GB/s building strings, 3 GB/s filling typed arrays). */
#define LIVE_HEAP_TOUCH_RATE (32.0 * 1024 * 1024 * 1024)
/* Calls between two looks at the process's size, whatever the clock says. */
#define LIVE_HEAP_PROBE_CALLS 64

typedef struct live_heap_guard {
    int ready;                 /* measured once */
    size_t heap;               /* bytes at the last exact measurement */
    uint64_t resident, mapped; /* the process's bytes at the last exact measurement */
    uint64_t allowance;        /* bytes the process may still gain before the next look */
    double looked_at;          /* when the process's size was last read */
    unsigned calls;            /* calls since then */
    uint64_t measurements;     /* exact measurements so far */
} live_heap_guard;

/* After a call into `engine` (its lock held). Returns 1 when the heap is over `bound` (the
 * bytes in `*heap_bytes`); `periodic` asks for an exact measurement now. `bound` 0: never. */
int live_heap_guard_check(live_heap_guard *guard, live_engine *engine, size_t bound, int periodic,
                          size_t *heap_bytes);

#endif
