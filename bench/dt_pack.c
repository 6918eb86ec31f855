/* dt_pack: pack / unpack bandwidth of the datatype engine on the paper's
 * double-precision matrices, next to memcpy of the same packed size.
 *
 *   vector        2048 x 2048 sub-matrix of a 4096 x 4096 column-major matrix
 *   triangle      lower triangle of a 2048 x 2048 column-major matrix (indexed)
 *   transpose     2048 elements of a blocklength-1 vector (2048 blocks, stride
 *                 2048) resized to one double: packs the transpose
 *   vector_contig the sub-matrix exchanged with a contiguous buffer: the
 *                 receiver's type is contiguous, so pack writes straight into
 *                 the receiver's buffer (and unpack reads straight from the
 *                 sender's)
 *
 * Prints one line per measurement (GB/s of packed bytes, median of --reps):
 *   bench=dt_pack type=vector impl=xportals op=pack cached=1 GBs=26.1 threads=1
 * cached=0 times the first use: type construction + commit (flattening) +
 * the operation. Usage: dt_pack [reps] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_types.h"

typedef struct bench {
    int reps;
    double *big;   /* 4096 x 4096 (vector) or 2048 x 2048 (others), column-major */
    double *packed;
    double *samples;
} bench_t;

/* One operation: pack or unpack of the whole message. For vector_contig the
 * peer's contiguous type lets the engine work straight on the peer buffer. */
static void run_op(bench_t *b, xp_dt_t t, size_t count, int unpack)
{
    xp_status_t st = unpack ? xp_dt_unpack_all(t, count, b->packed, b->big)
                            : xp_dt_pack_all(t, count, b->big, b->packed);
    if (st != XP_OK) {
        fprintf(stderr, "dt_pack: %s\n", xp_status_string(st));
        exit(1);
    }
}

/* threads: CPU threads that took part (the library's XP_DT_THREADS for
 * large windows; memcpy is one thread). */
static void report(const char *type, const char *impl, const char *op, int cached, double gbs)
{
    unsigned threads = strcmp(impl, "xportals") ? 1 : xp_dt_cpu_threads();
    printf("bench=dt_pack type=%s impl=%s op=%s cached=%d GBs=%.2f threads=%u\n", type, impl, op, cached,
           gbs, threads);
}

static void bench_type(bench_t *b, type_id_t id)
{
    size_t count, size;
    xp_dt_t t = make_type(id, &count);
    xp_dt_size(t, &size);
    double bytes = (double)size * (double)count;
    if (id == T_VECTOR_CONTIG) {
        /* The receiver's type: contiguous doubles with the same signature. */
        xp_dt_t c;
        int match = 0, contig = 0;
        ptrdiff_t first;
        xp_dt_contiguous(N * N, XP_DT_DOUBLE, &c);
        xp_dt_commit(c);
        xp_dt_match(t, 1, c, 1, &match);
        xp_dt_is_contiguous(c, 1, &contig, &first);
        if (!match || !contig) {
            fprintf(stderr, "dt_pack: vector_contig types do not match\n");
            exit(1);
        }
        xp_dt_free(&c);
    }
    for (int unpack = 0; unpack < 2; unpack++) {
        const char *op = unpack ? "unpack" : "pack";
        run_op(b, t, count, unpack); /* warm up: pages and caches */
        for (int r = 0; r < b->reps; r++) {
            double t0 = now();
            run_op(b, t, count, unpack);
            b->samples[r] = bytes / (now() - t0) / 1e9;
        }
        report(type_names[id], "xportals", op, 1, median(b->samples, b->reps));
        for (int r = 0; r < b->reps; r++) {
            double t0 = now();
            size_t cnt;
            xp_dt_t ft = make_type(id, &cnt);
            run_op(b, ft, cnt, unpack);
            b->samples[r] = bytes / (now() - t0) / 1e9;
            xp_dt_free(&ft);
        }
        report(type_names[id], "xportals", op, 0, median(b->samples, b->reps));
        /* The physical limit: memcpy of the packed size. */
        for (int r = 0; r < b->reps; r++) {
            double t0 = now();
            if (unpack)
                memcpy(b->big, b->packed, (size_t)bytes);
            else
                memcpy(b->packed, b->big, (size_t)bytes);
            b->samples[r] = bytes / (now() - t0) / 1e9;
        }
        report(type_names[id], "memcpy", op, 1, median(b->samples, b->reps));
    }
    xp_dt_free(&t);
}

int main(int argc, char **argv)
{
    bench_t b = {.reps = argc > 1 ? atoi(argv[1]) : 9};
    if (b.reps < 1)
        b.reps = 1;
    size_t big = (size_t)4 * N * N;
    b.big = malloc(big * sizeof(double));
    b.packed = malloc((size_t)N * N * sizeof(double));
    b.samples = malloc((size_t)b.reps * sizeof(double));
    if (!b.big || !b.packed || !b.samples)
        return 1;
    for (size_t i = 0; i < big; i++)
        b.big[i] = (double)i;
    memset(b.packed, 0, (size_t)N * N * sizeof(double));
    for (int id = 0; id < T_COUNT; id++)
        bench_type(&b, (type_id_t)id);
    free(b.big);
    free(b.packed);
    free(b.samples);
    return 0;
}
