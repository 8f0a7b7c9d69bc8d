/*
 * metrics-page.h - shmd's figures as a Prometheus page: the text
 * exposition format, version 0.0.4 (HELP and TYPE lines, then samples),
 * built from what the RESP verbs read (the registry, the loop's counters
 * behind struct server_view, the replication engine's stats). The HTTP
 * side is net/metrics.c; the metrics and their meaning are listed in
 * docs/operations.md, "Metrics".
 *
 * Only what shmd sees without a worker's help: a worker's checks (and its
 * adds' answers) go through libshmf in the worker's own process and are
 * counted nowhere, so they are not on the page. Called on the loop's
 * thread only (the registry is not thread-safe).
 */
#ifndef SHMD_METRICS_PAGE_H
#define SHMD_METRICS_PAGE_H

#include <stddef.h>

#include "shmd/session/session.h"
#include "shmd/store/registry.h"

/* The Content-Type of the page. */
#define METRICS_PAGE_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* The largest page built: 256 filters take about 400 KiB. */
#define METRICS_PAGE_MAX (8u << 20)

/**
 * Build the page of registry @p reg and server @p v into *out (malloc'd,
 * the caller frees it), *len bytes.
 * @return 0, -ENOMEM, or SHMF_E_TOOBIG (past METRICS_PAGE_MAX); *out is
 *         NULL on failure.
 */
int metrics_page_build(struct registry *reg, const struct server_view *v, char **out, size_t *len);

#endif
