/*
 * lpf/mpi.h -- Sluice's LPF-compatible C ABI (LPF version 202000): the MPI engine extension.
 *
 * Declared by libsluice_lpf_mpi (crates/lpf-mpi), not by libsluice_lpf. Link with
 *   mpicc prog.c -Icrates/lpf/include -L<target>/release -lsluice_lpf_mpi
 * and run with mpirun.
 *
 * LPF_MPI_AUTO_INITIALIZE (weak, default 1): the library initialises MPI when it is loaded;
 * rank 0 runs main and lpf_exec(LPF_ROOT, ...) runs the SPMD function on every rank of the
 * job, while the other ranks wait inside the library and exit when rank 0 exits. A program
 * that initialises MPI itself and uses lpf_hook defines
 *   const int LPF_MPI_AUTO_INITIALIZE = 0;
 *
 * lpf_mpi_initialize_with_mpicomm(comm, &init) makes an init object for lpf_hook on the ranks
 * of comm (collective use: every rank of comm calls lpf_hook with it); comm must stay valid
 * until lpf_mpi_finalize(init). lpf_mpi_initialize_over_tcp is not provided.
 */
#ifndef LPFLIB_MPI_H
#define LPFLIB_MPI_H

#include <mpi.h>
#include "lpf/core.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const int LPF_MPI_AUTO_INITIALIZE;

/* Pulls the library's load-time initialisation into a static link (libsluice_lpf_mpi.a); a
 * program that does not include this header links with -Wl,-u,LPF_MPI_AUTO_INITIALIZE. */
#if defined(__GNUC__)
__attribute__((used)) static const int *const lpf_mpi_auto_initialize_ref_ = &LPF_MPI_AUTO_INITIALIZE;
#endif

lpf_err_t lpf_mpi_initialize_with_mpicomm( MPI_Comm comm, lpf_init_t * init );

lpf_err_t lpf_mpi_finalize( lpf_init_t init );

#ifdef __cplusplus
}
#endif

#endif /* LPFLIB_MPI_H */
