/*
 * wait_set.h: the jobs one `gsched wait` waits for, and how many of them have got where it
 * waits for them to be (ended, or with --start running), kept so that a job's change costs
 * a binary search and a cursor's advance rather than a look at every job of the set. With
 * 3,000 jobs in one wait, a look at all of them at each of their changes was a fifth of
 * gschedd's time (bench/RESULTS.md). Pure: whether a job has got there is the caller's
 * answer (reached_fn), so the simulator and the tests can drive it.
 *
 * The ids are kept sorted, each once; every id before the cursor has got there. A job that is no
 * longer there (a requeued job that had ended or started) moves the cursor back to it, so
 * the caller must report every change of a job in the set, as sched_query_job_changed is
 * called on every job's change.
 */
#ifndef SCHED_WAIT_SET_H
#define SCHED_WAIT_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether job id has got there (a job gschedd no longer holds has ended: true). */
typedef bool (*sched_wait_reached_fn)(uint64_t id, void *data);

struct sched_wait_set {
    uint64_t *sorted; /* owned; ascending, no repeats */
    size_t n;
    size_t reached; /* sorted[0..reached) have got there */
};

/* Copies ids[0..n) (duplicates allowed) and finds how far they have got. 0 or -ENOMEM. */
int sched_wait_set_init(struct sched_wait_set *ws, const uint64_t *ids, size_t n,
                        sched_wait_reached_fn reached, void *data);
void sched_wait_set_release(struct sched_wait_set *ws);

/* Whether every job has got there. */
static inline bool sched_wait_set_done(const struct sched_wait_set *ws)
{
    return ws->reached == ws->n;
}

/*
 * Job id changed, and has got there now (now_reached) or not: the cursor moves back to it,
 * or on past it and the jobs after it that have got there too. Returns whether every job has
 * got there. An id not in the set changes nothing.
 */
bool sched_wait_set_changed(struct sched_wait_set *ws, uint64_t id, bool now_reached,
                            sched_wait_reached_fn reached, void *data);

#endif
