/*
 * jobspec.h: struct gs_jobspec (common/jobspec.h) to and from gs.JobSpec on the wire.
 *
 * To send: gs_proto_jobspec_view_init() builds a Gs__JobSpec that borrows the spec's
 * strings (the spec must outlive the view); release frees only what the view allocated.
 * To receive: gs_proto_jobspec_from_pb() copies a Gs__JobSpec into a new gs_jobspec and
 * checks it as the scheduler must, since a client may send anything: the same ranges and
 * rules as the job-file reader, reported by field name ("resources.nodes must be >= 1").
 *
 * Mapping: time_limit_s 0 on the wire is GS_DURATION_INFINITE here; dependency types are
 * shifted by one (the wire's 0 is UNSPECIFIED); env is a map on the wire, "KEY=VALUE"
 * strings here, in the order the map arrives. Thread-safe; no global state.
 */
#ifndef GS_PROTO_JOBSPEC_H
#define GS_PROTO_JOBSPEC_H

#include "common/error.h"
#include "common/jobspec.h"
#include "proto/gsched.pb-c.h"

struct gs_proto_jobspec_view {
    Gs__JobSpec spec;
    Gs__Resources resources;
    Gs__RunSpec run;
    Gs__ArraySpec array;
    Gs__JobData data;
    Gs__Dependency *deps;
    Gs__Dependency **dep_ptrs;
    Gs__RunSpec__EnvEntry *env;
    Gs__RunSpec__EnvEntry **env_ptrs;
    char **env_keys;
    Gs__HetComponent *het; /* spec->nhet each */
    Gs__HetComponent **het_ptrs;
    Gs__JobLicense *licenses; /* spec->nlicenses each */
    Gs__JobLicense **license_ptrs;
    Gs__Rlimit *rlimits; /* spec->nrlimits each */
    Gs__Rlimit **rlimit_ptrs;
};

/* r (initialised here) as spec's resources, borrowing its strings and lists: for a
 * JobInfo as for a JobSpec. */
void gs_proto_jobspec_resources(Gs__Resources *r, const struct gs_jobspec *spec);

/* spec's sbatch --propagate limits into run, borrowing their names: *items and *ptrs are
 * the caller's to free (NULL without any). 0 or -ENOMEM. */
int gs_proto_jobspec_rlimits(const struct gs_jobspec *spec, Gs__RunSpec *run, Gs__Rlimit **items,
                             Gs__Rlimit ***ptrs);

/* Returns 0 or -ENOMEM (then nothing needs releasing). */
int gs_proto_jobspec_view_init(struct gs_proto_jobspec_view *view, const struct gs_jobspec *spec);
void gs_proto_jobspec_view_release(struct gs_proto_jobspec_view *view);

/* Returns 0 with a new spec (the caller frees it), -EINVAL with err->msg, or -ENOMEM. */
int gs_proto_jobspec_from_pb(const Gs__JobSpec *pb, struct gs_jobspec **ret_spec,
                             struct gs_error *err);

#endif
