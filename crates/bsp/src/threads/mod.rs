//! Threads backend: one OS thread per BSP process, shared memory, LPF semantics.
//!
//! # Contract
//! 1. `put`/`get` only queue a request (O(1), no shared writes except the origin's own row of
//!    pair queues); nothing moves before `sync`. A queued put reads its source and a queued get
//!    writes its destination only during the next `sync`.
//! 2. `sync` = barrier B1 (dissemination) → data phase → pairwise completion. In the data phase
//!    every byte written into process `d`'s memory is written by `d` itself: `d` executes the puts
//!    queued *to* it and the gets it queued, in (origin pid, issue order). Concurrent writes to one
//!    place therefore resolve as a serial order of whole messages (arbitrary-order CRCW, each
//!    block from one writer), and no two threads write one cache line.
//! 3. A process leaves `sync` only after every process whose requests touch its memory, or whose
//!    memory its requests touch, finished its data phase. Processes with no traffic leave right
//!    after B1, so an empty sync costs one barrier.
//! 4. Capacities: a put/get needs room for its origin end (and its target end when the target is
//!    the caller) in the queue capacity in force, else `QueueFull` with no effect. Under the
//!    `Checked` backend every process also checks, at the sync, origin + target ends of its
//!    messages against its capacity (`QueueOverflow`, fatal); the fast path accepts an excess
//!    of target ends (LPF leaves it undefined; the pair queues grow on demand). Resizes apply at
//!    the end of the next sync; the last call wins.
//! 5. Failure: a fatal error poisons the context and sets the group's `fail_epoch` to the first
//!    barrier this process will not enter; every peer waiting in (or later entering) that
//!    barrier fails with `PeerFailed`. A process that returns from its SPMD function does the
//!    same. No wait that can outlive a failure is unbounded (threads/README.md).
//!
//! # Threads and costs
//! `Ctx` is used by its own thread only. Per-process shared state is `CachePadded`. A sync of an
//! h-relation costs one barrier (⌈log₂ p⌉ cache-line transfers), an O(p) scan of pair-queue
//! headers, and h bytes of copying at the destination.

mod wait;

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;

use crate::memreg::{Register, Resolver};
use crate::{Args, Error, ExecConfig, Machine, MemSlot, Pid, checked};

use wait::{BarrierFlags, Waker};

/// A queued put: source resolved at the origin, destination resolved at the target. 24 bytes:
/// in a large all-to-all of small messages the queues' memory traffic is most of the cost, so
/// the slot id and length are 32-bit (longer messages are queued as several chunks, in order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PutReq {
    pub(crate) src: *const u8,
    pub(crate) dst_offset: usize,
    pub(crate) dst_slot: u32,
    pub(crate) len: u32,
}

/// A queued get: destination resolved at the origin, source resolved at the sync (24 bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GetReq {
    pub(crate) dst: *mut u8,
    pub(crate) src_offset: usize,
    pub(crate) src_slot: u32,
    pub(crate) len: u32,
}

const _: () = assert!(std::mem::size_of::<PutReq>() == 24 && std::mem::size_of::<GetReq>() == 24);

/// Largest chunk one request carries; longer messages become consecutive chunks (tiny in unit
/// tests, so that the chunking is exercised). The `Checked` backend's target-end count counts
/// each chunk.
const CHUNK: usize = if cfg!(test) { 16 } else { 1 << 31 };

/// Requests from one origin to one target for one superstep parity.
#[derive(Debug, Default)]
pub(crate) struct PairQueue {
    pub(crate) puts: Vec<PutReq>,
    pub(crate) gets: Vec<GetReq>,
}

impl PairQueue {
    fn len(&self) -> usize {
        self.puts.len() + self.gets.len()
    }
}

/// State of one process that its peers may touch.
#[derive(Debug)]
struct Proc {
    /// Last sync whose data phase this process finished. Release-stored by the owner after its
    /// copies; Acquire-loaded by partners before they leave the sync (rule 3).
    done: CachePadded<AtomicU64>,
    /// Checked backend: hash of this superstep's global (de)registrations, by parity.
    reg_hash: [AtomicU64; 2],
    /// Written by the owner outside syncs; read by peers inside syncs only.
    register: CachePadded<UnsafeCell<Register>>,
}

/// Start gate of an exec: threads wait for `GO` (run) or `ABORT` (spawn failed, leave quietly).
const GATE_WAIT: u8 = 0;
const GATE_GO: u8 = 1;
const GATE_ABORT: u8 = 2;

/// Everything the processes of one SPMD section share.
pub(crate) struct Group {
    p: usize,
    checked: bool,
    /// `free_p` of each process (its share of the processors given to the section).
    shares: Vec<Pid>,
    flags_view: Box<[CachePadded<BarrierFlags>]>,
    wakers_view: Box<[CachePadded<Waker>]>,
    procs: Box<[Proc]>,
    /// Index `(origin * p + target) * 2 + parity`. Origin writes between syncs; readers read
    /// only inside syncs (threads/README.md).
    queues: Box<[CachePadded<UnsafeCell<PairQueue>>]>,
    /// The first barrier epoch that some process will never enter (u64::MAX: none yet).
    fail_epoch: CachePadded<AtomicU64>,
    /// True once any process of the group hit a fatal error.
    poisoned: AtomicBool,
    first_error: Mutex<Option<Error>>,
    exited: CachePadded<AtomicUsize>,
    gate: AtomicU8,
    rehook: HookPoint,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("p", &self.p).field("checked", &self.checked).finish()
    }
}

// SAFETY: the `UnsafeCell`s (registers and pair queues) are accessed by the protocol of
// threads/README.md: a register or a queue row is written only by its owner outside a sync,
// and read by others only inside a sync, between barrier B1 (which orders the owner's writes
// before the reads) and the pairwise completion (which keeps the owner inside the sync until the
// reads are over). The raw pointers inside requests point at registered memory, valid per the
// registration contract.
unsafe impl Sync for Group {}
// SAFETY: as for `Sync`; nothing in a group is tied to the thread that created it.
unsafe impl Send for Group {}

impl Group {
    fn new(p: usize, checked: bool, shares: Vec<Pid>) -> Group {
        let mk_queue = || CachePadded::new(UnsafeCell::new(PairQueue::default()));
        Group {
            p,
            checked,
            shares,
            flags_view: (0..p).map(|_| CachePadded::new(BarrierFlags::new(p))).collect(),
            wakers_view: (0..p).map(|_| CachePadded::new(Waker::default())).collect(),
            procs: (0..p)
                .map(|_| Proc {
                    done: CachePadded::new(AtomicU64::new(0)),
                    reg_hash: [AtomicU64::new(0), AtomicU64::new(0)],
                    register: CachePadded::new(UnsafeCell::new(Register::default())),
                })
                .collect(),
            queues: (0..p * p * 2).map(|_| mk_queue()).collect(),
            fail_epoch: CachePadded::new(AtomicU64::new(u64::MAX)),
            poisoned: AtomicBool::new(false),
            first_error: Mutex::new(None),
            exited: CachePadded::new(AtomicUsize::new(0)),
            gate: AtomicU8::new(GATE_WAIT),
            rehook: HookPoint::new(p, checked),
        }
    }

    fn waker(&self, pid: usize) -> &Waker {
        &self.wakers_view[pid]
    }

    fn queue(&self, origin: usize, target: usize, parity: usize) -> *mut PairQueue {
        self.queues[(origin * self.p + target) * 2 + parity].get()
    }

    fn register(&self, pid: usize) -> *mut Register {
        self.procs[pid].register.get()
    }

    fn wake_all(&self) {
        for w in self.wakers_view.iter() {
            w.kick();
        }
    }

    /// Rule 5: records `err`, marks the group failed from barrier `epoch` on, wakes everyone.
    fn poison(&self, err: &Error, epoch: u64) {
        self.poisoned.store(true, Ordering::SeqCst);
        if let Ok(mut first) = self.first_error.lock() {
            first.get_or_insert_with(|| err.clone());
        }
        self.fail_epoch.fetch_min(epoch, Ordering::SeqCst);
        self.wake_all();
    }

    /// The section's result once every process left: `Ok` unless some process failed.
    fn result(&self) -> Result<(), Error> {
        if !self.poisoned.load(Ordering::SeqCst) {
            return Ok(());
        }
        let first = self.first_error.lock().ok().and_then(|f| f.clone());
        Err(first.unwrap_or(Error::PeerFailed))
    }
}

/// Where the processes of a collective `hook`/`rehook` find the group they join.
#[derive(Debug)]
pub(crate) struct HookPoint {
    p: usize,
    checked: bool,
    /// `(generation, group, processes that joined)`.
    pending: Mutex<Vec<(u64, Arc<Group>, usize)>>,
}

impl HookPoint {
    fn new(p: usize, checked: bool) -> HookPoint {
        HookPoint { p, checked, pending: Mutex::new(Vec::new()) }
    }

    /// Returns the group of call number `generation`, creating it on first arrival.
    fn join(&self, generation: u64) -> Arc<Group> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let i = match pending.iter().position(|(g, _, _)| *g == generation) {
            Some(i) => i,
            None => {
                let group = Arc::new(Group::new(self.p, self.checked, vec![1; self.p]));
                pending.push((generation, group, 0));
                pending.len() - 1
            }
        };
        pending[i].2 += 1;
        let group = pending[i].1.clone();
        if pending[i].2 == self.p {
            pending.swap_remove(i);
        }
        group
    }
}

/// A bootstrap handle for [`hook`] (LPF's `lpf_init_t`): one per participating thread.
#[derive(Debug)]
pub struct Init {
    point: Arc<HookPoint>,
    pid: Pid,
    calls: u64,
}

impl Init {
    /// Creates the handles for a group of `nprocs` existing threads; hand handle `s` to the
    /// thread that is to be process `s`.
    pub fn group(nprocs: Pid) -> Vec<Init> {
        Init::group_with(nprocs, &ExecConfig::default())
    }

    /// Like [`Init::group`], with the backend options of `config` (`max_p` is ignored).
    pub fn group_with(nprocs: Pid, config: &ExecConfig) -> Vec<Init> {
        let point = Arc::new(HookPoint::new(nprocs.max(1) as usize, config.checked));
        (0..nprocs.max(1)).map(|pid| Init { point: point.clone(), pid, calls: 0 }).collect()
    }

    /// This thread's process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Number of processes in the group.
    pub fn nprocs(&self) -> Pid {
        self.point.p as Pid
    }
}

/// Groups being assembled by [`pthread_initialize`]: `(nprocs, point, joined pids)`.
type PendingInit = (Pid, Arc<HookPoint>, Vec<bool>);
static PENDING_INITS: Mutex<Vec<PendingInit>> = Mutex::new(Vec::new());

/// LPF's `lpf_pthread_initialize(pid, nprocs, &init)`: called by `nprocs` existing threads, each
/// with a distinct `pid`, to obtain the handles of one group without sharing anything first.
///
/// Threads calling with the same `nprocs` join the same group until it has `nprocs` members
/// (so two groups of the same size must not be initialised at the same time). Fails with
/// [`Error::BadInit`] when `pid >= nprocs` or a pid is given twice.
pub fn pthread_initialize(pid: Pid, nprocs: Pid) -> Result<Init, Error> {
    if pid >= nprocs {
        return Err(Error::BadInit(format!("pid {pid} is not below nprocs {nprocs}")));
    }
    let mut pending = PENDING_INITS.lock().unwrap_or_else(|e| e.into_inner());
    let i = match pending.iter().position(|(n, _, _)| *n == nprocs) {
        Some(i) => i,
        None => {
            let checked = ExecConfig::default().checked;
            let point = Arc::new(HookPoint::new(nprocs as usize, checked));
            pending.push((nprocs, point, vec![false; nprocs as usize]));
            pending.len() - 1
        }
    };
    let joined = &mut pending[i].2;
    if joined[pid as usize] {
        return Err(Error::BadInit(format!("pid {pid} initialised twice for one group")));
    }
    joined[pid as usize] = true;
    let point = pending[i].1.clone();
    if pending[i].2.iter().all(|&j| j) {
        pending.swap_remove(i);
    }
    Ok(Init { point, pid, calls: 0 })
}

/// LPF's `lpf_hook`: runs `spmd` on the calling thread as process `init.pid()` of the group of
/// `init`. Collective: every thread of the group must call it (each with its own `args`). Returns
/// when every process of the section returned; `Err` (fatal) if any failed. An `Init` may be
/// used for any number of successive hooks.
pub fn hook<F>(init: &mut Init, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let group = init.point.join(init.calls);
    init.calls += 1;
    run_process(&group, init.pid as usize, &spmd, args)
}

/// LPF's `lpf_exec` from the root: runs `spmd` on `min(p, max_p)` new processes (thread 0 is the
/// caller) and waits for them. Only process 0 sees `args.input`/`args.output`; all see
/// `args.symbols`. Output written by process 0 is in `args.output` even when the result is fatal.
///
/// Errors: `OutOfMemory` if threads could not be started (nothing ran); the first fatal error
/// of any process otherwise (a panic in `spmd` becomes [`Error::Panicked`]).
pub fn exec<F>(p: Pid, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    exec_with(&ExecConfig::default(), p, spmd, args)
}

/// [`exec`] with explicit options (processor count of the root, `Checked` backend).
pub fn exec_with<F>(config: &ExecConfig, p: Pid, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    run_exec(config.root_p(), config.checked, p, &spmd, args)
}

/// Splits `free` processors over `n` processes: the first `free % n` get one more.
fn shares(free: Pid, n: Pid) -> Vec<Pid> {
    (0..n).map(|s| (free / n + Pid::from(s < free % n)).max(1)).collect()
}

fn run_exec<F>(free: Pid, checked: bool, p: Pid, spmd: &F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let n = p.min(free).max(1);
    let group = Arc::new(Group::new(n as usize, checked, shares(free, n)));
    let symbols = args.symbols;
    std::thread::scope(|scope| {
        let mut spawned = Vec::with_capacity(n as usize - 1);
        let mut failed = false;
        for s in 1..n as usize {
            let group = &group;
            let builder =
                std::thread::Builder::new().name(format!("sluice-bsp-{s}")).stack_size(8 << 20);
            let started = builder.spawn_scoped(scope, move || {
                let me = group.waker(s);
                me.bind_current();
                wait::wait(me, || group.gate.load(Ordering::Acquire) != GATE_WAIT, || false);
                if group.gate.load(Ordering::Acquire) == GATE_GO {
                    let _ = run_process(group, s, spmd, Args::for_peer(symbols));
                }
            });
            match started {
                Ok(h) => spawned.push(h),
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        // Release: the gate publishes the group; pairs with the Acquire loads above.
        let verdict = if failed { GATE_ABORT } else { GATE_GO };
        group.gate.store(verdict, Ordering::Release);
        group.wake_all();
        if failed {
            return Err(Error::OutOfMemory { what: "threads", requested: n as usize });
        }
        run_process(&group, 0, spmd, args)
    })
}

/// Runs one process of `group` on the calling thread, then the exit protocol (rule 5).
fn run_process<F>(group: &Arc<Group>, pid: usize, spmd: &F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let me = group.waker(pid);
    me.bind_current();
    let mut ctx = Ctx::new(group.clone(), pid);
    let p = group.p as Pid;
    let outcome = catch_unwind(AssertUnwindSafe(|| spmd(&mut ctx, pid as Pid, p, args)));
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        let err = Error::Panicked { pid: pid as Pid, message };
        ctx.poisoned = true;
        group.poison(&err, ctx.epoch + 1);
    }
    // Leaving: barrier epoch+1 will never see this process (rule 5).
    group.fail_epoch.fetch_min(ctx.epoch + 1, Ordering::SeqCst);
    group.wake_all();
    // Exit rendezvous: every process learns the section's result, and registered memory is
    // released only after no peer can touch it.
    let left = group.exited.fetch_add(1, Ordering::AcqRel) + 1;
    if left == group.p {
        group.wake_all();
    } else {
        wait::wait(me, || group.exited.load(Ordering::Acquire) == group.p, || false);
    }
    drop(ctx);
    group.result()
}

/// `ptr::copy` (memmove), with the common 8- and 16-byte cases inlined: a library call per
/// 8-byte message would dominate a large all-to-all.
///
/// # Safety
/// As for `std::ptr::copy::<u8>(src, dst, len)`.
#[inline(always)]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    match len {
        // SAFETY: the caller guarantees 8 readable bytes at `src` and 8 writable at `dst`;
        // unaligned accesses are allowed; reading fully before writing gives memmove semantics.
        8 => unsafe { dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()) },
        // SAFETY: as above, with 16 bytes.
        16 => unsafe { dst.cast::<u128>().write_unaligned(src.cast::<u128>().read_unaligned()) },
        // SAFETY: forwarded caller guarantee.
        _ => unsafe { std::ptr::copy(src, dst, len) },
    }
}

/// The context of one BSP process (LPF's `lpf_t` inside an SPMD section).
///
/// Passed as `&mut Ctx` to the SPMD function; used by that thread only: `Ctx` is neither `Send`
/// nor `Sync`, because its waits park the thread that runs the process (LPF: one thread per
/// context).
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// sluice_bsp::exec(1, |ctx, _, _, _| needs_send(ctx), sluice_bsp::Args::none()).unwrap();
/// ```
#[derive(Debug)]
pub struct Ctx {
    group: Arc<Group>,
    pid: usize,
    /// Completed syncs.
    epoch: u64,
    msg_capacity: usize,
    pending_msg_capacity: Option<usize>,
    pending_reg_capacity: Option<usize>,
    /// Queue-capacity units used this superstep (origin ends, plus target ends of self messages).
    used: usize,
    poisoned: bool,
    rehooks: u64,
    /// Checked backend: running hash of this superstep's global (de)registrations.
    reg_hash: u64,
    partners: Vec<usize>,
    /// Whether this process's queue row of each parity may hold requests.
    dirty: [bool; 2],
    /// Pins the context to its thread (see the type's docs).
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Ctx {
    fn new(group: Arc<Group>, pid: usize) -> Ctx {
        Ctx {
            group,
            pid,
            epoch: 0,
            msg_capacity: 0,
            pending_msg_capacity: None,
            pending_reg_capacity: None,
            used: 0,
            poisoned: false,
            rehooks: 0,
            reg_hash: 0,
            partners: Vec::new(),
            dirty: [false; 2],
            _not_send: std::marker::PhantomData,
        }
    }

    /// This process's id `s`, in `0..nprocs()`.
    pub fn pid(&self) -> Pid {
        self.pid as Pid
    }

    /// Number of processes `p` of this section.
    pub fn nprocs(&self) -> Pid {
        self.group.p as Pid
    }

    /// Number of completed syncs of this context.
    pub fn syncs(&self) -> u64 {
        self.epoch
    }

    /// Returns true if and only if this context is in the failure state.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Returns true if and only if this section runs the `Checked` backend.
    pub fn is_checked(&self) -> bool {
        self.group.checked
    }

    /// Message queue capacity in force (changes at syncs).
    pub fn msg_capacity(&self) -> usize {
        self.msg_capacity
    }

    /// Memory register capacity in force (changes at syncs).
    pub fn register_capacity(&self) -> usize {
        self.reg().capacity()
    }

    /// Live registrations of this process (local and global).
    pub fn registered(&self) -> usize {
        self.reg().used()
    }

    /// Processors available to a nested [`Ctx::exec`] from this process (LPF's `free_p`, ≥ 1).
    pub fn free_p(&self) -> Pid {
        self.group.shares[self.pid]
    }

    /// LPF's `lpf_probe`: `p`, `free_p`, and the cost functions g and ℓ.
    pub fn probe(&self) -> Machine {
        Machine::new(self.nprocs(), self.free_p())
    }

    fn parity(&self) -> usize {
        ((self.epoch + 1) & 1) as usize
    }

    fn reg_mut(&mut self) -> &mut Register {
        // SAFETY: the owner mutates its register only outside syncs (we hold `&mut self`, so
        // no sync of this process runs), and peers read it only inside syncs in which this
        // process takes part (threads/README.md, "Registers").
        unsafe { &mut *self.group.register(self.pid) }
    }

    fn reg(&self) -> &Register {
        // SAFETY: as in `reg_mut`; only the owner mutates, and not concurrently with `&self`.
        unsafe { &*self.group.register(self.pid) }
    }

    /// Poisons the context with `err` (rule 5) and returns it.
    fn fatal(&mut self, err: Error) -> Error {
        if !self.poisoned {
            self.poisoned = true;
            self.group.poison(&err, self.epoch + 1);
        }
        err
    }

    fn check_live(&self) -> Result<(), Error> {
        if self.poisoned { Err(Error::Poisoned) } else { Ok(()) }
    }

    fn note_global(&mut self, op: u64, raw: usize) {
        // FNV-1a style mixing; only equality across processes matters.
        let mut h = self.reg_hash ^ op.wrapping_mul(0x100_0000_01b3);
        h = (h ^ raw as u64).wrapping_mul(0x100_0000_01b3);
        self.reg_hash = h.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    }

    /// LPF's `lpf_register_global`: registers `len` bytes at `ptr` as a global slot. Collective:
    /// all processes register in the same superstep and order. Usable by puts and gets of this
    /// superstep already (they are resolved at the sync).
    ///
    /// Errors: [`Error::RegisterFull`] (mitigable) when the register capacity is used up.
    ///
    /// # Safety
    /// Until the slot is deregistered or the SPMD function returns: `ptr` must be valid for
    /// reads and writes of `len` bytes (any pointer when `len == 0`); no other code may access
    /// bytes that a message of the current superstep reads (other code may read them) or
    /// writes, from the call that queues it until the sync that ends it returns; and while a
    /// reference from [`Ctx::slot`]/[`Ctx::slot_mut`] lives, the memory must not be accessed
    /// through other pointers (the usual aliasing rules).
    pub unsafe fn register_global(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        let slot = self.reg_mut().insert(true, ptr, len, false)?;
        self.note_global(1, slot.as_raw());
        Ok(slot)
    }

    /// LPF's `lpf_register_local`: like [`Ctx::register_global`], but not collective and only a
    /// put source or get destination of this process.
    ///
    /// # Safety
    /// As for [`Ctx::register_global`].
    pub unsafe fn register_local(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        self.reg_mut().insert(false, ptr, len, false)
    }

    /// Safe registration of `len` zeroed bytes owned by the context (freed at deregistration),
    /// as a global slot; collective like [`Ctx::register_global`]. Read and write it with
    /// [`Ctx::slot`] and [`Ctx::slot_mut`] between syncs.
    ///
    /// Errors: `RegisterFull` or `OutOfMemory` (both mitigable).
    pub fn alloc_global(&mut self, len: usize) -> Result<MemSlot, Error> {
        self.alloc(true, len)
    }

    /// Like [`Ctx::alloc_global`], registered as a local slot.
    pub fn alloc_local(&mut self, len: usize) -> Result<MemSlot, Error> {
        self.alloc(false, len)
    }

    fn alloc(&mut self, global: bool, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        let reg = self.reg_mut();
        if reg.used() >= reg.capacity() {
            return Err(Error::RegisterFull { capacity: reg.capacity() });
        }
        let ptr = Register::alloc_zeroed(len)
            .ok_or(Error::OutOfMemory { what: "slot memory", requested: len })?;
        let slot = reg.insert(global, ptr, len, true)?;
        if global {
            self.note_global(1, slot.as_raw());
        }
        Ok(slot)
    }

    /// LPF's `lpf_deregister`: effective at once; collective for global slots. The slot must
    /// not be used by a message of the current superstep.
    pub fn deregister(&mut self, slot: MemSlot) -> Result<(), Error> {
        self.check_live()?;
        let pid = self.pid as Pid;
        match self.reg_mut().remove(pid, slot) {
            Ok(()) => {
                if slot.is_global() {
                    self.note_global(2, slot.as_raw());
                }
                Ok(())
            }
            Err(e) => Err(self.fatal(e)),
        }
    }

    /// The bytes of a registered slot of this process, for use between syncs.
    pub fn slot(&self, slot: MemSlot) -> Result<&[u8], Error> {
        let region = self.reg().region(self.pid as Pid, slot)?;
        if region.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: the registration contract makes `ptr` valid for `len` bytes while the slot
        // lives (tied to `&self`); no sync (and so no data phase writing the slot) can run while
        // `&self` is borrowed, and peers only touch this memory inside syncs.
        Ok(unsafe { std::slice::from_raw_parts(region.ptr, region.len) })
    }

    /// Mutable bytes of a registered slot of this process, for use between syncs.
    pub fn slot_mut(&mut self, slot: MemSlot) -> Result<&mut [u8], Error> {
        let pid = self.pid as Pid;
        let region = self.reg_mut().region(pid, slot)?;
        if region.len == 0 {
            return Ok(&mut []);
        }
        let (ptr, len) = (region.ptr, region.len);
        // SAFETY: as in `slot`; `&mut self` also excludes any other reference made by `slot`
        // or `slot_mut`, and the registration contract excludes other aliases.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
    }

    /// LPF's `lpf_put`: queues a copy of `len` bytes from `src[src_offset..]` (a local or global
    /// slot of this process) to `dst[dst_offset..]` (a global slot) on process `dst_pid`.
    /// Complete when the next [`Ctx::sync`] returns.
    ///
    /// Errors: `QueueFull` (mitigable, no effect); `BadPid`, `BadSlot`, `OutOfBounds` (fatal;
    /// destination bounds are checked at the sync, by the destination).
    pub fn put(
        &mut self,
        src: MemSlot,
        src_offset: usize,
        dst_pid: Pid,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        self.check_live()?;
        let d = dst_pid as usize;
        if d >= self.group.p {
            return Err(self.fatal(Error::BadPid { pid: dst_pid, p: self.nprocs() }));
        }
        let units = if d == self.pid { 2 } else { 1 };
        if self.used + units > self.msg_capacity {
            return Err(Error::QueueFull { capacity: self.msg_capacity });
        }
        if !dst.is_global() {
            let why = "a put destination must be a global slot";
            return Err(self.fatal(Error::BadSlot { pid: dst_pid, slot: dst.as_raw(), why }));
        }
        let src_ptr = match self.reg().resolve(self.pid as Pid, src, src_offset, len) {
            Ok(ptr) => ptr,
            Err(e) => return Err(self.fatal(e)),
        };
        let (dst_slot, end) = match (u32::try_from(dst.as_raw()), dst_offset.checked_add(len)) {
            (Ok(slot), Some(end)) => (slot, end),
            _ => {
                let (slot, offset) = (dst.as_raw(), dst_offset);
                let e = Error::OutOfBounds { pid: dst_pid, slot, offset, len, slot_len: 0 };
                return Err(self.fatal(e));
            }
        };
        let q = self.group.queue(self.pid, d, self.parity());
        // SAFETY: row `self.pid` of the queues is written only by this process, outside syncs
        // (`&mut self`); readers of this parity read it only in the next sync (README, "Queues").
        let puts = unsafe { &mut (*q).puts };
        if len <= CHUNK {
            puts.push(PutReq { src: src_ptr, dst_offset, dst_slot, len: len as u32 });
        } else {
            let mut at = 0;
            while at < len {
                let n = (len - at).min(CHUNK);
                let src = src_ptr.wrapping_add(at);
                puts.push(PutReq { src, dst_offset: end - len + at, dst_slot, len: n as u32 });
                at += n;
            }
        }
        self.used += units;
        self.dirty[self.parity()] = true;
        Ok(())
    }

    /// LPF's `lpf_get`: queues a copy of `len` bytes from `src[src_offset..]` (a global slot)
    /// on process `src_pid` to `dst[dst_offset..]` (a slot of this process).
    ///
    /// Errors as for [`Ctx::put`].
    pub fn get(
        &mut self,
        src_pid: Pid,
        src: MemSlot,
        src_offset: usize,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        self.check_live()?;
        let s = src_pid as usize;
        if s >= self.group.p {
            return Err(self.fatal(Error::BadPid { pid: src_pid, p: self.nprocs() }));
        }
        let units = if s == self.pid { 2 } else { 1 };
        if self.used + units > self.msg_capacity {
            return Err(Error::QueueFull { capacity: self.msg_capacity });
        }
        if !src.is_global() {
            let why = "a get source must be a global slot";
            return Err(self.fatal(Error::BadSlot { pid: src_pid, slot: src.as_raw(), why }));
        }
        let dst_ptr = match self.reg().resolve(self.pid as Pid, dst, dst_offset, len) {
            Ok(ptr) => ptr,
            Err(e) => return Err(self.fatal(e)),
        };
        let (src_slot, end) = match (u32::try_from(src.as_raw()), src_offset.checked_add(len)) {
            (Ok(slot), Some(end)) => (slot, end),
            _ => {
                let (slot, offset) = (src.as_raw(), src_offset);
                let e = Error::OutOfBounds { pid: src_pid, slot, offset, len, slot_len: 0 };
                return Err(self.fatal(e));
            }
        };
        let q = self.group.queue(self.pid, s, self.parity());
        // SAFETY: as in `put`: this process owns row `self.pid` between syncs.
        let gets = unsafe { &mut (*q).gets };
        if len <= CHUNK {
            gets.push(GetReq { dst: dst_ptr, src_offset, src_slot, len: len as u32 });
        } else {
            let mut at = 0;
            while at < len {
                let n = (len - at).min(CHUNK);
                let dst = dst_ptr.wrapping_add(at);
                gets.push(GetReq { dst, src_offset: end - len + at, src_slot, len: n as u32 });
                at += n;
            }
        }
        self.used += units;
        self.dirty[self.parity()] = true;
        Ok(())
    }

    /// LPF's `lpf_resize_memory_register`: capacity for `max_regs` local plus global slots,
    /// effective after the next sync. The last call before a sync wins; shrinking always
    /// succeeds. Errors: `OutOfMemory` (mitigable, no effect).
    pub fn resize_memory_register(&mut self, max_regs: usize) -> Result<(), Error> {
        self.check_live()?;
        if !self.reg_mut().try_reserve(max_regs) {
            return Err(Error::OutOfMemory { what: "memory register", requested: max_regs });
        }
        self.pending_reg_capacity = Some(max_regs);
        Ok(())
    }

    /// LPF's `lpf_resize_message_queue`: room for `max_msgs` messages, each counted at its
    /// origin and at its target; effective after the next sync; last call wins; shrinking always
    /// succeeds. Errors: `OutOfMemory` (mitigable, no effect) when `max_msgs` requests could not
    /// be stored (the queues themselves grow on demand, in amortised O(1)).
    pub fn resize_message_queue(&mut self, max_msgs: usize) -> Result<(), Error> {
        self.check_live()?;
        if max_msgs > self.msg_capacity {
            let mut probe: Vec<PutReq> = Vec::new();
            if probe.try_reserve_exact(max_msgs).is_err() {
                return Err(Error::OutOfMemory { what: "message queue", requested: max_msgs });
            }
        }
        self.pending_msg_capacity = Some(max_msgs);
        Ok(())
    }

    /// LPF's `lpf_sync`: ends the superstep. Every queued put and get is complete when it
    /// returns `Ok`, and pending resizes are in force.
    ///
    /// Errors (all fatal): `Poisoned` if this context failed before; `PeerFailed` if a peer
    /// failed or left its SPMD function; `QueueOverflow`, `BadSlot`, `OutOfBounds` found while
    /// executing messages; `Checked` violations under the `Checked` backend.
    pub fn sync(&mut self) -> Result<(), Error> {
        self.check_live()?;
        let group = self.group.clone();
        let g = &*group;
        let (me, p) = (self.pid, g.p);
        let e = self.epoch + 1;
        let par = (e & 1) as usize;
        if g.checked {
            // Relaxed: B1's Release/Acquire chain publishes it.
            g.procs[me].reg_hash[par].store(self.reg_hash, Ordering::Relaxed);
        }
        let flags = &g.flags_view;
        let any = self.used > 0 || g.checked;
        let Some(any) = wait::barrier(flags, &g.wakers_view, &g.fail_epoch, me, e, any) else {
            return Err(self.fatal(Error::PeerFailed));
        };
        if !any {
            // No process queued anything: nothing to copy, nobody to wait for (rule 3).
            self.finish_sync(e);
            return Ok(());
        }
        // Data phase (rule 2). Every queue of parity `par` is frozen until B1(e + 1).
        let mut err: Option<Error> = None;
        let mut count = 0usize;
        self.partners.clear();
        for j in 0..p {
            // SAFETY: after B1(e), queues of parity `par` are only read until B1(e + 1)
            // (README, "Queues"); the writes of their origins happen-before B1(e).
            let (out_len, in_len) =
                unsafe { ((*g.queue(me, j, par)).len(), (*g.queue(j, me, par)).len()) };
            count += out_len + in_len;
            if j != me && (out_len > 0 || in_len > 0) {
                self.partners.push(j);
            }
        }
        if g.checked && count > self.msg_capacity {
            let capacity = self.msg_capacity;
            err = Some(Error::QueueOverflow { pid: me as Pid, count, capacity });
        }
        if err.is_none() && g.checked {
            err = checked::check_sync(self, par).err();
        }
        if err.is_none() {
            err = self.execute(par).err();
        }
        // Release: publishes this process's copies and ends its reads of peers' memory; pairs
        // with the Acquire in the partners' wait below.
        g.procs[me].done.store(e, Ordering::Release);
        for &j in &self.partners {
            g.waker(j).signal();
        }
        for &j in &self.partners {
            let done = &g.procs[j].done;
            wait::wait(g.waker(me), || done.load(Ordering::Acquire) >= e, || false);
        }
        self.finish_sync(e);
        match err {
            Some(e) => Err(self.fatal(e)),
            None => Ok(()),
        }
    }

    /// End of sync `e`: recycle the queues the next superstep writes, apply pending resizes.
    fn finish_sync(&mut self, e: u64) {
        let g = &*self.group;
        let next = ((e + 1) & 1) as usize;
        if self.dirty[next] {
            for j in 0..g.p {
                // SAFETY: this process owns row `pid`; parity `next` was last read in sync e - 1,
                // whose readers all finished before they entered B1(e).
                unsafe {
                    let q = &mut *g.queue(self.pid, j, next);
                    q.puts.clear();
                    q.gets.clear();
                }
            }
            self.dirty[next] = false;
        }
        self.epoch = e;
        self.used = 0;
        self.reg_hash = 0;
        if let Some(c) = self.pending_msg_capacity.take() {
            self.msg_capacity = c;
        }
        if let Some(c) = self.pending_reg_capacity.take() {
            self.reg_mut().set_capacity(c);
        }
    }

    /// The copies of the data phase: puts queued to this process, then gets it queued.
    fn execute(&self, par: usize) -> Result<(), Error> {
        let g = &*self.group;
        let me = self.pid;
        let mut mine = Resolver::new(self.reg(), me as Pid);
        let mut first_err = None;
        for j in 0..g.p {
            // SAFETY: queue (j -> me, par) is frozen during this data phase (see `sync`).
            let q = unsafe { &*g.queue(j, me, par) };
            for r in &q.puts {
                let len = r.len as usize;
                match mine.resolve(r.dst_slot as usize, r.dst_offset, len) {
                    // SAFETY: `r.src` was bounds-checked at the origin against a registered
                    // slot whose memory stays valid until this sync returns (registration
                    // contract; the origin waits for our `done`); `dst` is in bounds of our
                    // own slot. Only this thread writes our memory now (rule 2); `copy` allows
                    // overlap (an illegal but possible self-overlap).
                    Ok(dst) => unsafe { copy_bytes(r.src, dst, len) },
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        for j in 0..g.p {
            // SAFETY: queue (me -> j, par) is frozen during this data phase.
            let q = unsafe { &*g.queue(me, j, par) };
            if q.gets.is_empty() {
                continue;
            }
            // SAFETY: process j is inside this sync until it sees our `done` (we are its
            // partner), so its register is not being mutated.
            let mut theirs = Resolver::new(unsafe { &*g.register(j) }, j as Pid);
            for r in &q.gets {
                let len = r.len as usize;
                match theirs.resolve(r.src_slot as usize, r.src_offset, len) {
                    // SAFETY: `src` is in bounds of j's registered slot, valid while j waits in
                    // this sync; `r.dst` was bounds-checked at the get against our own slot.
                    Ok(src) => unsafe { copy_bytes(src, r.dst, len) },
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// LPF's `lpf_exec` inside a section: runs `spmd` on `min(p, free_p())` new processes (this
    /// thread becomes their process 0) and waits; this context is untouched.
    pub fn exec<F>(&mut self, p: Pid, spmd: F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        self.check_live()?;
        run_exec(self.free_p(), self.group.checked, p, &spmd, args)
    }

    /// LPF's `lpf_rehook`: collective; runs `spmd` on the same processes with a new, empty
    /// context (no slots, no queue capacity), so a library cannot see or disturb the caller's
    /// registrations. Returns when all processes returned.
    pub fn rehook<F>(&mut self, spmd: F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        self.check_live()?;
        let child = self.group.rehook.join(self.rehooks);
        self.rehooks += 1;
        run_process(&child, self.pid, &spmd, args)
    }

    // ---- accessors for the Checked backend (crate-internal) ----

    pub(crate) fn group_p(&self) -> usize {
        self.group.p
    }

    pub(crate) fn pid_usize(&self) -> usize {
        self.pid
    }

    /// Queue (origin -> target) of parity `par`.
    ///
    /// Only valid inside `sync` after B1 (the queues are frozen then).
    pub(crate) fn frozen_queue(&self, origin: usize, target: usize, par: usize) -> &PairQueue {
        // SAFETY: called only from `checked::check_sync`, inside `sync` between B1 and the
        // pairwise completion, when queues of parity `par` are frozen.
        unsafe { &*self.group.queue(origin, target, par) }
    }

    pub(crate) fn own_register(&self) -> &Register {
        self.reg()
    }

    /// Registration hashes of all processes for parity `par` (Checked backend).
    pub(crate) fn reg_hashes(&self, par: usize) -> Vec<u64> {
        self.group.procs.iter().map(|pr| pr.reg_hash[par].load(Ordering::Relaxed)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages longer than `CHUNK` (16 bytes under test) arrive whole, for puts and gets.
    #[test]
    fn long_messages_are_chunked_transparently() {
        for checked in [false, true] {
            crate::exec_with(
                &ExecConfig::new(3, checked),
                3,
                |ctx, s, p, _| {
                    ctx.resize_memory_register(3).unwrap();
                    ctx.resize_message_queue(64).unwrap();
                    ctx.sync().unwrap();
                    let src = ctx.alloc_global(100).unwrap();
                    let put_dst = ctx.alloc_global(100).unwrap();
                    let get_dst = ctx.alloc_local(100).unwrap();
                    for (i, b) in ctx.slot_mut(src).unwrap().iter_mut().enumerate() {
                        *b = (i as u32 * 7 + s) as u8;
                    }
                    ctx.sync().unwrap();
                    ctx.put(src, 3, (s + 1) % p, put_dst, 0, 97).unwrap();
                    ctx.get((s + 2) % p, src, 1, get_dst, 2, 98).unwrap();
                    ctx.sync().unwrap();
                    let from = (s + p - 1) % p;
                    let want: Vec<u8> = (3..100).map(|i| (i * 7 + from) as u8).collect();
                    assert_eq!(&ctx.slot(put_dst).unwrap()[..97], &want[..]);
                    let from = (s + 2) % p;
                    let want: Vec<u8> = (1..99).map(|i| (i * 7 + from) as u8).collect();
                    assert_eq!(&ctx.slot(get_dst).unwrap()[2..], &want[..]);
                },
                Args::none(),
            )
            .unwrap();
        }
    }
}
