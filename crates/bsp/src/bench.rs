//! Measurements behind `sluice bsp bench`: the machine's BSP constants, measured side by side in
//! one run, normalised as in the LPF paper (Table 3: g in multiples of r, ℓ in words).
//!
//! # What is measured (all with `p` processes of the threads backend)
//! - **r**: memcpy speed, ns per byte, with `p` threads each copying `memcpy_bytes` at once.
//! - **ping-pong**: one-way latency of a cache line bounced between two threads (the floor of
//!   any barrier on this machine).
//! - **ℓ (empty sync)**: time of a sync with no messages.
//! - **all-to-all**: time per 8-byte message when every process sends `alltoall_msgs` messages
//!   round-robin to all others in one superstep.
//! - **g, ℓ per word size w** (8 B, 64 B, 1 KiB, 1 MiB): total exchanges of h words; following the
//!   paper, g = (T(n_max) − T(2p)) / (n_max − 2p) and ℓ = max(T(0), 2T(p) − T(2p)), estimated
//!   `reps` times; the report gives means and 95 % confidence half-widths.
//! - **big put**: one 64 MiB put per process to its neighbour, against `p` concurrent 64 MiB
//!   memcpys.
//!
//! Absolute times on a shared machine are noise; the ratios in [`BenchReport::table`] are the
//! figures to quote. Nothing here asserts a time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use serde::{Deserialize, Serialize};

use crate::probe::{CostPoint, CostTable};

mod config;

use crate::{Args, Ctx, Error, ExecConfig, MemSlot, Pid, exec_with};
pub use config::BenchConfig;

/// A mean with the half-width of its 95 % confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Sample mean.
    pub mean: f64,
    /// Half-width of the 95 % confidence interval (Student t).
    pub ci95: f64,
}

impl Estimate {
    /// Mean and 95 % half-width of `samples`.
    pub fn of(samples: &[f64]) -> Estimate {
        let n = samples.len();
        if n == 0 {
            return Estimate { mean: f64::NAN, ci95: f64::NAN };
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Estimate { mean, ci95: f64::INFINITY };
        }
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Estimate { mean, ci95: t95(n - 1) * (var / n as f64).sqrt() }
    }
}

/// Two-sided 95 % Student t quantile for `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 10] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];
    match df {
        0 => f64::INFINITY,
        1..=10 => T[df - 1],
        11..=20 => 2.1,
        21..=40 => 2.03,
        _ => 1.96,
    }
}

/// g and ℓ for one word size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WordCosts {
    /// Word (message) size in bytes.
    pub word_bytes: usize,
    /// memcpy time per byte for copies of this word size, ns (LPF's r per w).
    pub r_ns_per_byte: f64,
    /// g in ns per byte.
    pub g_ns_per_byte: Estimate,
    /// ℓ in ns.
    pub l_ns: Estimate,
}

impl WordCosts {
    /// g in multiples of r (LPF Table 3).
    pub fn g_over_r(&self) -> f64 {
        self.g_ns_per_byte.mean / self.r_ns_per_byte
    }

    /// ℓ in words: the number of w-byte words memcpy moves in time ℓ (LPF Table 3).
    pub fn l_words(&self) -> f64 {
        self.l_ns.mean / (self.r_ns_per_byte * self.word_bytes as f64)
    }
}

/// Everything one bench run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The configuration used.
    pub config: BenchConfig,
    /// Processes actually run.
    pub p: Pid,
    /// memcpy time per byte with p threads copying at once (big copies), ns.
    pub r_ns_per_byte: f64,
    /// One-way cache-line transfer between two threads, ns.
    pub pingpong_one_way_ns: f64,
    /// One-way ping-pong in the best of 20 batches, ns.
    pub pingpong_best_ns: f64,
    /// Empty sync, ns.
    pub empty_sync_ns: Estimate,
    /// Empty sync in the best batch, ns.
    pub empty_sync_best_ns: f64,
    /// Time per 8-byte message in a large all-to-all, ns.
    pub alltoall_ns_per_msg: f64,
    /// CPU time of process 0 per 8-byte message in the same all-to-all (issuing its puts and
    /// executing the ones it receives), ns: insensitive to other load on the machine.
    pub alltoall_cpu_ns_per_msg: f64,
    /// g and ℓ per word size.
    pub words: Vec<WordCosts>,
    /// Seconds for p concurrent memcpys of `memcpy_bytes` each.
    pub memcpy_s: f64,
    /// Seconds for one superstep in which every process puts `memcpy_bytes` to its neighbour.
    pub big_put_s: f64,
}

impl BenchReport {
    /// Empty sync divided by the one-way ping-pong, means (target ≤ 3).
    pub fn sync_over_pingpong(&self) -> f64 {
        self.empty_sync_ns.mean / self.pingpong_one_way_ns
    }

    /// The same ratio from the best batches (robust on a loaded machine).
    pub fn best_sync_over_best_pingpong(&self) -> f64 {
        self.empty_sync_best_ns / self.pingpong_best_ns
    }

    /// Speed of the big puts relative to p concurrent memcpys (target ≥ 0.9).
    pub fn put_over_memcpy(&self) -> f64 {
        self.memcpy_s / self.big_put_s
    }

    /// The report as a table like LPF's, plus the target ratios.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "sluice bsp bench: p = {} (threads backend)", self.p);
        // Every column is separated by at least two spaces, however wide a figure gets (a busy
        // machine once printed `35.275 ±24.12756806.02 ±11017.62`).
        let _ = writeln!(
            s,
            "{:<10}  {:>10}  {:>24}  {:>26}",
            "w (bytes)", "r (ns/B)", "g (x r)", "l (words)"
        );
        for w in &self.words {
            let g_ci = w.g_ns_per_byte.ci95 / w.r_ns_per_byte;
            let l_ci = w.l_ns.ci95 / (w.r_ns_per_byte * w.word_bytes as f64);
            let _ = writeln!(
                s,
                "{:<10}  {:>10.4}  {:>24}  {:>26}",
                w.word_bytes,
                w.r_ns_per_byte,
                format!("{:.3} ± {:.3}", w.g_over_r(), g_ci),
                format!("{:.2} ± {:.2}", w.l_words(), l_ci),
            );
        }
        let _ = writeln!(s, "r, p concurrent memcpys          {:>10.4} ns/B", self.r_ns_per_byte);
        let _ = writeln!(
            s,
            "cache-line ping-pong, one way    {:>10.1} ns   (best batch {:.1} ns)",
            self.pingpong_one_way_ns, self.pingpong_best_ns
        );
        let _ = writeln!(
            s,
            "empty sync l                     {:>10.1} ns ±{:.1}   (best batch {:.1} ns)",
            self.empty_sync_ns.mean, self.empty_sync_ns.ci95, self.empty_sync_best_ns
        );
        let _ = writeln!(
            s,
            "all-to-all, per 8-byte message   {:>10.2} ns   (CPU time of process 0: {:.2} ns)",
            self.alltoall_ns_per_msg, self.alltoall_cpu_ns_per_msg
        );
        let mib = self.config.memcpy_bytes as f64 / (1 << 20) as f64;
        let _ = writeln!(
            s,
            "{mib:.0} MiB put per process           {:>10.3} ms   (p memcpys {:.3} ms)",
            self.big_put_s * 1e3,
            self.memcpy_s * 1e3
        );
        if let Some(warning) = self.busy_warning() {
            let _ = writeln!(s, "{warning}");
        }
        let _ = writeln!(s, "targets (ratios measured in this run):");
        let _ = writeln!(
            s,
            "  empty sync / ping-pong          {:>8.2}   (target <= 3; best batches: {:.2})",
            self.sync_over_pingpong(),
            self.best_sync_over_best_pingpong()
        );
        let _ = writeln!(
            s,
            "  ns per 8-byte all-to-all msg    {:>8.2}   (target <= 20; CPU time: {:.2})",
            self.alltoall_ns_per_msg, self.alltoall_cpu_ns_per_msg
        );
        let _ = writeln!(
            s,
            "  big put speed / memcpy speed    {:>8.3}   (target >= 0.9)",
            self.put_over_memcpy()
        );
        s
    }

    /// A warning when the figures show a busy machine: a mean more than [`BUSY_RATIO`] times
    /// its best batch (empty sync or ping-pong), which other work on the cores causes (one run
    /// measured an empty sync of 85,657 ns, the next 82.6 ns).
    pub fn busy_warning(&self) -> Option<String> {
        let sync = self.empty_sync_ns.mean / self.empty_sync_best_ns.max(1e-9);
        let ping = self.pingpong_one_way_ns / self.pingpong_best_ns.max(1e-9);
        (sync > BUSY_RATIO || ping > BUSY_RATIO).then(|| {
            format!(
                "warning: the machine looks busy (empty sync mean {:.1} ns = {sync:.0} x its best \
                 batch; ping-pong mean {:.1} ns = {ping:.0} x its best): these are not the \
                 machine's figures; measure again when it is idle",
                self.empty_sync_ns.mean, self.pingpong_one_way_ns
            )
        })
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The points `probe` interpolates (g in s/byte, ℓ in s) for this p.
    pub fn cost_points(&self) -> Vec<CostPoint> {
        self.words
            .iter()
            .map(|w| CostPoint {
                p: self.p,
                word_bytes: w.word_bytes as u64,
                g_s_per_byte: (w.g_ns_per_byte.mean * 1e-9).max(1e-13),
                l_s: (w.l_ns.mean * 1e-9).max(1e-9),
            })
            .collect()
    }
}

/// Mean over best batch above which [`BenchReport::busy_warning`] warns.
pub const BUSY_RATIO: f64 = 5.0;

/// Merges bench reports (for several p) into a probe table. A point (p, word size) that `old`
/// has too keeps the better (smaller) g and ℓ of the two, so a run on a busy machine never makes
/// the stored table worse (issue 16 item 11); the machine's costs are its best figures.
pub fn to_cost_table(reports: &[BenchReport], old: Option<&CostTable>) -> CostTable {
    let mut points: Vec<CostPoint> = old.map(|t| t.points.clone()).unwrap_or_default();
    for new in reports.iter().flat_map(BenchReport::cost_points) {
        match points.iter_mut().find(|c| c.p == new.p && c.word_bytes == new.word_bytes) {
            Some(c) => {
                c.g_s_per_byte = c.g_s_per_byte.min(new.g_s_per_byte);
                c.l_s = c.l_s.min(new.l_s);
            }
            None => points.push(new),
        }
    }
    points.sort_by_key(|c| (c.p, c.word_bytes));
    CostTable { version: 1, source: "bench".to_string(), points }
}

/// Runs every measurement of `config`.
pub fn run(config: &BenchConfig) -> Result<BenchReport, Error> {
    let p = config.p.max(1);
    let (memcpy_s, r_ns_per_byte) = memcpy_speed(p as usize, config.memcpy_bytes);
    let (pingpong_one_way_ns, pingpong_best_ns) = pingpong_ns(config.pingpong_rounds.max(1));
    let exec_config = ExecConfig::new(p, false);
    let empty = Mutex::new(Vec::new());
    let alltoall = Mutex::new((0.0, 0.0));
    let words = Mutex::new(Vec::new());
    let big_put = Mutex::new(0.0);
    let failure = Mutex::new(None::<Error>);
    exec_with(
        &exec_config,
        p,
        |ctx, s, _, _| {
            let result = (|| -> Result<(), Error> {
                let e = empty_sync(ctx, config)?;
                let a = alltoall_ns(ctx, config.alltoall_msgs)?;
                let mut ws = Vec::new();
                for &w in &config.word_sizes {
                    ws.push(word_costs(ctx, config, w)?);
                }
                let b = big_put_s(ctx, config.memcpy_bytes)?;
                if s == 0 {
                    *empty.lock().unwrap_or_else(|e| e.into_inner()) = e;
                    *alltoall.lock().unwrap_or_else(|e| e.into_inner()) = a;
                    *words.lock().unwrap_or_else(|e| e.into_inner()) = ws;
                    *big_put.lock().unwrap_or_else(|e| e.into_inner()) = b;
                }
                Ok(())
            })();
            if let Err(e) = result {
                failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
            }
        },
        Args::none(),
    )?;
    if let Some(e) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let word_results: Vec<(usize, Estimate, Estimate)> =
        words.into_inner().unwrap_or_else(|e| e.into_inner());
    let empty_samples = empty.into_inner().unwrap_or_else(|e| e.into_inner());
    let (alltoall_wall, alltoall_cpu) = alltoall.into_inner().unwrap_or_else(|e| e.into_inner());
    let words = word_results
        .into_iter()
        .map(|(w, g, l)| WordCosts {
            word_bytes: w,
            r_ns_per_byte: memcpy_word_ns_per_byte(w, config.max_h_bytes.min(64 << 20)),
            g_ns_per_byte: g,
            l_ns: l,
        })
        .collect();
    Ok(BenchReport {
        config: config.clone(),
        p,
        r_ns_per_byte,
        pingpong_one_way_ns,
        empty_sync_ns: Estimate::of(&empty_samples),
        empty_sync_best_ns: empty_samples.iter().copied().fold(f64::INFINITY, f64::min),
        pingpong_best_ns,
        alltoall_ns_per_msg: alltoall_wall,
        alltoall_cpu_ns_per_msg: alltoall_cpu,
        words,
        memcpy_s,
        big_put_s: big_put.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

/// The MPI backend's bench (`sluice bsp bench --backend mpi`), run collectively by every rank
/// of an `mpirun` job (`config.p` is ignored: all ranks take part). Returns, on rank 0 only, the
/// printable table and the report as JSON, after merging g and ℓ into the MPI backend's probe
/// table when `save` (`CostTable::default_path_mpi`); `Ok(None)` on the other ranks.
///
/// Errors: [`Error::NoMpi`] when sluice-bsp was built without its `mpi` feature.
pub fn run_mpi(
    config: &BenchConfig,
    save: bool,
) -> Result<Option<(String, serde_json::Value)>, Error> {
    #[cfg(feature = "mpi")]
    {
        let report = crate::mpi::bench::run(config)?;
        if crate::mpi::world_rank_size().0 != 0 {
            return Ok(None);
        }
        let json = serde_json::to_value(&report).unwrap_or_default();
        let mut table = report.table();
        if save {
            let path = crate::mpi::bench::save_cost_table(&report)?;
            table.push_str(&format!("probe table: {}\n", path.display()));
        }
        Ok(Some((table, json)))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (config, save);
        Err(Error::NoMpi)
    }
}

/// (seconds, ns per byte) for `p` threads each copying `bytes` at once (best of 3).
fn memcpy_speed(p: usize, bytes: usize) -> (f64, f64) {
    let mut bufs: Vec<(Vec<u8>, Vec<u8>)> =
        (0..p).map(|_| (vec![1u8; bytes], vec![0u8; bytes])).collect();
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        std::thread::scope(|sc| {
            for (src, dst) in bufs.iter_mut() {
                sc.spawn(move || dst.copy_from_slice(src));
            }
        });
        best = best.min(start.elapsed().as_secs_f64());
    }
    (best, best * 1e9 / bytes.max(1) as f64)
}

/// ns per byte of one thread copying `total` bytes as separate `w`-byte memcpys (LPF's r per w).
fn memcpy_word_ns_per_byte(w: usize, total: usize) -> f64 {
    let n = (total / w).max(1);
    let src = vec![1u8; n * w];
    let mut dst = vec![0u8; n * w];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        for (d, s) in dst.chunks_exact_mut(w).zip(src.chunks_exact(w)) {
            d.copy_from_slice(std::hint::black_box(s));
        }
        std::hint::black_box(&mut dst);
        best = best.min(start.elapsed().as_secs_f64());
    }
    best * 1e9 / (n * w) as f64
}

/// One-way latency of a cache line bounced between two spinning threads, ns: (mean over all
/// `rounds`, best of 20 batches). The best batch is the figure a loaded machine does not inflate.
fn pingpong_ns(rounds: u64) -> (f64, f64) {
    let line = CachePadded::new(AtomicU64::new(0));
    let line = &line;
    let batches = 20u64;
    let per = (rounds / batches).max(1);
    let mut total = 0.0;
    let mut best = f64::INFINITY;
    std::thread::scope(|sc| {
        sc.spawn(move || {
            for i in 0..per * batches {
                while line.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                line.store(2 * i + 2, Ordering::Release);
            }
        });
        for b in 0..batches {
            let start = Instant::now();
            for i in b * per..(b + 1) * per {
                line.store(2 * i + 1, Ordering::Release);
                while line.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
            }
            let t = start.elapsed().as_secs_f64();
            total += t;
            best = best.min(t);
        }
    });
    let one_way = |t: f64, n: u64| t * 1e9 / (2 * n) as f64;
    (one_way(total, per * batches), one_way(best, per))
}

/// Samples (ns per sync) of `reps` batches of `empty_syncs` empty syncs (timed on every
/// process; the caller keeps pid 0's).
pub(crate) fn empty_sync(ctx: &mut Ctx, config: &BenchConfig) -> Result<Vec<f64>, Error> {
    ctx.sync()?;
    let mut samples = Vec::with_capacity(config.reps);
    let batches = config.reps.max(10);
    for _ in 0..batches {
        ctx.sync()?;
        let start = Instant::now();
        for _ in 0..config.empty_syncs / batches + 1 {
            ctx.sync()?;
        }
        samples
            .push(start.elapsed().as_secs_f64() * 1e9 / (config.empty_syncs / batches + 1) as f64);
    }
    Ok(samples)
}

/// Slots and capacity for exchanges of up to `bytes` per process and `msgs` messages.
fn setup(ctx: &mut Ctx, bytes: usize, msgs: usize) -> Result<(MemSlot, MemSlot), Error> {
    ctx.resize_memory_register(ctx.registered() + 2)?;
    ctx.resize_message_queue(2 * msgs + 2)?;
    ctx.sync()?;
    let src = ctx.alloc_local(bytes)?;
    let dst = ctx.alloc_global(bytes)?;
    for (i, b) in ctx.slot_mut(src)?.iter_mut().enumerate() {
        *b = i as u8;
    }
    ctx.sync()?;
    Ok((src, dst))
}

/// Queues a total exchange of `h` words of `w` bytes from this process: word i goes to process
/// `s + 1 + i mod (p − 1)`, at a distinct offset there (`h` is a multiple of `p − 1`). The loop
/// has no divisions, so the time measured is the library's, not the pattern generator's.
fn queue_exchange(
    ctx: &mut Ctx,
    src: MemSlot,
    dst: MemSlot,
    h: usize,
    w: usize,
) -> Result<(), Error> {
    let (s, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    if p == 1 {
        for i in 0..h {
            ctx.put(src, i * w, 0, dst, i * w, w)?;
        }
        return Ok(());
    }
    let peers = p - 1;
    // Targets in round-robin order, and this process's rank q among each target's senders.
    let order: Vec<(Pid, usize)> = (0..peers)
        .map(|r| {
            let d = (s + 1 + r) % p;
            (d as Pid, (s + p - d) % p - 1)
        })
        .collect();
    let mut i = 0;
    for k in 0..h / peers {
        for &(d, q) in &order {
            ctx.put(src, i * w, d, dst, (k * peers + q) * w, w)?;
            i += 1;
        }
    }
    Ok(())
}

/// (wall ns, CPU ns of this thread) per message of an all-to-all of `msgs` 8-byte messages.
pub(crate) fn alltoall_ns(ctx: &mut Ctx, msgs: usize) -> Result<(f64, f64), Error> {
    let peers = (ctx.nprocs() as usize - 1).max(1);
    let h = msgs / peers * peers;
    let (src, dst) = setup(ctx, h * 8, h)?;
    let mut best = f64::INFINITY;
    let mut best_cpu = f64::INFINITY;
    for _ in 0..5 {
        ctx.sync()?;
        let start = Instant::now();
        let cpu = crate::sys::thread_cpu_ns();
        queue_exchange(ctx, src, dst, h, 8)?;
        ctx.sync()?;
        best_cpu = best_cpu.min(crate::sys::thread_cpu_ns().saturating_sub(cpu) as f64);
        best = best.min(start.elapsed().as_secs_f64());
    }
    ctx.deregister(src)?;
    ctx.deregister(dst)?;
    let h = h.max(1) as f64;
    Ok((best * 1e9 / h, best_cpu / h))
}

/// Paper estimator for one word size: g (ns/byte) and ℓ (ns), `reps` times.
pub(crate) fn word_costs(
    ctx: &mut Ctx,
    config: &BenchConfig,
    w: usize,
) -> Result<(usize, Estimate, Estimate), Error> {
    let p = ctx.nprocs() as usize;
    let peers = (p - 1).max(1);
    let n_max = (config.max_h_bytes / w).max(4 * p) / peers * peers;
    let (src, dst) = setup(ctx, n_max * w, n_max)?;
    let round = |h: usize| (h / peers).max(1) * peers;
    let (h_p, h_2p) = (round(p), round(2 * p));
    let iters = |h: usize| (((1 << 22) / (h * w + 4096)).clamp(1, 200)) as u32;
    let time = |ctx: &mut Ctx, h: usize| -> Result<f64, Error> {
        let it = iters(h);
        ctx.sync()?;
        let start = Instant::now();
        for _ in 0..it {
            queue_exchange(ctx, src, dst, h, w)?;
            ctx.sync()?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e9 / f64::from(it))
    };
    let mut gs = Vec::new();
    let mut ls = Vec::new();
    for _ in 0..config.reps.max(2) {
        let t0 = time(ctx, 0)?;
        let tp = time(ctx, h_p)?;
        let t2p = time(ctx, h_2p)?;
        let tmax = time(ctx, n_max)?;
        let g = if n_max > h_2p {
            (tmax - t2p) / ((n_max - h_2p) * w) as f64
        } else {
            tmax / (n_max * w) as f64
        };
        gs.push(g.max(0.0));
        ls.push(t0.max(2.0 * tp - t2p));
    }
    ctx.deregister(src)?;
    ctx.deregister(dst)?;
    Ok((w, Estimate::of(&gs), Estimate::of(&ls)))
}

/// Seconds of one superstep in which every process puts `bytes` to its right neighbour.
pub(crate) fn big_put_s(ctx: &mut Ctx, bytes: usize) -> Result<f64, Error> {
    let (s, p) = (ctx.pid(), ctx.nprocs());
    let (src, dst) = setup(ctx, bytes, 1)?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        ctx.sync()?;
        let start = Instant::now();
        ctx.put(src, 0, (s + 1) % p, dst, 0, bytes)?;
        ctx.sync()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    ctx.deregister(src)?;
    ctx.deregister(dst)?;
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::config::PAIR_BYTES;
    use super::*;

    #[test]
    fn estimate_matches_hand_computation() {
        let e = Estimate::of(&[1.0, 2.0, 3.0]);
        assert!((e.mean - 2.0).abs() < 1e-12);
        // sd = 1, n = 3: 4.303 / sqrt(3).
        assert!((e.ci95 - 4.303 / 3f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn tiny_bench_produces_a_complete_report() {
        for p in [1, 2, 3] {
            let r = run(&BenchConfig::tiny(p)).unwrap();
            assert_eq!(r.p, p);
            assert_eq!(r.words.len(), 2);
            assert!(r.r_ns_per_byte > 0.0 && r.pingpong_one_way_ns > 0.0);
            assert!(r.empty_sync_ns.mean > 0.0 && r.big_put_s > 0.0);
            let json = r.to_json();
            let back: BenchReport = serde_json::from_str(&json).unwrap();
            assert_eq!(back.p, p);
            assert!(r.table().contains("g (x r)"));
            let t = to_cost_table(&[r], None);
            assert_eq!(t.points.len(), 2);
        }
    }

    /// A report with the figures a busy machine gives: wide numbers, means far above the best.
    fn busy_report() -> BenchReport {
        let mut r = run(&BenchConfig::tiny(2)).unwrap();
        for w in &mut r.words {
            w.g_ns_per_byte = Estimate { mean: 35.275 * w.r_ns_per_byte, ci95: 24.127e6 };
            w.l_ns = Estimate { mean: 56806.02e3, ci95: 11017.62e6 };
        }
        r.empty_sync_best_ns = 82.6;
        r.empty_sync_ns = Estimate { mean: 85_657.0, ci95: 1000.0 };
        r
    }

    #[test]
    fn table_columns_never_run_together() {
        let table = busy_report().table();
        let rows: Vec<&str> = table.lines().skip(2).take(2).collect();
        for row in rows {
            let columns: Vec<&str> =
                row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
            assert_eq!(columns.len(), 4, "{row:?} -> {columns:?}");
            assert!(columns[2].contains(" ± ") && columns[3].contains(" ± "), "{row}");
        }
    }

    #[test]
    fn a_busy_machine_is_warned_about_and_an_idle_one_is_not() {
        let warning = busy_report().busy_warning().expect("a warning");
        assert!(warning.contains("85657.0 ns"), "{warning}");
        assert!(busy_report().table().contains("warning: the machine looks busy"));
        let mut idle = busy_report();
        idle.empty_sync_ns.mean = 90.0;
        idle.pingpong_one_way_ns = idle.pingpong_best_ns;
        assert!(idle.busy_warning().is_none());
    }

    #[test]
    fn a_worse_run_never_makes_the_stored_table_worse() {
        let good = run(&BenchConfig::tiny(2)).unwrap();
        let stored = to_cost_table(std::slice::from_ref(&good), None);
        let merged = to_cost_table(&[busy_report()], Some(&stored));
        assert_eq!(merged.points.len(), stored.points.len());
        for (m, s) in merged.points.iter().zip(&stored.points) {
            assert!(m.g_s_per_byte <= s.g_s_per_byte && m.l_s <= s.l_s, "{m:?} vs {s:?}");
        }
        // A better run does improve it.
        let mut better = good.clone();
        for w in &mut better.words {
            w.l_ns.mean /= 2.0;
        }
        let improved = to_cost_table(&[better], Some(&stored));
        assert!(improved.points.iter().zip(&stored.points).all(|(i, s)| i.l_s < s.l_s));
    }

    #[test]
    fn fit_shrinks_sizes_to_the_budget_or_says_the_least_needed() {
        let mut quick = BenchConfig::quick(64);
        let before = quick.memory_bytes();
        assert!(before > 16 << 30, "p = 64 quick asked for {before} bytes");
        assert!(quick.fit(1 << 30));
        assert!(quick.memory_bytes() <= 1 << 30);
        assert!(quick.max_h_bytes < BenchConfig::quick(64).max_h_bytes);
        // A small p is left as it is when it fits.
        let mut two = BenchConfig::quick(2);
        assert!(two.fit(u64::MAX));
        assert_eq!(two, BenchConfig::quick(2));
        // p = 100000: the pair queues alone are 2.56 TB; no size makes it fit 64 GiB.
        let mut huge = BenchConfig::quick(100_000);
        assert!(!huge.fit(64 << 30));
        assert!(huge.memory_bytes() > 100_000u64 * 100_000 * PAIR_BYTES);
    }
}
