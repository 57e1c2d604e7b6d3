/*
 * pmi2_client.c: a task that wires up through Slurm's own PMI-2 client library (libpmi2,
 * Debian's libpmi2-0-dev), for pmi.sh: it puts a value (with a ';' in it, which the wire
 * protocol escapes) under its rank, fences, gets every rank's and sums them, reads the
 * job's process mapping, and swaps a node attribute with the other ranks of its node (the
 * first puts it, the others wait for it). Prints one line; exits non-zero on any failure.
 */
#include <slurm/pmi2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PMI2_SUCCESS) {                                                                 \
            fprintf(stderr, "%s: %d\n", #call, rc_);                                               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    int spawned, size, rank, appnum, found, len, sum = 0;
    char jobid[256], key[64], value[PMI2_MAX_VALLEN], map[PMI2_MAX_VALLEN], leader[64];
    const char *local = getenv("SLURM_LOCALID");

    CHECK(PMI2_Init(&spawned, &size, &rank, &appnum));
    CHECK(PMI2_Job_GetId(jobid, sizeof(jobid)));
    snprintf(key, sizeof(key), "addr-%d", rank);
    snprintf(value, sizeof(value), "v;%d", rank * 10);
    CHECK(PMI2_KVS_Put(key, value));
    if (local != NULL && strcmp(local, "0") == 0) {
        snprintf(leader, sizeof(leader), "%d", rank);
        CHECK(PMI2_Info_PutNodeAttr("leader", leader));
    }
    CHECK(PMI2_KVS_Fence());
    for (int r = 0; r < size; r++) {
        snprintf(key, sizeof(key), "addr-%d", r);
        CHECK(PMI2_KVS_Get(jobid, PMI2_ID_NULL, key, value, sizeof(value), &len));
        if (strncmp(value, "v;", 2) != 0) {
            fprintf(stderr, "rank %d's value: %s\n", r, value);
            return 1;
        }
        sum += atoi(value + 2);
    }
    CHECK(PMI2_Info_GetJobAttr("PMI_process_mapping", map, sizeof(map), &found));
    CHECK(PMI2_Info_GetNodeAttr("leader", leader, sizeof(leader), &found, 1));
    printf("rank %d of %d job %s sum %d map %s leader %s spawned %d\n", rank, size, jobid, sum,
           found ? map : "?", leader, spawned);
    CHECK(PMI2_Finalize());
    return 0;
}
