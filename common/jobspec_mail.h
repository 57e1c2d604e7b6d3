/*
 * jobspec_mail.h: the mail a job asks for about itself (gs_jobspec.mail_types, .mail_user):
 * Slurm's --mail-type list as sbatch takes it, the address, and a job file's [mail] table.
 * gschedd sends it (scheduler/sched_mail.c).
 */
#ifndef GSCHED_COMMON_JOBSPEC_MAIL_H
#define GSCHED_COMMON_JOBSPEC_MAIL_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/schema.h"

/* Slurm's mail types, as bits. STAGE_OUT (burst buffers) is taken and sends nothing. */
enum gs_mail_type {
    GS_MAIL_BEGIN = 1u << 0,
    GS_MAIL_END = 1u << 1,
    GS_MAIL_FAIL = 1u << 2,
    GS_MAIL_REQUEUE = 1u << 3,
    GS_MAIL_TIME_LIMIT = 1u << 4,
    GS_MAIL_TIME_LIMIT_90 = 1u << 5,
    GS_MAIL_TIME_LIMIT_80 = 1u << 6,
    GS_MAIL_TIME_LIMIT_50 = 1u << 7,
    GS_MAIL_ARRAY_TASKS = 1u << 8,
    GS_MAIL_INVALID_DEPEND = 1u << 9,
    GS_MAIL_STAGE_OUT = 1u << 10,
};

#define GS_MAIL_ALL                                                                                \
    (GS_MAIL_BEGIN | GS_MAIL_END | GS_MAIL_FAIL | GS_MAIL_REQUEUE | GS_MAIL_INVALID_DEPEND |       \
     GS_MAIL_STAGE_OUT)
#define GS_MAIL_KNOWN ((GS_MAIL_STAGE_OUT << 1) - 1)
#define GS_MAIL_USER_MAX 254 /* an address's longest (RFC 5321 path less its brackets) */

/*
 * "END,FAIL" (names in any case, Slurm's: NONE, BEGIN, END, FAIL, REQUEUE, ALL,
 * INVALID_DEPEND, STAGE_OUT, TIME_LIMIT, TIME_LIMIT_90, TIME_LIMIT_80, TIME_LIMIT_50,
 * ARRAY_TASKS) into *ret; NONE alone is 0. -EINVAL with why naming the word.
 */
int gs_mail_types_parse(const char *text, uint32_t *ret, char *why, size_t whylen);
/* types as Slurm lists them ("BEGIN,END"; "NONE" for 0) into out. */
void gs_mail_types_format(uint32_t types, struct gs_buf *out);
/*
 * Whether user is an address (or a user name) the mail program may be given as its last
 * argument: 1 to GS_MAIL_USER_MAX of letters, digits and ._%+-@, not starting with '-' (it
 * would read as an option). -EINVAL with why.
 */
int gs_mail_user_check(const char *user, char *why, size_t whylen);

/* A job file's [mail]: type (a list of names, or one "END,FAIL" string) and user. */
extern const struct gs_schema_key gs_jobspec_mail_keys[];

#endif
