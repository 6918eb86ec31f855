/*
 * launcher_identity SIZE BOOTSTRAP: an Xportals program for foreign
 * launchers (mpiexec.hydra, Open MPI's mpirun). Checks the size and the
 * bootstrap it was given, exchanges every rank's number and a max-size
 * value through the key-value store, and prints one line per rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xportals/xp.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: launcher_identity SIZE BOOTSTRAP\n");
        return 2;
    }
    if (xp_init(&argc, &argv) != XP_OK)
        return 1;
    int rank = xp_rank(), size = xp_size(), bad = 0;
    if (size != atoi(argv[1]) || strcmp(xp_bootstrap_name(), argv[2])) {
        fprintf(stderr, "rank %d: size %d bootstrap %s, expected %s %s\n", rank, size,
                xp_bootstrap_name(), argv[1], argv[2]);
        bad = 1;
    }
    unsigned char v[XP_KV_MAX_VALUE];
    memset(v, rank + 1, sizeof v);
    xp_status_t st = xp_kv_put("identity", v, sizeof v);
    if (st == XP_OK)
        st = xp_kv_fence();
    for (int r = 0; r < size && st == XP_OK; r++) {
        unsigned char got[XP_KV_MAX_VALUE];
        size_t len = sizeof got;
        st = xp_kv_get(r, "identity", got, &len);
        if (st == XP_OK && (len != sizeof got || got[0] != r + 1 || got[len - 1] != r + 1)) {
            fprintf(stderr, "rank %d: wrong value from rank %d\n", rank, r);
            bad = 1;
        }
    }
    if (st == XP_OK)
        st = xp_barrier();
    if (st != XP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, xp_status_string(st));
        bad = 1;
    }
    printf("identity: rank %d of %d bootstrap %s node %d/%d local %d/%d %s\n", rank, size,
           xp_bootstrap_name(), xp_node_id(), xp_num_nodes(), xp_local_rank(), xp_local_size(),
           bad ? "BAD" : "ok");
    xp_finalize();
    return bad;
}
