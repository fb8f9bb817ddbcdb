/* live_modules.c: the companion modules built into the library (see live.h). */
#include <stddef.h>

#include "live.h"

const live_module *const live_modules[] = {
    NULL,
};
