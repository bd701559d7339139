//! sluice-bsp: a BSP communication layer with the primitives and semantics of LPF
//! (Suijlen & Yzelman, *Lightweight Parallel Foundations*; `shared/specs/lpf-api.md`).
//!
//! An SPMD function `spmd(ctx, s, p, args)` runs on `p` processes (threads of this OS process).
//! Processes register memory as *slots*, queue `put`s and `get`s between slots, and `sync`: a
//! sync ends the superstep, after which every queued copy is complete. A sync of an h-relation
//! (h = the most bytes any process sends or receives) costs at most h·g + ℓ, whatever the
//! pattern; [`probe`](Ctx::probe) reports g and ℓ.
//!
//! # API (LPF name → Rust)
//! | LPF | sluice-bsp |
//! |---|---|
//! | `lpf_exec(LPF_ROOT, p, spmd, args)` | [`exec`] / [`exec_with`] |
//! | `lpf_exec(ctx, p, …)` (nested) | [`Ctx::exec`] (uses [`Ctx::free_p`]) |
//! | `lpf_pthread_initialize(pid, n, &init)` | [`pthread_initialize`] or [`Init::group`] |
//! | `lpf_hook(init, spmd, args)` | [`hook`] |
//! | `lpf_rehook(ctx, spmd, args)` | [`Ctx::rehook`] |
//! | `lpf_register_global` / `_local` | `unsafe` [`Ctx::register_global`] / [`Ctx::register_local`]; safe owned memory: [`Ctx::alloc_global`] / [`Ctx::alloc_local`] with [`Ctx::slot`] / [`Ctx::slot_mut`] |
//! | `lpf_deregister` | [`Ctx::deregister`] |
//! | `lpf_put` / `lpf_get` | [`Ctx::put`] / [`Ctx::get`] (src slot, src offset, pid, dst slot, dst offset, size) |
//! | `lpf_sync` | [`Ctx::sync`] |
//! | `lpf_probe` | [`Ctx::probe`], [`probe_root`]; g and ℓ also as free functions [`probe::g`], [`probe::l`] |
//! | `lpf_resize_memory_register` / `_message_queue` | [`Ctx::resize_memory_register`] / [`Ctx::resize_message_queue`] |
//! | `lpf_args_t` | [`Args`] (input/output on pid 0 only, `symbols` everywhere) |
//! | `LPF_SUCCESS` / `LPF_ERR_OUT_OF_MEMORY` / `LPF_ERR_FATAL` | `Ok` / [`ErrorKind::OutOfMemory`] / [`ErrorKind::Fatal`] via [`Error::kind`] |
//!
//! # Contract
//! 1. put/get are queued and take effect at `sync`: before it, neither the destination nor
//!    (for a get) anything is changed; after it returns `Ok`, every copy is complete. A put or get
//!    may name a global slot registered earlier in the same superstep (resolved at the sync).
//! 2. Concurrent writes to one place resolve as some serial order of whole messages (arbitrary
//!    CRCW). Reading bytes another message writes in the same superstep is illegal.
//! 3. Capacities (register slots, message queue) start at 0, change only at a sync (last
//!    resize wins; shrinking always succeeds), and count each message at both of its ends.
//! 4. A mitigable error ([`ErrorKind::OutOfMemory`]) means the call had no effect. A fatal error
//!    poisons the context: its later syncs fail, and every peer's next sync fails too — also
//!    when a peer returns early from its SPMD function. Nothing deadlocks.
//! 5. `exec`, `hook` and `rehook` return when all their processes returned: `Err` (fatal) if any
//!    of them failed, else `Ok`.
//!
//! # What is checked where
//! | check | fast path (threads backend) | `Checked` backend ([`ExecConfig::checked`], `SLUICE_BSP_CHECKED=1`) |
//! |---|---|---|
//! | message queue capacity, origin end | accepted (LPF: undefined, its Release engine accepts; queues grow on demand) | at put/get: `QueueFull`, mitigable, no effect |
//! | message queue capacity, target ends | accepted (LPF: undefined; queues grow on demand) | at sync: `QueueOverflow`, fatal |
//! | register capacity | at registration: `RegisterFull`, mitigable, no effect | same |
//! | resize that cannot be allocated | at the call: `OutOfMemory`, mitigable | same |
//! | unknown pid, unknown slot, local slot as remote target | at put/get: fatal | same |
//! | source bounds of a put, destination bounds of a get | at put/get: `OutOfBounds`, fatal | same |
//! | bounds on the remote side | at sync, by the process that copies: fatal | same |
//! | read/write overlap within a superstep | **undefined** (a data race on the bytes involved) | at sync: `Checked`, fatal |
//! | global (de)registrations not collective / not in the same order | **undefined** (slot ids disagree) | at sync: `Checked`, fatal |
//!
//! # Soundness
//! Registering raw memory is `unsafe`: the caller promises the memory stays valid and is not
//! touched while messages use it (see [`Ctx::register_global`]). With owned slots
//! ([`Ctx::alloc_global`]) everything is safe Rust except one LPF-illegal pattern: a read/write
//! overlap in one superstep is a data race on plain bytes, which the `Checked` backend rejects.
//!
//! # Example
//! ```
//! use sluice_bsp::{Args, exec};
//!
//! exec(4, |ctx, s, p, _args| {
//!     // Capacities start at 0 and change at a sync (LPF's canonical prologue).
//!     ctx.resize_memory_register(2).unwrap();
//!     ctx.resize_message_queue(2).unwrap();
//!     ctx.sync().unwrap();
//!     let mine = ctx.alloc_global(8).unwrap();
//!     let got = ctx.alloc_local(8).unwrap();
//!     ctx.slot_mut(mine).unwrap().copy_from_slice(&u64::from(s).to_le_bytes());
//!     let right = (s + 1) % p;
//!     ctx.get(right, mine, 0, got, 0, 8).unwrap();
//!     assert_eq!(ctx.slot(got).unwrap(), &[0u8; 8], "nothing moves before the sync");
//!     ctx.sync().unwrap();
//!     let value = u64::from_le_bytes(ctx.slot(got).unwrap().try_into().unwrap());
//!     assert_eq!(value, u64::from(right));
//! }, Args::none()).unwrap();
//! ```
//!
//! # Modules
//! Private modules are named in code font; `*` marks the modules with `unsafe` blocks.
//! - `ctx`*: [`Ctx`], the handle an SPMD function receives (one `match` forwards each primitive
//!   to the section's backend), and [`exec`] / [`exec_with`], which start a section.
//! - `backend`: the trait every backend implements: LPF's primitives on one process's context.
//! - `threads`: the threads backend (one OS thread per process): [`hook`], [`Init`],
//!   [`pthread_initialize`], the start gate and exit rendezvous of a process. Its children:
//!   - `threads/group`*: what the processes of a section share; the meeting point of `hook` and
//!     `rehook`.
//!   - `threads/queues`*: the pair queues of requests, and the only code touching them unlocked.
//!   - `threads/process`*: one process's context; the primitives between syncs.
//!   - `threads/sync`*: `sync` (barrier, data phase, completion), as `src/threads/README.md`
//!     tells it.
//!   - `threads/checked`: the `Checked` backend's checks, run inside the sync.
//!   - `threads/wait`: spin-then-park waits and the dissemination barrier.
//! - [`mpi`]* (cargo feature `mpi`): the MPI backend, one BSP process per MPI rank; its
//!   [`hook`](mpi::hook) runs a section on the ranks of any communicator; the backend is chosen
//!   at `exec` time ([`mpi::selected`]: `SLUICE_BSP_ENGINE=mpi|threads`, else MPI under
//!   `mpirun`). Its children: `mpi/raw`* (the only MPI calls), `mpi/process`, `mpi/sync`,
//!   `mpi/codec`, [`mpi::bench`]. Tests: `scripts/mpi-test`.
//! - `memreg`*: one process's memory register: slot ids ([`MemSlot`]), regions, capacity.
//! - `error`: [`Error`] and [`ErrorKind`], LPF's two failure kinds.
//! - `sys`*: raw system calls (the thread CPU clock for `bench`).
//! - [`collectives`]: broadcast, reduce, allreduce, gather, allgather, alltoall on the primitives.
//! - [`cost`]: the cost model beside the observed times: per superstep h, h·g + ℓ, seconds.
//! - [`probe`]: cost table, interpolation of g and ℓ. For `sluice bsp probe`:
//!   [`probe::probe_report`] (printable), [`probe::cost_table`], [`probe::CostTable`]
//!   (`default_path`, `load`, `save`).
//! - [`bench`](mod@bench): the measurements behind `sluice bsp bench`: [`bench::run`]`(&BenchConfig) ->
//!   Result<BenchReport, Error>`, [`bench::BenchReport::table`], [`bench::BenchReport::to_json`],
//!   [`bench::to_cost_table`] (to store what `probe` reads). The example `bsp_bench` is a
//!   stand-alone front end (`cargo run -p sluice-bsp --release --example bsp_bench -- --quick`).
//!   `bench/config.rs`: [`bench::BenchConfig`], its memory model and `fit` to a budget.

#![warn(missing_docs)]

mod backend;
mod ctx;
mod error;
mod memreg;
mod sys;
mod threads;
/// The threads backend's waits and barrier, public only to the loom model
/// (`tests/loom_barrier.rs`).
#[cfg(loom)]
pub use threads::wait;

pub mod bench;
pub mod collectives;
pub mod cost;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod probe;

pub use ctx::{Ctx, exec, exec_with};
pub use error::{Error, ErrorKind};
pub use memreg::MemSlot;
pub use probe::{Machine, probe_root};
pub use threads::{Init, hook, pthread_initialize};

/// A process id or count (LPF's `lpf_pid_t`).
pub type Pid = u32;

/// A function "symbol" passed to every process through [`Args::symbols`] (LPF's `lpf_func_t`).
pub type Symbol = Option<unsafe extern "C" fn()>;

/// LPF's `lpf_args_t`: what an SPMD function receives besides its context.
///
/// Under [`exec`], only process 0 gets `input` and `output` (the others get empty slices);
/// `symbols` reach every process. Under [`hook`] and [`Ctx::rehook`] each process passes its own.
#[derive(Debug)]
pub struct Args<'a> {
    /// Bytes for process 0 to read.
    pub input: &'a [u8],
    /// Bytes for process 0 to write; the caller of `exec` sees them afterwards, even on error.
    pub output: &'a mut [u8],
    /// Function pointers for all processes.
    pub symbols: &'a [Symbol],
}

impl Args<'static> {
    /// LPF's `LPF_NO_ARGS`: everything empty.
    pub fn none() -> Args<'static> {
        Args { input: &[], output: &mut [], symbols: &[] }
    }
}

impl<'a> Args<'a> {
    /// What a process other than 0 receives under `exec`: only the symbols.
    pub fn for_peer(symbols: &'a [Symbol]) -> Args<'a> {
        Args { input: &[], output: &mut [], symbols }
    }
}

/// Options of [`exec_with`] (and of [`Init::group_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecConfig {
    /// Processors the root may hand out (LPF's `p` of `LPF_ROOT`); `None`: the environment
    /// variable `SLUICE_BSP_MAX_P`, else the number of hardware threads. `exec(p)` runs
    /// `min(p, max_p)` processes.
    pub max_p: Option<Pid>,
    /// Run the `Checked` backend (see the crate docs' table).
    pub checked: bool,
}

impl Default for ExecConfig {
    /// `max_p: None`, `checked` from `SLUICE_BSP_CHECKED` (`1`/`true` turn it on).
    fn default() -> ExecConfig {
        let checked = std::env::var("SLUICE_BSP_CHECKED")
            .map(|v| v == "1" || v.eq_ignore_ascii_case("true"))
            .unwrap_or(false);
        ExecConfig { max_p: None, checked }
    }
}

impl ExecConfig {
    /// Options with an explicit processor count (for tests that oversubscribe) and backend.
    pub fn new(max_p: Pid, checked: bool) -> ExecConfig {
        ExecConfig { max_p: Some(max_p), checked }
    }

    /// The processor count of the root (see `max_p`), at least 1.
    pub fn root_p(&self) -> Pid {
        self.max_p
            .or_else(|| std::env::var("SLUICE_BSP_MAX_P").ok().and_then(|v| v.parse().ok()))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as Pid))
            .max(1)
    }
}
