/* lpf_abort from one process ends the whole program with exit status 6. */
#include <lpf/core.h>
#include <lpf/abort.h>
#include "check.h"

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    if (s == p - 1) {
        lpf_abort(ctx);
        fprintf(stderr, "lpf_abort returned\n");
        _exit(1);
    }
    /* The others keep syncing; they are either ended by the abort or see FATAL. */
    for (;;)
        if (lpf_sync(ctx, LPF_SYNC_DEFAULT) != LPF_SUCCESS) return;
}

int main(void) {
    CHECK(LPF_HAS_ABORT != 0);
    lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS);
    fprintf(stderr, "lpf_exec returned after lpf_abort\n");
    return 1;
}
