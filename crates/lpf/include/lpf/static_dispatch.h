/*
 * lpf/static_dispatch.h -- Sluice's LPF-compatible C ABI (LPF version 202000).
 *
 * LPF's headers all include this file. In LPF it can rename every symbol to
 * lpf_<engine>_<config>_<name> when LPF_CORE_STATIC_DISPATCH is defined, so that
 * several engines can be linked into one binary. libsluice_lpf exports only the
 * plain ("univ") names, so that renaming is refused here instead of producing
 * undefined symbols at link time.
 */
#ifndef LPFLIB_STATIC_DISPATCH_H
#define LPFLIB_STATIC_DISPATCH_H

#ifdef LPF_CORE_STATIC_DISPATCH
#error "sluice-lpf exports only the plain LPF names; LPF_CORE_STATIC_DISPATCH is not supported"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define _LPFLIB_API __attribute__((visibility("default")))
#define _LPFLIB_VAR __attribute__((visibility("default")))
#else
#define _LPFLIB_API
#define _LPFLIB_VAR
#endif

#endif /* LPFLIB_STATIC_DISPATCH_H */
