/*
 * live_bundle.h: where the bundle comes from: the cached copy in the storage directory, the
 * application's fallback file, or a download named by the settings' `edgeFunction`.
 *
 * Cache layout (the library's private storage directory):
 *   bundle.js       the last bundle that downloaded completely AND loaded
 *   bundle.version  its version (decimal), written after bundle.js, so a crash in between
 *                   leaves the older number and the download is simply repeated
 *   bundle.js.download  a download in progress (deleted when it fails)
 *   storage.json    the JavaScript `storage` object
 */
#ifndef LIVE_BUNDLE_H
#define LIVE_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "analytics_plugin.h"
#include "live_engine.h"

/* Reads a whole file (at most `max` bytes) into `out`; -1 with errno set when it cannot. */
int live_read_file(const char *path, size_t max, live_buf *out);

/* Writes `path` atomically: a temporary file beside it, fsync, rename, fsync of the directory.
 * -1 with a reason in `err` when it fails. */
int live_write_file_atomically(const char *path, const char *data, size_t len, char *err,
                               size_t err_cap);

/* The cached version, or -1 when there is no complete cached bundle. */
int64_t live_cached_version(const char *storage_dir);

/* Whether a bundle may be downloaded from `url`: https, or plain http from a loopback host
 * (127.0.0.0/8, [::1], localhost). 0 with the reason in `err` otherwise. */
int live_download_url_allowed(const char *url, char *err, size_t err_cap);

/* Downloads `url` (live_download_url_allowed) through the host into `<storage_dir>/bundle.js.download` (at most `max`
 * bytes), and reads it back into `out`. Returns 0 on HTTP 200; otherwise -1 with the reason
 * in `err` (network error, status, too large) and no temporary file left behind. */
int live_download(const ah_host_http *http, void *host_ctx, const char *url, uint32_t timeout_ms,
                  const char *storage_dir, size_t max, live_buf *out, char *err, size_t err_cap);

/* Moves a downloaded (and loaded) bundle into place, then records its version. */
int live_commit_download(const char *storage_dir, int64_t version, char *err, size_t err_cap);

/* Deletes a download that did not load. */
void live_discard_download(const char *storage_dir);

#endif
