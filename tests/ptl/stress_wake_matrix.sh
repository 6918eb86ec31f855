#!/bin/sh
# Long hand-run of stress_wake across configurations (not run by CTest).
#   tests/ptl/stress_wake_matrix.sh BUILD_DIR [TOTAL_SECONDS [SECONDS_PER_RUN]]
# Cycles XP_PROGRESS x XP_SPIN_COUNT x XP_SHM_ASYM_FENCE x np x variant
# (plain, helper thread, floods on a small ring, a CPU hog per rank) until
# TOTAL_SECONDS have passed (STRESS_PROGRESS="thread" limits the modes); prints one line per run and keeps the output of
# failed runs in $TMPDIR/stress_wake.*. Exit status 1 if any run failed.
set -u
build=${1:?usage: $0 BUILD_DIR [TOTAL_SECONDS [SECONDS_PER_RUN]]}
total=${2:-300}
per=${3:-5}
xprun=$build/bin/xprun
prog=$build/tests/stress_wake
logdir=$(mktemp -d "${TMPDIR:-/tmp}/stress_wake.XXXXXX")
end=$(( $(date +%s) + total ))
runs=0
fails=0
while [ "$(date +%s)" -lt "$end" ]; do
  for progress in ${STRESS_PROGRESS:-thread inline}; do
    for spin in 0 1 10; do
      for asym in 1 0; do
        for np in 2 3 4; do
          for variant in plain helper flood hog; do
            [ "$(date +%s)" -lt "$end" ] || break 5
            ring=1048576
            args="--seconds $per --deadline-ms 5000"
            case $variant in
              helper) args="$args --helper" ;;
              flood) args="$args --flood-every 4 --flood 1000"; ring=131072 ;;
              hog) args="$args --hogs 1" ;;
              plain) args="$args --flood-every 0" ;;
            esac
            name="$progress-spin$spin-asym$asym-np$np-$variant"
            log=$logdir/$name.$runs.log
            XP_PROGRESS=$progress XP_SPIN_COUNT=$spin XP_SHM_ASYM_FENCE=$asym \
              XP_SHM_RING_SIZE=$ring timeout $((per + 40)) \
              "$xprun" -n "$np" --timeout $((per + 30)) "$prog" $args >"$log" 2>&1
            rc=$?
            runs=$((runs + 1))
            if [ $rc -eq 0 ]; then
              echo "ok   $name: $(grep -o 'tokens=[0-9]*.*us/token)' "$log")"
              rm -f "$log"
            else
              fails=$((fails + 1))
              echo "FAIL $name (exit $rc): $log"
              grep -E 'STALLED|waits for|doorbell|LOST|stuck|failed' "$log" | head -20
            fi
          done
        done
      done
    done
  done
done
echo "stress_wake_matrix: $runs runs, $fails failed, logs of failures in $logdir"
[ $fails -eq 0 ]
