/*
 * hello: the first Xportals demo. Every rank says who and where it is,
 * publishes a greeting, reads its neighbours' and meets the others at a
 * barrier. Run it as
 *     xprun -n 4 build/libexec/xportals/hello
 * or alone (a singleton), or under mpiexec.hydra / srun / Open MPI's mpirun.
 */
#include <stdio.h>
#include <string.h>

#include "xportals/xp.h"

int main(int argc, char **argv)
{
    xp_status_t st = xp_init(&argc, &argv);
    if (st != XP_OK) {
        fprintf(stderr, "hello: xp_init failed: %s\n", xp_status_string(st));
        return 1;
    }
    int rank = xp_rank(), size = xp_size();
    printf("hello from rank %d of %d (node %d of %d, local rank %d of %d, bootstrap %s)\n", rank,
           size, xp_node_id(), xp_num_nodes(), xp_local_rank(), xp_local_size(),
           xp_bootstrap_name());

    char greeting[64];
    snprintf(greeting, sizeof greeting, "greetings from rank %d", rank);
    st = xp_kv_put("hello", greeting, strlen(greeting) + 1);
    if (st == XP_OK)
        st = xp_kv_fence();
    int peers[2] = {(rank + size - 1) % size, (rank + 1) % size};
    for (int i = 0; i < 2 && st == XP_OK; i++) {
        char got[64];
        size_t len = sizeof got;
        st = xp_kv_get(peers[i], "hello", got, &len);
        if (st == XP_OK)
            printf("rank %d read \"%s\" from its %s neighbour\n", rank, got,
                   i ? "right" : "left");
    }
    if (st == XP_OK)
        st = xp_barrier();
    if (st != XP_OK) {
        fprintf(stderr, "hello: rank %d: %s\n", rank, xp_status_string(st));
        xp_abort(1, "hello failed");
    }
    xp_finalize();
    return 0;
}
