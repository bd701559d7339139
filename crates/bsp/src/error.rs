//! The one error type of `sluice-bsp`, with LPF's two failure kinds.
//!
//! # Contract
//! 1. Every error has a [`ErrorKind`]: `OutOfMemory` (mitigable: the call had no effect and may be
//!    retried with a smaller request) or `Fatal` (the context is poisoned: every later `sync` of
//!    this context fails, and every peer's next `sync` fails too).
//! 2. `kind()` is what LPF's C ABI maps to `LPF_ERR_OUT_OF_MEMORY` / `LPF_ERR_FATAL`; success is
//!    `Ok(())`.

use crate::Pid;

/// LPF's classification of a failed call (`LPF_SUCCESS` is `Ok`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Mitigable: the call had no effect (`LPF_ERR_OUT_OF_MEMORY`).
    OutOfMemory,
    /// The context entered the failure state (`LPF_ERR_FATAL`).
    Fatal,
}

/// What went wrong in a BSP call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A reservation could not be allocated (mitigable).
    #[error("cannot reserve {what} for {requested} entries")]
    OutOfMemory {
        /// What was being reserved (`"memory register"`, `"message queue"`, `"threads"`).
        what: &'static str,
        /// The requested number of entries.
        requested: usize,
    },
    /// The message queue capacity (effective since the last sync) is exhausted (mitigable;
    /// reported by the `Checked` backend only, the fast path lets the queues grow).
    #[error("message queue full: capacity {capacity} already used by this superstep")]
    QueueFull {
        /// The capacity in force.
        capacity: usize,
    },
    /// The memory register capacity is exhausted (mitigable).
    #[error("memory register full: {capacity} slots in use")]
    RegisterFull {
        /// The capacity in force.
        capacity: usize,
    },
    /// A slot id that is not registered (or the wrong kind) was named (fatal).
    #[error("process {pid}: memory slot {slot} is not registered ({why})")]
    BadSlot {
        /// The process whose register was consulted.
        pid: Pid,
        /// The raw slot id.
        slot: usize,
        /// Why it was rejected.
        why: &'static str,
    },
    /// An access past the end of a registered slot (fatal).
    #[error(
        "process {pid}: bytes {offset}..{offset}+{len} are outside slot {slot} of {slot_len} bytes"
    )]
    OutOfBounds {
        /// The process whose slot was named.
        pid: Pid,
        /// The raw slot id.
        slot: usize,
        /// Offset of the access.
        offset: usize,
        /// Length of the access.
        len: usize,
        /// Registered length of the slot.
        slot_len: usize,
    },
    /// A process id out of `0..p` (fatal).
    #[error("process id {pid} is not below p = {p}")]
    BadPid {
        /// The pid named.
        pid: Pid,
        /// Number of processes.
        p: Pid,
    },
    /// At a sync (`Checked` backend), the messages that start or end at a process exceeded its
    /// queue capacity: each put or get counts once at its origin and once at its target (fatal:
    /// the puts were already accepted).
    #[error("process {pid}: {count} messages start or end here, capacity is {capacity}")]
    QueueOverflow {
        /// The overflowing process.
        pid: Pid,
        /// Messages counted at both ends.
        count: usize,
        /// Capacity in force.
        capacity: usize,
    },
    /// A peer left its SPMD function, failed, or panicked; this sync cannot complete (fatal).
    #[error("a peer process failed or left the SPMD section before this sync")]
    PeerFailed,
    /// This context was already in the failure state (fatal).
    #[error("the context is in the failure state after an earlier fatal error")]
    Poisoned,
    /// An SPMD function panicked (fatal).
    #[error("process {pid} panicked: {message}")]
    Panicked {
        /// The process that panicked.
        pid: Pid,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// `Init` handles were used inconsistently (fatal).
    #[error("invalid hook initialisation: {0}")]
    BadInit(String),
    /// A cost table could not be read or written (`probe`, `bench`).
    #[error("{}: {message}", path.display())]
    Table {
        /// The table file.
        path: std::path::PathBuf,
        /// What failed.
        message: String,
    },
    /// The MPI backend was asked for, but this build has none (cargo feature `mpi` of
    /// sluice-bsp).
    #[error("this build has no MPI backend (build sluice-bsp with its feature `mpi`)")]
    NoMpi,
    /// An illegal pattern caught by the `Checked` backend (fatal).
    #[error("checked backend, process {pid}: {what}")]
    Checked {
        /// The process that detected it.
        pid: Pid,
        /// A description of the illegal pattern.
        what: String,
    },
}

impl Error {
    /// The LPF error class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::OutOfMemory { .. } | Error::QueueFull { .. } | Error::RegisterFull { .. } => {
                ErrorKind::OutOfMemory
            }
            _ => ErrorKind::Fatal,
        }
    }

    /// Returns true if and only if this error poisons the context.
    pub fn is_fatal(&self) -> bool {
        self.kind() == ErrorKind::Fatal
    }
}
