/*
 * A peer that leaves its SPMD function early: the others' lpf_sync returns
 * LPF_ERR_FATAL instead of deadlocking, later syncs keep returning it, the
 * spawning lpf_exec returns LPF_ERR_FATAL, and what PID 0 wrote to
 * args.output still reaches the caller.
 */
#include <lpf/core.h>
#include <string.h>
#include "check.h"

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    CHECK(p >= 2);
    if (s == p - 1) return; /* leaves without a single sync */
    if (s == 0) {
        CHECK(args.output != NULL && args.output_size == sizeof(int));
        int answer = 42;
        memcpy(args.output, &answer, sizeof answer);
    } else {
        CHECK(args.output == NULL && args.output_size == 0);
    }
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_ERR_FATAL);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_ERR_FATAL);
    if (s == 0) {
        int answer = 43;
        memcpy(args.output, &answer, sizeof answer);
    }
}

/* Every process syncs once, then all but PID 0 leave: PID 0's second sync fails. */
void spmd_late(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)p; (void)args;
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    if (s != 0) return;
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_ERR_FATAL);
}

/* A well-behaved section: two supersteps on every process. */
void spmd_good(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)s; (void)p; (void)args;
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
}

int main(void) {
    int out = 0;
    lpf_args_t args = LPF_NO_ARGS;
    args.output = &out;
    args.output_size = sizeof out;
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, args), LPF_ERR_FATAL);
    CHECK(out == 43);
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd_late, LPF_NO_ARGS), LPF_ERR_FATAL);
    /* The root context is still usable after a failed section. */
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd_good, LPF_NO_ARGS), LPF_SUCCESS);
    printf("early_exit ok\n");
    return 0;
}
