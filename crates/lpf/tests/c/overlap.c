/*
 * Overlapping writes (CRCW, arbitrary order): after the sync the destination
 * must equal some serialisation of the overlapping messages. Three patterns
 * as in LPF's put/get_parallel_overlapping_{complete,pyramid,rooftiling}:
 * every process writes the whole area; process k writes [kB, N-kB); process
 * k writes [kB, kB+2B). Done with puts to every process and with gets from
 * every process.
 *
 * Check: each byte holds the id of a writer whose interval covers it (or the
 * initial 0 if none does); "w won at x" orders w after every other writer
 * covering x; those orders must have no cycle (a serialisation exists).
 */
#include <lpf/core.h>
#include <string.h>
#include "check.h"

enum { B = 64 * 1024, MAXP = 64 };

static void interval(int pattern, lpf_pid_t k, lpf_pid_t p, size_t n, size_t *lo, size_t *hi) {
    switch (pattern) {
    case 0: *lo = 0; *hi = n; break;
    case 1: *lo = k * (size_t)B; *hi = n - k * (size_t)B; break;
    default: *lo = k * (size_t)B; *hi = k * (size_t)B + 2 * (size_t)B; break;
    }
    (void)p;
}

static void check_serialisable(const unsigned char *d, int pattern, lpf_pid_t p, size_t n) {
    static unsigned char after[MAXP][MAXP];
    size_t cuts[2 * MAXP + 2];
    size_t ncuts = 0;
    memset(after, 0, sizeof after);
    /* The interval ends cut [0, n) into segments over which the set of writers is constant. */
    cuts[ncuts++] = 0;
    cuts[ncuts++] = n;
    for (lpf_pid_t k = 0; k < p; ++k) {
        size_t lo, hi;
        interval(pattern, k, p, n, &lo, &hi);
        cuts[ncuts++] = lo;
        cuts[ncuts++] = hi;
    }
    for (size_t i = 1; i < ncuts; ++i) /* insertion sort: at most 2p + 2 cuts */
        for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; --j) {
            size_t t = cuts[j]; cuts[j] = cuts[j - 1]; cuts[j - 1] = t;
        }
    for (size_t c = 0; c + 1 < ncuts; ++c) {
        size_t a = cuts[c], b = cuts[c + 1];
        if (a == b) continue;
        unsigned char covers[MAXP] = {0}, won[MAXP] = {0};
        int covered = 0;
        for (lpf_pid_t k = 0; k < p; ++k) {
            size_t lo, hi;
            interval(pattern, k, p, n, &lo, &hi);
            if (a >= lo && b <= hi) { covers[k] = 1; covered = 1; }
        }
        for (size_t x = a; x < b; ++x) {
            unsigned w = d[x];
            if (!covered) { CHECK(w == 0); continue; }
            CHECK(w >= 1 && w <= p && covers[w - 1]);
            won[w - 1] = 1;
        }
        /* "w won somewhere here" orders w after every other writer of this segment. */
        for (lpf_pid_t w = 0; w < p; ++w)
            if (won[w])
                for (lpf_pid_t k = 0; k < p; ++k)
                    if (k != w && covers[k]) after[w][k] = 1;
    }
    /* Transitive closure; a cycle means no serialisation explains the bytes. */
    for (lpf_pid_t m = 0; m < p; ++m)
        for (lpf_pid_t i = 0; i < p; ++i)
            for (lpf_pid_t j = 0; j < p; ++j)
                if (after[i][m] && after[m][j]) after[i][j] = 1;
    for (lpf_pid_t i = 0; i < p; ++i) CHECK(!after[i][i]);
}

void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    CHECK(p <= MAXP);
    size_t n = 2 * (size_t)p * B + 2 * (size_t)B;
    unsigned char *src = malloc(n), *dst = malloc(n);
    CHECK(src && dst);
    memset(src, (int)s + 1, n);
    lpf_memslot_t ssrc, sdst;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, src, n, &ssrc), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, dst, n, &sdst), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (int pattern = 0; pattern < 3; ++pattern) {
        size_t lo, hi;
        interval(pattern, s, p, n, &lo, &hi);
        /* puts: every process writes its interval into every process's dst */
        memset(dst, 0, n);
        CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
        for (lpf_pid_t k = 0; k < p; ++k)
            CHECK_RC(lpf_put(ctx, ssrc, lo, k, sdst, lo, hi - lo, LPF_MSG_DEFAULT), LPF_SUCCESS);
        CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
        check_serialisable(dst, pattern, p, n);
        /* gets: every process reads interval k from process k into its own dst */
        memset(dst, 0, n);
        for (lpf_pid_t k = 0; k < p; ++k) {
            size_t klo, khi;
            interval(pattern, k, p, n, &klo, &khi);
            CHECK_RC(lpf_get(ctx, k, ssrc, klo, sdst, klo, khi - klo, LPF_MSG_DEFAULT),
                     LPF_SUCCESS);
        }
        CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
        check_serialisable(dst, pattern, p, n);
    }
    free(src); free(dst);
}

int main(void) {
    CHECK_RC(lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS), LPF_SUCCESS);
    printf("overlap ok\n");
    return 0;
}
