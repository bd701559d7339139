#!/usr/bin/env bash
# Builds libsluice_lpf_mpi (crates/lpf-mpi) and runs LPF C programs against it under mpirun.
#
# Usage: bash crates/lpf/tests/run_mpi_c_tests.sh   (no arguments)
# Environment: CARGO_TARGET_DIR (default: <repo>/target); the library is built into
# $CARGO_TARGET_DIR/lpf-mpi, its own target dir, because cargo copies a dependency's cdylib
# to the top of its profile folder and libsluice_lpf.so (threads, no libmpi) must not be
# replaced by the MPI build's. LPF_MPI_PROFILE=debug|release (default release); MPI_NPS
# (default "1 2 3 4"). Skips, saying so, without mpicc/mpirun.
# Ends with "N passed, N failed" and exits non-zero if anything failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
crate=$(dirname "$here")
repo=$(cd "$crate/../.." && pwd)
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    echo "run_mpi_c_tests: skipped: mpicc/mpirun not found (apt-get install libopenmpi-dev openmpi-bin libclang-dev)"
    exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
profile=${LPF_MPI_PROFILE:-release}
target=${CARGO_TARGET_DIR:-$repo/target}/lpf-mpi
flag=(); [ "$profile" = release ] && flag=(--release)
echo "== building libsluice_lpf_mpi ($profile) into $target"
cargo build --manifest-path "$repo/crates/lpf-mpi/Cargo.toml" "${flag[@]}" --target-dir "$target" \
    || { echo "0 passed, 1 failed"; exit 1; }
libdir="$target/$profile"
include="$crate/include"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TIMEOUT=${LPF_TEST_TIMEOUT:-60}
CFLAGS=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$include" -I"$here/c")
LIBS=(-L"$libdir" -Wl,-rpath,"$libdir" -lsluice_lpf_mpi)
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    failed=$((failed + 1))
    if [ -n "${3:-}" ] && [ -f "$3" ]; then sed 's/^/    | /' "$3" | tail -n 20; fi
}

# ---- the library -----------------------------------------------------------------------------
if ldd "$libdir/libsluice_lpf_mpi.so" | grep -q libmpi; then pass "links_libmpi"; else
    fail "links_libmpi" "libsluice_lpf_mpi.so does not link libmpi"; fi
printf '%s\n' LPF_ERR_FATAL LPF_ERR_OUT_OF_MEMORY LPF_HAS_ABORT LPF_INIT_NONE LPF_INVALID_MACHINE \
    LPF_INVALID_MEMSLOT LPF_MAX_P LPF_MPI_AUTO_INITIALIZE LPF_MSG_DEFAULT LPF_NONE LPF_NO_ARGS \
    LPF_ROOT LPF_SUCCESS LPF_SYNC_DEFAULT lpf_abort lpf_deregister lpf_exec lpf_get lpf_hook \
    lpf_mpi_finalize lpf_mpi_initialize_with_mpicomm lpf_probe lpf_pthread_finalize \
    lpf_pthread_initialize lpf_put lpf_register_global lpf_register_local lpf_rehook \
    lpf_resize_memory_register lpf_resize_message_queue lpf_sync | LC_ALL=C sort >"$work/nm.expected"
nm -D --defined-only "$libdir/libsluice_lpf_mpi.so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' \
    | LC_ALL=C sort -u >"$work/nm.actual"
if diff "$work/nm.expected" "$work/nm.actual" >"$work/nm.diff"; then pass "nm_exports_lpf_and_mpi_names"
else fail "nm_exports_lpf_and_mpi_names" "nm -D differs (< missing, > extra)" "$work/nm.diff"; fi

# ---- compile ---------------------------------------------------------------------------------
declare -A built
build() { # NAME SOURCE [extra link args...]
    local name=$1 src=$2; shift 2
    if mpicc "${CFLAGS[@]}" "$src" -o "$work/$name" "$@" >"$work/$name.cc" 2>&1; then built[$name]=1
    else fail "compile $name" "compiler error" "$work/$name.cc"; fi
}
build mpi_exec "$here/mpi/mpi_exec.c" "${LIBS[@]}"
build mpi_hook "$here/mpi/mpi_hook.c" "${LIBS[@]}"
build mpi_probe "$here/mpi/mpi_probe.c" "${LIBS[@]}"
build alg12 "$here/c/algorithms_1_2.c" "${LIBS[@]}"
build abort "$here/c/abort.c" "${LIBS[@]}"
build queue_both_ends "$here/c/queue_both_ends.c" "${LIBS[@]}"
build mpi_exec_static "$here/mpi/mpi_exec.c" "$libdir/libsluice_lpf_mpi.a" -lpthread -ldl -lm

# run_case LABEL NP PROGRAM EXPECTED_STATUS REGEX COUNT [VAR=VALUE ...] [-- ARGS ...]
# NP 0: run without mpirun. Passes if the run ends with EXPECTED_STATUS within the timeout and
# exactly COUNT output lines match REGEX.
run_case() {
    local label=$1 np=$2 prog=$3 want=$4 regex=$5 count=$6
    shift 6
    local envs=() args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    if [ -z "${built[$prog]:-}" ]; then fail "$label" "$prog was not built"; return; fi
    # Under mpirun the variables reach the ranks only (-x), not mpirun itself (LD_PRELOAD).
    local out="$work/$label.out" launch=(env "${envs[@]}")
    if [ "$np" -gt 0 ]; then
        launch=(mpirun --oversubscribe -np "$np")
        for e in "${envs[@]}"; do launch+=(-x "$e"); done
    fi
    timeout -k 5 "$TIMEOUT" "${launch[@]}" "$work/$prog" "${args[@]}" >"$out" 2>&1
    local rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "$label" "timed out after ${TIMEOUT}s" "$out"; return; fi
    if [ "$rc" -ne "$want" ]; then fail "$label" "exit status $rc, expected $want" "$out"; return; fi
    local n
    n=$(grep -cE -- "$regex" "$out")
    if [ "$n" -ne "$count" ]; then fail "$label" "$n lines match /$regex/, expected $count" "$out"; return; fi
    pass "$label"
}

for np in ${MPI_NPS:-1 2 3 4}; do
    # Only rank 0 runs main (one line), and the sections span the job (p = np).
    run_case exec_np$np        "$np" mpi_exec 0 "^mpi_exec main .* p=$np .* ok$" 1 -- "$np" 1000
    run_case exec_static_np$np "$np" mpi_exec_static 0 "^mpi_exec main .* p=$np .* ok$" 1 -- "$np" 100
    # Every rank runs main and hooks into a sub-communicator of its own making.
    run_case hook_split_np$np  "$np" mpi_hook 0 '^mpi_hook rank=.* ok$' "$np"
    # The LPF paper's Algorithms 1 and 2, one line per process.
    run_case alg12_np$np       "$np" alg12 0 'gerr=0$' "$np" -- 100 10
    run_case alg12_bad_np$np   "$np" alg12 1 'gerr=1$' "$np" -- 0 10
done
# A process that dies mid-section ends the job non-zero (mpirun reports it); nobody hangs.
run_case die_np3 3 mpi_exec 3 '^mpi_exec main' 0 LPF_TEST_DIE=1 -- 3 100
# lpf_probe from LPF_ROOT: p is the job's size; g and l come from the MPI backend's table
# (bsp-probe-mpi.json, written by `sluice bsp bench --backend mpi`), not the threads one; with
# no table they are 0 (measuring would be a collective), even when measuring is allowed.
table() { printf '{"version":1,"source":"bench","points":[{"p":%s,"word_bytes":8,"g_s_per_byte":%s,"l_s":%s}]}\n' "$@"; }
mkdir -p "$work/cache/sluice" "$work/empty"
table 3 2.5e-9 3.25e-6 >"$work/cache/sluice/bsp-probe-mpi.json"
table 3 7e-9 9e-6 >"$work/cache/sluice/bsp-probe.json"
run_case probe_table_np3 3 mpi_probe 0 '^probe p=3 g=2.500000e-09 l=3.250000e-06$' 1 XDG_CACHE_HOME="$work/cache" -- 3
run_case probe_none_np2  2 mpi_probe 0 '^probe p=2 g=0.000000e\+00 l=0.000000e\+00$' 1 XDG_CACHE_HOME="$work/empty" LPF_MAX_SECONDS_FOR_PROBE=1 -- 2
# Messages past the queue capacity: accepted by default, refused (and a target-end overflow
# fatal) under the Checked backend; p >= 3 for the overflow part.
run_case queue_both_ends_np3         3 queue_both_ends 0 '^queue_both_ends ok$' 1
run_case queue_both_ends_checked_np3 3 queue_both_ends 0 '^queue_both_ends ok$' 1 SLUICE_BSP_CHECKED=1
# lpf_abort ends the job with LPF's status 6.
run_case abort_np3 3 abort 6 '^lpf_(abort|exec) returned' 0
# The same binary without mpirun runs on threads; LPF_ENGINE=pthread under mpirun too (then
# every rank runs main, each with its own threads).
run_case exec_threads          0 mpi_exec 0 '^mpi_exec main .* p=3 .* ok$' 1 LPF_MAX_PROCS=3 -- 3 100
run_case exec_engine_pthread   2 mpi_exec 0 '^mpi_exec main .* p=3 .* ok$' 2 LPF_ENGINE=pthread LPF_MAX_PROCS=3 -- 3 100
run_case exec_engine_mpimsg    2 mpi_exec 0 '^mpi_exec main .* p=2 .* ok$' 1 LPF_ENGINE=mpimsg -- 2 100

# LPF's engine swap: a program linked against a sequential LPF stub gets this library with
# LD_PRELOAD under mpirun, and runs on every rank (sum of pids 0..3 = 6; LPF_HAS_ABORT = 2).
stubdir="$work/stub"
mkdir -p "$stubdir"
if cc -std=gnu11 -O1 -Wall -Wextra -Werror -fPIC -shared -I"$include" "$here/stub/lpf_stub.c" \
        -o "$stubdir/liblpf_stub.so" >"$work/stub.cc" 2>&1 \
    && cc "${CFLAGS[@]}" "$here/c/dropin.c" -o "$work/dropin" -L"$stubdir" -Wl,-rpath,"$stubdir" \
        -llpf_stub >>"$work/stub.cc" 2>&1; then
    built[dropin]=1
    run_case dropin_preload_np4 4 dropin 0 '^dropin: p=4 sum=6 has_abort=2$' 1 LD_PRELOAD="$libdir/libsluice_lpf_mpi.so"
else
    fail "dropin_build" "building the stub or the drop-in program failed" "$work/stub.cc"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
