/* A plain LPF program under LPF_MPI_AUTO_INITIALIZE (the default): only rank 0 runs main,
 * lpf_exec(LPF_ROOT, LPF_MAX_P, ...) runs spmd on every rank of the mpirun job.
 * Usage: mpi_exec EXPECTED_P N. Each process fills N words with a formula of its pid, puts
 * them to its right neighbour, gets its left neighbour's, and puts one checksum into PID 0's
 * array; every received value is checked against the formula computed locally, and PID 0
 * compares the checksum array with the sum of the formula. main checks p (lpf_probe's and the
 * section's) against EXPECTED_P and that the output reached it, and prints one line.
 * With LPF_TEST_DIE=1 in the environment (rank 0's main does not reach the other ranks'
 * memory, so not an argument), the last process ends its OS process (_exit(3)) in the middle
 * of the section: the job must end non-zero, no rank hanging. */
#include <lpf/core.h>
#include <lpf/mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"

struct out { lpf_pid_t p; uint64_t total; int ok; lpf_pid_t probe_p; };


static uint64_t word(lpf_pid_t s, size_t i) { return (uint64_t)s * 1000003u + i * 7u + 1u; }

static void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    size_t n = 0;
    if (s == 0) { CHECK(args.input_size == sizeof n); n = *(const size_t *)args.input; }
    else { CHECK(args.input == NULL && args.output == NULL); }
    /* lpf_probe's p is the runtime's total (every rank), also in a section of fewer. */
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(ctx, &m), LPF_SUCCESS);
    CHECK(m.p >= p && m.free_p >= 1);
    if (s == 0) ((struct out *)args.output)->probe_p = m.p;
    CHECK_RC(lpf_resize_memory_register(ctx, 6), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p + 4), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);

    /* Broadcast n from PID 0 with gets. */
    lpf_memslot_t nslot;
    CHECK_RC(lpf_register_global(ctx, &n, sizeof n, &nslot), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    if (s != 0) CHECK_RC(lpf_get(ctx, 0, nslot, 0, nslot, 0, sizeof n, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK(n > 0 && n < 1u << 24);
    /* f_symbols reach every process, translated: a static function and a NULL entry. */
    CHECK(args.f_size == 2 && args.f_symbols != NULL && args.f_symbols[1] == NULL);
    uint64_t (*w)(lpf_pid_t, size_t) = 
        (uint64_t (*)(lpf_pid_t, size_t))(void (*)(void))args.f_symbols[0];
    CHECK(w(s, 5) == word(s, 5));
    if (getenv("LPF_TEST_DIE") != NULL && s == p - 1) { fflush(NULL); _exit(3); }

    uint64_t *mine = malloc(n * sizeof *mine), *right = calloc(n, sizeof *right),
             *left = calloc(n, sizeof *left), *sums = calloc(p, sizeof *sums);
    CHECK(mine && right && left && sums);
    uint64_t my_sum = 0;
    for (size_t i = 0; i < n; ++i) { mine[i] = word(s, i); my_sum += mine[i]; }
    lpf_memslot_t ms, rs, ls, ss, local;
    CHECK_RC(lpf_register_global(ctx, mine, n * sizeof *mine, &ms), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, right, n * sizeof *right, &rs), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, sums, p * sizeof *sums, &ss), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, left, n * sizeof *left, &ls), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &my_sum, sizeof my_sum, &local), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    lpf_pid_t r = (s + 1) % p, l = (s + p - 1) % p;
    CHECK_RC(lpf_put(ctx, ms, 0, r, rs, 0, n * sizeof *mine, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_get(ctx, l, ms, 0, ls, 0, n * sizeof *left, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_put(ctx, local, 0, 0, ss, s * sizeof *sums, sizeof my_sum, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (size_t i = 0; i < n; ++i) {
        CHECK(right[i] == word(l, i));  /* my left neighbour put into my `right` */
        CHECK(left[i] == word(l, i));
    }
    if (s == 0) {
        struct out *o = args.output;
        CHECK(args.output_size == sizeof *o);
        uint64_t total = 0, expect = 0;
        for (lpf_pid_t q = 0; q < p; ++q) {
            uint64_t e = 0;
            for (size_t i = 0; i < n; ++i) e += word(q, i);
            CHECK(sums[q] == e);
            total += sums[q];
            expect += e;
        }
        o->p = p; o->total = total; o->ok = total == expect;
    }
    CHECK_RC(lpf_deregister(ctx, local), LPF_SUCCESS);
    free(mine); free(right); free(left); free(sums);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s EXPECTED_P N\n", argv[0]); return 2; }
    lpf_pid_t want = (lpf_pid_t)atoi(argv[1]);
    size_t n = (size_t)atol(argv[2]);
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(LPF_ROOT, &m), LPF_SUCCESS);
    CHECK(m.p == want);
    struct out o = { 0, 0, 0, 0 };
    lpf_func_t funcs[2] = { (lpf_func_t)(void (*)(void))word, NULL };
    lpf_args_t args = { &n, sizeof n, &o, sizeof o, funcs, 2 };
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, args), LPF_SUCCESS);
    CHECK(o.p == want && o.ok && o.probe_p == want);
    /* A second exec on fewer processes: the parked ranks serve more than one. */
    o.p = 0; o.ok = 0; o.probe_p = 0;
    lpf_pid_t fewer = want > 1 ? want - 1 : 1;
    CHECK_RC(lpf_exec(LPF_ROOT, fewer, spmd, args), LPF_SUCCESS);
    CHECK(o.p == fewer && o.ok && o.probe_p == want);
    printf("mpi_exec main pid=%ld p=%u total=%llu ok\n", (long)getpid(), m.p,
           (unsigned long long)o.total);
    return 0;
}
