/*
 * Nested lpf_exec and free_p: with LPF_MAX_PROCS=4, an exec of 2 processes
 * leaves 2 processors to each, so each may exec 2 more; inside a full
 * section free_p is 1. lpf_probe's p is the runtime's total processors (4)
 * everywhere: at the root, in the section of 2 and in the nested sections
 * (as LPF's func_lpf_probe_parallel_nested checks).
 */
#include <lpf/core.h>
#include "check.h"

static unsigned inner_p[2];

void inner(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(ctx, &m), LPF_SUCCESS);
    CHECK(m.p == 4);
    CHECK(m.free_p == 1);
    CHECK(m.g != NULL && m.l != NULL);
    /* Communication inside the nested section: a ring of pids. */
    lpf_pid_t got = LPF_MAX_P, mine = s;
    lpf_memslot_t a, b;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, &got, sizeof got, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &mine, sizeof mine, &b), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, b, 0, (s + 1) % p, a, 0, sizeof mine, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(got == (s + p - 1) % p);
    if (s == 0) *(unsigned *)args.output = p;
}

void outer(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK(p == 2);
    CHECK_RC(lpf_probe(ctx, &m), LPF_SUCCESS);
    CHECK(m.p == 4);
    CHECK(m.free_p == 2);
    unsigned out = 0;
    lpf_args_t a = LPF_NO_ARGS;
    a.output = &out;
    a.output_size = sizeof out;
    CHECK_RC(lpf_exec(ctx, LPF_MAX_P, inner, a), LPF_SUCCESS);
    inner_p[s] = out;
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
}

int main(void) {
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(LPF_ROOT, &m), LPF_SUCCESS);
    CHECK(m.p == 4); /* the test runs with LPF_MAX_PROCS=4 */
    CHECK(m.free_p == 4);
    CHECK_RC(lpf_exec(LPF_ROOT, 2, outer, LPF_NO_ARGS), LPF_SUCCESS);
    CHECK(inner_p[0] == 2 && inner_p[1] == 2);
    /* Asking for more than is free gives what is free. */
    CHECK_RC(lpf_exec(LPF_ROOT, 1000, inner, (lpf_args_t){0, 0, &inner_p[0], sizeof(unsigned), 0, 0}),
             LPF_SUCCESS);
    CHECK(inner_p[0] == 4);
    printf("nested_exec ok\n");
    return 0;
}
