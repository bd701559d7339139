/*
 * LPF_ROOT is a context of one process for sequential code: capacities start
 * at 0 and change at lpf_sync(LPF_ROOT); registrations, puts and gets work on
 * it; absurd resizes return LPF_ERR_OUT_OF_MEMORY; lpf_exec from LPF_ROOT
 * still starts LPF_MAX_PROCS processes; lpf_rehook(LPF_ROOT) runs a fresh
 * section of one process.
 */
#include <lpf/core.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static void count(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)ctx;
    if (s == 0) *(lpf_pid_t *)args.output = p;
}

static void fresh(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    int x = 0;
    lpf_memslot_t a;
    CHECK(s == 0 && p == 1);
    CHECK_RC(lpf_register_local(ctx, &x, sizeof x, &a), LPF_ERR_OUT_OF_MEMORY);
    *(int *)args.output = 1;
}

int main(void) {
    int x[2] = {5, 0}, y[2] = {7, 0};
    const char *env = getenv("SLUICE_BSP_CHECKED");
    const int checked = env != NULL && (strcmp(env, "1") == 0 || strcmp(env, "true") == 0);
    lpf_memslot_t a = LPF_INVALID_MEMSLOT, b = LPF_INVALID_MEMSLOT;
    CHECK_RC(lpf_register_local(LPF_ROOT, x, sizeof x, &a), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_memory_register(LPF_ROOT, SIZE_MAX), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_message_queue(LPF_ROOT, SIZE_MAX / 10), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_memory_register(LPF_ROOT, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(LPF_ROOT, 2), LPF_SUCCESS);
    CHECK_RC(lpf_sync(LPF_ROOT, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(LPF_ROOT, x, sizeof x, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(LPF_ROOT, y, sizeof y, &b), LPF_SUCCESS);
    CHECK_RC(lpf_put(LPF_ROOT, a, 0, 0, b, sizeof(int), sizeof(int), LPF_MSG_DEFAULT), LPF_SUCCESS);
    /* The self-put used both units: the get is past the capacity (checked: refused). */
    CHECK_RC(lpf_get(LPF_ROOT, 0, b, 0, a, sizeof(int), sizeof(int), LPF_MSG_DEFAULT),
             checked ? LPF_ERR_OUT_OF_MEMORY : LPF_SUCCESS);
    CHECK(y[1] == 0 && x[1] == 0);
    CHECK_RC(lpf_sync(LPF_ROOT, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(y[1] == 5 && x[1] == (checked ? 0 : 7));

    lpf_pid_t p = 0;
    lpf_args_t args = LPF_NO_ARGS;
    args.output = &p;
    args.output_size = sizeof p;
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, count, args), LPF_SUCCESS);
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(LPF_ROOT, &m), LPF_SUCCESS);
    CHECK(p == m.p);
    int ran = 0;
    args.output = &ran;
    args.output_size = sizeof ran;
    CHECK_RC(lpf_rehook(LPF_ROOT, fresh, args), LPF_SUCCESS);
    CHECK(ran == 1);

    /* The root context is unchanged by the sections above. */
    CHECK_RC(lpf_deregister(LPF_ROOT, a), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(LPF_ROOT, b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(LPF_ROOT, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    printf("root_context ok\n");
    return 0;
}
