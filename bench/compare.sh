#!/usr/bin/env bash
# compare.sh - Xportals against MPICH, Open MPI and UCX over shared memory on
# this machine, measured side by side.
#
# Every round runs, for each measurement, a core-to-core probe and then every
# candidate in turn (the order rotates from round to round), so that all
# candidates see the same machine state; each trial is labelled with the
# probe's state (near / far / busy, or mixed when the probes before and after
# the trial disagree). One key=value line per measurement, then a table of
# medians over the trials and the ratio Xportals / best peer.
#
#   compare.sh [--rounds R] [--quick] [--full] [--prefix DIR] [--workdir DIR]
#              [--only LIST] [--cpus A,B] [--no-install]
#
# See docs/performance.md for what each measurement is and how to read it.
set -uo pipefail

usage() {
    cat >&2 <<'EOF'
usage: compare.sh [options]
  --rounds R      rounds of interleaved trials (default 5; 2 with --quick)
  --quick         fewer rounds and iterations: well under a minute
  --full          latency over a size sweep (8 B .. 1 MiB) instead of 8 B only,
                  and get round trips (8 B, 32 KiB, 256 KiB, 1 MiB)
  --prefix DIR    Xportals install prefix or build directory (bin/xprun,
                  libexec/xportals/); default: the tree this script lies in
  --workdir DIR   where MPI programs are built and logs kept
                  (default ${TMPDIR:-/tmp}/xp-compare-$UID)
  --only LIST     comma-separated candidates: xportals,mpich,openmpi,ucx
  --cpus A,B      the two CPUs every candidate and the probe run on (default:
                  0,1, each launcher's own binding); on a machine with SMT or
                  several sockets, pick two cores of one socket that share no
                  core (see lscpu -e). Not the ring: it runs 2 ranks per CPU
                  of the machine, each launcher binding them to all its CPUs
  --progress LIST run Xportals once per XP_PROGRESS mode in LIST (e.g.
                  thread,inline), as candidates xportals*.MODE
  --mpi-src FILE  the MPI benchmark source (default: mpi/mpi_bench.c next to
                  this script)
  --no-install    do not apt-get missing MPI/UCX packages
Xportals runs with the caller's XP_* environment (e.g. XP_PROGRESS=thread).
Every candidate runs with glibc's transparent huge pages for malloc
(GLIBC_TUNABLES glibc.malloc.hugetlb=1) unless XP_MALLOC_HUGEPAGES=0 or
GLIBC_TUNABLES already sets hugetlb; Xportals' ranks also get xprun's
glibc.malloc.mmap_threshold (docs/performance.md says why the peers do not).
EOF
    exit 2
}

# ------------------------------------------------------------------ options
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=""
quick=0
full=0
prefix=""
workdir="${TMPDIR:-/tmp}/xp-compare-$(id -u)"
only="xportals,mpich,openmpi,ucx"
install=1
progress=""
cpus=""
MPI_SRC="$here/mpi/mpi_bench.c"
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --full) full=1; shift ;;
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --workdir) [ $# -ge 2 ] || usage; workdir=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
    --mpi-src) [ $# -ge 2 ] || usage; MPI_SRC=$2; shift 2 ;;
    --progress) [ $# -ge 2 ] || usage; progress=${2//,/ }; shift 2 ;;
    --cpus) [ $# -ge 2 ] || usage; cpus=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    -h | --help) usage ;;
    *) echo "compare.sh: unknown option $1" >&2; usage ;;
    esac
done
[ -n "$rounds" ] || rounds=$((quick ? 2 : 5))
case "$rounds" in '' | *[!0-9]* | 0) echo "compare.sh: --rounds wants a positive number" >&2; usage ;; esac
if [ -n "$cpus" ]; then
    case "$cpus" in
    *[!0-9,]* | ,* | *, | *,*,*) echo "compare.sh: --cpus wants two CPU numbers, A,B" >&2; usage ;;
    *,*) CPU_A=${cpus%,*} CPU_B=${cpus#*,} ;;
    *) echo "compare.sh: --cpus wants two CPU numbers, A,B" >&2; usage ;;
    esac
    [ "$CPU_A" != "$CPU_B" ] || { echo "compare.sh: --cpus wants two different CPUs" >&2; usage; }
fi
for c in ${only//,/ }; do
    case "$c" in xportals | mpich | openmpi | ucx) ;; *) echo "compare.sh: unknown candidate $c" >&2; usage ;; esac
done

# Installed as PREFIX/libexec/xportals/compare.sh; in the source tree as bench/compare.sh.
if [ -z "$prefix" ]; then
    for p in "$here/../.." "$here/../build"; do
        if [ -x "$p/bin/xprun" ]; then prefix=$(cd "$p" && pwd); break; fi
    done
fi
XPRUN="${prefix:+$prefix/bin/xprun}"
XPBENCH="${prefix:+$prefix/libexec/xportals}"
mkdir -p "$workdir/logs" || exit 1
RESULTS="$workdir/results.txt"
: >"$RESULTS"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The peers get the huge pages xprun sets for Xportals' ranks
# (XP_MALLOC_HUGEPAGES), which Open MPI's 1 MiB bandwidth needs; not xprun's
# mmap threshold, which lowers it (docs/performance.md).
case "${XP_MALLOC_HUGEPAGES:-1}" in
0 | no | off | false) ;;
*) case "${GLIBC_TUNABLES:-}" in
   *glibc.malloc.hugetlb=*) ;;
   '') export GLIBC_TUNABLES=glibc.malloc.hugetlb=1 ;;
   *) export GLIBC_TUNABLES="$GLIBC_TUNABLES:glibc.malloc.hugetlb=1" ;;
   esac ;;
esac

want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
note() { echo "# $*"; }

# Iterations: the benchmarks' own defaults, fewer with --quick.
if [ "$quick" = 1 ]; then
    LAT_ITERS=2000 LAT_REPS=5 STREAM_REPS=3 MR_ITERS=100 RING_ITERS=50 TRIAL_TIMEOUT=30 REP_MIN=2
else
    LAT_ITERS=10000 LAT_REPS=11 STREAM_REPS=5 MR_ITERS=200 RING_ITERS=200 TRIAL_TIMEOUT=60 REP_MIN=3
fi
# The oversubscribed ring: two ranks per CPU (a busy-polling MPI takes a
# scheduler slice per hop there, milliseconds, hence few laps).
RING_NP=$((2 * $(nproc)))
if [ "$full" = 1 ]; then LAT_SIZES="8 64 512 4096 16384 32768 65536 262144 1048576"; else LAT_SIZES="8"; fi
if [ "$full" = 1 ]; then GET_SIZES="8 32768 262144 1048576"; BENCHES="lat bw bwoff msgrate fadd ring get"; else
    GET_SIZES=""; BENCHES="lat bw bwoff msgrate fadd ring"; fi
BW_SIZES="1048576 4194304"
# bwoff: the receive buffer 8 bytes into a line, the send buffer page-aligned
# (glibc's and the kernel's `rep movsb` copy that relative alignment 10-27x
# slower on some CPUs: docs/performance-notes.md, round 28)
BWOFF_SIZES="65536 1048576" BWOFF_ROFFSET=8
MR_SIZE=8

# ------------------------------------------------------------------ set-up
install_peers() {
    local pkgs=() p
    for p in mpich libmpich-dev openmpi-bin libopenmpi-dev ucx-utils; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || pkgs+=("$p")
    done
    [ ${#pkgs[@]} -eq 0 ] && return 0
    if [ "$install" = 0 ] || ! command -v apt-get >/dev/null; then
        note "missing packages (not installed): ${pkgs[*]}"
        return 0
    fi
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    note "installing ${pkgs[*]}"
    $sudo apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${pkgs[@]}" >"$workdir/logs/apt.log" 2>&1 || note "apt-get failed: see $workdir/logs/apt.log"
}

# build_mpi FLAVOUR: $workdir/mpi_bench.FLAVOUR from bench/mpi/mpi_bench.c.
build_mpi() {
    local cc="mpicc.$1" out="$workdir/mpi_bench.$1"
    command -v "$cc" >/dev/null || { note "$cc not found: $1 skipped"; return 1; }
    [ -f "$MPI_SRC" ] || { note "$MPI_SRC not found: $1 skipped"; return 1; }
    if [ ! -x "$out" ] || [ "$MPI_SRC" -nt "$out" ] || [ "$here/probe_util.h" -nt "$out" ]; then
        # -Wno-stringop-overflow: GCC 12 misreads MPICH's MPI_STATUSES_IGNORE
        # -I: bench/probe_util.h, the per-repetition state probe
        "$cc" -O3 -Wall -Wno-stringop-overflow -I"$here" -o "$out" "$MPI_SRC" \
            >"$workdir/logs/build.$1.log" 2>&1 ||
            { note "$cc failed: see $workdir/logs/build.$1.log"; return 1; }
    fi
    return 0
}

# The probe: the installed/built one, else compiled here from bench/c2c_probe.c.
find_probe() {
    if [ -n "$XPBENCH" ] && [ -x "$XPBENCH/c2c_probe" ]; then
        PROBE="$XPBENCH/c2c_probe"
    elif [ -f "$here/c2c_probe.c" ] && cc -O2 -pthread -o "$workdir/c2c_probe" "$here/c2c_probe.c" \
        >"$workdir/logs/build.probe.log" 2>&1; then
        PROBE="$workdir/c2c_probe"
    else
        PROBE=""
        note "no core-to-core probe: every trial is labelled state=unknown"
    fi
}

# ------------------------------------------------------------------ probing
# probe: sets PROBE_NS, PROBE_RING (the two-process ring floor, ring_ns)
# and PROBE_STATE.
probe() {
    local line
    PROBE_NS=NA PROBE_RING=NA PROBE_STATE=unknown
    [ -n "$PROBE" ] || return 0
    line=$(timeout 10 "$PROBE" ${cpus:+--cpus "$cpus"} 2>/dev/null) || return 0
    PROBE_NS=$(kv oneway_ns "$line")
    PROBE_RING=$(kv ring_ns "$line")
    PROBE_RING=${PROBE_RING:-NA}
    PROBE_STATE=$(kv state "$line")
}

# kv KEY LINE: the value of KEY=... in a key=value line.
kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' <<<"$2"; }

# ------------------------------------------------------------------ candidates
# Launchers: each runs 2 processes on CPUs 0 and 1 (--cpus: A and B) and
# prints the program's output. XP_MODE: the XP_PROGRESS mode of this trial
# (empty: the caller's environment). xprun binds rank i to the i-th CPU its
# own affinity allows, so taskset picks the pair. With NP set (the ring), NP
# processes bound round the machine's cores instead (Open MPI ignores taskset
# and cannot put more ranks than CPUs on a --cpu-list).
xp() {
    local pin=${cpus:+taskset -c $cpus}
    [ -z "${NP:-}" ] || pin=""
    timeout -k 5 "$TRIAL_TIMEOUT" $pin "$XPRUN" -n "${NP:-2}" \
        ${XP_MODE:+-x XP_PROGRESS=$XP_MODE} "$XPBENCH/$1" "${@:2}"
}
mpich() {
    local bind=core
    [ -z "$cpus" ] || [ -n "${NP:-}" ] || bind=user:$cpus
    timeout -k 5 "$TRIAL_TIMEOUT" mpiexec.mpich -bind-to "$bind" -n "${NP:-2}" \
        "$workdir/mpi_bench.mpich" "$@"
}
openmpi() {
    local bind=(--bind-to core:overload-allowed)
    [ -z "$cpus" ] || [ -n "${NP:-}" ] || bind=(--cpu-list "$cpus" --bind-to cpu-list:ordered)
    timeout -k 5 "$TRIAL_TIMEOUT" mpirun.openmpi -n "${NP:-2}" --allow-run-as-root --oversubscribe \
        "${bind[@]}" --mca pml ob1 --mca btl self,vader "$workdir/mpi_bench.openmpi" "$@"
}

# ucx ARGS: a ucx_perftest server (CPU 0) and client (CPU 1) on loopback over
# the shared-memory transports (TCP only to exchange addresses, on a random
# port: trials run in subshells); prints the client's CSV lines.
ucx() {
    local port=$((20000 + RANDOM % 30000)) spid rc=1 try
    UCX_TLS=posix,cma,self timeout -k 5 "$TRIAL_TIMEOUT" ucx_perftest -p "$port" -c "${CPU_A:-0}" "$@" \
        >/dev/null 2>&1 &
    spid=$!
    for try in 1 2 3 4 5 6 7 8 9 10; do
        sleep 0.1
        UCX_TLS=posix,cma,self timeout -k 5 "$TRIAL_TIMEOUT" ucx_perftest 127.0.0.1 -p "$port" \
            -c "${CPU_B:-1}" -f -v "$@" 2>&1 && { rc=0; break; }
        kill -0 "$spid" 2>/dev/null || break # the server is gone: give up
    done
    if kill -0 "$spid" 2>/dev/null; then
        sleep 0.2
        kill "$spid" 2>/dev/null
    fi
    wait "$spid" 2>/dev/null
    return $rc
}

# ucx_at SIZE REPS ARGS: one ucx_perftest pair running REPS repetitions of
# the test (a batch file, so the connection is set up once, as the other
# benchmarks repeat inside one run); prints "size=SIZE csv=CSV" per repetition.
ucx_at() {
    local s=$1 reps=$2 out k batch="$workdir/ucx.batch"
    shift 2
    for ((k = 1; k <= reps; k++)); do echo "rep$k $* -s $s"; done >"$batch"
    out=$(ucx -b "$batch") || { printf '%s\n' "$out" >&2; return 1; }
    printf '%s\n' "$out" | awk -F, -v s="$s" '$1 ~ /^rep[0-9]+$/ { sub(/^[^,]*,/, ""); gsub(/ /, ""); print "size=" s " csv=" $0 }'
}

# ------------------------------------------------------------------ trials
# Candidates per measurement: name and the command that measures it.
#   lat:     one-way latency (µs), half a ping-pong round trip; *_put: puts
#            into the peer's mapped memory, polled there (xportals_put: our
#            shared heap; above 8 B a put of the data, then one of the flag)
#   bw:      bandwidth (GB/s = 1e9 B/s), windows of 64 messages (xportals_heap:
#            both buffers in our shared heap)
#   bwoff:   the same from malloc with the receiver's data at offset 8 of a
#            page (the sender's at 0): message peers only (ucx_perftest has
#            no offset)
#   msgrate: messages per second, windows of 256 messages of 8 B
#   fadd:    8-byte fetch-add round trip (µs), one operation at a time;
#            xportals: a stack word through the target's ring and handler,
#            xportals_heap: a word of its shared heap, applied directly
#   ring:    µs per hop of an 8 B token passed round RING_NP ranks, two per
#            CPU (more ranks than CPUs), each waiting in a blocking call
#            (PtlCTWait, MPI_Recv); no UCX peer (ucx_perftest is two processes)
#   get:     get round trip (µs), one operation at a time (--full only);
#            xportals_heap: from the target's shared heap, copied directly
impls_of() {
    local x m out=""
    case "$1" in
    lat) x="xportals_le xportals_me" ;;
    *) x="xportals" ;;
    esac
    if [ -n "$progress" ]; then
        for i in $x; do for m in $progress; do out="$out $i.$m"; done; done
        x=$out
    fi
    case "$1" in
    lat) echo "$x xportals_put xportals_put_pause mpich mpich_put openmpi openmpi_put ucx_tag ucx_put" ;;
    bw) echo "$x xportals_heap mpich openmpi ucx_tag ucx_put" ;;
    bwoff) echo "$x mpich openmpi" ;;
    msgrate) echo "$x mpich openmpi ucx_tag" ;;
    fadd) echo "$x xportals_heap mpich openmpi ucx" ;;
    ring) echo "$x mpich openmpi" ;;
    get) echo "$x xportals_heap mpich openmpi" ;;
    esac
}

family_of() { case "$1" in xportals*) echo xportals ;; mpich*) echo mpich ;; openmpi*) echo openmpi ;; ucx*) echo ucx ;; esac; }

lat_range() { set -- $LAT_SIZES; echo "--min-size $1 --max-size ${!#}"; }
# ucx_perftest's iterations at one size: a tenth from 256 KiB up (a 1 MiB
# round trip takes ~100 µs; our benchmarks scale their own).
lat_iters() { if [ "$1" -ge 262144 ]; then echo $((LAT_ITERS / 10)); else echo "$LAT_ITERS"; fi; }
get_range() { set -- $GET_SIZES; echo "--min-size $1 --max-size ${!#}"; }

# command BENCH IMPL: runs one trial, output on stdout.
command_for() {
    local b=$1 i=${2%%.*} s
    XP_MODE=""
    [ "$i" = "$2" ] || XP_MODE=${2#*.}
    case "$b/$i" in
    lat/xportals_le) xp ptl_pingpong $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/xportals_me) xp ptl_pingpong --me $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/xportals_put) # puts into the peer's shared heap, both sides polling the flag
        # in memory (ptl/direct.h's copies through the mapping), as ucx_put; above 8 B
        # the data, then the flag (two puts)
        xp ptl_flag_pingpong --heap $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/xportals_put_pause) # the same, a pause after each look at the flag, as Sandia
        # OpenSHMEM's shmem_wait_until (SPINLOCK_BODY) and as the peers' loops, which make a
        # library call per look (MPI_Win_sync, ucx_perftest's progress)
        xp ptl_flag_pingpong --heap --pause $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/mpich) mpich --mode pingpong $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/mpich_put) mpich --mode put_pingpong $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/openmpi) openmpi --mode pingpong $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/openmpi_put) openmpi --mode put_pingpong $(lat_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    lat/ucx_tag)
        for s in $LAT_SIZES; do ucx_at "$s" $LAT_REPS -t tag_lat -n $(lat_iters "$s") -w 100 || return 1; done ;;
    lat/ucx_put) # UCT put into the peer's mapped posix segment, both sides polling
        for s in $LAT_SIZES; do
            ucx_at "$s" $LAT_REPS -t put_lat -x posix -d memory -n $(lat_iters "$s") -w 100 \
                -D "$([ "$s" -le 64 ] && echo short || echo bcopy)" || return 1
        done ;;
    bw/xportals) xp ptl_bw --min-size 1m --max-size 4m --reps $STREAM_REPS ;;
    bw/xportals_heap) # both buffers in the shared heap: the target copies through its mapping
        xp ptl_bw --heap --min-size 1m --max-size 4m --reps $STREAM_REPS ;;
    bw/mpich) mpich --mode bw --min-size 1m --max-size 4m --reps $STREAM_REPS ;;
    bwoff/xportals) xp ptl_bw --roffset $BWOFF_ROFFSET --min-size 64k --max-size 1m --reps $STREAM_REPS ;;
    bwoff/mpich) mpich --mode bw --roffset $BWOFF_ROFFSET --min-size 64k --max-size 1m --reps $STREAM_REPS ;;
    bwoff/openmpi) openmpi --mode bw --roffset $BWOFF_ROFFSET --min-size 64k --max-size 1m --reps $STREAM_REPS ;;
    bw/openmpi) openmpi --mode bw --min-size 1m --max-size 4m --reps $STREAM_REPS ;;
    bw/ucx_tag)
        for s in $BW_SIZES; do ucx_at "$s" $STREAM_REPS -t tag_bw -n $((268435456 / s)) -w 16 || return 1; done ;;
    bw/ucx_put) # UCT put into the mapped segment (posix offers no zcopy)
        for s in $BW_SIZES; do
            ucx_at "$s" $STREAM_REPS -t put_bw -x posix -d memory -D bcopy -n $((268435456 / s)) -w 16 ||
                return 1
        done ;;
    msgrate/xportals) xp ptl_msgrate --size $MR_SIZE --iters $MR_ITERS --reps $STREAM_REPS ;;
    msgrate/mpich) mpich --mode msgrate --size $MR_SIZE --iters $MR_ITERS --reps $STREAM_REPS ;;
    msgrate/openmpi) openmpi --mode msgrate --size $MR_SIZE --iters $MR_ITERS --reps $STREAM_REPS ;;
    msgrate/ucx_tag) ucx_at $MR_SIZE $STREAM_REPS -t tag_bw -n $((256 * MR_ITERS)) -w 2560 ;;
    fadd/xportals) xp ptl_atomic_lat --iters $LAT_ITERS --reps $LAT_REPS ;;
    fadd/xportals_heap) # the target word in its shared heap, no target count: the
        # initiator's CPU atomic through its mapping (ptl/direct.h), as the peers'
        xp ptl_atomic_lat --heap --iters $LAT_ITERS --reps $LAT_REPS ;;
    fadd/mpich) mpich --mode fadd --iters $LAT_ITERS --reps $LAT_REPS ;;
    fadd/openmpi) openmpi --mode fadd --iters $LAT_ITERS --reps $LAT_REPS ;;
    ring/xportals) NP=$RING_NP xp ring_bench --iters $RING_ITERS --reps $STREAM_REPS ;;
    ring/mpich) NP=$RING_NP mpich --mode ring --iters $RING_ITERS --reps $STREAM_REPS ;;
    ring/openmpi) NP=$RING_NP openmpi --mode ring --iters $RING_ITERS --reps $STREAM_REPS ;;
    get/xportals) xp ptl_get_lat $(get_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    get/xportals_heap) # the target's buffer in its shared heap, its LE counting nothing
        xp ptl_get_lat --heap $(get_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    get/mpich) mpich --mode get $(get_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    get/openmpi) openmpi --mode get $(get_range) --iters $LAT_ITERS --reps $LAT_REPS ;;
    fadd/ucx) # UCT atomic on the peer's mapped posix segment, one outstanding
        ucx_at 8 $LAT_REPS -t fadd -x posix -d memory -O 1 -n $LAT_ITERS -w 100 ;;
    *) return 1 ;;
    esac
}

# values BENCH: "size value" pairs from a trial's output on stdin. The
# benchmarks print median_us / median_gbs / median_mps over their repetitions;
# ucx_perftest prints one CSV line per repetition, of which the median is
# taken here: iterations,p50_lat,avg_lat,overall_lat(µs),avg_bw,
# overall_bw(MiB/s),avg_mr,overall_mr(msgs/s).
values() {
    awk -v b="$1" '
    function kv(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
    {
        size = kv("size"); csv = kv("csv")
        if (size == "") next
        if (csv == "") {
            u = b ~ /^bw/ ? "gbs" : b == "msgrate" ? "mps" : "us"
            v = kv("median_" u)
            # per state of their repetitions too (probe_util.h): the
            # ping-pongs and the streams
            nn = kv("near_reps"); fn = kv("far_reps")
            if (v != "" && nn != "" && fn != "")
                print size, v, kv("near_median_" u), nn, kv("far_median_" u), fn
            else if (v != "")
                print size, v
            next
        }
        if (split(csv, f, ",") < 8 || f[1] !~ /^[0-9]+$/) next
        if (!(size in n)) order[++ns] = size
        r[size, ++n[size]] = b ~ /^bw/ ? f[6] * 1048576 / 1e9 : b == "msgrate" ? f[8] : f[4]
    }
    END {
        for (k = 1; k <= ns; k++) {
            s = order[k]; m = n[s]
            for (i = 1; i <= m; i++) a[i] = r[s, i] + 0
            for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            print s, a[int(m / 2) + 1]
        }
    }'
}

unit_key() { case "$1" in bw | bwoff) echo median_gbs ;; msgrate) echo median_mps ;; *) echo median_us ;; esac; }

wanted_size() {
    local s
    case "$1" in
    lat) for s in $LAT_SIZES; do [ "$s" = "$2" ] && return 0; done ;;
    bw) for s in $BW_SIZES; do [ "$s" = "$2" ] && return 0; done ;;
    bwoff) for s in $BWOFF_SIZES; do [ "$s" = "$2" ] && return 0; done ;;
    msgrate) [ "$2" = "$MR_SIZE" ] && return 0 ;;
    fadd | ring) [ "$2" = 8 ] && return 0 ;;
    get) for s in $GET_SIZES; do [ "$s" = "$2" ] && return 0; done ;;
    esac
    return 1
}

# trial_line STATE VALUE LABEL: one result of trial() (its locals in scope).
trial_line() {
    local label=${3// /:} line
    line="bench=$b impl=$i size=$size state=$1 probe_ns=$before/$PROBE_NS ring_ns=$ring/$PROBE_RING $(unit_key "$b")=$2 round=$r load1=$load label=$label trial_state=$state status=ok"
    echo "$line"
    echo "$line" >>"$RESULTS"
}

# trial ROUND BENCH IMPL: probe, run, probe; one line per size measured (two
# where the benchmark labelled its repetitions and some were near, some far).
trial() {
    local r=$1 b=$2 i=$3 log="$workdir/logs/r$1.$2.$3.log" out rc before ring state size v line got=0 load
    load=$(cut -d' ' -f1 /proc/loadavg)
    probe
    before=$PROBE_NS ring=$PROBE_RING state=$PROBE_STATE
    out=$(command_for "$b" "$i" 2>"$log.err")
    rc=$?
    printf '%s\n' "$out" >"$log"
    probe
    [ "$PROBE_STATE" = "$state" ] || state=mixed
    while read -r size v nv nn fv fn; do
        wanted_size "$b" "$size" || continue
        [ $rc -eq 0 ] || break
        got=1
        # A benchmark that probed each repetition gives a result per state
        # it spent at least $REP_MIN repetitions in (label=reps), whatever
        # the probes around the whole trial said; else the trial's label.
        if [ -n "$nn" ] && { [ "$nn" -ge $REP_MIN ] || [ "$fn" -ge $REP_MIN ]; }; then
            [ "$nn" -ge $REP_MIN ] && trial_line "near" "$nv" "reps $nn/$fn"
            [ "$fn" -ge $REP_MIN ] && trial_line "far" "$fv" "reps $nn/$fn"
        else
            trial_line "$state" "$v" trial
        fi
    done < <(printf '%s\n' "$out" | values "$b")
    if [ $got = 0 ]; then
        echo "bench=$b impl=$i state=$state probe_ns=$before/$PROBE_NS round=$r load1=$load status=failed rc=$rc log=$log" |
            tee -a "$RESULTS"
        tail -n 3 "$log.err" | sed 's/^/#   /'
    fi
}

# ------------------------------------------------------------------ table
# Medians over trials per (measurement, size, state, candidate); ratio of the
# best Xportals variant to the best peer (latency: < 1 is faster; bandwidth
# and message rate: > 1 is faster).
table() {
    awk '
    function kv(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
    function median(key,   n, a, i, j, t) {
        n = cnt[key]
        for (i = 1; i <= n; i++) a[i] = val[key, i]
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function fmt(b, v) { return b ~ /^bw/ ? sprintf("%.1f", v) : b == "msgrate" ? sprintf("%.1f", v / 1e6) : sprintf("%.3f", v) }
    function cell(b, x, p, pn) {
        if (p == "") printf " - | - |"
        else if (x == "") printf " %s %s | - |", pn, fmt(b, p)
        else printf " %s %s | %.2f |", pn, fmt(b, p), x / p
    }
    function better(b, x, y) { return (b == "lat" || b == "fadd" || b == "get" || b == "ring") ? x < y : x > y }
    function per_state(title, key,   q, pk) {
        printf "%s", title
        for (q = 1; q <= 5; q++) {
            pk = key SUBSEP states[q]
            if (pk in cnt) printf " %s %.1f ns;", states[q], median(pk)
        }
        printf "\n"
    }
    function human(s) { return s >= 1048576 && s % 1048576 == 0 ? s / 1048576 " MiB" : s >= 1024 && s % 1024 == 0 ? s / 1024 " KiB" : s " B" }
    $0 ~ /status=failed/ {
        fk = kv("bench") "/" kv("impl")
        if (!(fk in failed)) forder[++nf] = fk
        failed[fk]++
    }
    $0 ~ /status=ok/ {
        b = kv("bench"); i = kv("impl"); s = kv("size"); st = kv("state")
        v = kv(b ~ /^bw/ ? "median_gbs" : b == "msgrate" ? "median_mps" : "median_us")
        key = b SUBSEP s SUBSEP st SUBSEP i
        val[key, ++cnt[key]] = v + 0
        row = b SUBSEP s SUBSEP st
        if (!(row in seen)) { seen[row] = 1; rows[++nrows] = row }
        if (!((b, i) in hasimpl)) { hasimpl[b, i] = 1; impls[b] = impls[b] " " i }
        # The probes around the trial count where its label is theirs (a
        # result labelled by its repetitions may be of another state).
        tst = kv("trial_state"); if (tst == "") tst = st
        split(kv("probe_ns"), pr, "/")
        if (st == tst && pr[1] ~ /^[0-9.]+$/) { pk = "probe" SUBSEP st; val[pk, ++cnt[pk]] = pr[1] + 0 }
        split(kv("ring_ns"), rg, "/")
        if (st == tst && rg[1] ~ /^[0-9.]+$/) { pk = "ring" SUBSEP st; val[pk, ++cnt[pk]] = rg[1] + 0 }
        # Small-message latency above the floor of the same trial: what the
        # software adds, whichever state the machine was in.
        if (b == "lat" && s == 8 && st == "near" && tst == "near" && rg[1] ~ /^[0-9.]+$/) {
            pk = "over" SUBSEP i
            if (!(pk in cnt)) overimpl[++nover] = i
            val[pk, ++cnt[pk]] = v * 1000 - rg[1]
        }
    }
    END {
        title["lat"] = "one-way latency, us (lower is better; ratio < 1: Xportals faster)"
        title["bw"] = "bandwidth, GB/s = 1e9 B/s (higher is better; ratio > 1: Xportals faster)"
        title["bwoff"] = "bandwidth from malloc, the receiver'"'"'s data 8 bytes into a line, GB/s (higher is better)"
        title["msgrate"] = "message rate, M msgs/s (higher is better; ratio > 1: Xportals faster)"
        title["fadd"] = "fetch-add 8 B round trip, us (lower is better; ratio < 1: Xportals faster)"
        title["ring"] = "8 B token ring, two ranks per CPU (oversubscribed), us per hop (lower is better; ratio < 1: Xportals faster)"
        title["get"] = "get round trip, us (lower is better; ratio < 1: Xportals faster; the MPIs read a shared window)"
        no = split("lat bw bwoff msgrate fadd ring get", order, " ")
        split("near far mixed busy unknown", states, " ")
        for (o = 1; o <= no; o++) {
            b = order[o]
            if (impls[b] == "") continue
            ni = split(impls[b], il, " ")
            printf "\n%s\n| size | state |", title[b]
            for (k = 1; k <= ni; k++) printf " %s |", il[k]
            # benches with one-sided peers (*_put) get a second comparison
            # against the message peers alone (send/recv, tag matching)
            twosided = impls[b] ~ /_put/
            printf " best peer | Xportals/best |%s\n|---|---|", twosided ? " best message peer | Xportals/best message |" : ""
            for (k = 1; k <= ni + 2 + 2 * twosided; k++) printf "---|"
            printf "\n"
            # rows in size order, then state order
            nr = 0
            for (r = 1; r <= nrows; r++) { split(rows[r], f, SUBSEP); if (f[1] == b) sz[++nr] = f[2] + 0 }
            for (x = 2; x <= nr; x++) { t = sz[x]; for (y = x - 1; y >= 1 && sz[y] > t; y--) sz[y + 1] = sz[y]; sz[y + 1] = t }
            last = -1
            for (x = 1; x <= nr; x++) {
                if (sz[x] == last) continue
                last = sz[x]
                for (q = 1; q <= 5; q++) {
                    st = states[q]
                    if (!((b, sz[x], st) in seen)) continue
                    printf "| %s | %s |", human(sz[x]), st
                    bx = ""; bxm = ""; bp = ""; bpn = ""; bm = ""; bmn = ""
                    for (k = 1; k <= ni; k++) {
                        key = b SUBSEP sz[x] SUBSEP st SUBSEP il[k]
                        if (!(key in cnt)) { printf " - |"; continue }
                        m = median(key)
                        printf " %s (%d) |", fmt(b, m), cnt[key]
                        if (il[k] ~ /^xportals/) {
                            if (bx == "" || better(b, m, bx)) bx = m
                            # messages against messages: not our puts into mapped
                            # memory, nor copies from and into our shared heap
                            if (il[k] !~ /_put$|_heap$/ && (bxm == "" || better(b, m, bxm))) bxm = m
                            continue
                        }
                        if (bp == "" || better(b, m, bp)) { bp = m; bpn = il[k] }
                        if (il[k] !~ /_put$/ && (bm == "" || better(b, m, bm))) { bm = m; bmn = il[k] }
                    }
                    cell(b, bx, bp, bpn)
                    if (twosided) cell(b, bxm, bm, bmn)
                    printf "\n"
                }
            }
        }
        printf "\n"
        per_state("core-to-core one-way time (c2c_probe before each trial, median):", "probe")
        per_state("two-process ring floor (c2c_probe ring_ns before each trial, median):", "ring")
        if (nover) {
            printf "8 B one-way minus the ring floor probed before it, near (median):"
            for (k = 1; k <= nover; k++) printf " %s %.1f ns;", overimpl[k], median("over" SUBSEP overimpl[k])
            printf "\n"
        }
        if (nf) {
            printf "failed trials (see the status=failed lines for logs):"
            for (k = 1; k <= nf; k++) printf " %s x%d;", forder[k], failed[forder[k]]
            printf "\n"
        }
        printf "(n) = trials; each trial value is that benchmark run'"'"'s own median over its repetitions.\n"
    }' "$RESULTS"
}

# ------------------------------------------------------------------ main
t_start=$(date +%s)
install_peers
find_probe
avail=""
if want xportals; then
    if [ -n "$XPRUN" ] && [ -x "$XPRUN" ] && [ -x "$XPBENCH/ptl_pingpong" ]; then
        avail="$avail xportals"
    else
        note "Xportals not found (give --prefix PREFIX or a build directory): reported as failed"
        avail="$avail xportals"
    fi
fi
want mpich && build_mpi mpich && avail="$avail mpich"
want openmpi && build_mpi openmpi && avail="$avail openmpi"
if want ucx; then
    if command -v ucx_perftest >/dev/null; then avail="$avail ucx"; else note "ucx_perftest not found: ucx skipped"; fi
fi

note "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
note "xportals: ${prefix:-not found} $([ -x "${prefix:-/nonexistent}/bin/xpinfo" ] && "$prefix/bin/xpinfo" 2>/dev/null | head -1)"
# How Xportals moves mid-size shm transfers here (XP_SHM_BOUNCE=auto decides
# per machine: bounce blocks or single copies).
[ -x "${prefix:-/nonexistent}/bin/xpinfo" ] &&
  note "xportals$("$prefix/bin/xpinfo" 2>/dev/null | grep -m1 'shm copies:' | sed 's/^ *shm copies: */ shm copies: /')"
# The node's eager probe (two ranks at start; each trial's job takes its own).
[ -x "${prefix:-/nonexistent}/bin/xprun" ] && [ -x "$XPBENCH/ptl_pingpong" ] &&
  note "xportals eager probe, one job now: $(XP_LOG_LEVEL=info timeout 30 "$prefix/bin/xprun" -n 2 \
    "$XPBENCH/ptl_pingpong" --min-size 8 --max-size 8 --iters 100 --reps 1 2>&1 |
    grep -m1 -o 'round trips.*')"
command -v mpichversion >/dev/null && note "mpich: $(mpichversion 2>/dev/null | head -1 | sed 's/^[^:]*:\s*//') ($(mpichversion 2>/dev/null | grep -i '^MPICH Device' | sed 's/^[^:]*:\s*//'))"
command -v mpirun.openmpi >/dev/null && note "openmpi: $(mpirun.openmpi --version 2>/dev/null | head -1)"
command -v ucx_info >/dev/null && note "ucx: $(ucx_info -v 2>/dev/null | head -1 | sed 's/^# //')"
note "malloc: GLIBC_TUNABLES=${GLIBC_TUNABLES:-} for every candidate (Xportals' ranks: and what xprun adds)"
note "probe: ${PROBE:-none}; cpus=${cpus:-0,1}; rounds=$rounds quick=$quick full=$full; logs in $workdir/logs"
note "candidates:$avail"

for ((r = 1; r <= rounds; r++)); do
    for b in $BENCHES; do
        list=()
        for i in $(impls_of "$b"); do
            case " $avail " in *" $(family_of "$i") "*) list+=("$i") ;; esac
        done
        n=${#list[@]}
        [ "$n" -gt 0 ] || continue
        # rotate the order each round so no candidate always runs first
        for ((k = 0; k < n; k++)); do
            trial "$r" "$b" "${list[$(((k + r - 1) % n))]}"
        done
    done
done

table
note "finished in $(($(date +%s) - t_start)) s; raw lines in $RESULTS"
grep -q "status=ok" "$RESULTS" || { note "no measurement succeeded"; exit 1; }
