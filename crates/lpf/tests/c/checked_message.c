/*
 * Checked-mode error messages (issue 16 item 13): under SLUICE_BSP_CHECKED=1 an erroneous call
 * returns its code as before and prints one line on stderr naming the primitive, the slot, pid
 * and offset it was given, and the rule broken. Argument: "pid" (a put to pid p), "bounds" (a
 * put past the end of the destination slot) or "overlap" (two processes write one byte).
 * Process 0 makes the erroneous call; the others only sync.
 */
#include <lpf/core.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static const char *what;

static void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    char buf[16] = {0};
    lpf_memslot_t slot = LPF_INVALID_MEMSLOT;
    CHECK_RC(lpf_resize_memory_register(ctx, 1), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, buf, sizeof buf, &slot), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    lpf_err_t rc = LPF_SUCCESS;
    if (strcmp(what, "pid") == 0) {
        if (s == 0) CHECK_RC(lpf_put(ctx, slot, 0, p, slot, 4, 8, LPF_MSG_DEFAULT), LPF_ERR_FATAL);
        rc = lpf_sync(ctx, LPF_SYNC_DEFAULT);
    } else if (strcmp(what, "bounds") == 0) {
        if (s == 0) CHECK_RC(lpf_put(ctx, slot, 12, 1 % p, slot, 0, 8, LPF_MSG_DEFAULT), LPF_ERR_FATAL);
        rc = lpf_sync(ctx, LPF_SYNC_DEFAULT);
    } else {
        if (s < 2) CHECK_RC(lpf_put(ctx, slot, 0, 0, slot, 0, 8, LPF_MSG_DEFAULT), LPF_SUCCESS);
        rc = lpf_sync(ctx, LPF_SYNC_DEFAULT);
    }
    printf("checked_message %s pid %u sync %s\n", what, (unsigned)s,
           rc == LPF_SUCCESS ? "ok" : rc == LPF_ERR_FATAL ? "fatal" : "other");
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    what = argv[1];
    lpf_err_t rc = lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS);
    printf("checked_message exec %s\n", rc == LPF_SUCCESS ? "ok" : "fatal");
    return 0;
}
