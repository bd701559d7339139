/*
 * The README's LPF example (issue 16 item 4): every process puts its pid into
 * slot s of process 0's array; after the sync, process 0 checks that it holds
 * 0, 1, ..., p-1 and prints the sum. Built and run exactly as the README says
 * by crates/lpf/tests/readme_example.sh.
 *
 * Usage: hello_lpf   (processes: LPF_MAX_PROCS, else the hardware threads)
 */
#include <lpf/core.h>
#include <stdio.h>
#include <stdlib.h>

static void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    unsigned *all = calloc(p, sizeof *all);
    unsigned mine = s;
    lpf_memslot_t src = LPF_INVALID_MEMSLOT, dst = LPF_INVALID_MEMSLOT;
    int ok = all != NULL
        && lpf_resize_memory_register(ctx, 2) == LPF_SUCCESS
        && lpf_resize_message_queue(ctx, p) == LPF_SUCCESS
        && lpf_sync(ctx, LPF_SYNC_DEFAULT) == LPF_SUCCESS
        && lpf_register_local(ctx, &mine, sizeof mine, &src) == LPF_SUCCESS
        && lpf_register_global(ctx, all, p * sizeof *all, &dst) == LPF_SUCCESS
        && lpf_put(ctx, src, 0, 0, dst, s * sizeof *all, sizeof mine, LPF_MSG_DEFAULT)
            == LPF_SUCCESS
        && lpf_sync(ctx, LPF_SYNC_DEFAULT) == LPF_SUCCESS;
    if (ok && s == 0) {
        unsigned long sum = 0;
        for (lpf_pid_t k = 0; k < p; ++k) {
            ok = ok && all[k] == k;
            sum += all[k];
        }
        printf("hello from %u processes: sum of pids %lu\n", (unsigned)p, sum);
    }
    if (s == 0 && args.output_size == sizeof ok) *(int *)args.output = ok;
    free(all);
}

int main(void) {
    int ok = 0;
    lpf_args_t args = LPF_NO_ARGS;
    args.output = &ok;
    args.output_size = sizeof ok;
    if (lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, args) != LPF_SUCCESS || !ok) {
        fprintf(stderr, "hello_lpf: failed\n");
        return 1;
    }
    return 0;
}
