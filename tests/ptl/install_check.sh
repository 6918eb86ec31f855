#!/bin/sh
# install_check.sh BUILD_DIR CC CLIENT_SOURCE
#
# Installs BUILD_DIR into a temporary prefix with `cmake --install --prefix`,
# then builds CLIENT_SOURCE against it the two ways Portals clients do (plain
# -I/-L/-lportals, and pkg-config portals4) and runs each under the installed
# xprun with 2 processes. Exit 0 when both runs print "install_client: ok".
set -u
build=$1 cc=$2 src=$3
cmake=${CMAKE_COMMAND:-cmake}

# A build tree run on another machine may not find the tools configured here:
# take the ones on PATH, or skip (77).
usable() { command -v "$1" > /dev/null 2>&1; }
usable "$cmake" || cmake=cmake
usable "$cc" || cc=cc
usable "$cmake" || { echo "install_check: no cmake here: skipped"; exit 77; }
usable "$cc" || { echo "install_check: no C compiler here: skipped"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xp-install-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
prefix=$tmp/prefix

fail() { echo "install_check: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install failed (is the whole tree built?)"; }

[ -f "$prefix/include/portals4.h" ] || fail "no include/portals4.h under the prefix"
[ -x "$prefix/bin/xprun" ] || fail "no bin/xprun under the prefix"
pc=$(find "$prefix" -name portals4.pc | head -n 1)
[ -n "$pc" ] || fail "no portals4.pc under the prefix"
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libportals.so* > /dev/null 2>&1 || fail "no libportals.so in $libdir"

# 1. The way configure scripts (Open MPI's --with-portals4=DIR, SOS) build.
"$cc" -I"$prefix/include" "$src" -L"$libdir" -lportals -o "$tmp/client_plain" ||
    fail "plain build failed"
LD_LIBRARY_PATH=$libdir "$prefix/bin/xprun" -n 2 --timeout 20 "$tmp/client_plain" \
    > "$tmp/plain.out" 2>&1
rc=$?
cat "$tmp/plain.out"
[ $rc -eq 0 ] && grep -q "install_client: ok" "$tmp/plain.out" || fail "plain client run failed ($rc)"

# 2. pkg-config, with nothing but PKG_CONFIG_PATH pointing at the prefix.
if command -v pkg-config > /dev/null 2>&1; then
    flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs portals4) ||
        fail "pkg-config portals4 failed"
    echo "pkg-config portals4: $flags"
    # shellcheck disable=SC2086 # flags are words on purpose
    "$cc" "$src" $flags -o "$tmp/client_pc" || fail "pkg-config build failed"
    env -u LD_LIBRARY_PATH "$prefix/bin/xprun" -n 2 --timeout 20 "$tmp/client_pc" \
        > "$tmp/pc.out" 2>&1
    rc=$?
    cat "$tmp/pc.out"
    [ $rc -eq 0 ] && grep -q "install_client: ok" "$tmp/pc.out" ||
        fail "pkg-config client run failed ($rc)"
else
    echo "install_check: pkg-config not found, pkg-config build not checked"
fi
echo "install_check: ok"
