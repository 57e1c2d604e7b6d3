/*
 * resv_recur.h: the windows of a repeating reservation (Slurm's HOURLY, DAILY, WEEKDAY,
 * WEEKEND and WEEKLY flags, gs.ReservationFlag bits): where the next one starts and which one
 * is current at a given time. Day-based windows keep their local time of day across a
 * daylight-saving change, as an operator's "every day at 02:00" means; HOURLY ones are a
 * plain hour apart. Pure: the process's time zone (TZ) and nothing else.
 */
#ifndef GS_SCHED_RESV_RECUR_H
#define GS_SCHED_RESV_RECUR_H

#include <stdint.h>

#include "proto/frame.h"

#define SCHED_RESV_HOUR_MS 3600000ull
#define SCHED_RESV_DAY_MS (24ull * SCHED_RESV_HOUR_MS)
#define SCHED_RESV_RECUR_FLAGS                                                                     \
    (GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY |                                               \
     GS__RESERVATION_FLAG__RESERVATION_FLAG_DAILY |                                                \
     GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY |                                              \
     GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKEND |                                              \
     GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY)

/* "DAILY" for its bit, "" for anything but one recurrence bit. */
const char *sched_resv_recur_name(uint32_t flag);
/* The longest window of a reservation repeating by flag: an hour, a day or a week. */
uint64_t sched_resv_recur_period_ms(uint32_t flag);
/* The start of the window after the one that starts at start_ms (wall clock, ms). */
uint64_t sched_resv_recur_next(uint32_t flag, uint64_t start_ms);
/* Moves the window [*start_ms, *end_ms) on to the first one that has not ended at now,
 * keeping its length; one that has not ended stays. */
void sched_resv_recur_roll(uint32_t flag, uint64_t *start_ms, uint64_t *end_ms, uint64_t now);

#endif
