//! The only code that calls MPI: initialisation, communicators, the collectives of the
//! protocol, and non-blocking point-to-point transfers of lists of memory blocks.
//!
//! # Contract
//! 1. MPI is initialised on first use (`MPI_THREAD_SERIALIZED`) and finalised at process exit
//!    (`atexit`) only when this module initialised it; a program that initialised MPI itself
//!    (an existing MPI job, `hook`) keeps ownership of `MPI_Finalize`.
//! 2. Every call uses MPI's default error handler (`MPI_ERRORS_ARE_FATAL`): a failure inside
//!    MPI aborts the job, and `mpirun` reports it; nothing here returns an MPI error code.
//! 3. [`Transfers`] posts sends and receives of block lists: the blocks under 64 KiB packed
//!    into one MPI message (a copy at each end), each larger block as a contiguous message of
//!    its own with the registered memory itself as the send or receive buffer; `wait`
//!    completes them and unpacks.
//!
//! # Threads and costs
//! One thread of an OS process uses MPI at a time (the BSP context's thread). Small blocks
//! cost a copy at each end (and one MPI message per pair for all of them); large blocks none.

use std::os::raw::c_int;
use std::ptr;

use mpi::ffi;

/// A communicator handle (`MPI_Comm`), owned by whoever created it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Comm(pub(crate) ffi::MPI_Comm);

// SAFETY: an MPI communicator handle is a plain reference to library state; MPI allows any
// thread to use it (rule 1: `MPI_THREAD_SERIALIZED`, one thread at a time).
unsafe impl Send for Comm {}
// SAFETY: as for `Send`.
unsafe impl Sync for Comm {}

/// Largest block handed to MPI in one piece (its counts are `int`).
const MAX_BLOCK: usize = 1 << 30;

/// Blocks from this length on travel as messages of their own (see [`Transfers::post`]).
const LARGE: usize = 64 << 10;

extern "C" fn finalize_at_exit() {
    let mut done: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time; MPI_Finalize once, after init.
    unsafe {
        ffi::MPI_Finalized(&mut done);
        if done == 0 {
            ffi::MPI_Finalize();
        }
    }
}

/// Rule 1: initialises MPI unless it already is; returns true if this call initialised it.
pub(crate) fn ensure_initialized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Initialized may be called before MPI_Init.
    unsafe { ffi::MPI_Initialized(&mut flag) };
    if flag != 0 {
        return false;
    }
    let mut provided: c_int = 0;
    // SAFETY: MPI is not initialised (checked above, on the only thread using MPI); null
    // argc/argv are allowed by MPI-2 and later. `finalize_at_exit` is a plain C callback.
    unsafe {
        ffi::MPI_Init_thread(
            ptr::null_mut(),
            ptr::null_mut(),
            ffi::RSMPI_THREAD_SERIALIZED,
            &mut provided,
        );
        libc::atexit(finalize_at_exit);
    }
    true
}

/// `MPI_COMM_WORLD`.
pub(crate) fn world() -> Comm {
    // SAFETY: reading a constant handle exported by the MPI library.
    Comm(unsafe { ffi::RSMPI_COMM_WORLD })
}

/// Rank of the caller in `comm`.
pub(crate) fn rank(comm: Comm) -> usize {
    let mut r: c_int = 0;
    // SAFETY: `comm` is a valid communicator (rule 2 aborts otherwise).
    unsafe { ffi::MPI_Comm_rank(comm.0, &mut r) };
    r as usize
}

/// Size of `comm`.
pub(crate) fn size(comm: Comm) -> usize {
    let mut n: c_int = 0;
    // SAFETY: as in `rank`.
    unsafe { ffi::MPI_Comm_size(comm.0, &mut n) };
    n as usize
}

/// `MPI_Comm_split`: collective; `None` for callers with `member == false`.
pub(crate) fn split(comm: Comm, member: bool, key: usize) -> Option<Comm> {
    let mut out = world().0;
    // SAFETY: collective call on a valid communicator; `out` receives a new handle or
    // MPI_COMM_NULL for MPI_UNDEFINED.
    let color = if member { 0 } else { unsafe { ffi::RSMPI_UNDEFINED } };
    // SAFETY: as above.
    unsafe { ffi::MPI_Comm_split(comm.0, color, key as c_int, &mut out) };
    member.then_some(Comm(out))
}

/// `MPI_Comm_dup`: collective.
pub(crate) fn dup(comm: Comm) -> Comm {
    let mut out = comm.0;
    // SAFETY: collective call on a valid communicator.
    unsafe { ffi::MPI_Comm_dup(comm.0, &mut out) };
    Comm(out)
}

/// `MPI_Comm_free`: collective; the handle must not be used afterwards.
pub(crate) fn free(comm: Comm) {
    let mut c = comm.0;
    // SAFETY: `comm` was created by `split` or `dup` and has no pending operations (every
    // transfer is waited for before its sync returns).
    unsafe { ffi::MPI_Comm_free(&mut c) };
}

/// `MPI_Alltoall` of `per` u64 values per peer: `send[j*per..]` goes to rank j.
pub(crate) fn alltoall_u64(comm: Comm, send: &[u64], recv: &mut [u64], per: usize) {
    assert!(send.len() == recv.len() && send.len() == per * size(comm));
    // SAFETY: both buffers hold `per * size` u64s (asserted); UINT8 counts of 8 bytes each.
    unsafe {
        ffi::MPI_Alltoall(
            send.as_ptr().cast(),
            (per * 8) as c_int,
            ffi::RSMPI_UINT8_T,
            recv.as_mut_ptr().cast(),
            (per * 8) as c_int,
            ffi::RSMPI_UINT8_T,
            comm.0,
        )
    };
}

/// `MPI_Allgatherv` of byte strings: returns every rank's `mine`, in rank order.
pub(crate) fn allgather_bytes(comm: Comm, mine: &[u8]) -> Vec<Vec<u8>> {
    let n = size(comm);
    let len = [mine.len() as u64];
    let mut lens = vec![0u64; n];
    // SAFETY: one u64 from each rank into `lens` of `n` entries.
    unsafe {
        ffi::MPI_Allgather(
            len.as_ptr().cast(),
            8,
            ffi::RSMPI_UINT8_T,
            lens.as_mut_ptr().cast(),
            8,
            ffi::RSMPI_UINT8_T,
            comm.0,
        )
    };
    let counts: Vec<c_int> = lens.iter().map(|&l| l as c_int).collect();
    let displs: Vec<c_int> =
        counts.iter().scan(0, |acc, &c| Some(std::mem::replace(acc, *acc + c))).collect();
    let total = counts.iter().map(|&c| c as usize).sum();
    let mut all = vec![0u8; total];
    // SAFETY: `all` holds the sum of the announced lengths; displacements partition it.
    unsafe {
        ffi::MPI_Allgatherv(
            mine.as_ptr().cast(),
            mine.len() as c_int,
            ffi::RSMPI_UINT8_T,
            all.as_mut_ptr().cast(),
            counts.as_ptr(),
            displs.as_ptr(),
            ffi::RSMPI_UINT8_T,
            comm.0,
        )
    };
    (0..n).map(|i| all[displs[i] as usize..][..counts[i] as usize].to_vec()).collect()
}

/// `MPI_Wtime`.
pub(crate) fn wtime() -> f64 {
    // SAFETY: no preconditions after init.
    unsafe { ffi::MPI_Wtime() }
}

/// Rule 3: pending sends and receives of block lists.
#[derive(Debug, Default)]
pub(crate) struct Transfers {
    requests: Vec<ffi::MPI_Request>,
    /// Packed small blocks, one buffer per message (kept until `wait`).
    packs: Vec<Vec<u8>>,
    /// Received small blocks to copy out in `wait`: (destination, pack, offset, length).
    unpack: Vec<(*mut u8, usize, usize, usize)>,
}

impl Transfers {
    /// Posts the transfer of `blocks` (address, length) to (`send`) or from `peer`: the blocks
    /// shorter than [`LARGE`] travel packed into one contiguous message (copied at both ends:
    /// cheaper than a datatype per tiny block), then each large block as its own contiguous
    /// message straight from and into the registered memory (OpenMPI's shared-memory
    /// transport moves those with one copy).
    ///
    /// # Safety
    /// Every block must stay valid (readable for a send, writable for a receive) and untouched
    /// by other code until [`Transfers::wait`] returns; the blocks of a receive must not
    /// overlap. The peer must post the matching operation with the same block lengths.
    pub(crate) unsafe fn post(
        &mut self,
        comm: Comm,
        send: bool,
        peer: usize,
        tag: i32,
        blocks: &[(*mut u8, usize)],
    ) {
        let small = |b: &&(*mut u8, usize)| b.1 > 0 && b.1 < LARGE;
        let total: usize = blocks.iter().filter(small).map(|b| b.1).sum();
        if total > 0 {
            let mut pack = vec![0u8; total];
            let index = self.packs.len();
            let mut at = 0;
            for &(ptr, len) in blocks.iter().filter(small) {
                if send {
                    // SAFETY: the caller guarantees `ptr` readable for `len` bytes; `pack` has
                    // room from `at` (the lengths sum to `total`); no overlap (fresh buffer).
                    unsafe { ptr::copy_nonoverlapping(ptr, pack.as_mut_ptr().add(at), len) };
                } else {
                    self.unpack.push((ptr, index, at, len));
                }
                at += len;
            }
            let buf = pack.as_mut_ptr();
            self.packs.push(pack);
            // SAFETY: the pack lives in `self.packs` (its heap buffer does not move) until
            // `wait`.
            unsafe { self.post_one(comm, send, peer, tag, buf, total as c_int) };
        }
        for &(ptr, len) in blocks.iter().filter(|b| b.1 >= LARGE) {
            let mut off = 0;
            while off < len {
                let n = (len - off).min(MAX_BLOCK);
                // SAFETY: the caller's guarantees for this block.
                unsafe { self.post_one(comm, send, peer, tag, ptr.wrapping_add(off), n as c_int) };
                off += n;
            }
        }
    }

    /// One contiguous message of `len` bytes at `buf`.
    ///
    /// # Safety
    /// As for [`Transfers::post`].
    unsafe fn post_one(
        &mut self,
        comm: Comm,
        send: bool,
        peer: usize,
        tag: i32,
        buf: *mut u8,
        len: c_int,
    ) {
        // SAFETY: the caller guarantees `buf` valid for `len` bytes until `wait`.
        unsafe {
            let mut req = ffi::RSMPI_REQUEST_NULL;
            let (ty, peer) = (ffi::RSMPI_UINT8_T, peer as c_int);
            if send {
                ffi::MPI_Isend(buf.cast(), len, ty, peer, tag, comm.0, &mut req);
            } else {
                ffi::MPI_Irecv(buf.cast(), len, ty, peer, tag, comm.0, &mut req);
            }
            self.requests.push(req);
        }
    }

    /// Completes every posted transfer and copies the received small blocks out.
    pub(crate) fn wait(&mut self) {
        if !self.requests.is_empty() {
            // SAFETY: the requests were posted by `post` and are completed exactly once here.
            unsafe {
                ffi::MPI_Waitall(
                    self.requests.len() as c_int,
                    self.requests.as_mut_ptr(),
                    ffi::RSMPI_STATUSES_IGNORE,
                )
            };
            self.requests.clear();
        }
        for &(dst, pack, at, len) in &self.unpack {
            // SAFETY: `dst` is writable for `len` bytes and disjoint from every other receive
            // block (the caller's guarantee to `post`); the pack holds the received bytes.
            unsafe { ptr::copy_nonoverlapping(self.packs[pack].as_ptr().add(at), dst, len) };
        }
        self.unpack.clear();
        self.packs.clear();
    }
}

/// One-way latency (ns, mean over `rounds` round trips) of an 8-byte message between ranks 0
/// and 1 of `comm` (`MPI_Send`/`MPI_Recv`); other ranks return 0 at once.
pub(crate) fn pingpong_ns(comm: Comm, rounds: u32) -> f64 {
    let me = rank(comm);
    if me > 1 || size(comm) < 2 {
        return 0.0;
    }
    let mut word = [0u64; 1];
    let peer = (1 - me) as c_int;
    let start = wtime();
    for _ in 0..rounds {
        // SAFETY: `word` is valid for 8 bytes throughout; blocking calls.
        unsafe {
            let buf = word.as_mut_ptr().cast();
            let ignore = ffi::RSMPI_STATUS_IGNORE;
            if me == 0 {
                ffi::MPI_Send(buf, 8, ffi::RSMPI_UINT8_T, peer, 0x5b3, comm.0);
                ffi::MPI_Recv(buf, 8, ffi::RSMPI_UINT8_T, peer, 0x5b3, comm.0, ignore);
            } else {
                ffi::MPI_Recv(buf, 8, ffi::RSMPI_UINT8_T, peer, 0x5b3, comm.0, ignore);
                ffi::MPI_Send(buf, 8, ffi::RSMPI_UINT8_T, peer, 0x5b3, comm.0);
            }
        }
    }
    (wtime() - start) * 1e9 / (2.0 * f64::from(rounds.max(1)))
}

/// `MPI_Alltoallv` sending `per_peer` bytes from `send` to every other rank (none to itself),
/// received into `recv`; both hold `per_peer * size` bytes.
pub(crate) fn alltoallv_bytes(comm: Comm, send: &[u8], recv: &mut [u8], per_peer: usize) {
    let (me, n) = (rank(comm), size(comm));
    assert!(send.len() >= per_peer * n && recv.len() >= per_peer * n);
    let counts: Vec<c_int> = (0..n).map(|j| if j == me { 0 } else { per_peer as c_int }).collect();
    let displs: Vec<c_int> = (0..n).map(|j| (j * per_peer) as c_int).collect();
    // SAFETY: counts and displacements stay inside both buffers (asserted sizes).
    unsafe {
        ffi::MPI_Alltoallv(
            send.as_ptr().cast(),
            counts.as_ptr(),
            displs.as_ptr(),
            ffi::RSMPI_UINT8_T,
            recv.as_mut_ptr().cast(),
            counts.as_ptr(),
            displs.as_ptr(),
            ffi::RSMPI_UINT8_T,
            comm.0,
        )
    };
}
