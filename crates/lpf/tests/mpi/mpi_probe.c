/* lpf_probe(LPF_ROOT) under the MPI engine: prints p and g, l at (p, 8 bytes). The test script
 * writes the cost tables these must come from (the MPI one, not the threads one) and compares
 * with the values it wrote; p is compared with the argument (the job's size). */
#include <lpf/core.h>
#include <lpf/mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s EXPECTED_P\n", argv[0]); return 2; }
    lpf_machine_t m = LPF_INVALID_MACHINE;
    CHECK_RC(lpf_probe(LPF_ROOT, &m), LPF_SUCCESS);
    CHECK(m.p == (lpf_pid_t)atoi(argv[1]) && m.free_p == m.p && m.g != NULL && m.l != NULL);
    printf("probe p=%u g=%.6e l=%.6e\n", m.p, m.g(m.p, 8, LPF_SYNC_DEFAULT),
           m.l(m.p, 8, LPF_SYNC_DEFAULT));
    return 0;
}
