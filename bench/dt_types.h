/* dt_types.h - the paper's double-precision matrix types, shared by dt_pack
 * (CPU buffers) and dt_pack_gpu (device buffers), and their timing helpers. */
#ifndef XP_BENCH_DT_TYPES_H
#define XP_BENCH_DT_TYPES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xportals/dt.h"

#define N 2048

typedef enum { T_VECTOR, T_TRIANGLE, T_TRANSPOSE, T_VECTOR_CONTIG, T_COUNT } type_id_t;
static const char *const type_names[T_COUNT] = {"vector", "triangle", "transpose", "vector_contig"};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The type of each benchmark, committed; *count elements of it. */
static xp_dt_t make_type(type_id_t id, size_t *count)
{
    xp_dt_t t = XP_DT_NULL, tmp;
    *count = 1;
    switch (id) {
    case T_VECTOR:
    case T_VECTOR_CONTIG:
        xp_dt_vector(N, N, 2 * N, XP_DT_DOUBLE, &t);
        break;
    case T_TRIANGLE: {
        size_t *bl = malloc(N * sizeof *bl);
        ptrdiff_t *d = malloc(N * sizeof *d);
        for (size_t j = 0; j < N; j++) {
            bl[j] = N - j;
            d[j] = (ptrdiff_t)(j * N + j);
        }
        xp_dt_indexed(N, bl, d, XP_DT_DOUBLE, &t);
        free(bl);
        free(d);
        break;
    }
    case T_TRANSPOSE:
        xp_dt_vector(N, 1, N, XP_DT_DOUBLE, &tmp);
        xp_dt_resized(tmp, 0, sizeof(double), &t);
        xp_dt_free(&tmp);
        *count = N;
        break;
    default:
        break;
    }
    if (!t || xp_dt_commit(t) != XP_OK) {
        fprintf(stderr, "cannot build type %s\n", type_names[id]);
        exit(1);
    }
    return t;
}

#endif
