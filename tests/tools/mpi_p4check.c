/* MPI checks to run Open MPI's Portals 4 components (mtl, btl, osc, coll)
 * over libportals (scripts/ompi_portals_check.sh): point-to-point of many
 * sizes (eager and rendezvous) between ranks 2k and 2k+1, unexpected
 * messages, wildcards, probe, synchronous sends, cancel, truncation, a
 * many-to-one flood, collectives, one-sided. Every received byte is checked.
 *   mpirun -np N ./mpi_p4check [all|pingpong|unexpected|...]   (any N >= 2) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, errors;

#define CHECK(c, ...)                                                        \
    do {                                                                     \
        if (!(c)) {                                                          \
            errors++;                                                        \
            fprintf(stderr, "[%d] %s:%d: ", rank, __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

static unsigned char pat(size_t i, int src, int tag) { return (unsigned char)(i * 7 + src * 13 + tag); }

static void fill(unsigned char *b, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(i, src, tag);
}

static int verify(const unsigned char *b, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(i, src, tag))
            return 0;
    return 1;
}

static void test_pingpong(void)
{
    size_t max = 8u << 20;
    unsigned char *s = malloc(max), *r = malloc(max);
    int peer = rank ^ 1;
    if (peer >= size)
        goto out;
    for (size_t n = 0; n <= max; n = n ? n * 2 : 1) {
        for (size_t k = 0; k < 3; k++) {
            size_t len = n ? n - 1 + k : k;
            if (len > max)
                continue;
            int tag = (int)(len % 1000);
            MPI_Status st;
            if (rank < peer) {
                fill(s, len, rank, tag);
                MPI_Send(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                memset(r, 0, len);
                MPI_Recv(r, (int)max, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
            } else {
                memset(r, 0, len);
                MPI_Recv(r, (int)max, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
                fill(s, len, rank, tag);
                MPI_Send(s, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            }
            int cnt;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK((size_t)cnt == len, "pingpong count %d != %zu", cnt, len);
            CHECK(verify(r, len, peer, tag), "pingpong data len %zu", len);
        }
    }
out:
    free(s);
    free(r);
}

/* Sends of many sizes posted before the receives (unexpected), then
 * received in reverse order by tag, and some with ANY_TAG/ANY_SOURCE. */
static void test_unexpected(void)
{
    enum { N = 24 };
    static const size_t sizes[N] = { 0, 1, 8, 63, 64, 100, 1000, 2047, 4096, 8192, 12000,
                                     16384, 32768, 65536, 65537, 100000, 131072, 262144,
                                     500000, 1 << 20, 3, 5, 7, 2 << 20 };
    int peer = rank ^ 1;
    if (peer >= size) { /* the odd rank out joins the barrier only */
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    unsigned char *s[N], *r[N];
    MPI_Request rq[N];
    for (int i = 0; i < N; i++) {
        s[i] = malloc(sizes[i] + 1);
        r[i] = calloc(1, sizes[i] + 1);
        fill(s[i], sizes[i], rank, 100 + i);
    }
    for (int i = 0; i < N; i++)
        MPI_Isend(s[i], (int)sizes[i], MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &rq[i]);
    MPI_Barrier(MPI_COMM_WORLD); /* the peer's sends have arrived (or started) */
    for (int i = N - 1; i >= 0; i--) {
        MPI_Status st;
        MPI_Recv(r[i], (int)sizes[i], MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &st);
        int cnt;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK((size_t)cnt == sizes[i] && st.MPI_SOURCE == peer && st.MPI_TAG == 100 + i,
              "unexpected %d: count %d source %d tag %d", i, cnt, st.MPI_SOURCE, st.MPI_TAG);
        CHECK(verify(r[i], sizes[i], peer, 100 + i), "unexpected data %d (%zu B)", i,
              sizes[i]);
    }
    MPI_Waitall(N, rq, MPI_STATUSES_IGNORE);
    /* wildcards: ordered matching from one source */
    for (int i = 0; i < N; i++)
        MPI_Isend(s[i], (int)sizes[i], MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &rq[i]);
    for (int i = 0; i < N; i++) {
        MPI_Status st;
        memset(r[i], 0, sizes[i]);
        MPI_Recv(r[i], (int)sizes[i], MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                 &st);
        CHECK(st.MPI_TAG == 100 + i && st.MPI_SOURCE == peer, "wildcard order %d: tag %d", i,
              st.MPI_TAG);
        CHECK(verify(r[i], sizes[i], peer, 100 + i), "wildcard data %d", i);
    }
    MPI_Waitall(N, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++) {
        free(s[i]);
        free(r[i]);
    }
}

static void test_probe_ssend_cancel(void)
{
    int peer = rank ^ 1;
    if (peer >= size) { /* the odd rank out joins the barrier only */
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    size_t sizes[] = { 0, 16, 4096, 300000 };
    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        unsigned char *b = malloc(n + 1);
        if (rank < peer) {
            fill(b, n, rank, 7);
            MPI_Ssend(b, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            int cnt, flag = 0;
            MPI_Probe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK((size_t)cnt == n && st.MPI_TAG == 7, "probe count %d tag %d (want %zu)", cnt,
                  st.MPI_TAG, n);
            MPI_Iprobe(peer, 7, MPI_COMM_WORLD, &flag, &st);
            CHECK(flag, "iprobe after probe found nothing");
            memset(b, 0, n);
            MPI_Recv(b, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
            CHECK(verify(b, n, peer, 7), "ssend data %zu", n);
        }
        free(b);
    }
    /* a receive that nothing matches, cancelled */
    MPI_Request rq;
    MPI_Status st;
    int c = 0, x;
    MPI_Irecv(&x, 1, MPI_INT, peer, 999, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &c);
    CHECK(c, "receive not cancelled");
    /* a message truncated: MPI_ERR_TRUNCATE, then the rest still works */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char big[64], small[8];
    memset(big, 'x', sizeof big);
    if (rank < peer) {
        MPI_Send(big, 64, MPI_BYTE, peer, 8, MPI_COMM_WORLD);
    } else {
        int rc = MPI_Recv(small, 8, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &st);
        int cls = 0;
        MPI_Error_class(rc, &cls);
        CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TRUNCATE, "truncate: rc %d class %d", rc, cls);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_many_small(void)
{
    /* A flood of small messages from everyone to rank 0, received with
     * ANY_SOURCE: the flow-control path when the receive side is slow. */
    enum { M = 3000 };
    if (rank == 0) {
        int *cnt = calloc((size_t)size, sizeof(int));
        for (int i = 0; i < M * (size - 1); i++) {
            int v[4];
            MPI_Status st;
            MPI_Recv(v, 4, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
            CHECK(v[0] == st.MPI_SOURCE && v[1] == cnt[st.MPI_SOURCE], "flood order from %d: %d vs %d",
                  st.MPI_SOURCE, v[1], cnt[st.MPI_SOURCE]);
            cnt[st.MPI_SOURCE]++;
        }
        free(cnt);
    } else {
        for (int i = 0; i < M; i++) {
            int v[4] = { rank, i, 0, 0 };
            MPI_Send(v, 4, MPI_INT, 0, 5, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_collectives(void)
{
    for (int n = 1; n <= 1 << 18; n *= 8) {
        int64_t *a = malloc(sizeof(int64_t) * (size_t)n), *b = malloc(sizeof(int64_t) * (size_t)n);
        for (int i = 0; i < n; i++)
            a[i] = rank + i;
        MPI_Allreduce(a, b, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        int ok = 1;
        for (int i = 0; i < n; i++)
            ok &= b[i] == (int64_t)size * (size - 1) / 2 + (int64_t)i * size;
        CHECK(ok, "allreduce n=%d", n);
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++)
                a[i] = root == rank ? i * 3 + root : -1;
            MPI_Bcast(a, n, MPI_INT64_T, root, MPI_COMM_WORLD);
            ok = 1;
            for (int i = 0; i < n; i++)
                ok &= a[i] == i * 3 + root;
            CHECK(ok, "bcast n=%d root %d", n, root);
            for (int i = 0; i < n; i++)
                a[i] = rank * 2 + i;
            MPI_Reduce(a, b, n, MPI_INT64_T, MPI_SUM, root, MPI_COMM_WORLD);
            if (rank == root) {
                ok = 1;
                for (int i = 0; i < n; i++)
                    ok &= b[i] == (int64_t)size * (size - 1) + (int64_t)i * size;
                CHECK(ok, "reduce n=%d root %d", n, root);
            }
        }
        free(a);
        free(b);
    }
    int *all = malloc(sizeof(int) * (size_t)size * 2), *got = malloc(sizeof(int) * (size_t)size * 2);
    for (int i = 0; i < size * 2; i++)
        all[i] = rank * 1000 + i;
    MPI_Alltoall(all, 2, MPI_INT, got, 2, MPI_INT, MPI_COMM_WORLD);
    for (int p = 0; p < size; p++)
        CHECK(got[2 * p] == p * 1000 + 2 * rank && got[2 * p + 1] == p * 1000 + 2 * rank + 1,
              "alltoall from %d", p);
    free(all);
    free(got);
    for (int i = 0; i < 200; i++)
        MPI_Barrier(MPI_COMM_WORLD);
}

static void test_rma(void)
{
    enum { W = 1 << 16 };
    int64_t *base;
    MPI_Win win;
    MPI_Win_allocate(W * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    for (int i = 0; i < W; i++)
        base[i] = -1;
    MPI_Win_fence(0, win);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t *src = malloc(W * sizeof(int64_t));
    for (int i = 0; i < W; i++)
        src[i] = rank * 100000 + i;
    MPI_Put(src, W, MPI_INT64_T, right, 0, W, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    int ok = 1;
    for (int i = 0; i < W; i++)
        ok &= base[i] == left * 100000 + i;
    CHECK(ok, "put+fence");
    int64_t *g = calloc(W, sizeof(int64_t));
    MPI_Get(g, W, MPI_INT64_T, right, 0, W, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    ok = 1;
    for (int i = 0; i < W; i++)
        ok &= g[i] == rank * 100000 + i;
    CHECK(ok, "get+fence");
    /* accumulate and fetch-and-op from every rank into rank 0's word 0 */
    if (rank == 0)
        base[0] = 0, base[1] = 0;
    MPI_Win_fence(0, win);
    int64_t one = 1, old;
    for (int i = 0; i < 100; i++) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win);
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 1, MPI_SUM, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    int64_t r2[2];
    MPI_Get(r2, 2, MPI_INT64_T, 0, 0, 2, MPI_INT64_T, win);
    MPI_Win_unlock(0, win);
    CHECK(r2[0] == 100 * size && r2[1] == 100 * size, "accumulate %lld fetch_and_op %lld (want %d)",
          (long long)r2[0], (long long)r2[1], 100 * size);
    /* compare-and-swap: a lock word taken by each rank in turn */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        base[2] = -1, base[3] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t mine = rank, none = -1, prev;
    for (int tries = 0;; tries++) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Compare_and_swap(&mine, &none, &prev, MPI_INT64_T, 0, 2, win);
        MPI_Win_unlock(0, win);
        if (prev == -1)
            break;
        CHECK(tries < 1000000, "cas never succeeded");
        if (tries >= 1000000)
            break;
    }
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 3, 1, MPI_INT64_T, MPI_SUM, win);
    MPI_Compare_and_swap(&none, &mine, &prev, MPI_INT64_T, 0, 2, win);
    MPI_Win_unlock(0, win);
    CHECK(prev == mine, "cas release saw %lld", (long long)prev);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Win_unlock(0, win);
        CHECK(base[3] == size && base[2] == -1, "cas lock count %lld word %lld", (long long)base[3],
              (long long)base[2]);
    }
    MPI_Win_free(&win);
    free(src);
    free(g);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *only = argc > 1 ? argv[1] : "all";
#define RUN(name)                                                  \
    if (!strcmp(only, "all") || strstr(only, #name)) {             \
        double t = MPI_Wtime();                                    \
        test_##name();                                             \
        MPI_Barrier(MPI_COMM_WORLD);                               \
        if (rank == 0)                                             \
            printf("%-22s %.3f s\n", #name, MPI_Wtime() - t);      \
        fflush(stdout);                                            \
    }
    RUN(pingpong);
    RUN(unexpected);
    RUN(probe_ssend_cancel);
    RUN(many_small);
    RUN(collectives);
    RUN(rma);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d errors\n", all ? "FAIL" : "PASS", all);
    MPI_Finalize();
    return all != 0;
}
