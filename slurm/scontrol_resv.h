/*
 * scontrol_resv.h: Slurm's advance reservations as scontrol and sinfo read and show them
 * (scontrol_resv.c), kept pure (no daemon, no clock, no stdout) so that
 * tests/slurm/test_scontrol_resv.c checks them on their own:
 *
 *   - the KEY=VALUE words of `scontrol create reservation` and `scontrol update
 *     ReservationName=NAME` into the ReservationRequest gschedd takes;
 *   - a reservation as `scontrol show reservation` prints it, and as a line of `sinfo -T`.
 *
 * cmd_scontrol.c (create, delete, show), scontrol_update.c (update) and cmd_sinfo.c (-T) do
 * the asking and the printing. Single-threaded, like the CLI.
 */
#ifndef GS_SLURM_SCONTROL_RESV_H
#define GS_SLURM_SCONTROL_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/frame.h"

/*
 * A parsed create or update. req is what to send; req.reservation points at resv, whose
 * name and nodes point into the argv parsed (borrowed: argv must outlive it) and whose user
 * and account lists are owned (scontrol_resv_release frees them).
 */
struct scontrol_resv {
    Gs__ReservationRequest req;
    Gs__Reservation resv;
    /*
     * Update only: Duration=D without StartTime=. The new end is the reservation's current
     * start plus D, which only gschedd knows: the caller asks for the reservation, sets
     * resv.end_ms to its start_ms + duration_s * 1000, and sends req (set_end is already set).
     */
    bool end_from_start;
    uint64_t duration_s;
    /* Licenses=: resv.licenses points at these (owned, names too). */
    Gs__JobLicense *lic, **lic_ptrs;
    size_t nlic;
};

/*
 * Reads argv[0..argc) (KEY=VALUE words, keys any case: ReservationName, StartTime, EndTime,
 * Duration, Nodes, Users, Accounts, TRES, Flags, Licenses; on update also Users/Accounts/Flags with
 * += or -=, or Users=+a / Users=-a) for action (CREATE or UPDATE) into *r, with StartTime and
 * EndTime read at now_ms (wall clock) as sbatch --begin reads its TIME. Sets req.set_* for
 * each field given, and the request's add_ / remove_ lists and flag bits for the edits
 * (owned by r too). Create needs StartTime, Nodes or Licenses, EndTime or Duration (not both) and
 * Users or Accounts; update needs ReservationName and something to change. Returns 0 (release r
 * with scontrol_resv_release), or -EINVAL with why holding one sentence naming the key at
 * fault (r is then left empty), or -ENOMEM.
 */
int scontrol_resv_parse(struct scontrol_resv *r, Gs__ReservationAction action, int argc,
                        char *const *argv, uint64_t now_ms, char *why, size_t why_size);
/* Frees what r owns; r may be empty (zeroed) or already released. */
void scontrol_resv_release(struct scontrol_resv *r);

/*
 * Appends r as `scontrol show reservation` prints it, in local time, ended by a blank line
 * (oneliner: on one line, ended by a newline):
 *     ReservationName=maint StartTime=2026-12-05T10:00:00 EndTime=2026-12-05T11:00:00 ...
 *        Nodes=node[1-2] NodeCnt=2 Users=alice Accounts=(null) State=ACTIVE
 * Returns 0 or -ENOMEM.
 */
int scontrol_resv_record(struct gs_buf *out, const Gs__Reservation *r, bool oneliner);

/*
 * Appends `sinfo -T`'s table of v[0..n), Slurm's layout: RESV_NAME left-justified as wide
 * as the longest name (at least 9), then STATE, START_TIME, END_TIME, DURATION
 * right-justified in 8, 19, 19 and 11 columns, then NODELIST, two blanks between; the
 * header line first when header. Returns 0 or -ENOMEM.
 */
int scontrol_resv_table(struct gs_buf *out, Gs__Reservation *const *v, size_t n, bool header);

#endif
