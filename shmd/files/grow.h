/*
 * grow.h - growing filters' next layers (docs/design.md, "Layers"): from
 * the loop's tick, shmd makes each growing filter's next layer ahead, when
 * its current layer is half full (the file work on the file worker), and
 * publishes it as the filter's standby; once an adder has opened the
 * standby (its current layer was full), shmd makes it the current layer.
 * It also marks a layer FULL that reached its capacity without an adder
 * seeing it (NONSCALING filters too). Called from the loop only.
 */
#ifndef SHMD_GROW_H
#define SHMD_GROW_H

#include "shmd/store/registry.h"

/* How often the loop looks while a growing or NONSCALING filter exists. */
#define GROW_TICK_MS 10

/** 1 if a filter of @p r grows or is NONSCALING (the loop then ticks every GROW_TICK_MS). */
int grow_any(struct registry *r);

/** Look at every growing and NONSCALING filter: mark full layers, make
 * standby layers, make opened standbys current. At most once per
 * millisecond, however often it is called. */
void grow_tick(struct registry *r);

/**
 * 1 if the filter in @p slot grows no more because its next layer was
 * refused (a writer's quota, or more than the host can hold) and its
 * current layer is full: the sentence naming why in @p why. Adds through
 * the socket then answer "filter is full" with it. 0 otherwise.
 */
int grow_refused(struct registry *r, int slot, char *why, size_t len);

struct reply;

/**
 * The error an add that found the filter in @p slot full answers (slot -1:
 * no filter to say more of): RedisBloom's "Filter is full", and why when
 * the filter grows no more because its next layer was refused (a writer's
 * quota, the host); its "Maximum expansions reached" for a growing cuckoo
 * filter with all of its shmf_layers_max() layers. One function, for the
 * adds answered on the loop and those finished on the file worker.
 */
void grow_reply_full(struct registry *r, int slot, struct reply *out);

/** grow_tick() for filter @p slot alone, now (tests). */
void grow_filter(struct registry *r, int slot);

#endif
