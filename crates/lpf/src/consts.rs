//! LPF's types and exported constants, with the C layout of `include/lpf/core.h`.
//!
//! # Contract
//! 1. Every constant of `lpf-api.md` §1.3 is an exported data symbol with exactly LPF's name and
//!    the value every shipped LPF engine uses: `LPF_SUCCESS` 0, `LPF_ERR_OUT_OF_MEMORY` 1,
//!    `LPF_ERR_FATAL` 2, `LPF_MAX_P` = `UINT_MAX`, `LPF_INVALID_MEMSLOT` = `SIZE_MAX`, a non-NULL
//!    `LPF_ROOT`, NULL `LPF_NONE`/`LPF_INIT_NONE`, all-zero `LPF_NO_ARGS`/`LPF_INVALID_MACHINE`,
//!    `LPF_HAS_ABORT` 2 (as LPF's pthread engine).
//! 2. The library never compares a context with the *address* of `LPF_ROOT`, only with its value
//!    [`root()`]: a non-PIE program copies data symbols into itself (copy relocations), so the
//!    address it sees differs from ours while the value is the same.

use std::ffi::{c_int, c_uint, c_void};

/// `lpf_err_t`.
pub type LpfErr = c_int;
/// `lpf_pid_t`.
pub type LpfPid = c_uint;
/// `lpf_memslot_t`.
pub type LpfMemslot = usize;
/// `lpf_sync_attr_t`.
pub type LpfSyncAttr = c_int;
/// `lpf_msg_attr_t`.
pub type LpfMsgAttr = c_int;
/// `lpf_func_t`: `void (*)()`, possibly NULL.
pub type LpfFunc = Option<unsafe extern "C" fn()>;
/// `lpf_spmd_t`, possibly NULL.
pub type LpfSpmd = Option<unsafe extern "C" fn(LpfCtx, LpfPid, LpfPid, LpfArgs)>;
/// The type of `lpf_machine_t.g` and `.l`: seconds (per byte) for (p, min message size, attr).
pub type CostFn = extern "C" fn(LpfPid, usize, LpfSyncAttr) -> f64;

/// `lpf_t` (and `lpf_init_t`): an opaque pointer.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpfCtx(pub *mut c_void);

// SAFETY: an `LpfCtx` is an opaque token; this crate never dereferences one without first finding
// it in its own tables (ctx.rs), so sharing the bits between threads is harmless.
unsafe impl Sync for LpfCtx {}
// SAFETY: as for `Sync`.
unsafe impl Send for LpfCtx {}

/// `lpf_args_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LpfArgs {
    /// Input bytes (PID 0 of an exec only).
    pub input: *const c_void,
    /// Length of `input` in bytes.
    pub input_size: usize,
    /// Output bytes (PID 0 of an exec only).
    pub output: *mut c_void,
    /// Length of `output` in bytes.
    pub output_size: usize,
    /// Function symbols, valid on every process.
    pub f_symbols: *const LpfFunc,
    /// Number of `f_symbols`.
    pub f_size: usize,
}

// SAFETY: `LpfArgs` only carries the caller's pointers to the SPMD function; this crate never
// reads or writes through them (the C program does), so the struct may cross threads: LPF's
// lpf_exec hands PID 0's args to another thread by design (inclusive memory).
unsafe impl Sync for LpfArgs {}
// SAFETY: as for `Sync`.
unsafe impl Send for LpfArgs {}

impl LpfArgs {
    /// `LPF_NO_ARGS`: all NULL/0.
    pub const NONE: LpfArgs = LpfArgs {
        input: std::ptr::null(),
        input_size: 0,
        output: std::ptr::null_mut(),
        output_size: 0,
        f_symbols: std::ptr::null(),
        f_size: 0,
    };
}

/// `lpf_machine_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LpfMachine {
    /// Processors assigned to the runtime (or to this section).
    pub p: LpfPid,
    /// Processors still free for a nested `lpf_exec` (at least 1).
    pub free_p: LpfPid,
    /// Seconds per byte.
    pub g: Option<CostFn>,
    /// Seconds per superstep.
    pub l: Option<CostFn>,
}

/// `LPF_SUCCESS`.
pub const SUCCESS: LpfErr = 0;
/// `LPF_ERR_OUT_OF_MEMORY`.
pub const ERR_OUT_OF_MEMORY: LpfErr = 1;
/// `LPF_ERR_FATAL`.
pub const ERR_FATAL: LpfErr = 2;

/// The bytes `LPF_ROOT` points at; only their address matters.
static ROOT_NAME: [u8; 9] = *b"LPF_ROOT\0";

/// The value of `LPF_ROOT` (rule 2).
pub fn root() -> LpfCtx {
    LpfCtx(ROOT_NAME.as_ptr().cast_mut().cast())
}

/// Normal completion.
#[unsafe(no_mangle)]
pub static LPF_SUCCESS: LpfErr = SUCCESS;
/// Recoverable: the call had no effect.
#[unsafe(no_mangle)]
pub static LPF_ERR_OUT_OF_MEMORY: LpfErr = ERR_OUT_OF_MEMORY;
/// Not recoverable: the process is in the failure state.
#[unsafe(no_mangle)]
pub static LPF_ERR_FATAL: LpfErr = ERR_FATAL;
/// A context that does not exist.
#[unsafe(no_mangle)]
pub static LPF_NONE: LpfCtx = LpfCtx(std::ptr::null_mut());
/// The master context, usable outside SPMD sections.
#[unsafe(no_mangle)]
pub static LPF_ROOT: LpfCtx = LpfCtx(ROOT_NAME.as_ptr().cast_mut().cast());
/// An invalid `lpf_init_t`.
#[unsafe(no_mangle)]
pub static LPF_INIT_NONE: LpfCtx = LpfCtx(std::ptr::null_mut());
/// Empty arguments.
#[unsafe(no_mangle)]
pub static LPF_NO_ARGS: LpfArgs = LpfArgs::NONE;
/// The default sync attribute.
#[unsafe(no_mangle)]
pub static LPF_SYNC_DEFAULT: LpfSyncAttr = 0;
/// The default message attribute.
#[unsafe(no_mangle)]
pub static LPF_MSG_DEFAULT: LpfMsgAttr = 0;
/// "As many processes as available" (`UINT_MAX`).
#[unsafe(no_mangle)]
pub static LPF_MAX_P: LpfPid = LpfPid::MAX;
/// An invalid machine description (all zero).
#[unsafe(no_mangle)]
pub static LPF_INVALID_MACHINE: LpfMachine = LpfMachine { p: 0, free_p: 0, g: None, l: None };
/// An invalid memory slot (`SIZE_MAX`).
#[unsafe(no_mangle)]
pub static LPF_INVALID_MEMSLOT: LpfMemslot = usize::MAX;
/// Non-zero: `lpf_abort` really aborts (LPF's pthread engine uses 2).
#[unsafe(no_mangle)]
pub static LPF_HAS_ABORT: c_int = 2;
