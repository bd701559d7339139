/*
 * Drop-in program for the LD_PRELOAD test: linked against the sequential stub
 * it runs with p = 1; with libsluice_lpf.so preloaded it runs on LPF_MAX_PROCS
 * processes. PID 0 gathers every pid with puts and prints
 * "dropin: p=P sum=S has_abort=A".
 */
#include <lpf/core.h>
#include <lpf/abort.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    unsigned *all = calloc(p, sizeof(unsigned)), mine = s;
    CHECK(all != NULL);
    lpf_memslot_t a, b;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, p + 1), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &mine, sizeof mine, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, all, p * sizeof(unsigned), &b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, a, 0, 0, b, s * sizeof(unsigned), sizeof mine, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    if (s == 0) {
        unsigned sum = 0;
        for (lpf_pid_t k = 0; k < p; ++k) sum += all[k];
        unsigned out[2] = {p, sum};
        CHECK(args.output_size == sizeof out);
        memcpy(args.output, out, sizeof out);
    }
    CHECK_RC(lpf_deregister(ctx, b), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, a), LPF_SUCCESS);
    free(all);
}

int main(void) {
    unsigned out[2] = {0, 0};
    lpf_args_t args = LPF_NO_ARGS;
    args.output = out;
    args.output_size = sizeof out;
    CHECK(LPF_ROOT != NULL && LPF_MAX_P == UINT_MAX && LPF_INVALID_MEMSLOT == SIZE_MAX);
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, args), LPF_SUCCESS);
    printf("dropin: p=%u sum=%u has_abort=%d\n", out[0], out[1], LPF_HAS_ABORT);
    return 0;
}
