/*
 * Capacities: a fresh context reserves nothing; lpf_resize_memory_register and
 * lpf_resize_message_queue take effect at the next lpf_sync, the last call
 * wins, over-capacity registrations and absurd resizes return
 * LPF_ERR_OUT_OF_MEMORY with no effect, deregistration returns the slot.
 * Puts/gets past the queue capacity (undefined in LPF, accepted by its Release
 * engine) are accepted and delivered, except under the Checked backend
 * (SLUICE_BSP_CHECKED=1), which refuses them with LPF_ERR_OUT_OF_MEMORY and no
 * effect.
 */
#include <lpf/core.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

/* SLUICE_BSP_CHECKED=1: messages past the queue capacity are refused, not accepted. */
static int is_checked(void) {
    const char *env = getenv("SLUICE_BSP_CHECKED");
    return env != NULL && (strcmp(env, "1") == 0 || strcmp(env, "true") == 0);
}

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    int x[4] = {0, 0, 0, 0}, y[4] = {0, 0, 100 + (int)s, 0}, z = 0;
    const int checked = is_checked();
    const lpf_err_t past = checked ? LPF_ERR_OUT_OF_MEMORY : LPF_SUCCESS;
    lpf_memslot_t a = LPF_INVALID_MEMSLOT, b = LPF_INVALID_MEMSLOT, c = LPF_INVALID_MEMSLOT,
                  d = LPF_INVALID_MEMSLOT;

    /* No slots reserved on entry. */
    CHECK_RC(lpf_register_local(ctx, x, sizeof x, &a), LPF_ERR_OUT_OF_MEMORY);
    CHECK(a == LPF_INVALID_MEMSLOT);
    /* A resize takes effect at the next sync only. */
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, x, sizeof x, &a), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_message_queue(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);

    CHECK_RC(lpf_register_local(ctx, x, sizeof x, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, y, sizeof y, &b), LPF_SUCCESS);
    CHECK(a != LPF_INVALID_MEMSLOT && b != LPF_INVALID_MEMSLOT && a != b);
    CHECK_RC(lpf_register_local(ctx, &z, sizeof z, &c), LPF_ERR_OUT_OF_MEMORY);
    CHECK(c == LPF_INVALID_MEMSLOT);
    /* Deregistration is immediate and returns the slot to the pool. */
    CHECK_RC(lpf_deregister(ctx, a), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, x, sizeof x, &a), LPF_SUCCESS);

    /* Absurd sizes: out of memory, no crash, no effect. */
    CHECK_RC(lpf_resize_memory_register(ctx, SIZE_MAX), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_memory_register(ctx, SIZE_MAX / 10), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_message_queue(ctx, SIZE_MAX), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_message_queue(ctx, SIZE_MAX / 10), LPF_ERR_OUT_OF_MEMORY);

    /* Queue capacity 2 (set above, in force since the sync). A put or get counts once at its
       origin and once at its target, so a message to oneself takes both units: the next
       messages are past the capacity (checked: refused at the origin with no effect). */
    x[0] = (int)s + 1;
    CHECK_RC(lpf_put(ctx, a, 0, s, b, 0, sizeof(int), LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, a, 0, (s + 1) % p, b, sizeof(int), sizeof(int), LPF_MSG_DEFAULT), past);
    CHECK_RC(lpf_get(ctx, (s + 1) % p, b, 2 * sizeof(int), a, sizeof(int), sizeof(int),
                     LPF_MSG_DEFAULT), past);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(y[0] == (int)s + 1);
    /* checked: the refused put and get had no effect; else both moved */
    CHECK(y[1] == (checked ? 0 : (int)((s + p - 1) % p) + 1));
    CHECK(x[1] == (checked ? 0 : 100 + (int)((s + 1) % p)));

    /* The failed absurd resizes left the capacity at 2. */
    CHECK_RC(lpf_register_local(ctx, &z, sizeof z, &c), LPF_ERR_OUT_OF_MEMORY);

    /* The last resize before a sync wins. */
    CHECK_RC(lpf_resize_memory_register(ctx, 7), LPF_SUCCESS);
    CHECK_RC(lpf_resize_memory_register(ctx, 3), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &z, sizeof z, &c), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &z, sizeof z, &d), LPF_ERR_OUT_OF_MEMORY);

    CHECK_RC(lpf_deregister(ctx, c), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, a), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
}

int main(void) {
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS), LPF_SUCCESS);
    printf("resize_sync ok\n");
    return 0;
}
