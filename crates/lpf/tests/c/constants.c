/* The exported constants and macros have LPF's values (shared/specs/lpf-api.md §1.3). */
#include <lpf/core.h>
#include <lpf/abort.h>
#include <lpf/pthread.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

#if _LPF_VERSION != 202000L
#error "_LPF_VERSION must be 202000L"
#endif
#ifndef _LPF_INCLUSIVE_MEMORY
#error "_LPF_INCLUSIVE_MEMORY must be defined"
#endif

int main(void) {
    static const unsigned char zero[sizeof(lpf_args_t)];
    static const unsigned char zero_machine[sizeof(lpf_machine_t)];
    CHECK(LPF_SUCCESS == 0);
    CHECK(LPF_ERR_OUT_OF_MEMORY == 1);
    CHECK(LPF_ERR_FATAL == 2);
    CHECK(LPF_NONE == NULL);
    CHECK(LPF_ROOT != NULL);
    CHECK(LPF_INIT_NONE == NULL);
    CHECK(LPF_SYNC_DEFAULT == 0);
    CHECK(LPF_MSG_DEFAULT == 0);
    CHECK(LPF_MAX_P == UINT_MAX);
    CHECK(LPF_INVALID_MEMSLOT == SIZE_MAX);
    CHECK(LPF_HAS_ABORT != 0);
    CHECK(memcmp(&LPF_NO_ARGS, zero, sizeof zero) == 0);
    CHECK(LPF_NO_ARGS.input == NULL && LPF_NO_ARGS.output == NULL);
    CHECK(LPF_NO_ARGS.f_symbols == NULL && LPF_NO_ARGS.f_size == 0);
    CHECK(memcmp(&LPF_INVALID_MACHINE, zero_machine, sizeof zero_machine) == 0);
    CHECK(LPF_INVALID_MACHINE.g == NULL && LPF_INVALID_MACHINE.l == NULL);
    CHECK(sizeof(lpf_pid_t) == sizeof(unsigned));
    CHECK(sizeof(lpf_memslot_t) == sizeof(size_t));
    CHECK(sizeof(lpf_args_t) == 6 * sizeof(void *));
    printf("constants ok\n");
    return 0;
}
