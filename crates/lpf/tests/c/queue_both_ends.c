/*
 * Message-queue capacity counts each put/get once at its origin and once at
 * its target (shared/specs/lpf-api.md §1.4, §2):
 *  1. capacity 2p carries a total exchange (p messages out, p in, self included);
 *  2. with capacity 2 a message to oneself fits; a second message is past the
 *     capacity, which LPF leaves undefined and its Release engine accepts:
 *     sluice-bsp's fast path accepts and delivers it (the queues grow), its
 *     Checked backend refuses it at the origin with LPF_ERR_OUT_OF_MEMORY and
 *     no effect;
 *  3. when more messages end at a process than its capacity (which LPF leaves
 *     undefined and the origin cannot see): sluice-bsp's fast path delivers
 *     them all; under its Checked backend (SLUICE_BSP_CHECKED=1) that
 *     process's sync reports LPF_ERR_FATAL, its peers fail no later than their
 *     next sync, and the exec returns LPF_ERR_FATAL. Never a deadlock.
 */
#include <lpf/core.h>
#include <string.h>
#include "check.h"

/* SLUICE_BSP_CHECKED=1. Read where it is used: under mpirun only rank 0 runs main. */
static int is_checked(void) {
    const char *env = getenv("SLUICE_BSP_CHECKED");
    return env != NULL && (strcmp(env, "1") == 0 || strcmp(env, "true") == 0);
}

void exchange(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    const int checked = is_checked();
    unsigned *src = calloc(p, sizeof(unsigned)), *dst = calloc(p, sizeof(unsigned));
    CHECK(src && dst);
    lpf_memslot_t a, b;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, src, p * sizeof(unsigned), &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, dst, p * sizeof(unsigned), &b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    /* 1 */
    for (lpf_pid_t k = 0; k < p; ++k) {
        src[k] = s * 1000 + k;
        CHECK_RC(lpf_put(ctx, a, k * sizeof(unsigned), k, b, s * sizeof(unsigned),
                         sizeof(unsigned), LPF_MSG_DEFAULT), LPF_SUCCESS);
    }
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (lpf_pid_t k = 0; k < p; ++k) CHECK(dst[k] == k * 1000 + s);
    /* 2 */
    CHECK_RC(lpf_resize_message_queue(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    const lpf_err_t past = checked ? LPF_ERR_OUT_OF_MEMORY : LPF_SUCCESS;
    CHECK(p >= 2);
    src[0] = 77;
    CHECK_RC(lpf_put(ctx, a, 0, s, b, 0, sizeof(unsigned), LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, a, 0, s, b, sizeof(unsigned), sizeof(unsigned), LPF_MSG_DEFAULT), past);
    CHECK_RC(lpf_put(ctx, a, 0, (s + 1) % p, b, sizeof(unsigned), sizeof(unsigned),
                     LPF_MSG_DEFAULT), past);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(dst[0] == 77);
    /* Checked: untouched by the refused messages; fast path: both wrote 77 there. */
    CHECK(dst[1] == (checked ? 1 * 1000 + s : 77));
    CHECK_RC(lpf_resize_message_queue(ctx, 1), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    src[0] = 78;
    CHECK_RC(lpf_put(ctx, a, 0, s, b, 0, sizeof(unsigned), LPF_MSG_DEFAULT), past);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(dst[0] == (checked ? 77 : 78));
    free(src); free(dst);
}

void overflow(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    const int checked = is_checked();
    unsigned v = s, all[64];
    CHECK(p >= 3 && p <= 64);
    lpf_memslot_t a, b;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 1), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &v, sizeof v, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, all, sizeof all, &b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    /* p - 1 >= 2 messages end at PID 0, whose capacity is 1; each origin is within its own. */
    if (s != 0)
        CHECK_RC(lpf_put(ctx, a, 0, 0, b, s * sizeof v, sizeof v, LPF_MSG_DEFAULT), LPF_SUCCESS);
    lpf_err_t rc = lpf_sync(ctx, LPF_SYNC_DEFAULT);
    if (!checked) {
        CHECK(rc == LPF_SUCCESS);
        if (s == 0)
            for (lpf_pid_t k = 1; k < p; ++k) CHECK(all[k] == k);
        CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
        return;
    }
    if (s == 0) CHECK(rc == LPF_ERR_FATAL);
    else CHECK(rc == LPF_SUCCESS || rc == LPF_ERR_FATAL);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_ERR_FATAL);
}

int main(void) {
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, exchange, LPF_NO_ARGS), LPF_SUCCESS);
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, overflow, LPF_NO_ARGS),
             is_checked() ? LPF_ERR_FATAL : LPF_SUCCESS);
    printf("queue_both_ends ok\n");
    return 0;
}
