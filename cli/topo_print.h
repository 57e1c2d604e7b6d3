/*
 * topo_print.h: a node's topology as `gsched nodes --topology` shows it. The text form is
 * the matrix of `nvidia-smi topo -m`: a row per GPU, a column per GPU and per NIC, cells X,
 * NV# (bonded NVLinks), PIX, PXB, PHB, NODE, SYS (common/topo.h has the rules), then each
 * GPU's local cores as ranges, NUMA node and nearest NIC, and a legend. The JSON form
 * carries the same facts under the proto's field names.
 *
 * Pure functions of a Gs__NodeTopology as the scheduler stored it from the worker's
 * NodeRegister; a topology from an older worker (no links, no NICs) prints "-" where a
 * class is unknown. Thread-safe.
 */
#ifndef GS_CLI_TOPO_PRINT_H
#define GS_CLI_TOPO_PRINT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/json.h"
#include "proto/gsched.pb-c.h"

/* "PIX", "NODE", ... for a LinkType other than NVLINK; "-" for unspecified or unknown. */
const char *cli_link_name(Gs__LinkType type);
/* One matrix cell, GPU a to GPU b: "X" (a == b), "NV18", "PIX", ..., or "-". Returns out. */
char *cli_topo_gpu_cell(const Gs__NodeTopology *t, size_t a, size_t b, char *out, size_t size);
/* The matrix ("no GPUs" without any), then the NIC legend, appended to out. Returns 0 or
 * -ENOMEM. */
int cli_topo_print(const Gs__NodeTopology *t, struct gs_buf *out);
/* What the cells mean, appended to out once after the matrices. Returns 0 or -ENOMEM. */
int cli_topo_legend(struct gs_buf *out);
/* The topology as one JSON object: {"gpus":[...,"links":[cells]],"nics":[...]}. */
void cli_topo_json(struct gs_json *j, const Gs__NodeTopology *t);

#endif
