/*
 * A tiny sequential LPF stub (p = 1), like the library LPF programs are linked
 * against before an engine is swapped in with LD_PRELOAD. It exports the
 * same names as libsluice_lpf; run_c_tests.sh builds it, links dropin.c
 * against it, and runs the program with and without libsluice_lpf.so
 * preloaded. Only what a one-process run needs is implemented: puts and gets
 * are queued and copied at lpf_sync.
 */
#include <lpf/core.h>
#include <lpf/abort.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const lpf_err_t LPF_SUCCESS = 0;
const lpf_err_t LPF_ERR_OUT_OF_MEMORY = 1;
const lpf_err_t LPF_ERR_FATAL = 2;
const lpf_args_t LPF_NO_ARGS = {NULL, 0, NULL, 0, NULL, 0};
const lpf_t LPF_NONE = NULL;
const lpf_t LPF_ROOT = (lpf_t) "stub root";
const lpf_init_t LPF_INIT_NONE = NULL;
const lpf_sync_attr_t LPF_SYNC_DEFAULT = 0;
const lpf_msg_attr_t LPF_MSG_DEFAULT = 0;
const lpf_pid_t LPF_MAX_P = UINT_MAX;
const lpf_machine_t LPF_INVALID_MACHINE = {0, 0, NULL, NULL};
const lpf_memslot_t LPF_INVALID_MEMSLOT = SIZE_MAX;
const int LPF_HAS_ABORT = 0;

enum { MAX_SLOTS = 64, MAX_MSGS = 256 };
static char *slots[MAX_SLOTS];
static struct { char *dst; const char *src; size_t n; } msgs[MAX_MSGS];
static size_t nmsgs;
static char stub_ctx;

static double zero(lpf_pid_t p, size_t s, lpf_sync_attr_t a) { (void)p; (void)s; (void)a; return 0.0; }

lpf_err_t lpf_exec(lpf_t ctx, lpf_pid_t P, lpf_spmd_t spmd, lpf_args_t args) {
    (void)ctx; (void)P;
    spmd(&stub_ctx, 0, 1, args);
    return LPF_SUCCESS;
}
lpf_err_t lpf_hook(lpf_init_t init, lpf_spmd_t spmd, lpf_args_t args) {
    (void)init;
    spmd(&stub_ctx, 0, 1, args);
    return LPF_SUCCESS;
}
lpf_err_t lpf_rehook(lpf_t ctx, lpf_spmd_t spmd, lpf_args_t args) {
    (void)ctx;
    spmd(&stub_ctx, 0, 1, args);
    return LPF_SUCCESS;
}
static lpf_err_t reg(void *pointer, lpf_memslot_t *memslot) {
    for (size_t i = 0; i < MAX_SLOTS; ++i)
        if (slots[i] == NULL) { slots[i] = pointer ? pointer : (void *)&stub_ctx; *memslot = i; return LPF_SUCCESS; }
    return LPF_ERR_OUT_OF_MEMORY;
}
lpf_err_t lpf_register_global(lpf_t ctx, void *pointer, size_t size, lpf_memslot_t *memslot) {
    (void)ctx; (void)size;
    return reg(pointer, memslot);
}
lpf_err_t lpf_register_local(lpf_t ctx, void *pointer, size_t size, lpf_memslot_t *memslot) {
    (void)ctx; (void)size;
    return reg(pointer, memslot);
}
lpf_err_t lpf_deregister(lpf_t ctx, lpf_memslot_t memslot) {
    (void)ctx;
    slots[memslot] = NULL;
    return LPF_SUCCESS;
}
static lpf_err_t queue(char *dst, const char *src, size_t n) {
    if (nmsgs == MAX_MSGS) return LPF_ERR_OUT_OF_MEMORY;
    msgs[nmsgs].dst = dst; msgs[nmsgs].src = src; msgs[nmsgs].n = n; ++nmsgs;
    return LPF_SUCCESS;
}
lpf_err_t lpf_put(lpf_t ctx, lpf_memslot_t src_slot, size_t src_offset, lpf_pid_t dst_pid,
                  lpf_memslot_t dst_slot, size_t dst_offset, size_t size, lpf_msg_attr_t attr) {
    (void)ctx; (void)dst_pid; (void)attr;
    return queue(slots[dst_slot] + dst_offset, slots[src_slot] + src_offset, size);
}
lpf_err_t lpf_get(lpf_t ctx, lpf_pid_t src_pid, lpf_memslot_t src_slot, size_t src_offset,
                  lpf_memslot_t dst_slot, size_t dst_offset, size_t size, lpf_msg_attr_t attr) {
    (void)ctx; (void)src_pid; (void)attr;
    return queue(slots[dst_slot] + dst_offset, slots[src_slot] + src_offset, size);
}
lpf_err_t lpf_sync(lpf_t ctx, lpf_sync_attr_t attr) {
    (void)ctx; (void)attr;
    for (size_t i = 0; i < nmsgs; ++i) memmove(msgs[i].dst, msgs[i].src, msgs[i].n);
    nmsgs = 0;
    return LPF_SUCCESS;
}
lpf_err_t lpf_probe(lpf_t ctx, lpf_machine_t *params) {
    (void)ctx;
    params->p = 1; params->free_p = 1; params->g = zero; params->l = zero;
    return LPF_SUCCESS;
}
lpf_err_t lpf_resize_memory_register(lpf_t ctx, size_t max_regs) {
    (void)ctx;
    return max_regs <= MAX_SLOTS ? LPF_SUCCESS : LPF_ERR_OUT_OF_MEMORY;
}
lpf_err_t lpf_resize_message_queue(lpf_t ctx, size_t max_msgs) {
    (void)ctx;
    return max_msgs <= MAX_MSGS ? LPF_SUCCESS : LPF_ERR_OUT_OF_MEMORY;
}
lpf_err_t lpf_abort(lpf_t ctx) { (void)ctx; return LPF_SUCCESS; }
