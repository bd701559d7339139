#!/usr/bin/env bash
# Compiles and runs the README's LPF example exactly as written (issue 16 item 4): the lines of
# the README block between `<!-- lpf-example -->` and `<!-- /lpf-example -->` run with bash in a
# scratch directory laid out like the checkout (`crates` and `target` are links to the real
# ones), so the relative paths, the rpath and `./hello_lpf` are the README's own. Lines that
# start with `cargo` are skipped: the caller has built the library already.
#
# Usage: bash crates/lpf/tests/readme_example.sh TARGET_DIR   (the dir that holds release/)
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 TARGET_DIR" >&2
    exit 2
fi
repo=$(cd "$(dirname "$0")/../../.." && pwd)
target=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$repo/crates" "$work/crates"
ln -s "$target" "$work/target"
block=$(awk '/<!-- \/lpf-example -->/ { on = 0 } on && !/^```/ { print } /<!-- lpf-example -->/ { on = 1 }' \
    "$repo/README.md")
if [ -z "$block" ]; then
    echo "FAIL readme_example: README.md has no <!-- lpf-example --> block"
    exit 1
fi
script=$(printf '%s\n' "$block" | grep -v '^cargo ')
echo "$script" | sed 's/^/    | /'
out=$(cd "$work" && env -u LD_LIBRARY_PATH LPF_MAX_PROCS=4 bash -euo pipefail -c "$script" 2>&1) || {
    echo "$out" | sed 's/^/    | /'
    echo "FAIL readme_example: the README's commands failed"
    exit 1
}
echo "$out" | sed 's/^/    | /'
# Four processes put their pids 0..3 to process 0: the sum is 6 (and the program checked each).
if ! grep -qx 'hello from 4 processes: sum of pids 6' <<<"$out"; then
    echo "FAIL readme_example: unexpected output"
    exit 1
fi
echo "PASS readme_example"
