//! The `extern "C"` functions of `lpf/mpi.h`, the weak `LPF_MPI_AUTO_INITIALIZE`, and the
//! load-time constructor.
//!
//! # Contract
//! 1. `LPF_MPI_AUTO_INITIALIZE` is a weak `const int` 1; a program that defines its own (0)
//!    overrides it, as with LPF.
//! 2. `lpf_mpi_initialize_with_mpicomm(comm, &init)` makes an init object for `lpf_hook` on the
//!    ranks of `comm` (MPI initialised by the caller; `comm` valid until `lpf_mpi_finalize`);
//!    `lpf_mpi_finalize(init)` releases it (NULL: no-op). NULL `init` pointer: `LPF_ERR_FATAL`.
//! 3. The constructor runs `crate::auto::start` when the library is loaded; no panic escapes.
//!    A static link gets it when the program refers to `LPF_MPI_AUTO_INITIALIZE` (every
//!    program that includes `lpf/mpi.h` does; others link with `-Wl,-u,LPF_MPI_AUTO_INITIALIZE`).

use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use sluice_bsp::mpi::rsmpi::ffi::MPI_Comm;
use sluice_lpf::consts::{ERR_FATAL, LpfCtx, LpfErr, SUCCESS};

// Rule 1: a weak data symbol (stable Rust cannot declare weak linkage). Rule 3: the
// constructor's `.init_array` entry sits in the same object file, so a static link that pulls
// the symbol in (`lpf/mpi.h` refers to it) gets the constructor too.
std::arch::global_asm!(
    ".pushsection .rodata.LPF_MPI_AUTO_INITIALIZE,\"a\",@progbits",
    ".weak LPF_MPI_AUTO_INITIALIZE",
    ".type LPF_MPI_AUTO_INITIALIZE,@object",
    ".size LPF_MPI_AUTO_INITIALIZE,4",
    ".balign 4",
    "LPF_MPI_AUTO_INITIALIZE:",
    ".long 1",
    ".popsection",
    ".pushsection .init_array,\"aw\",@init_array",
    ".balign 8",
    ".quad {ctor}",
    ".popsection",
    ctor = sym constructor,
);

unsafe extern "C" {
    static LPF_MPI_AUTO_INITIALIZE: c_int;
}

/// The value of `LPF_MPI_AUTO_INITIALIZE` this program links with (rule 1).
pub(crate) fn auto_initialize() -> bool {
    // SAFETY: the symbol is a 4-byte int, ours (above) or the program's, never written.
    unsafe { LPF_MPI_AUTO_INITIALIZE != 0 }
}

/// `lpf_mpi_initialize_with_mpicomm` (rule 2).
///
/// # Safety
/// `init` is NULL or writable; `comm` is a valid communicator of an initialised MPI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_mpi_initialize_with_mpicomm(
    comm: MPI_Comm,
    init: *mut LpfCtx,
) -> LpfErr {
    catch_unwind(AssertUnwindSafe(|| {
        if init.is_null() {
            return ERR_FATAL;
        }
        let handle = crate::register_init(comm);
        // SAFETY: `init` is non-NULL and writable by the contract.
        unsafe { init.write(LpfCtx(handle.cast::<c_void>())) };
        SUCCESS
    }))
    .unwrap_or(ERR_FATAL)
}

/// `lpf_mpi_finalize` (rule 2).
///
/// # Safety
/// `init` is NULL or came from `lpf_mpi_initialize_with_mpicomm` and is not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_mpi_finalize(init: LpfCtx) -> LpfErr {
    catch_unwind(AssertUnwindSafe(|| {
        crate::release_init(init.0.cast());
        SUCCESS
    }))
    .unwrap_or(ERR_FATAL)
}

extern "C" fn constructor() {
    let _ = catch_unwind(crate::auto::start);
}
