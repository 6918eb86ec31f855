/*
 * tl_bench: transport micro-benchmarks between ranks 0 and 1 (run under
 * `xprun -n 2`). Prints key=value lines:
 *   bench=tl_pingpong size=8 median_us=...   (half round trip, median of batches)
 *   bench=tl_rate size=8 mmsgs_per_s=...     (one-way stream, rank 0 -> 1)
 *   bench=tl_packet_bw size=32768 gbytes_per_s=...
 *   bench=tl_rma_read size=... gbytes_per_s=... (process_vm_readv, rank 0 reads 1)
 * Argument: iterations scale (default 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"
#include "util/clock.h"
#include "xportals/xp.h"

typedef struct bench {
    volatile long got;
} bench_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    ((bench_t *)arg)->got++;
}

static void send_retry(int dst, const void *p, size_t len)
{
    while (xp_tl_send(dst, p, len, NULL, 0) == XP_ERR_AGAIN)
        xp_tl_progress();
}

static void wait_for(bench_t *b, long n)
{
    while (b->got < n)
        xp_tl_progress();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void pingpong(bench_t *b, int me, size_t size, int batches, int per_batch)
{
    static char buf[64 * 1024];
    double *half_us = malloc(sizeof(double) * (size_t)batches);
    b->got = 0;
    xp_barrier();
    for (int k = 0; k < batches; k++) {
        uint64_t t0 = xp_time_ns();
        for (int i = 0; i < per_batch; i++) {
            long base = b->got;
            if (me == 0) {
                send_retry(1, buf, size);
                wait_for(b, base + 1);
            } else {
                wait_for(b, base + 1);
                send_retry(0, buf, size);
            }
        }
        half_us[k] = (double)(xp_time_ns() - t0) / per_batch / 2 / 1000.0;
    }
    qsort(half_us, (size_t)batches, sizeof(double), cmp_double);
    if (me == 0)
        printf("bench=tl_pingpong size=%zu median_us=%.3f min_us=%.3f\n", size,
               half_us[batches / 2], half_us[0]);
    free(half_us);
}

static void stream(bench_t *b, int me, size_t size, long n, const char *name)
{
    static char buf[64 * 1024];
    b->got = 0;
    xp_barrier();
    uint64_t t0 = xp_time_ns();
    if (me == 0) {
        for (long i = 0; i < n; i++)
            send_retry(1, buf, size);
        wait_for(b, 1); /* the receiver's "all arrived" */
    } else {
        wait_for(b, n);
        send_retry(0, buf, 8);
    }
    double s = (double)(xp_time_ns() - t0) * 1e-9;
    if (me == 0 && size <= 64)
        printf("bench=%s size=%zu mmsgs_per_s=%.2f\n", name, size, n / s / 1e6);
    else if (me == 0)
        printf("bench=%s size=%zu gbytes_per_s=%.2f\n", name, size, n * (double)size / s / 1e9);
}

static void rma_read(int me, size_t size, int iters)
{
    char *buf = malloc(size);
    memset(buf, me + 1, size);
    uint64_t addr = (uintptr_t)buf;
    xp_kv_put("bench.rma", &addr, sizeof addr);
    xp_kv_fence();
    size_t len = sizeof addr;
    xp_kv_get(1 - me, "bench.rma", &addr, &len);
    if (me == 0) {
        struct iovec l = {buf, size}, r = {(void *)(uintptr_t)addr, size};
        xp_tl_readv(1, &l, 1, &r, 1); /* warm up: fault the pages in */
        uint64_t t0 = xp_time_ns();
        for (int i = 0; i < iters; i++)
            if (xp_tl_readv(1, &l, 1, &r, 1) != XP_OK)
                abort();
        double s = (double)(xp_time_ns() - t0) * 1e-9;
        printf("bench=tl_rma_read size=%zu gbytes_per_s=%.2f\n", size, (double)size * iters / s / 1e9);
    }
    xp_barrier();
    free(buf);
}

int main(int argc, char **argv)
{
    if (xp_init(&argc, &argv) != XP_OK || xp_size() != 2) {
        fprintf(stderr, "tl_bench: run with xprun -n 2\n");
        return 1;
    }
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;
    bench_t b = {0};
    if (xp_tl_init(on_packet, &b) != XP_OK)
        return 1;
    int me = xp_rank();
    pingpong(&b, me, 8, 101 * scale, 1000);
    pingpong(&b, me, 1024, 21 * scale, 1000);
    stream(&b, me, 8, 2000000L * scale, "tl_rate");
    stream(&b, me, 32768, 20000L * scale, "tl_packet_bw");
    rma_read(me, 1u << 20, 200 * scale);
    rma_read(me, 4u << 20, 50 * scale);
    xp_barrier();
    xp_tl_fini();
    xp_finalize();
    return 0;
}
