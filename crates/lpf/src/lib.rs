//! sluice-lpf: the LPF C ABI (`lpf/core.h`, version 202000) over sluice-bsp.
//!
//! Programs written against Lightweight Parallel Foundations (Suijlen & Yzelman) compile against
//! `include/lpf/{core,abort,pthread}.h`, link with `-lsluice_lpf -lpthread -ldl -lm`, and run on
//! sluice-bsp's threads backend unchanged; or they link against an LPF stub and get this library
//! with `LD_PRELOAD`, the way LPF's own launcher swaps engines. The exported names are exactly
//! LPF's (`lpf.map`); the constants are exported data with LPF's values ([`consts`]); the
//! functions live in [`ffi`]; the environment (`LPF_MAX_PROCS`, `LPF_MAX_SECONDS_FOR_PROBE`) is
//! read in `machine`. `shared/specs/lpf-api.md` restates the interface, and
//! `crates/lpf/README.md` says which LPF behaviours are not mirrored.
//!
//! # Example (C)
//! ```c
//! #include <lpf/core.h>
//! void spmd(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
//!     lpf_resize_message_queue(ctx, 2); lpf_resize_memory_register(ctx, 1);
//!     lpf_sync(ctx, LPF_SYNC_DEFAULT);
//! }
//! int main(void) { return lpf_exec(LPF_ROOT, LPF_MAX_P, spmd, LPF_NO_ARGS); }
//! ```
//! The C acceptance tests are `tests/c/*.c`, run by `tests/run_c_tests.sh target/release`.
//!
//! # Modules
//! Private modules are named in code font; all but `machine` hold `unsafe` code.
//! - [`consts`]: LPF's constants (`LPF_ROOT`, `LPF_SUCCESS`, …) as exported data, and the C types.
//! - [`engine`]: the seam for another engine library (`sluice-lpf-mpi`: MPI), and the SPMD
//!   bodies of exec and hook.
//! - [`ffi`]: the `extern "C"` functions, each body inside `catch_unwind`.
//! - `ops`: the primitives that act on a context, as values, and `apply`, which runs one.
//! - `root`: `LPF_ROOT` as a section of one process on its own thread.
//! - `machine`: the root's processor count and `lpf_probe`'s cost functions (environment).

#![warn(missing_docs)]

pub mod consts;
pub mod engine;
pub mod ffi;
mod machine;
mod ops;
mod root;
