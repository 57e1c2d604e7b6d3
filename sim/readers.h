/*
 * readers.h: the trace and cluster file readers of gsched-simulate, each appending to a
 * struct gs_sim_trace (trace.h). Formats (/work/shared/traces/README.md; docs/simulator.md):
 *
 *   tiresias jobs     CSV job_id,num_gpu,submit_time,iterations,model_name,duration,interval
 *                     (seconds); account: the model name
 *   tiresias cluster  CSV num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,
 *                     mem_p_node (GB): switches x nodes, switch ids from 1
 *   openb nodes       CSV sn,cpu_milli,memory_mib,gpu,model; 32 nodes to a switch in file
 *                     order (the trace names no network)
 *   openb pods        CSV name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
 *                     creation_time,deletion_time,scheduled_time; run time deletion -
 *                     scheduled; pods never scheduled (Pending) are skipped; a fraction of
 *                     a GPU is a whole one (gsched does not share GPUs); account "default"
 *                     (the trace has no tenants: main.c hashes jobs over --accounts)
 *   philly-gavel      TSV job_type,command,num_steps_arg,needs_data_dir,total_steps,
 *                     arrival_time,scale_factor; run time from total_steps by the step-time
 *                     table in trace_philly.c; account: the model family
 *   cluster TOML      a generic cluster: nodes x gpus x cores x mem_gib, switches, links
 *                     (cluster_file.c), or several [[group]]s of them
 *
 * Each returns 0, or a negative errno with "FILE:LINE: message" lines appended to err.
 * Nodes read from trace CSVs get the layout links (layout.h).
 */
#ifndef GS_SIM_READERS_H
#define GS_SIM_READERS_H

#include "common/buf.h"
#include "sim/trace.h"

int gs_sim_read_tiresias_jobs(struct gs_sim_trace *t, const char *path, struct gs_buf *err);
int gs_sim_read_tiresias_cluster(struct gs_sim_trace *t, const char *path, enum gs_sim_links links,
                                 struct gs_buf *err);
int gs_sim_read_openb_nodes(struct gs_sim_trace *t, const char *path, enum gs_sim_links links,
                            struct gs_buf *err);
int gs_sim_read_openb_pods(struct gs_sim_trace *t, const char *path, struct gs_buf *err);
int gs_sim_read_philly(struct gs_sim_trace *t, const char *path, struct gs_buf *err);
int gs_sim_read_cluster_toml(struct gs_sim_trace *t, const char *path, struct gs_buf *err);

/* The philly-gavel model: seconds for total_steps of job_type on scale_factor GPUs, or a
 * negative value for a job type the table does not know. */
double gs_sim_philly_seconds(const char *job_type, double total_steps, uint32_t scale_factor);

#define GS_SIM_OPENB_NODES_PER_SWITCH 32

#endif
