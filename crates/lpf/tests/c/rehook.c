/*
 * lpf_rehook starts a fresh SPMD section on the same processes with a new,
 * empty context (no slots, no queue capacity); the outer context and its
 * registrations are intact afterwards. Also: f_symbols reach every process,
 * input/output of rehook are each process's own.
 */
#include <lpf/core.h>
#include "check.h"

static int marker(void) { return 7; }

void inner(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    lpf_memslot_t a;
    int v = (int)s, w = -1;
    CHECK(args.input_size == sizeof(int) && *(const int *)args.input == (int)s);
    CHECK(args.f_size == 1 && ((int (*)(void))(void (*)(void))args.f_symbols[0])() == 7);
    /* Fresh context: nothing reserved. */
    CHECK_RC(lpf_register_local(ctx, &v, sizeof v, &a), LPF_ERR_OUT_OF_MEMORY);
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    lpf_memslot_t b;
    CHECK_RC(lpf_register_local(ctx, &v, sizeof v, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, &w, sizeof w, &b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, a, 0, (s + 1) % p, b, 0, sizeof v, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(w == (int)((s + p - 1) % p));
    *(int *)args.output = w * 10;
}

void outer(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    int slot_data[2] = {0, 0};
    lpf_memslot_t g;
    CHECK_RC(lpf_resize_memory_register(ctx, 1), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, slot_data, sizeof slot_data, &g), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);

    int in = (int)s, out = -1;
    lpf_func_t fs[1] = {(lpf_func_t)(void (*)(void))marker};
    lpf_args_t a = {&in, sizeof in, &out, sizeof out, fs, 1};
    CHECK_RC(lpf_rehook(ctx, inner, a), LPF_SUCCESS);
    CHECK(out == (int)((s + p - 1) % p) * 10);

    /* The outer context is as it was: its slot and capacities still work. */
    slot_data[0] = (int)s + 100;
    CHECK_RC(lpf_get(ctx, (s + 1) % p, g, 0, g, sizeof(int), sizeof(int), LPF_MSG_DEFAULT),
             LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(slot_data[1] == (int)((s + 1) % p) + 100);
}

int main(void) {
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, outer, LPF_NO_ARGS), LPF_SUCCESS);
    printf("rehook ok\n");
    return 0;
}
