#!/usr/bin/env bash
# GPU checks of a build that has the CUDA plugins (XP_ENABLE_CUDA=ON): the
# CUDA tests, the datatype engine's GPU benchmark, the link probe, and the tests under
# compute-sanitizer when it is installed. Each step has a time limit, so a
# hung kernel costs seconds, not the session.
#   scripts/gpu_check.sh [BUILD_DIR] [LOG_DIR]
set -u
B=$(cd "${1:-build}" && pwd)
LOG=${2:-.}
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # run LIMIT NAME CMD...: one step, its output in LOG/NAME.log
    local limit=$1 name=$2; shift 2
    echo "== $name: $*"
    local t0=$(date +%s%N)
    timeout -k 5 "$limit" "$@" >"$LOG/$name.log" 2>&1
    local rc=$?
    tail -n 40 "$LOG/$name.log"
    echo "== $name rc=$rc ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
}
nvidia-smi -L 2>&1 | head -4
run 20 xpinfo "$B/bin/xpinfo"
run 60 test_dt_cuda "$B/tests/test_dt_cuda"
run 30 accel_cuda "$B/tests/accel_cuda"
run 40 test_cuda_agent "$B/tests/test_cuda_agent"
run 40 mp_xtq_cuda "$B/bin/xprun" -n 2 --timeout 30 "$B/tests/mp_xtq_cuda"
run 40 mp_xtq_cuda_inline "$B/bin/xprun" -n 2 --timeout 30 -x XP_PROGRESS=inline "$B/tests/mp_xtq_cuda"
[ -x "$B/libexec/xportals/dt_pack_gpu" ] && run 60 dt_pack_gpu "$B/libexec/xportals/dt_pack_gpu" 10
[ -x "$B/libexec/xportals/cuda_link_probe" ] && run 30 cuda_link_probe "$B/libexec/xportals/cuda_link_probe" 11
if command -v compute-sanitizer >/dev/null; then
    run 60 sanitize_dt compute-sanitizer --tool memcheck --error-exitcode 9 "$B/tests/test_dt_cuda" 20
    run 45 sanitize_agent compute-sanitizer --tool memcheck --error-exitcode 9 "$B/tests/test_cuda_agent"
fi
exit 0
