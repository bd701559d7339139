#!/usr/bin/env bash
# scripts/install-lpf and its pkg-config file (issue 16 item 4): installs under a scratch prefix,
# builds crates/lpf/examples/hello_lpf.c with exactly
#   cc hello_lpf.c $(pkg-config --cflags --libs sluice-lpf)
# (PKG_CONFIG_PATH set, no LD_LIBRARY_PATH), runs it on 4 processes and checks its output; then
# links it statically against the archive with `pkg-config --static`.
#
# Usage: bash crates/lpf/tests/pkg_config.sh [TARGET_RELEASE_DIR]
#   (default: ${CARGO_TARGET_DIR:-target}/release; build it with cargo build --release -p sluice-lpf)
set -euo pipefail
if [ $# -gt 1 ]; then
    echo "usage: $0 [TARGET_RELEASE_DIR]" >&2
    exit 2
fi
repo=$(cd "$(dirname "$0")/../../.." && pwd)
from=$(cd "${1:-${CARGO_TARGET_DIR:-$repo/target}/release}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL pkg_config: $1"; [ -f "${2:-}" ] && sed 's/^/    | /' "$2"; exit 1; }
command -v pkg-config >/dev/null || fail "no pkg-config on the PATH (apt-get install pkg-config)"
bash "$repo/scripts/install-lpf" --prefix "$work/prefix" --from "$from" >"$work/install.log" 2>&1 \
    || fail "scripts/install-lpf failed" "$work/install.log"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
pkg-config --exists sluice-lpf || fail "pkg-config does not find sluice-lpf"
cp "$repo/crates/lpf/examples/hello_lpf.c" "$work/"
cd "$work"
# The command a user types, word for word.
cc hello_lpf.c $(pkg-config --cflags --libs sluice-lpf) -o hello >cc.log 2>&1 \
    || fail "cc hello_lpf.c \$(pkg-config --cflags --libs sluice-lpf) failed" cc.log
# The program runs against the installed copy, found by the rpath alone. (ldd's output is
# taken whole first: `ldd | grep -q` under pipefail fails when grep exits before ldd has written
# everything and ldd dies of SIGPIPE, which failed one CI run on 2026-11-29.)
libs=$(ldd ./hello) || fail "ldd ./hello failed"
grep -qF "$work/prefix/lib/libsluice_lpf.so" <<<"$libs" \
    || fail "not linked to the installed library: $libs"
out=$(env -u LD_LIBRARY_PATH LPF_MAX_PROCS=4 ./hello 2>&1) || fail "./hello failed: $out"
[ "$out" = "hello from 4 processes: sum of pids 6" ] || fail "unexpected output: $out"
echo "PASS pkg_config_shared"
cc hello_lpf.c $(pkg-config --cflags sluice-lpf) "$work/prefix/lib/libsluice_lpf.a" \
    $(pkg-config --static --libs-only-l sluice-lpf | sed 's/-lsluice_lpf//') -o hello_static \
    >cc_static.log 2>&1 || fail "linking the archive with pkg-config --static failed" cc_static.log
out=$(LPF_MAX_PROCS=3 ./hello_static 2>&1) || fail "./hello_static failed: $out"
[ "$out" = "hello from 3 processes: sum of pids 3" ] || fail "unexpected output: $out"
echo "PASS pkg_config_static"
