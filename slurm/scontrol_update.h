/*
 * scontrol_update.h: `scontrol update NodeName=LIST State=DRAIN|RESUME [Reason=TEXT]`,
 * `scontrol update JobId=ID KEY=VALUE...` and `scontrol update ReservationName=NAME
 * KEY=VALUE...` (scontrol_update.c), called by cmd_scontrol.c with the words after "update";
 * and the one reservation exchange with gschedd that update and cmd_scontrol.c's create,
 * delete and show share.
 */
#ifndef GS_SLURM_SCONTROL_UPDATE_H
#define GS_SLURM_SCONTROL_UPDATE_H

#include "proto/frame.h"

/* Returns the exit status: 0, or 1 with the error printed as Slurm's scontrol does. */
int scontrol_update(const char *socket_opt, int argc, char **argv);

/*
 * Sends req to gschedd (socket_opt as slurm_call takes it) and stores its ReservationReply
 * envelope in *ret_reply (free with gs_proto_envelope_free). gschedd's ErrorReply is printed
 * as "CMD: error: MESSAGE" (cmd: "scontrol", "sinfo"), except that, when missing is not
 * NULL, "no such reservation" (-ENOENT) prints "CMD: error: Reservation MISSING not found",
 * Slurm's words. Returns 0, or 1 with the failure printed.
 */
int scontrol_resv_call(const char *cmd, const char *socket_opt, Gs__ReservationRequest *req,
                       const char *missing, Gs__Envelope **ret_reply);

#endif
