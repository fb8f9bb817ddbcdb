/* live_modules.c: the companion modules built into the library (see live.h). */
#include <stddef.h>

#include "live.h"

extern const live_module live_signals_module;  /* live_signals.c */

const live_module *const live_modules[] = {
    &live_signals_module,
    NULL,
};
