/* Shared by the C tests of sluice-lpf: a failed CHECK prints where and exits 1. */
#ifndef SLUICE_LPF_TEST_CHECK_H
#define SLUICE_LPF_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(cond) do { \
    if (!(cond)) { \
        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        fflush(NULL); \
        _exit(1); \
    } \
} while (0)

#define CHECK_RC(call, expected) do { \
    lpf_err_t check_rc_ = (call); \
    if (check_rc_ != (expected)) { \
        fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, \
                #call, (int)check_rc_, (int)(expected)); \
        fflush(NULL); \
        _exit(1); \
    } \
} while (0)

#endif
