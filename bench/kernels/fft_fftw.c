/* Times FFTW's complex-to-complex out-of-place transform of length 2^K, in-process:
 *   fft_fftw K THREADS REPEAT [measure|estimate|patient] [WISDOM_FILE]
 * Plans with the given flag (planning is timed apart; with WISDOM_FILE, wisdom is imported
 * before and exported after planning, so later runs of the same size and threads skip the
 * measuring), fills the input with seeded values
 * (after planning: FFTW_MEASURE overwrites the arrays), runs fftw_execute once untimed (warm-up,
 * first touch of the output), then times REPEAT calls of fftw_execute one by one with
 * CLOCK_MONOTONIC. Prints one JSON line: n, threads, flags, plan_seconds, transform_seconds[].
 * Built by bench/kernels/fft: cc -O2 fft_fftw.c -lfftw3_threads -lfftw3 -lm -lpthread. */
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s K THREADS REPEAT [measure|estimate|patient] [WISDOM]\n", argv[0]);
        return 2;
    }
    int k = atoi(argv[1]), threads = atoi(argv[2]), repeat = atoi(argv[3]);
    const char *mode = argc > 4 ? argv[4] : "measure";
    unsigned flags = !strcmp(mode, "estimate") ? FFTW_ESTIMATE
                     : !strcmp(mode, "patient") ? FFTW_PATIENT
                                                : FFTW_MEASURE;
    long n = 1L << k;
    if (!fftw_init_threads()) return 1;
    fftw_plan_with_nthreads(threads);
    const char *wisdom = argc > 5 ? argv[5] : NULL;
    if (wisdom) fftw_import_wisdom_from_filename(wisdom);
    fftw_complex *in = fftw_malloc(sizeof(fftw_complex) * n);
    fftw_complex *out = fftw_malloc(sizeof(fftw_complex) * n);
    if (!in || !out) return 1;
    double t0 = now();
    fftw_plan plan = fftw_plan_dft_1d((int)n, in, out, FFTW_FORWARD, flags);
    double plan_s = now() - t0;
    if (!plan) return 1;
    if (wisdom) fftw_export_wisdom_to_filename(wisdom);
    unsigned long long s = 12345;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        in[i][0] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        in[i][1] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
    }
    fftw_execute(plan);
    printf("{\"n\": %ld, \"threads\": %d, \"flags\": \"FFTW_%s\", \"plan_seconds\": %.6f, "
           "\"version\": \"%s\", \"transform_seconds\": [",
           n, threads, !strcmp(mode, "estimate") ? "ESTIMATE" : !strcmp(mode, "patient") ? "PATIENT" : "MEASURE",
           plan_s, fftw_version);
    for (int r = 0; r < repeat; r++) {
        double t = now();
        fftw_execute(plan);
        printf("%s%.9f", r ? ", " : "", now() - t);
    }
    printf("]}\n");
    fftw_destroy_plan(plan);
    fftw_free(in);
    fftw_free(out);
    fftw_cleanup_threads();
    return 0;
}
