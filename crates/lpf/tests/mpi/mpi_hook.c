/* lpf_hook inside an MPI job the program made itself: LPF_MPI_AUTO_INITIALIZE is 0, every rank
 * runs main, MPI_Comm_split makes two sub-communicators (even and odd world ranks), and an SPMD
 * function runs on each through lpf_mpi_initialize_with_mpicomm + lpf_hook. Each process
 * all-gathers the world ranks of its section with puts; the result is checked against
 * MPI_Allgather on the same sub-communicator (the independent truth), and pid/p against
 * MPI_Comm_rank/size. Each rank prints one line. */
#include <lpf/core.h>
#include <lpf/mpi.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

const int LPF_MPI_AUTO_INITIALIZE = 0;

struct in { int world_rank; int sub_rank; int sub_size; const int *truth; };

static void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    const struct in *in = args.input;
    CHECK(args.input_size == sizeof *in);
    CHECK((int)s == in->sub_rank && (int)p == in->sub_size);
    int *all = calloc(p, sizeof *all);
    CHECK(all != NULL);
    int me = in->world_rank;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    lpf_memslot_t src, dst;
    CHECK_RC(lpf_register_local(ctx, &me, sizeof me, &src), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, all, p * sizeof *all, &dst), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (lpf_pid_t q = 0; q < p; ++q)
        CHECK_RC(lpf_put(ctx, src, 0, q, dst, s * sizeof *all, sizeof me, LPF_MSG_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (lpf_pid_t q = 0; q < p; ++q) CHECK(all[q] == in->truth[q]);
    free(all);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
    struct in in = { rank, 0, 0, NULL };
    MPI_Comm_rank(sub, &in.sub_rank);
    MPI_Comm_size(sub, &in.sub_size);
    int *truth = malloc(in.sub_size * sizeof *truth);
    CHECK(truth != NULL);
    MPI_Allgather(&rank, 1, MPI_INT, truth, 1, MPI_INT, sub);
    in.truth = truth;
    lpf_init_t init = LPF_INIT_NONE;
    CHECK_RC(lpf_mpi_initialize_with_mpicomm(sub, &init), LPF_SUCCESS);
    lpf_args_t args = { &in, sizeof in, NULL, 0, NULL, 0 };
    CHECK_RC(lpf_hook(init, spmd, args), LPF_SUCCESS);
    CHECK_RC(lpf_hook(init, spmd, args), LPF_SUCCESS); /* reusable until finalised */
    CHECK_RC(lpf_mpi_finalize(init), LPF_SUCCESS);
    printf("mpi_hook rank=%d color=%d sub=%d/%d ok\n", rank, rank % 2, in.sub_rank, in.sub_size);
    fflush(stdout);
    free(truth);
    MPI_Comm_free(&sub);
    MPI_Finalize();
    return 0;
}
