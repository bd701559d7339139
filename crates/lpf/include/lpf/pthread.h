/*
 * lpf/pthread.h -- Sluice's LPF-compatible C ABI (LPF version 202000).
 *
 * Engine extension for lpf_hook from existing threads. Each of nprocs
 * threads of one process calls lpf_pthread_initialize with its own pid in
 * [0, nprocs); the call is collective and returns when all have arrived.
 * The resulting init object may be passed to lpf_hook any number of times
 * (collectively, by the same threads) until lpf_pthread_finalize.
 */
#ifndef LPFLIB_PTHREAD_H
#define LPFLIB_PTHREAD_H

#include "lpf/core.h"

#ifdef __cplusplus
extern "C" {
#endif

extern _LPFLIB_API
lpf_err_t lpf_pthread_initialize( lpf_pid_t pid, lpf_pid_t nprocs,
        lpf_init_t * init );

extern _LPFLIB_API
lpf_err_t lpf_pthread_finalize( lpf_init_t init );

#ifdef __cplusplus
}
#endif

#endif /* LPFLIB_PTHREAD_H */
