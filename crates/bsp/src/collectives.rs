//! Collectives written with the BSP primitives only: broadcast, reduce, allreduce, gather,
//! allgather (also of records of different lengths: `allgather_varied`), alltoall.
//!
//! # Contract
//! 1. Every function is collective: all processes of the section call it in the same order
//!    with the same `root` and the same lengths (`data.len()`, `mine.len()`).
//! 2. Each call first raises (never lowers) the register capacity to `registered() + 3` and the
//!    queue capacity to `2p + 2` in one sync of its own, then uses owned global slots that it
//!    deregisters before returning. It leaves no messages queued; it ends with a sync.
//! 3. Reductions fold in process order 0, 1, …, p−1 (`op(op(x0, x1), x2)…`) for every element,
//!    so every process gets bitwise the same result (floating point included), and `op` need not
//!    be commutative (it must be associative only for the result to mean a reduction).
//! 4. Errors are the primitives' errors; after one, the context may be poisoned.
//!
//! # Costs (n = bytes per process, excluding the prologue sync)
//! | call | supersteps | h-relation |
//! |---|---|---|
//! | `broadcast` | 2 (1 if n < 64·p) | ≈ 2n (two-phase: scatter, then allgather) |
//! | `gather`, `reduce` | 1 | (p−1)·n at the root |
//! | `allgather` | 1 | (p−1)·n |
//! | `allgather_varied` | 2 | (p−1)·(8 + the longest n) |
//! | `gather_varied` | 2 | Σ n at the root |
//! | `alltoall` | 1 | (p−1)/p · n |
//! | `allreduce` | 2 | ≈ 2n (reduce-scatter, then allgather) |

use crate::{Ctx, Error, MemSlot, Pid};

/// A plain value the collectives can move as bytes.
pub trait Elem: Copy + Send + Sync + 'static {
    /// Size in bytes.
    const SIZE: usize;
    /// Writes the value's bytes (native endianness) into `out[..SIZE]`.
    fn put_bytes(self, out: &mut [u8]);
    /// Reads a value from `bytes[..SIZE]`.
    fn from_bytes(bytes: &[u8]) -> Self;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put_bytes(self, out: &mut [u8]) {
                out[..Self::SIZE].copy_from_slice(&self.to_ne_bytes());
            }
            fn from_bytes(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(&bytes[..Self::SIZE]);
                <$t>::from_ne_bytes(b)
            }
        }
    )*};
}
elem!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

fn to_bytes<T: Elem>(src: &[T], out: &mut [u8]) {
    for (x, chunk) in src.iter().zip(out.chunks_exact_mut(T::SIZE)) {
        x.put_bytes(chunk);
    }
}

fn from_bytes<T: Elem>(src: &[u8], out: &mut [T]) {
    for (x, chunk) in out.iter_mut().zip(src.chunks_exact(T::SIZE)) {
        *x = T::from_bytes(chunk);
    }
}

/// Rule 2: capacity prologue.
fn prologue(ctx: &mut Ctx) -> Result<(), Error> {
    let regs = ctx.register_capacity().max(ctx.registered() + 3);
    let msgs = ctx.msg_capacity().max(2 * ctx.nprocs() as usize + 2);
    ctx.resize_memory_register(regs)?;
    ctx.resize_message_queue(msgs)?;
    ctx.sync()
}

/// Deregisters `slots`, keeping the first error.
fn release(ctx: &mut Ctx, slots: &[MemSlot]) -> Result<(), Error> {
    let mut result = Ok(());
    for &s in slots {
        if let Err(e) = ctx.deregister(s) {
            result = result.and(Err(e));
        }
    }
    result
}

fn check_pid(ctx: &Ctx, root: Pid) -> Result<(), Error> {
    if root >= ctx.nprocs() { Err(Error::BadPid { pid: root, p: ctx.nprocs() }) } else { Ok(()) }
}

/// Copies `data` of process `root` into `data` of every process.
pub fn broadcast<T: Elem>(ctx: &mut Ctx, root: Pid, data: &mut [T]) -> Result<(), Error> {
    check_pid(ctx, root)?;
    prologue(ctx)?;
    let (s, p) = (ctx.pid(), ctx.nprocs());
    let n = data.len() * T::SIZE;
    let buf = ctx.alloc_global(n)?;
    let mut run = |ctx: &mut Ctx| -> Result<(), Error> {
        if s == root {
            to_bytes(data, ctx.slot_mut(buf)?);
        }
        if p == 1 || n < 64 * p as usize {
            if s == root {
                for d in (0..p).filter(|&d| d != root) {
                    ctx.put(buf, 0, d, buf, 0, n)?;
                }
            }
            ctx.sync()?;
        } else {
            // Two-phase (scatter, then allgather) keeps h ≈ 2n instead of (p−1)·n at the root.
            let block = n.div_ceil(p as usize);
            let range = |j: Pid| {
                let lo = (j as usize * block).min(n);
                (lo, (lo + block).min(n) - lo)
            };
            if s == root {
                for d in (0..p).filter(|&d| d != root) {
                    let (off, len) = range(d);
                    ctx.put(buf, off, d, buf, off, len)?;
                }
            }
            ctx.sync()?;
            let (off, len) = range(s);
            for d in (0..p).filter(|&d| d != s && d != root) {
                ctx.put(buf, off, d, buf, off, len)?;
            }
            ctx.sync()?;
        }
        from_bytes(ctx.slot(buf)?, data);
        Ok(())
    };
    let result = run(ctx);
    result.and(release(ctx, &[buf]))
}

/// Concatenates every process's `mine` in pid order into `out` on `root` (`out.len()` must be
/// `p * mine.len()` there; it is ignored elsewhere).
pub fn gather<T: Elem>(ctx: &mut Ctx, root: Pid, mine: &[T], out: &mut [T]) -> Result<(), Error> {
    check_pid(ctx, root)?;
    let (s, p) = (ctx.pid(), ctx.nprocs());
    let n = mine.len() * T::SIZE;
    if s == root {
        assert_eq!(out.len(), p as usize * mine.len(), "gather: out must hold p * mine.len()");
    }
    prologue(ctx)?;
    let recv = ctx.alloc_global(if s == root { n * p as usize } else { 0 })?;
    let send = match ctx.alloc_local(n) {
        Ok(slot) => slot,
        Err(e) => return Err::<(), _>(e).and(release(ctx, &[recv])),
    };
    let mut run = |ctx: &mut Ctx| -> Result<(), Error> {
        to_bytes(mine, ctx.slot_mut(send)?);
        ctx.put(send, 0, root, recv, s as usize * n, n)?;
        ctx.sync()?;
        if s == root {
            from_bytes(ctx.slot(recv)?, out);
        }
        Ok(())
    };
    let result = run(ctx);
    result.and(release(ctx, &[send, recv]))
}

/// Like [`gather`], on every process (`out.len() == p * mine.len()` everywhere).
pub fn allgather<T: Elem>(ctx: &mut Ctx, mine: &[T], out: &mut [T]) -> Result<(), Error> {
    let (s, p) = (ctx.pid(), ctx.nprocs());
    assert_eq!(out.len(), p as usize * mine.len(), "allgather: out must hold p * mine.len()");
    let n = mine.len() * T::SIZE;
    prologue(ctx)?;
    let buf = ctx.alloc_global(n * p as usize)?;
    let mut run = |ctx: &mut Ctx| -> Result<(), Error> {
        let off = s as usize * n;
        to_bytes(mine, &mut ctx.slot_mut(buf)?[off..off + n]);
        for d in (0..p).filter(|&d| d != s) {
            ctx.put(buf, off, d, buf, off, n)?;
        }
        ctx.sync()?;
        from_bytes(ctx.slot(buf)?, out);
        Ok(())
    };
    let result = run(ctx);
    result.and(release(ctx, &[buf]))
}

/// Every process's `mine`, of any length, on every process, in pid order: one allgather of
/// the lengths, then one of the records padded to the longest.
pub fn allgather_varied(ctx: &mut Ctx, mine: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    let p = ctx.nprocs() as usize;
    let mut lens = vec![0u64; p];
    allgather(ctx, &[mine.len() as u64], &mut lens)?;
    let longest = lens.iter().copied().max().unwrap_or(0) as usize;
    let mut padded = mine.to_vec();
    padded.resize(longest, 0);
    let mut all = vec![0u8; longest * p];
    allgather(ctx, &padded, &mut all)?;
    let records = lens
        .iter()
        .enumerate()
        .map(|(r, &len)| all[r * longest..r * longest + len as usize].to_vec());
    Ok(records.collect())
}

/// Every process's `mine`, of any length, concatenated in pid order on `root` (empty
/// elsewhere), with the length of each: one allgather of the lengths, then one superstep in
/// which each process puts its bytes straight into their place at the root.
pub fn gather_varied(
    ctx: &mut Ctx,
    root: Pid,
    mine: &[u8],
) -> Result<(Vec<u8>, Vec<usize>), Error> {
    check_pid(ctx, root)?;
    let (s, p) = (ctx.pid(), ctx.nprocs() as usize);
    let mut lens = vec![0u64; p];
    allgather(ctx, &[mine.len() as u64], &mut lens)?;
    let lens: Vec<usize> = lens.into_iter().map(|n| n as usize).collect();
    let at: usize = lens[..s as usize].iter().sum();
    let total = if s == root { lens.iter().sum() } else { 0 };
    prologue(ctx)?;
    let recv = ctx.alloc_global(total)?;
    let send = match ctx.alloc_local(mine.len()) {
        Ok(slot) => slot,
        Err(e) => {
            // The first error is the one to report.
            let _ = release(ctx, &[recv]);
            return Err(e);
        }
    };
    let run = |ctx: &mut Ctx| -> Result<Vec<u8>, Error> {
        ctx.slot_mut(send)?.copy_from_slice(mine);
        if !mine.is_empty() {
            ctx.put(send, 0, root, recv, at, mine.len())?;
        }
        ctx.sync()?;
        Ok(if s == root { ctx.slot(recv)?.to_vec() } else { Vec::new() })
    };
    let result = run(ctx);
    let released = release(ctx, &[send, recv]);
    let bytes = result?;
    released?;
    Ok((bytes, lens))
}

/// Personalised all-to-all: block `d` of `send` (blocks of `send.len() / p` elements) goes to
/// process `d`, landing in block `s` of its `recv`. `send.len() == recv.len()`, a multiple of p.
pub fn alltoall<T: Elem>(ctx: &mut Ctx, send: &[T], recv: &mut [T]) -> Result<(), Error> {
    let (s, p) = (ctx.pid(), ctx.nprocs());
    assert_eq!(send.len(), recv.len(), "alltoall: send and recv lengths differ");
    assert_eq!(send.len() % p as usize, 0, "alltoall: length must be a multiple of p");
    let block = send.len() / p as usize * T::SIZE;
    prologue(ctx)?;
    let dst = ctx.alloc_global(block * p as usize)?;
    let src = match ctx.alloc_local(block * p as usize) {
        Ok(slot) => slot,
        Err(e) => return Err::<(), _>(e).and(release(ctx, &[dst])),
    };
    let mut run = |ctx: &mut Ctx| -> Result<(), Error> {
        to_bytes(send, ctx.slot_mut(src)?);
        for d in 0..p {
            ctx.put(src, d as usize * block, d, dst, s as usize * block, block)?;
        }
        ctx.sync()?;
        from_bytes(ctx.slot(dst)?, recv);
        Ok(())
    };
    let result = run(ctx);
    result.and(release(ctx, &[src, dst]))
}

/// Element-wise reduction of every process's `data` with `op` (rule 3) into `data` on `root`;
/// other processes' `data` is unchanged.
pub fn reduce<T: Elem>(
    ctx: &mut Ctx,
    root: Pid,
    data: &mut [T],
    op: impl Fn(T, T) -> T,
) -> Result<(), Error> {
    let p = ctx.nprocs() as usize;
    let Some(&first) = data.first() else {
        return gather(ctx, root, data, &mut []);
    };
    let mut all = if ctx.pid() == root { vec![first; data.len() * p] } else { Vec::new() };
    gather(ctx, root, data, &mut all)?;
    if ctx.pid() == root {
        fold_blocks(&all, data, p, &op);
    }
    Ok(())
}

/// `out[i] = op(…op(op(all[i], all[n + i]), all[2n + i])…)` over `p` blocks of `n = out.len()`.
fn fold_blocks<T: Elem>(all: &[T], out: &mut [T], p: usize, op: &impl Fn(T, T) -> T) {
    let n = out.len();
    for (i, o) in out.iter_mut().enumerate() {
        let mut acc = all[i];
        for b in 1..p {
            acc = op(acc, all[b * n + i]);
        }
        *o = acc;
    }
}

/// Element-wise reduction of every process's `data` with `op` (rule 3), result on every
/// process. Two-phase: process j reduces elements of block j, then blocks are allgathered.
pub fn allreduce<T: Elem>(
    ctx: &mut Ctx,
    data: &mut [T],
    op: impl Fn(T, T) -> T,
) -> Result<(), Error> {
    let (s, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    let n = data.len();
    let bmax = n.div_ceil(p);
    let range = |j: usize| {
        let lo = (j * bmax).min(n);
        (lo, (lo + bmax).min(n))
    };
    let w = T::SIZE;
    prologue(ctx)?;
    let src = ctx.alloc_local(n * w)?;
    let scratch = match ctx.alloc_global(bmax * p * w) {
        Ok(slot) => slot,
        Err(e) => return Err::<(), _>(e).and(release(ctx, &[src])),
    };
    let result = match ctx.alloc_global(n * w) {
        Ok(slot) => slot,
        Err(e) => return Err::<(), _>(e).and(release(ctx, &[src, scratch])),
    };
    let mut run = |ctx: &mut Ctx| -> Result<(), Error> {
        to_bytes(data, ctx.slot_mut(src)?);
        for d in 0..p {
            let (lo, hi) = range(d);
            ctx.put(src, lo * w, d as Pid, scratch, s * bmax * w, (hi - lo) * w)?;
        }
        ctx.sync()?;
        let (lo, hi) = range(s);
        let k = hi - lo;
        let mut parts =
            vec![data.first().copied().unwrap_or_else(|| T::from_bytes(&[0; 64])); k * p];
        {
            let bytes = ctx.slot(scratch)?;
            for b in 0..p {
                let off = b * bmax * w;
                from_bytes(&bytes[off..off + k * w], &mut parts[b * k..(b + 1) * k]);
            }
        }
        let mut mine = parts[..k].to_vec();
        fold_blocks(&parts, &mut mine, p, &op);
        to_bytes(&mine, &mut ctx.slot_mut(result)?[lo * w..hi * w]);
        for d in (0..p).filter(|&d| d != s) {
            ctx.put(result, lo * w, d as Pid, result, lo * w, k * w)?;
        }
        ctx.sync()?;
        from_bytes(ctx.slot(result)?, data);
        Ok(())
    };
    let outcome = run(ctx);
    outcome.and(release(ctx, &[src, scratch, result]))
}
