//! `probe`: the machine's BSP parameters p, free_p, g(p, size) and ℓ(p, size).
//!
//! # Contract
//! 1. `g(p, size)` (seconds per byte) and `l(p, size)` (seconds) are interpolated from one
//!    [`CostTable`]: bilinear in (log₂ p, log₂ size) between the table's points, clamped at its
//!    edges. Both are > 0.
//! 2. The table is loaded once per OS process (from [`CostTable::default_path`], written by
//!    `sluice bsp bench`), or, when there is none or it does not parse, measured briefly online
//!    (about 0.1 s). Every process of every section reads the same table, so results are bitwise
//!    identical on all processes, as LPF requires.
//! 3. `Machine::g`/`Machine::l` and the free functions [`g`]/[`l`] are the same functions (the
//!    free ones serve as C function pointers for `lpf_machine_t`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::{Args, Error, ExecConfig, Pid};

/// LPF's `lpf_machine_t`: processes and cost functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// The runtime's total number of processors: the same at the root, in a section and in a
    /// nested section (LPF's `lpf_machine_t::p`; a section's own size is [`crate::Ctx::nprocs`]).
    pub p: Pid,
    /// Processors available to a nested exec from here (≥ 1).
    pub free_p: Pid,
}

impl Machine {
    pub(crate) fn new(p: Pid, free_p: Pid) -> Machine {
        Machine { p, free_p }
    }

    /// Seconds per byte of an h-relation on `p` processes whose messages are at least
    /// `min_msg_size` bytes.
    pub fn g(&self, p: Pid, min_msg_size: usize) -> f64 {
        g(p, min_msg_size)
    }

    /// Seconds of latency ℓ of one sync on `p` processes (messages ≥ `min_msg_size` bytes).
    pub fn l(&self, p: Pid, min_msg_size: usize) -> f64 {
        l(p, min_msg_size)
    }
}

/// LPF's `lpf_probe(LPF_ROOT, …)`: the whole machine (p = free_p = processors of the root).
pub fn probe_root() -> Machine {
    let p = ExecConfig::default().root_p();
    Machine::new(p, p)
}

/// What `sluice bsp probe` prints: the root machine, where the table comes from, and g and ℓ
/// (also normalised: g in ns/byte, ℓ in µs) for p = 1, 2, 4, … up to the root's p, at message
/// sizes 8 B, 64 B, 1 KiB and 1 MiB.
pub fn probe_report() -> String {
    use std::fmt::Write;
    let m = probe_root();
    let t = cost_table();
    let mut s = String::new();
    let path = CostTable::default_path().map_or("-".to_string(), |p| p.display().to_string());
    let _ = writeln!(s, "p = {}, free_p = {}; cost table: {} ({})", m.p, m.free_p, t.source, path);
    let _ = writeln!(s, "{:>6} {:>10} {:>14} {:>12}", "p", "size (B)", "g (ns/B)", "l (us)");
    let mut p = 1;
    loop {
        for size in [8usize, 64, 1024, 1 << 20] {
            let _ = writeln!(
                s,
                "{:>6} {:>10} {:>14.4} {:>12.3}",
                p,
                size,
                g(p, size) * 1e9,
                l(p, size) * 1e6
            );
        }
        if p >= m.p {
            break;
        }
        p = (p * 2).min(m.p);
    }
    s
}

/// Rule 3: g(p, size) of the process-wide table.
pub fn g(p: Pid, min_msg_size: usize) -> f64 {
    cost_table().g(p, min_msg_size)
}

/// Rule 3: ℓ(p, size) of the process-wide table.
pub fn l(p: Pid, min_msg_size: usize) -> f64 {
    cost_table().l(p, min_msg_size)
}

/// One measured point of the table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostPoint {
    /// Number of processes.
    pub p: Pid,
    /// Message (word) size in bytes.
    pub word_bytes: u64,
    /// g in seconds per byte.
    pub g_s_per_byte: f64,
    /// ℓ in seconds.
    pub l_s: f64,
}

/// The stored table `probe` interpolates (JSON, see `sluice bsp bench`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostTable {
    /// Format version (1).
    pub version: u32,
    /// Where the numbers come from (`"bench"`, `"online"`).
    pub source: String,
    /// Measured points; any order.
    pub points: Vec<CostPoint>,
}

static TABLE: OnceLock<CostTable> = OnceLock::new();

/// Rule 2: the process-wide table (on the MPI backend, from [`CostTable::default_path_mpi`]).
pub fn cost_table() -> &'static CostTable {
    TABLE.get_or_init(|| {
        #[cfg(feature = "mpi")]
        let path = if crate::mpi::selected() {
            CostTable::default_path_mpi()
        } else {
            CostTable::default_path()
        };
        #[cfg(not(feature = "mpi"))]
        let path = CostTable::default_path();
        path.and_then(|p| CostTable::load(&p).ok())
            .filter(|t| !t.points.is_empty())
            .unwrap_or_else(measure_online)
    })
}

impl CostTable {
    /// `$XDG_CACHE_HOME/sluice/bsp-probe.json`, else `$HOME/.cache/sluice/bsp-probe.json`.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("sluice").join("bsp-probe.json"))
    }

    /// The MPI backend's table, written by `sluice bsp bench --backend mpi`: `bsp-probe-mpi.json`
    /// beside [`CostTable::default_path`].
    pub fn default_path_mpi() -> Option<PathBuf> {
        Some(Self::default_path()?.with_file_name("bsp-probe-mpi.json"))
    }

    /// Reads a table written by [`CostTable::save`].
    pub fn load(path: &Path) -> Result<CostTable, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| table_err(path, &e))?;
        serde_json::from_str(&text).map_err(|e| table_err(path, &e))
    }

    /// Writes the table as JSON (to a temporary file beside `path`, then renamed).
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| table_err(path, &e))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| table_err(path, &e))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| table_err(path, &e))?;
        std::fs::rename(&tmp, path).map_err(|e| table_err(path, &e))
    }

    /// Rule 1 for g.
    pub fn g(&self, p: Pid, size: usize) -> f64 {
        self.interpolate(p, size, |c| c.g_s_per_byte).max(1e-13)
    }

    /// Rule 1 for ℓ.
    pub fn l(&self, p: Pid, size: usize) -> f64 {
        self.interpolate(p, size, |c| c.l_s).max(1e-9)
    }

    fn interpolate(&self, p: Pid, size: usize, f: impl Fn(&CostPoint) -> f64) -> f64 {
        let mut ps: Vec<Pid> = self.points.iter().map(|c| c.p).collect();
        ps.sort_unstable();
        ps.dedup();
        if ps.is_empty() {
            return 0.0;
        }
        let (p0, p1, tp) = bracket(&ps, p.max(1) as f64);
        let at_p = |pp: Pid| {
            let mut ws: Vec<u64> =
                self.points.iter().filter(|c| c.p == pp).map(|c| c.word_bytes.max(1)).collect();
            ws.sort_unstable();
            ws.dedup();
            let (w0, w1, tw) = bracket(&ws, size.max(1) as f64);
            let val = |w: u64| {
                self.points.iter().find(|c| c.p == pp && c.word_bytes.max(1) == w).map_or(0.0, &f)
            };
            val(w0) * (1.0 - tw) + val(w1) * tw
        };
        at_p(p0) * (1.0 - tp) + at_p(p1) * tp
    }
}

/// Neighbours of `x` among sorted `xs` and the weight of the upper one, in log₂ space.
fn bracket<T: Copy + ToF64>(xs: &[T], x: f64) -> (T, T, f64) {
    let first = xs[0];
    let last = xs[xs.len() - 1];
    if x <= first.to_f64() {
        return (first, first, 0.0);
    }
    if x >= last.to_f64() {
        return (last, last, 0.0);
    }
    let i = xs.partition_point(|&v| v.to_f64() <= x);
    let (a, b) = (xs[i - 1], xs[i]);
    let (la, lb) = (a.to_f64().log2(), b.to_f64().log2());
    let t = if lb > la { (x.log2() - la) / (lb - la) } else { 0.0 };
    (a, b, t)
}

/// Lossless-enough conversion for table coordinates.
trait ToF64 {
    fn to_f64(self) -> f64;
}

impl ToF64 for u32 {
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl ToF64 for u64 {
    fn to_f64(self) -> f64 {
        self as f64
    }
}

fn table_err(path: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::Table { path: path.to_path_buf(), message: e.to_string() }
}

/// A brief measurement (≈ 0.1 s) when no stored table exists: ℓ from empty syncs and g from
/// one total exchange, at p = 2; other p extrapolated (ℓ grows with ⌈log₂ p⌉, g flat).
fn measure_online() -> CostTable {
    let (l2, g_small, g_big) = quick_measure(2).unwrap_or((1e-6, 1e-8, 1e-10));
    let mut points = Vec::new();
    for k in 0..=10u32 {
        let p = 1u32 << k;
        let l = l2 * f64::from(k.max(1));
        points.push(CostPoint { p, word_bytes: 8, g_s_per_byte: g_small, l_s: l });
        points.push(CostPoint { p, word_bytes: 1 << 20, g_s_per_byte: g_big, l_s: l });
    }
    CostTable { version: 1, source: "online".to_string(), points }
}

/// (ℓ, g for 8-byte messages, g for 64 KiB messages) on `p` processes, from a few supersteps.
fn quick_measure(p: Pid) -> Result<(f64, f64, f64), Error> {
    let out = std::sync::Mutex::new((0.0, 0.0, 0.0));
    // Always on threads: an online measurement must not start a collective MPI section
    // (probe may be called by one rank alone); under MPI the table comes from
    // `sluice bsp bench --backend mpi` (`CostTable::default_path_mpi`).
    crate::threads::run_exec(
        p,
        p,
        false,
        p,
        &|ctx: &mut crate::Ctx, s: Pid, p: Pid, _: Args<'_>| {
            let run = |ctx: &mut crate::Ctx| -> Result<(f64, f64, f64), Error> {
                let small = 2048usize;
                let big = 64usize << 10;
                let n = small.max(big);
                ctx.resize_message_queue(2 * small * p as usize)?;
                ctx.resize_memory_register(2)?;
                ctx.sync()?;
                let src = ctx.alloc_local(n)?;
                let dst = ctx.alloc_global(n * p as usize)?;
                ctx.sync()?;
                let reps = 100;
                let t = Instant::now();
                for _ in 0..reps {
                    ctx.sync()?;
                }
                let l = t.elapsed().as_secs_f64() / f64::from(reps);
                let peer = (s + 1) % p;
                let t = Instant::now();
                for i in 0..small / 8 {
                    ctx.put(src, 8 * i, peer, dst, 8 * i, 8)?;
                }
                ctx.sync()?;
                let gs = ((t.elapsed().as_secs_f64() - l) / small as f64).max(1e-12);
                let t = Instant::now();
                ctx.put(src, 0, peer, dst, 0, big)?;
                ctx.sync()?;
                let gb = ((t.elapsed().as_secs_f64() - l) / big as f64).max(1e-13);
                Ok((l, gs, gb))
            };
            if let Ok(r) = run(ctx)
                && s == 0
            {
                *out.lock().unwrap_or_else(|e| e.into_inner()) = r;
            }
        },
        Args::none(),
    )?;
    Ok(out.into_inner().unwrap_or_else(|e| e.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> CostTable {
        CostTable {
            version: 1,
            source: "test".into(),
            points: vec![
                CostPoint { p: 2, word_bytes: 8, g_s_per_byte: 8.0, l_s: 100.0 },
                CostPoint { p: 2, word_bytes: 1024, g_s_per_byte: 1.0, l_s: 100.0 },
                CostPoint { p: 8, word_bytes: 8, g_s_per_byte: 16.0, l_s: 400.0 },
                CostPoint { p: 8, word_bytes: 1024, g_s_per_byte: 2.0, l_s: 400.0 },
            ],
        }
    }

    #[test]
    fn interpolation_hits_points_and_clamps() {
        let t = table();
        assert_eq!(t.g(2, 8), 8.0);
        assert_eq!(t.g(8, 1024), 2.0);
        assert_eq!(t.g(1, 1), 8.0);
        assert_eq!(t.g(64, 1 << 30), 2.0);
        // log-midpoints: p = 4 is halfway between 2 and 8 in log2; size 90.5 halfway 8..1024.
        assert!((t.l(4, 8) - 250.0).abs() < 1e-9);
        let mid = t.g(2, 91);
        assert!(mid < 8.0 && mid > 1.0);
    }

    #[test]
    fn probe_report_lists_the_root_machine() {
        let r = probe_report();
        assert!(r.contains("free_p") && r.contains("g (ns/B)"), "{r}");
    }

    #[test]
    fn table_round_trips_through_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("bsp-probe.json");
        let t = table();
        t.save(&path).unwrap();
        assert_eq!(CostTable::load(&path).unwrap(), t);
    }

    #[test]
    fn probe_is_positive_and_identical_on_all_processes() {
        let seen = std::sync::Mutex::new(Vec::new());
        crate::exec_with(
            &ExecConfig { max_p: Some(4), checked: false },
            4,
            |ctx, _, _, _| {
                let m = ctx.probe();
                assert_eq!(m.p, 4);
                assert_eq!(m.free_p, 1);
                let v = (m.g(4, 8).to_bits(), m.l(4, 8).to_bits());
                assert!(m.g(4, 8) > 0.0 && m.l(4, 8) > 0.0);
                seen.lock().unwrap().push(v);
            },
            Args::none(),
        )
        .unwrap();
        let seen = seen.into_inner().unwrap();
        assert!(seen.iter().all(|&v| v == seen[0]));
    }
}
