/*
 * put and get between all pairs, with offsets: a put is complete (and its
 * source may be reused) only after the sync; registration of a global slot
 * is usable in the superstep after, and a put naming it in the same
 * superstep is resolved at that sync; zero-size registrations are valid.
 */
#include <lpf/core.h>
#include <string.h>
#include "check.h"

enum { W = 16 }; /* ints per peer */

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    int *src = malloc(sizeof(int) * W * p), *dst = malloc(sizeof(int) * W * p),
        *back = malloc(sizeof(int) * W * p);
    CHECK(src && dst && back);
    for (size_t i = 0; i < (size_t)W * p; ++i) { src[i] = (int)(s * 100000 + i); dst[i] = -1; back[i] = -1; }
    lpf_memslot_t ssrc, sdst, sback, szero;
    CHECK_RC(lpf_resize_memory_register(ctx, 4), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, src, sizeof(int) * W * p, &ssrc), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, dst, sizeof(int) * W * p, &sdst), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, back, sizeof(int) * W * p, &sback), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, NULL, 0, &szero), LPF_SUCCESS);
    /* Put block k of src to process k at block s of its dst: same superstep as the registration. */
    for (lpf_pid_t k = 0; k < p; ++k)
        CHECK_RC(lpf_put(ctx, ssrc, k * W * sizeof(int), k, sdst, s * W * sizeof(int),
                         W * sizeof(int), LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (lpf_pid_t k = 0; k < p; ++k)
        for (int i = 0; i < W; ++i)
            CHECK(dst[k * W + i] == (int)(k * 100000 + s * W + i));
    /* Get block s of every dst back into the local slot. */
    for (lpf_pid_t k = 0; k < p; ++k)
        CHECK_RC(lpf_get(ctx, k, sdst, s * W * sizeof(int), sback, k * W * sizeof(int),
                         W * sizeof(int), LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (lpf_pid_t k = 0; k < p; ++k)
        for (int i = 0; i < W; ++i)
            CHECK(back[k * W + i] == (int)(s * 100000 + k * W + i));
    /* Zero-byte messages are legal. */
    CHECK_RC(lpf_put(ctx, ssrc, 0, (s + 1) % p, szero, 0, 0, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, szero), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, sback), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, sdst), LPF_SUCCESS);
    CHECK_RC(lpf_deregister(ctx, ssrc), LPF_SUCCESS);
    free(src); free(dst); free(back);
}

int main(void) {
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS), LPF_SUCCESS);
    /* A sequential program may also run a section of one. */
    CHECK_RC(lpf_exec(LPF_ROOT, 1, spmd, LPF_NO_ARGS), LPF_SUCCESS);
    printf("put_get ok\n");
    return 0;
}
