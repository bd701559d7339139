/*
 * lpf/core.h -- Sluice's LPF-compatible C ABI (LPF version 202000).
 *
 * The twelve LPF core primitives, their types and their constants, with the
 * names, argument order and values of LPF's reference headers, so that LPF
 * programs compile against this header and link against libsluice_lpf
 * (-lsluice_lpf -lpthread -ldl -lm) unchanged, or run with libsluice_lpf.so
 * preloaded over an LPF stub or engine.
 *
 * The constants are link-time objects exported by the library, not macros:
 * they cannot appear in case labels or static initialisers. Only
 * _LPF_VERSION and _LPF_INCLUSIVE_MEMORY are macros.
 *
 * Semantics (see crates/lpf/README.md and shared/specs/lpf-api.md):
 *  - put/get are queued and complete at the next lpf_sync;
 *  - lpf_resize_memory_register / lpf_resize_message_queue take effect at the
 *    next lpf_sync; a put/get counts once at its origin and once at its target
 *    (the origin end is checked at the call, the target end only by the
 *    checked backend, SLUICE_BSP_CHECKED=1, at the sync);
 *  - lpf_register_global slots are usable after the next lpf_sync (a put/get
 *    naming one in the same superstep is resolved at that sync);
 *  - over-capacity registrations, puts and gets, and absurd resizes, return
 *    LPF_ERR_OUT_OF_MEMORY and have no effect;
 *  - a peer that left its SPMD function early makes the others' lpf_sync and
 *    the spawning lpf_exec/lpf_hook return LPF_ERR_FATAL, never deadlock.
 */
#ifndef LPFLIB_CORE_H
#define LPFLIB_CORE_H

#include "lpf/static_dispatch.h"

#include <limits.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The LPF API version this header and library implement. */
#define _LPF_VERSION 202000L

/** Process 0 of an lpf_exec shares the caller's address space (threads engine). */
#define _LPF_INCLUSIVE_MEMORY 202000L

/** An LPF context. Valid values: LPF_ROOT, or the ctx handed to an SPMD function. */
typedef void * lpf_t;

/** A process identifier or a number of processes. */
typedef unsigned int lpf_pid_t;

/** A function symbol that may be broadcast through lpf_args_t. */
typedef void (*lpf_func_t)();

/** Arguments to an SPMD section. input/output are valid on PID 0 of an lpf_exec only. */
typedef struct lpf_args {
    const void * input;
    size_t input_size;
    void * output;
    size_t output_size;
    const lpf_func_t * f_symbols;
    size_t f_size;
} lpf_args_t;

/** Error codes: LPF_SUCCESS, LPF_ERR_OUT_OF_MEMORY or LPF_ERR_FATAL. */
typedef int lpf_err_t;

/** Opaque bootstrap handle for lpf_hook (see lpf/pthread.h). */
typedef void * lpf_init_t;

/** Attribute of lpf_sync; only LPF_SYNC_DEFAULT is defined. */
typedef int lpf_sync_attr_t;

/** Attribute of lpf_put/lpf_get; only LPF_MSG_DEFAULT is defined. */
typedef int lpf_msg_attr_t;

/** A registered memory slot. */
typedef size_t lpf_memslot_t;

/** BSP machine parameters: g in seconds per byte, l in seconds. */
typedef struct lpf_machine {
    lpf_pid_t p;
    lpf_pid_t free_p;
    double (*g)( lpf_pid_t p, size_t min_msg_size, lpf_sync_attr_t attr );
    double (*l)( lpf_pid_t p, size_t min_msg_size, lpf_sync_attr_t attr );
} lpf_machine_t;

/** An SPMD function. */
typedef void (*lpf_spmd_t)( const lpf_t ctx, const lpf_pid_t pid,
        const lpf_pid_t nprocs, const lpf_args_t args );

extern _LPFLIB_VAR const lpf_args_t LPF_NO_ARGS;
extern _LPFLIB_VAR const lpf_err_t LPF_SUCCESS;
extern _LPFLIB_VAR const lpf_err_t LPF_ERR_OUT_OF_MEMORY;
extern _LPFLIB_VAR const lpf_err_t LPF_ERR_FATAL;
extern _LPFLIB_VAR const lpf_t LPF_NONE;
extern _LPFLIB_VAR const lpf_t LPF_ROOT;
extern _LPFLIB_VAR const lpf_init_t LPF_INIT_NONE;
extern _LPFLIB_VAR const lpf_sync_attr_t LPF_SYNC_DEFAULT;
extern _LPFLIB_VAR const lpf_msg_attr_t LPF_MSG_DEFAULT;
extern _LPFLIB_VAR const lpf_pid_t LPF_MAX_P;
extern _LPFLIB_VAR const lpf_machine_t LPF_INVALID_MACHINE;
extern _LPFLIB_VAR const lpf_memslot_t LPF_INVALID_MEMSLOT;

extern _LPFLIB_API
lpf_err_t lpf_exec( lpf_t ctx, lpf_pid_t P, lpf_spmd_t spmd, lpf_args_t args );

extern _LPFLIB_API
lpf_err_t lpf_hook( lpf_init_t init, lpf_spmd_t spmd, lpf_args_t args );

extern _LPFLIB_API
lpf_err_t lpf_rehook( lpf_t ctx, lpf_spmd_t spmd, lpf_args_t args );

extern _LPFLIB_API
lpf_err_t lpf_register_global( lpf_t ctx, void * pointer, size_t size,
        lpf_memslot_t * memslot );

extern _LPFLIB_API
lpf_err_t lpf_register_local( lpf_t ctx, void * pointer, size_t size,
        lpf_memslot_t * memslot );

extern _LPFLIB_API
lpf_err_t lpf_deregister( lpf_t ctx, lpf_memslot_t memslot );

extern _LPFLIB_API
lpf_err_t lpf_put( lpf_t ctx, lpf_memslot_t src_slot, size_t src_offset,
        lpf_pid_t dst_pid, lpf_memslot_t dst_slot, size_t dst_offset,
        size_t size, lpf_msg_attr_t attr );

extern _LPFLIB_API
lpf_err_t lpf_get( lpf_t ctx, lpf_pid_t src_pid, lpf_memslot_t src_slot,
        size_t src_offset, lpf_memslot_t dst_slot, size_t dst_offset,
        size_t size, lpf_msg_attr_t attr );

extern _LPFLIB_API
lpf_err_t lpf_sync( lpf_t ctx, lpf_sync_attr_t attr );

extern _LPFLIB_API
lpf_err_t lpf_probe( lpf_t ctx, lpf_machine_t * params );

extern _LPFLIB_API
lpf_err_t lpf_resize_memory_register( lpf_t ctx, size_t max_regs );

extern _LPFLIB_API
lpf_err_t lpf_resize_message_queue( lpf_t ctx, size_t max_msgs );

#ifdef __cplusplus
}
#endif

#endif /* LPFLIB_CORE_H */
