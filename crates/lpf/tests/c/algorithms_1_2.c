/*
 * The LPF paper's Algorithms 1 and 2 (Suijlen & Yzelman), as printed, joined
 * into one program: main launches the SPMD function with LPF_MAX_P processes
 * and returns its error code; the SPMD function fetches the matrix size from
 * PID 0 with a get on a slot registered globally in the same superstep,
 * checks the local dimensions and broadcasts an error by write-conflict
 * resolution. The only additions are the include lines for memcpy and
 * INT_MAX, and one printf per process of its global error code so that the
 * test can check that every process saw it.
 *
 * Usage: algorithms_1_2 M N   (exit 0 when good, 1 = ILLEGAL_INPUT)
 */
#include <lpf/core.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>

void spmd( lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args);
enum { OK = 0, ILLEGAL_INPUT = 1 };
int main( int argc, char **argv ) {
int in[2], out = OK;
lpf_args_t args = LPF_NO_ARGS;
if( argc != 3 ) { fprintf(stderr, "usage: %s M N\n", argv[0]); return 2; }
in[0] = atoi(argv[1]); in[1] = atoi(argv[2]);
args.input = &in[0]; args.input_size = sizeof(in);
args.output = &out; args.output_size = sizeof(out);
lpf_exec( LPF_ROOT, LPF_MAX_P, spmd, args );
return out;
}

void spmd( lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args ) {
lpf_memslot_t s_lerr, s_gerr, s_mdim; int M, N, mdim[2];
lpf_pid_t k, root_pid = 0; size_t offset = 0;
/* local and global error states */
int lerr = OK, gerr = OK;
/* get input */
mdim[0] = 0; mdim[1] = 0;
if( args.input_size != 0 )
memcpy( mdim, args.input, args.input_size );
/* allocate and activate LPF buffers */
lpf_resize_memory_register( ctx, 3 );
lpf_resize_message_queue( ctx, 2*p );
lpf_sync( ctx, LPF_SYNC_DEFAULT );
/* register memory areas for communication */
lpf_register_local( ctx, &lerr, sizeof(lerr), &s_lerr );
lpf_register_global( ctx, &gerr, sizeof(gerr), &s_gerr );
lpf_register_global( ctx, &mdim, sizeof(mdim), &s_mdim );
/* get global matrix size if we do not have it */
if( args.input_size == 0 )
lpf_get(ctx, root_pid, s_mdim, offset, s_mdim, offset,
sizeof(mdim), LPF_MSG_DEFAULT);
lpf_sync( ctx, LPF_SYNC_DEFAULT );
/* compute local matrix size */
M = (mdim[0]+(int)(p-s-1)) / (int)p;
N = mdim[1];
if(p > INT_MAX || M <= 0 || N <= 0) lerr = ILLEGAL_INPUT;
/* broadcast errors using write-conflict resolution */
if( lerr != OK ) for( k = 0; k < p; ++k )
lpf_put( ctx, s_lerr, offset, k, s_gerr, offset,
sizeof(int), LPF_MSG_DEFAULT );
lpf_sync( ctx, LPF_SYNC_DEFAULT );
if( gerr == OK ) { /* build matrix, do compute, ... */ }
/* clean up & write back error code */
lpf_deregister( ctx, s_lerr );
lpf_deregister( ctx, s_gerr );
lpf_deregister( ctx, s_mdim );
if( args.output_size == sizeof(int) )
memcpy( args.output, &gerr, args.output_size );
printf( "pid %u of %u: M=%d N=%d gerr=%d\n", s, p, M, N, gerr ); fflush( stdout );
}
