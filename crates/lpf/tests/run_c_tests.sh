#!/usr/bin/env bash
# Builds and runs the C acceptance tests of sluice-lpf (issue 6).
#
# Usage: bash crates/lpf/tests/run_c_tests.sh TARGET_RELEASE_DIR
#
# Compiles every tests/c/*.c against crates/lpf/include, links it with
# -L$DIR -lsluice_lpf -lpthread -ldl -lm (rpath to $DIR), runs each case under
# a timeout and checks its exit status and output; links one program against
# libsluice_lpf.a; builds a sequential stub library and runs a program linked
# against it with and without libsluice_lpf.so preloaded; checks that nm -D
# shows exactly the LPF names. Ends with the line "N passed, N failed" and
# exits non-zero if anything failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 TARGET_RELEASE_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
crate=$(dirname "$here")
libdir=$(cd "$1" 2>/dev/null && pwd) || libdir=$1
include="$crate/include"
so="$libdir/libsluice_lpf.so"
archive="$libdir/libsluice_lpf.a"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

CC=${CC:-cc}
CFLAGS=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$include" -I"$here/c")
LIBS=(-L"$libdir" -Wl,-rpath,"$libdir" -lsluice_lpf -lpthread -ldl -lm)
TIMEOUT=${LPF_TEST_TIMEOUT:-30}

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    failed=$((failed + 1))
    if [ -n "${3:-}" ] && [ -f "$3" ]; then sed 's/^/    | /' "$3" | tail -n 20; fi
}

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

if [ ! -f "$so" ] || [ ! -f "$archive" ]; then
    fail "library" "missing $so or $archive (run cargo build -p sluice-lpf --release)"
    finish
fi

# ---- headers alone: strict C99 and, where a C++ compiler exists, C++ -------------------------
printf '#include <lpf/core.h>\n#include <lpf/abort.h>\n#include <lpf/pthread.h>\nint main(void) { return LPF_SUCCESS; }\n' >"$work/headers.c"
if "$CC" -std=c99 -pedantic -Wall -Wextra -Werror -I"$include" -c "$work/headers.c" \
        -o "$work/headers.o" >"$work/headers.cc" 2>&1; then
    pass "headers_c99_pedantic"
else
    fail "headers_c99_pedantic" "the headers do not compile as strict C99" "$work/headers.cc"
fi
CXX=${CXX:-c++}
if command -v "$CXX" >/dev/null 2>&1; then
    cp "$work/headers.c" "$work/headers.cpp"
    if "$CXX" -Wall -Wextra -Werror -I"$include" "$work/headers.cpp" -o "$work/headers_cxx" \
            -L"$libdir" -Wl,-rpath,"$libdir" -lsluice_lpf -lpthread -ldl -lm >"$work/headers.cxx" 2>&1 \
        && "$work/headers_cxx"; then
        pass "headers_cxx_link"
    else
        fail "headers_cxx_link" "the headers do not compile or link as C++" "$work/headers.cxx"
    fi
else
    echo "skipping headers_cxx_link: no C++ compiler ($CXX)"
fi

# ---- compile -------------------------------------------------------------------------------
declare -A built
for src in "$here"/c/*.c; do
    name=$(basename "$src" .c)
    if "$CC" "${CFLAGS[@]}" "$src" -o "$work/$name" "${LIBS[@]}" >"$work/$name.cc" 2>&1; then
        built[$name]=1
    else
        fail "compile $name" "compiler error" "$work/$name.cc"
    fi
done

# run_case LABEL PROGRAM EXPECTED_STATUS REGEX COUNT [VAR=VALUE ...] [-- ARGS ...]
# Passes if the program exits with EXPECTED_STATUS within the timeout and exactly COUNT
# lines of its output (stdout and stderr) match REGEX (COUNT "+": at least one; an empty REGEX
# skips the output check).
run_case() {
    local label=$1 prog=$2 want=$3 regex=$4 count=$5
    shift 5
    local envs=() args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    if [ -z "${built[$prog]:-}" ]; then
        fail "$label" "$prog was not built"
        return
    fi
    local out="$work/$label.out"
    env "${envs[@]}" timeout -k 5 "$TIMEOUT" "$work/$prog" "${args[@]}" >"$out" 2>&1
    local rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        fail "$label" "timed out after ${TIMEOUT}s" "$out"
        return
    fi
    if [ "$rc" -ne "$want" ]; then
        fail "$label" "exit status $rc, expected $want" "$out"
        return
    fi
    if [ -n "$regex" ]; then
        local n
        n=$(grep -cE -- "$regex" "$out")
        if { [ "$count" = "+" ] && [ "$n" -lt 1 ]; } || { [ "$count" != "+" ] && [ "$n" -ne "$count" ]; }; then
            fail "$label" "$n lines match /$regex/, expected $count" "$out"
            return
        fi
    fi
    pass "$label"
}

P4=(LPF_MAX_PROCS=4)

# ---- the LPF paper's Algorithms 1 and 2 ----------------------------------------------------------
run_case alg12_good      algorithms_1_2 0 'gerr=0$' 4 "${P4[@]}" -- 100 10
run_case alg12_bad_rows  algorithms_1_2 1 'gerr=1$' 4 "${P4[@]}" -- 1 10
run_case alg12_bad_cols  algorithms_1_2 1 'gerr=1$' 4 "${P4[@]}" -- 100 0
run_case alg12_p3_good   algorithms_1_2 0 'gerr=0$' 3 LPF_MAX_PROCS=3 -- 7 5
run_case alg12_p1_good   algorithms_1_2 0 'gerr=0$' 1 LPF_MAX_PROCS=1 -- 1 1
run_case alg12_p1_bad    algorithms_1_2 1 'gerr=1$' 1 LPF_MAX_PROCS=1 -- 0 1
run_case alg12_default_p algorithms_1_2 0 'gerr=0$' + LPF_MAX_PROCS= -- 64 64

# ---- semantics of shared/specs/lpf-api.md §2 ---------------------------------------------------
run_case constants       constants       0 '^constants ok$' 1
run_case resize_sync_p4  resize_sync     0 '^resize_sync ok$' 1 "${P4[@]}"
run_case resize_sync_p1  resize_sync     0 '^resize_sync ok$' 1 LPF_MAX_PROCS=1
run_case queue_both_ends queue_both_ends 0 '^queue_both_ends ok$' 1 "${P4[@]}"
run_case put_get_p4      put_get         0 '^put_get ok$' 1 "${P4[@]}"
run_case put_get_p3      put_get         0 '^put_get ok$' 1 LPF_MAX_PROCS=3
run_case overlap_p4      overlap         0 '^overlap ok$' 1 "${P4[@]}"
run_case overlap_p3      overlap         0 '^overlap ok$' 1 LPF_MAX_PROCS=3
run_case early_exit      early_exit      0 '^early_exit ok$' 1 "${P4[@]}"
run_case nested_exec     nested_exec     0 '^nested_exec ok$' 1 "${P4[@]}"
run_case abort_section   abort           6 'returned' 0 "${P4[@]}"
run_case abort_root      abort_root      6 '' 0
run_case probe_measured  probe           0 '^probe ok$' 1 "${P4[@]}" LPF_MAX_SECONDS_FOR_PROBE=0.2 -- measured
run_case probe_default   probe           0 '^probe ok$' 1 LPF_MAX_PROCS=2 LPF_MAX_SECONDS_FOR_PROBE=0
run_case root_context    root_context    0 '^root_context ok$' 1 "${P4[@]}"
run_case rehook          rehook          0 '^rehook ok$' 1 "${P4[@]}"
run_case hook_pthread    hook_pthread    0 '^hook_pthread ok$' 1
# The same programs under sluice-bsp's Checked backend (overlap and collective-order checks).
run_case alg12_checked   algorithms_1_2  0 'gerr=0$' 4 "${P4[@]}" SLUICE_BSP_CHECKED=1 -- 100 10
run_case put_get_checked put_get         0 '^put_get ok$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1
run_case overlap_checked overlap         0 '^overlap ok$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1
run_case queue_both_ends_checked queue_both_ends 0 '^queue_both_ends ok$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1
run_case resize_sync_checked resize_sync   0 '^resize_sync ok$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1
run_case root_context_checked root_context 0 '^root_context ok$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1
run_case rehook_checked  rehook          0 '^rehook ok$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1
# Checked-mode messages (issue 16 item 13): one line per error, naming the primitive, its slot,
# pid and offset, and the rule; the other processes' PeerFailed prints nothing; no message on the
# fast path.
MSG='^sluice-lpf: process 0: lpf_put'
run_case checked_msg_pid checked_message 0 "$MSG"'\(src slot 0 offset 0, dst pid 4 slot 0 offset 4, 8 bytes\): process id 4 is not below p = 4; rule broken: a process id is below p$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1 -- pid
run_case checked_msg_pid_once checked_message 0 'sluice-lpf:' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1 -- pid
run_case checked_msg_pid_code checked_message 0 '^checked_message pid pid 0 sync fatal$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1 -- pid
run_case checked_msg_bounds checked_message 0 "$MSG"'\(src slot 0 offset 12, dst pid 1 slot 0 offset 0, 8 bytes\): process 0: bytes 12\.\.12\+8 are outside slot 0 of 16 bytes; rule broken: a message reads and writes inside its slots$' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1 -- bounds
run_case checked_msg_overlap checked_message 0 '^sluice-lpf: process [0-9]+: lpf_sync: checked backend, process [0-9]+: .* read by one message and .* written by another .*; rule broken: no byte is written by one message' 1 "${P4[@]}" SLUICE_BSP_CHECKED=1 -- overlap
run_case fast_no_msg     checked_message 0 'sluice-lpf:' 0 "${P4[@]}" -- pid
for label in probe_measured probe_default; do
    [ -f "$work/$label.out" ] && grep '^probe:' "$work/$label.out" | sed "s/^/    $label /"
done

# ---- static library --------------------------------------------------------------------------
if "$CC" "${CFLAGS[@]}" "$here/c/algorithms_1_2.c" -o "$work/alg12_static" "$archive" \
        -lpthread -ldl -lm >"$work/static.cc" 2>&1; then
    built[alg12_static]=1
    run_case static_lib alg12_static 0 'gerr=0$' 4 "${P4[@]}" -- 100 10
else
    fail "static_lib" "linking against libsluice_lpf.a failed" "$work/static.cc"
fi

# ---- LD_PRELOAD drop-in over a sequential stub -----------------------------------------------
stubdir="$work/stub"
mkdir -p "$stubdir"
if "$CC" -std=gnu11 -O1 -Wall -Wextra -Werror -fPIC -shared -I"$include" \
        "$here/stub/lpf_stub.c" -o "$stubdir/liblpf_stub.so" >"$work/stub.cc" 2>&1 \
    && "$CC" "${CFLAGS[@]}" "$here/c/dropin.c" -o "$work/dropin_stub" \
        -L"$stubdir" -Wl,-rpath,"$stubdir" -llpf_stub >>"$work/stub.cc" 2>&1 \
    && "$CC" "${CFLAGS[@]}" -fno-pie -no-pie "$here/c/dropin.c" -o "$work/dropin_stub_nopie" \
        -L"$stubdir" -Wl,-rpath,"$stubdir" -llpf_stub >>"$work/stub.cc" 2>&1; then
    built[dropin_stub]=1
    built[dropin_stub_nopie]=1
    if readelf -d "$work/dropin_stub" | grep -q sluice_lpf; then
        fail "dropin_links_stub_only" "the drop-in program links libsluice_lpf directly"
    else
        pass "dropin_links_stub_only"
    fi
    run_case dropin_stub_p1    dropin_stub       0 '^dropin: p=1 sum=0 has_abort=0$' 1 "${P4[@]}"
    run_case dropin_preload    dropin_stub       0 '^dropin: p=4 sum=6 has_abort=2$' 1 "${P4[@]}" LD_PRELOAD="$so"
    run_case dropin_preload_nopie dropin_stub_nopie 0 '^dropin: p=3 sum=3 has_abort=2$' 1 LPF_MAX_PROCS=3 LD_PRELOAD="$so"
else
    fail "dropin_build" "building the stub or the drop-in program failed" "$work/stub.cc"
fi

# ---- exported names --------------------------------------------------------------------------
expected_names="LPF_ERR_FATAL LPF_ERR_OUT_OF_MEMORY LPF_HAS_ABORT LPF_INIT_NONE LPF_INVALID_MACHINE
LPF_INVALID_MEMSLOT LPF_MAX_P LPF_MSG_DEFAULT LPF_NONE LPF_NO_ARGS LPF_ROOT LPF_SUCCESS
LPF_SYNC_DEFAULT lpf_abort lpf_deregister lpf_exec lpf_get lpf_hook lpf_probe lpf_pthread_finalize
lpf_pthread_initialize lpf_put lpf_register_global lpf_register_local lpf_rehook
lpf_resize_memory_register lpf_resize_message_queue lpf_sync"
printf '%s\n' $expected_names | LC_ALL=C sort >"$work/nm.expected"
if nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | LC_ALL=C sort -u \
        >"$work/nm.actual" 2>&1 && diff "$work/nm.expected" "$work/nm.actual" >"$work/nm.diff"; then
    pass "nm_exports_exactly_lpf_names"
else
    fail "nm_exports_exactly_lpf_names" "nm -D differs from the LPF names (< missing, > extra)" "$work/nm.diff"
fi

finish
