#!/bin/sh
# dt_compare.sh - datatype pack / unpack: Xportals vs memcpy vs MPI_Pack of
# Debian's MPICH and Open MPI, in the same run.
#
#   bench/dt_compare.sh [path/to/dt_pack] [rounds] [reps]
#
# Builds bench/mpi/dt_pack_mpi.c with mpicc.mpich and mpicc.openmpi (those
# that are installed), runs dt_pack and each MPI program `rounds` times in
# turn (interleaved, so a noisy neighbour hits every implementation alike),
# prints the median of the rounds for every measurement
#   bench=dt_pack type=vector impl=xportals op=pack cached=1 GBs=26.1 threads=1
# and ratio lines (cached measurements; threads: Xportals' XP_DT_THREADS)
#   bench=dt_compare type=vector op=pack xportals_vs_memcpy=0.93 xportals_vs_best_mpi=1.4 best_mpi=openmpi threads=1
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dt_pack=${1:-}
rounds=${2:-3}
reps=${3:-9}
if [ -z "$dt_pack" ]; then
    for c in "$here/../build-dt/libexec/xportals/dt_pack" "$here/../build/libexec/xportals/dt_pack" \
             "$here/dt_pack"; do
        [ -x "$c" ] && dt_pack=$c && break
    done
fi
[ -n "$dt_pack" ] && [ -x "$dt_pack" ] || { echo "dt_compare: dt_pack not found (pass its path)" >&2; exit 1; }
src="$here/mpi/dt_pack_mpi.c"
[ -f "$src" ] || src="$here/dt_pack_mpi.c"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

progs=""
for pair in mpich:mpicc.mpich openmpi:mpicc.openmpi; do
    impl=${pair%%:*}
    cc=${pair#*:}
    if command -v "$cc" >/dev/null 2>&1 && [ -f "$src" ]; then
        if "$cc" -O3 -o "$tmp/dt_pack_$impl" "$src" 2>"$tmp/$impl.log"; then
            progs="$progs $impl"
        else
            echo "dt_compare: $cc failed:" >&2
            cat "$tmp/$impl.log" >&2
        fi
    fi
done

# Open MPI refuses to run as root without these (singleton MPI_Init, no mpirun).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
: >"$tmp/all"
r=0
while [ "$r" -lt "$rounds" ]; do
    "$dt_pack" "$reps" >>"$tmp/all"
    for impl in $progs; do
        timeout 300 "$tmp/dt_pack_$impl" "$impl" "$reps" >>"$tmp/all" ||
            echo "dt_compare: $impl run failed" >&2
    done
    r=$((r + 1))
done

# Median over rounds, then the ratios.
awk '
/^bench=dt_pack / {
    key = ""; v = 0
    for (i = 2; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] == "GBs") v = kv[2] + 0
        else if (kv[1] == "threads") th = kv[2]
        else key = key " " $i
    }
    n[key]++; val[key, n[key]] = v
    thr[key] = (th == "") ? 1 : th; th = ""
}
END {
    for (k in n) {
        m = n[k]
        for (i = 1; i <= m; i++) a[i] = val[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        med[k] = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
        printf "bench=dt_pack%s GBs=%.2f threads=%s\n", k, med[k], thr[k]
    }
    split("vector triangle transpose vector_contig", types, " ")
    split("pack unpack", ops, " ")
    for (ti = 1; ti <= 4; ti++) for (oi = 1; oi <= 2; oi++) {
        ty = types[ti]; op = ops[oi]
        x = med[" type=" ty " impl=xportals op=" op " cached=1"]
        mc = med[" type=" ty " impl=memcpy op=" op " cached=1"]
        mp = med[" type=" ty " impl=mpich op=" op " cached=1"]
        om = med[" type=" ty " impl=openmpi op=" op " cached=1"]
        best = mp; bn = "mpich"
        if (om > best) { best = om; bn = "openmpi" }
        line = sprintf("bench=dt_compare type=%s op=%s", ty, op)
        if (mc > 0) line = line sprintf(" xportals_vs_memcpy=%.2f", x / mc)
        if (best > 0) line = line sprintf(" xportals_vs_best_mpi=%.2f best_mpi=%s", x / best, bn)
        print line " threads=" thr[" type=" ty " impl=xportals op=" op " cached=1"]
    }
}' "$tmp/all" | sort
