/*
 * lpf_probe: LPF_ROOT describes the whole machine (p = LPF_MAX_PROCS), a
 * section reports the same p (the runtime's total) and free_p == 1 when full; g and l are functions whose
 * results are bitwise identical on all processes and never larger for a
 * non-default attribute. With argument "measured" (run under
 * LPF_MAX_SECONDS_FOR_PROBE > 0) both must be > 0; otherwise >= 0.
 *
 * Prints one line "probe: p=.. free_p=.. g=.. l=.." for the report.
 */
#include <lpf/core.h>
#include <string.h>
#include <stdint.h>
#include "check.h"

static int measured;
static lpf_pid_t root_p; /* lpf_probe(LPF_ROOT).p, set by main before the execs */

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(ctx, &m), LPF_SUCCESS);
    CHECK(m.p == root_p);
    CHECK(m.free_p >= 1 && (p < root_p || m.free_p == 1));
    CHECK(m.g != NULL && m.l != NULL);
    double mine[2] = {m.g(p, 8, LPF_SYNC_DEFAULT), m.l(p, 8, LPF_SYNC_DEFAULT)};
    double *all = calloc(2 * (size_t)p, sizeof(double));
    CHECK(all != NULL);
    lpf_memslot_t src, dst;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, p + 1), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, mine, sizeof mine, &src), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, all, 2 * (size_t)p * sizeof(double), &dst), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, src, 0, 0, dst, 2 * s * sizeof(double), sizeof mine, LPF_MSG_DEFAULT),
             LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    if (s == 0)
        for (lpf_pid_t k = 0; k < p; ++k)
            CHECK(memcmp(&all[2 * k], mine, sizeof mine) == 0); /* bitwise identical */
    free(all);
}

int main(int argc, char **argv) {
    measured = argc > 1 && strcmp(argv[1], "measured") == 0;
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(LPF_ROOT, &m), LPF_SUCCESS);
    const char *env = getenv("LPF_MAX_PROCS");
    if (env != NULL) CHECK(m.p == (lpf_pid_t)strtoul(env, NULL, 10));
    CHECK(m.p >= 1 && m.free_p == m.p);
    CHECK(m.g != NULL && m.l != NULL);
    for (lpf_pid_t q = 1; q <= m.p; ++q) {
        size_t sizes[3] = {1, 64, 1 << 20};
        for (int i = 0; i < 3; ++i) {
            double g = m.g(q, sizes[i], LPF_SYNC_DEFAULT), l = m.l(q, sizes[i], LPF_SYNC_DEFAULT);
            CHECK(g >= 0.0 && l >= 0.0);
            if (measured) CHECK(g > 0.0 && l > 0.0);
            CHECK(m.g(q, sizes[i], 1) <= g); /* a non-default attribute never costs more */
            CHECK(m.l(q, sizes[i], 1) <= l);
        }
    }
    printf("probe: p=%u free_p=%u g=%.3e s/byte l=%.3e s (min_msg_size 8)\n", m.p, m.free_p,
           m.g(m.p, 8, LPF_SYNC_DEFAULT), m.l(m.p, 8, LPF_SYNC_DEFAULT));
    root_p = m.p;
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS), LPF_SUCCESS);
    /* A section smaller than the machine still reports the whole machine's p. */
    if (m.p > 1) CHECK_RC(lpf_exec(LPF_ROOT, m.p - 1, spmd, LPF_NO_ARGS), LPF_SUCCESS);
    printf("probe ok\n");
    return 0;
}
