//! `sluice bsp bench --backend mpi`: the MPI backend's constants, and a plain `MPI_Alltoallv`
//! of the same volume measured side by side in the same run, for the g comparison.
//!
//! Run on every rank of an `mpirun` job (collective); the report is complete on rank 0.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::raw;
use crate::bench::{BenchConfig, Estimate, alltoall_ns, big_put_s, empty_sync, word_costs};
use crate::probe::{CostPoint, CostTable};
use crate::{Args, Error, ExecConfig, Pid, exec_with};

/// What one MPI bench run measured (complete on rank 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiBenchReport {
    /// The configuration used.
    pub config: BenchConfig,
    /// Processes (ranks) that ran.
    pub p: Pid,
    /// One-way latency of an 8-byte `MPI_Send`/`MPI_Recv` between ranks 0 and 1, ns.
    pub pingpong_one_way_ns: f64,
    /// Empty sync, ns.
    pub empty_sync_ns: Estimate,
    /// Empty sync in the best batch, ns.
    pub empty_sync_best_ns: f64,
    /// Time per 8-byte message in a large all-to-all, ns.
    pub alltoall_ns_per_msg: f64,
    /// (word bytes, g in ns per byte, ℓ in ns) per word size.
    pub words: Vec<(usize, Estimate, Estimate)>,
    /// g of a plain `MPI_Alltoallv` of the same volumes as the largest word size, ns per byte.
    pub alltoallv_g_ns_per_byte: Estimate,
    /// Seconds for one superstep in which every process puts `memcpy_bytes` to its neighbour.
    pub big_put_s: f64,
}

impl MpiBenchReport {
    /// The points `probe` interpolates on the MPI backend (g in s/byte, ℓ in s) for this p.
    pub fn cost_points(&self) -> Vec<CostPoint> {
        self.words
            .iter()
            .map(|(w, g, l)| CostPoint {
                p: self.p,
                word_bytes: *w as u64,
                g_s_per_byte: (g.mean * 1e-9).max(1e-13),
                l_s: (l.mean * 1e-9).max(1e-9),
            })
            .collect()
    }

    /// g of the largest word size over the plain `MPI_Alltoallv`'s (target ≤ 1.2).
    pub fn g_over_alltoallv(&self) -> f64 {
        self.words.last().map_or(f64::NAN, |w| w.1.mean) / self.alltoallv_g_ns_per_byte.mean
    }

    /// The report as a table, with the target ratio.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "sluice bsp bench: p = {} (MPI backend)", self.p);
        let _ = writeln!(s, "{:<14}{:>22}{:>22}", "w (bytes)", "g (ns/B)", "l (us)");
        for (w, g, l) in &self.words {
            let g = format!("{:.4} ±{:.4}", g.mean, g.ci95);
            let l = format!("{:.2} ±{:.2}", l.mean / 1e3, l.ci95 / 1e3);
            let _ = writeln!(s, "{w:<14}{g:>22}{l:>22}");
        }
        let _ =
            writeln!(s, "MPI ping-pong (8 B), one way      {:>10.1} ns", self.pingpong_one_way_ns);
        let _ = writeln!(
            s,
            "empty sync l                      {:>10.1} ns ±{:.1}   (best batch {:.1} ns)",
            self.empty_sync_ns.mean, self.empty_sync_ns.ci95, self.empty_sync_best_ns
        );
        let _ =
            writeln!(s, "all-to-all, per 8-byte message    {:>10.2} ns", self.alltoall_ns_per_msg);
        let mib = self.config.memcpy_bytes as f64 / (1 << 20) as f64;
        let _ = writeln!(
            s,
            "{mib:.0} MiB put per process            {:>10.3} ms",
            self.big_put_s * 1e3
        );
        let big = self.words.last().map_or(0, |w| w.0);
        let _ = writeln!(
            s,
            "plain MPI_Alltoallv, {big} B words g {:>10.4} ns/B ±{:.4}",
            self.alltoallv_g_ns_per_byte.mean, self.alltoallv_g_ns_per_byte.ci95
        );
        let _ = writeln!(s, "targets (ratios measured in this run):");
        let _ = writeln!(
            s,
            "  g({big} B) / g(MPI_Alltoallv)    {:>8.3}   (target <= 1.2)",
            self.g_over_alltoallv()
        );
        s
    }
}

/// Runs the measurements on every rank of the job (collective); `config.p` is ignored: all
/// ranks run.
pub fn run(config: &BenchConfig) -> Result<MpiBenchReport, Error> {
    let world = super::world();
    let (rank, p) = (raw::rank(world), raw::size(world));
    let pingpong = raw::pingpong_ns(world, config.pingpong_rounds.min(100_000) as u32);
    let got = Mutex::new(None);
    let failure = Mutex::new(None::<Error>);
    exec_with(
        &ExecConfig::new(p as Pid, false),
        p as Pid,
        |ctx, _, _, _| {
            let result = (|| -> Result<_, Error> {
                let e = empty_sync(ctx, config)?;
                let a = alltoall_ns(ctx, config.alltoall_msgs)?.0;
                let mut ws = Vec::new();
                for &w in &config.word_sizes {
                    ws.push(word_costs(ctx, config, w)?);
                }
                let b = big_put_s(ctx, config.memcpy_bytes)?;
                Ok((e, a, ws, b))
            })();
            match result {
                Ok(r) => *got.lock().unwrap_or_else(|e| e.into_inner()) = Some(r),
                Err(e) => *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e),
            }
        },
        Args::none(),
    )?;
    if let Some(e) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let Some((empty, alltoall, words, big_put)) =
        got.into_inner().unwrap_or_else(|e| e.into_inner())
    else {
        return Err(Error::PeerFailed);
    };
    let w = config.word_sizes.iter().copied().max().unwrap_or(1 << 20);
    let alltoallv = alltoallv_g(world, config, w);
    let _ = rank;
    Ok(MpiBenchReport {
        config: config.clone(),
        p: p as Pid,
        pingpong_one_way_ns: pingpong,
        empty_sync_ns: Estimate::of(&empty),
        empty_sync_best_ns: empty.iter().copied().fold(f64::INFINITY, f64::min),
        alltoall_ns_per_msg: alltoall,
        words,
        alltoallv_g_ns_per_byte: alltoallv,
        big_put_s: big_put,
    })
}

/// g of `MPI_Alltoallv` by the estimator of `word_costs`: the same h-relations (h words of
/// `w` bytes per process, spread evenly over the other ranks), timed at h = 2p and h = n_max.
fn alltoallv_g(world: raw::Comm, config: &BenchConfig, w: usize) -> Estimate {
    let p = raw::size(world);
    let peers = (p - 1).max(1);
    let n_max = (config.max_h_bytes / w).max(4 * p) / peers * peers;
    let h_2p = ((2 * p) / peers).max(1) * peers;
    let send = vec![7u8; n_max * w / peers * p];
    let mut recv = vec![0u8; send.len()];
    let iters = |h: usize| (((1 << 22) / (h * w + 4096)).clamp(1, 200)) as u32;
    let mut time = |h: usize| {
        let per_peer = h / peers * w;
        let it = iters(h);
        raw::alltoallv_bytes(world, &send, &mut recv, per_peer);
        let start = raw::wtime();
        for _ in 0..it {
            raw::alltoallv_bytes(world, &send, &mut recv, per_peer);
        }
        (raw::wtime() - start) * 1e9 / f64::from(it)
    };
    let mut gs = Vec::new();
    for _ in 0..config.reps.max(2) {
        let t2p = time(h_2p);
        let tmax = time(n_max);
        gs.push(((tmax - t2p) / ((n_max - h_2p).max(1) * w) as f64).max(0.0));
    }
    Estimate::of(&gs)
}

/// Merges `report`'s points into the MPI backend's probe table (replacing points of its p) and
/// saves it; returns where.
pub fn save_cost_table(report: &MpiBenchReport) -> Result<std::path::PathBuf, Error> {
    let path = CostTable::default_path_mpi().ok_or_else(|| Error::Table {
        path: "bsp-probe-mpi.json".into(),
        message: "no cache directory (set HOME or XDG_CACHE_HOME)".to_string(),
    })?;
    let old = CostTable::load(&path).ok();
    let mut points: Vec<CostPoint> =
        old.map(|t| t.points.into_iter().filter(|c| c.p != report.p).collect()).unwrap_or_default();
    points.extend(report.cost_points());
    points.sort_by_key(|c| (c.p, c.word_bytes));
    CostTable { version: 1, source: "bench --backend mpi".to_string(), points }.save(&path)?;
    Ok(path)
}
