#!/bin/sh
# compare_cli.sh COMPARE_SH: bench/compare.sh refuses a bad command line with
# exit 2 before it installs, builds or runs anything.
set -u
script=$1
fails=0
expect2() {
    bash "$script" "$@" > /dev/null 2>&1
    rc=$?
    if [ $rc -ne 2 ]; then
        echo "compare.sh $*: exit $rc, expected 2"
        fails=$((fails + 1))
    fi
}
expect2 --cpus 1
expect2 --cpus 1,1
expect2 --cpus a,b
expect2 --cpus 0,1,2
expect2 --cpus ,1
expect2 --cpus 1,
expect2 --cpus
expect2 --rounds 0
expect2 --rounds x
expect2 --only mvapich
expect2 --bogus
[ $fails -eq 0 ] && echo "compare_cli: ok"
exit $((fails != 0))
