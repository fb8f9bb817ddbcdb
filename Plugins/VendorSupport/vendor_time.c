/* Segment timestamps (ISO-8601, as events carry them) to the milliseconds since 1970 that both
 * vendors' APIs take, computed without the C library's time zone state (no TZ, no locale), so the
 * result depends on the text alone.
 * Threads and lifetime: pure functions, safe from any thread. */
#include <string.h>
#include "vendor_support.h"

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int64_t mo, int64_t d) {
    int64_t era, yoe, doy, doe;
    y -= mo <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The `n` digits at `t` as a number, or -1 when one is not a digit. */
static int digits(const char *t, int n) {
    int v = 0, i;
    for (i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return -1;
        v = v * 10 + (t[i] - '0');
    }
    return v;
}

int vendor_parse_time_ms(const char *t, int64_t *ms) {
    int y, mo, d, h, mi, s;
    int64_t frac = 0, scale = 1000, offset = 0;
    const char *p;
    /* YYYY-MM-DDTHH:MM:SS, read digit by digit (sscanf costs a microsecond per event). */
    if (strlen(t) < 19 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || t[13] != ':' || t[16] != ':') return -1;
    y = digits(t, 4); mo = digits(t + 5, 2); d = digits(t + 8, 2);
    h = digits(t + 11, 2); mi = digits(t + 14, 2); s = digits(t + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) return -1;
    p = t + 19;
    if (*p == '.') {
        /* Digits past the millisecond are read and dropped. */
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale > 1) { frac = frac * 10 + (*p - '0'); scale /= 10; }
        frac *= scale;
    }
    if (*p == 'Z' || *p == 'z') p++;
    else if (*p == '+' || *p == '-') {
        int oh = digits(p + 1, 2), om = p[1] && p[2] && p[3] == ':' ? digits(p + 4, 2) : -1;
        if (oh < 0 || om < 0) return -1;
        offset = (int64_t)(oh * 60 + om) * 60 * (*p == '+' ? 1 : -1);
        p += 6;
    } else return -1;
    if (*p) return -1;
    *ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) - offset) * 1000 + frac;
    return 0;
}
