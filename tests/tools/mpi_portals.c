/*
 * An MPI program that also uses Portals, as Sandia OpenSHMEM or an MPI
 * library's Portals component does: the MPI library and libportals both
 * talk to the launcher (PMI-1 over the same inherited PMI_FD under xprun
 * and Hydra, PMIx under Open MPI). Physical ids travel by MPI_Allgather and
 * reach Portals through PtlSetMap; each rank puts its rank into its right
 * neighbour's LE. MPI must still work after PtlFini (MPI_Finalize's own
 * barrier), which is what broke when libportals finalized the shared channel.
 * With the argument "keep" it never calls PtlFini, as Open MPI's osc/portals4
 * does not: the launcher must still see a normal exit.
 */
#include <mpi.h>
#include <portals4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != PTL_OK) {                                                 \
            fprintf(stderr, "%s failed: %d\n", #call, rc_);                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                    \
        }                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    int keep = argc > 1 && !strcmp(argv[1], "keep");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    ptl_handle_ni_t ni;
    ptl_process_t me, *map = malloc(sizeof *map * (size_t)size);
    CHECK(PtlInit());
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                    NULL, &ni));
    CHECK(PtlGetPhysId(ni, &me));
    MPI_Allgather(&me, sizeof me, MPI_BYTE, map, sizeof me, MPI_BYTE, MPI_COMM_WORLD);
    CHECK(PtlSetMap(ni, (ptl_size_t)size, map));

    ptl_pt_index_t pt;
    CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 7, &pt));
    long got = -1, mine = rank;
    ptl_le_t le = {.start = &got, .length = sizeof got, .uid = PTL_UID_ANY,
                   .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM};
    ptl_handle_le_t leh;
    CHECK(PtlCTAlloc(ni, &le.ct_handle));
    CHECK(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &leh));
    MPI_Barrier(MPI_COMM_WORLD); /* every LE is posted */

    ptl_md_t md = {.start = &mine, .length = sizeof mine, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t mdh;
    ptl_ct_event_t ct;
    ptl_process_t right = {.rank = (ptl_rank_t)((rank + 1) % size)};
    CHECK(PtlMDBind(ni, &md, &mdh));
    CHECK(PtlPut(mdh, 0, sizeof mine, PTL_NO_ACK_REQ, right, pt, 0, 0, NULL, 0));
    CHECK(PtlCTWait(le.ct_handle, 1, &ct));
    int ok = ct.failure == 0 && got == (rank + size - 1) % size;

    MPI_Barrier(MPI_COMM_WORLD); /* every put has landed before teardown */
    CHECK(PtlMDRelease(mdh));
    CHECK(PtlLEUnlink(leh));
    CHECK(PtlCTFree(le.ct_handle));
    CHECK(PtlPTFree(ni, pt));
    CHECK(PtlNIFini(ni));
    if (!keep)
        PtlFini();

    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    printf("mpi+portals rank %d of %d %s\n", rank, size, all ? "ok" : "FAILED");
    free(map);
    MPI_Finalize();
    return all ? 0 : 1;
}
