/*
 * live_preludes.c: the JavaScript runtime files of runtime/, embedded at build time.
 *
 * LIVE_EMBED(symbol, "file.js") puts the bytes of runtime/file.js (plus a NUL) into .rodata
 * with the assembler's .incbin; the build passes the runtime directory as LIVE_RUNTIME_DIR
 * (an absolute path) so the library needs no files at run time. A length of 0 in the table
 * means "NUL-terminated".
 */
#include <stddef.h>

#include "live.h"

#ifndef LIVE_RUNTIME_DIR
#error "build with -DLIVE_RUNTIME_DIR=\"/absolute/path/to/Plugins/Live/runtime\" (see the Makefile)"
#endif

#define LIVE_EMBED(symbol, file)                                                        \
    __asm__(".section .rodata\n"                                                        \
            ".balign 16\n"                                                              \
            ".hidden " #symbol "\n"                                                     \
            ".globl " #symbol "\n" #symbol ":\n"                                        \
            ".incbin \"" LIVE_RUNTIME_DIR "/" file "\"\n"                               \
            ".byte 0\n"                                                                 \
            ".previous\n");                                                             \
    extern const char symbol[]

LIVE_EMBED(live_runtime_liveplugins, "liveplugins.js");
LIVE_EMBED(live_runtime_signals, "signals.js");

const live_prelude live_builtin_preludes[] = {
    {"liveplugins.js", live_runtime_liveplugins, 0},
    {"signals.js", live_runtime_signals, 0},
    {NULL, NULL, 0},
};
