/*
 * lpf/abort.h -- Sluice's LPF-compatible C ABI (LPF version 202000).
 *
 * LPF_HAS_ABORT is non-zero: lpf_abort never returns; it ends the whole
 * program with exit status 6 (as LPF's pthread engine does with quick_exit(6)).
 */
#ifndef LPFLIB_ABORT_H
#define LPFLIB_ABORT_H

#include "lpf/core.h"

#ifdef __cplusplus
extern "C" {
#endif

extern _LPFLIB_VAR const int LPF_HAS_ABORT;

extern _LPFLIB_API
lpf_err_t lpf_abort( lpf_t ctx );

#ifdef __cplusplus
}
#endif

#endif /* LPFLIB_ABORT_H */
