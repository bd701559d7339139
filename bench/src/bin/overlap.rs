//! `bench/overlap`: does the IOC pipeline hide I/O behind compute?
//!
//! A synthetic kernel whose compute time is about twice the read time of the same bytes
//! (calibrated on this machine at the start of the run). In every repetition, side by side:
//!
//! - `T_io`: the IOC pipeline with a no-op kernel, cold (page cache dropped): I/O alone;
//! - `T_compute`: the kernel alone on the same number of bytes from memory, same workers and
//!   block size, no I/O;
//! - `T_ioc`: the IOC pipeline with the kernel, cold;
//! - `T_sync`: the `sync` engine (read a block, then compute on it, per worker) with the kernel,
//!   cold;
//! - `T_ioc_warm`: the IOC pipeline with the kernel, file in the page cache (for reference).
//!
//! Printed: `T_ioc / max(T_io, T_compute)` (perfect overlap is 1.0; target ≤ 1.1) and
//! `T_sync / max(T_io, T_compute)` beside it. Workload definition: `bench/README.md`.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Value, json};
use sluice_io::{Block, BlockKernel, DirectMode, Engine, PipelineBuilder, Plan, RecordLayout};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// Command line of `bench/overlap`.
#[derive(Debug, Parser)]
#[command(about = "IOC pipeline vs I/O alone, compute alone and the sync engine (bench/README.md)")]
struct Args {
    /// Smaller input (1 GiB instead of 4 GiB): under 10 minutes.
    #[arg(long)]
    quick: bool,
    /// Input size (bytes, or 512M, 4G ...); overrides the --quick default.
    #[arg(long)]
    size: Option<String>,
    /// Paired repetitions.
    #[arg(long, default_value_t = 7)]
    reps: usize,
    /// Use this existing file instead of generating one (never deleted).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Directory for generated data [default: /work/bench-data if /work exists, else a temp dir].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the generated file (and reuse it next time).
    #[arg(long)]
    keep: bool,
    /// JSON output [default: bench/out/overlap.json].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Target compute time / read time of the kernel.
    #[arg(long, default_value_t = 2.0)]
    compute_ratio: f64,
    /// Kernel rounds per 8-byte word (skips the calibration).
    #[arg(long)]
    rounds: Option<u32>,
    /// Compute workers of every run [default: available cores].
    #[arg(long)]
    workers: Option<usize>,
    /// Block size of every run (multiple of 4096) [default: the pipeline's choice].
    #[arg(long)]
    block_size: Option<String>,
    /// Reads in flight per I/O thread [default: the pipeline's choice].
    #[arg(long)]
    queue_depth: Option<usize>,
    /// I/O threads of the IOC engine [default: the pipeline's choice].
    #[arg(long)]
    io_threads: Option<usize>,
    /// Leave out the warm IOC run.
    #[arg(long)]
    no_warm: bool,
}

/// The synthetic kernel: `rounds` dependent multiply-xorshift steps per 8-byte word, summed.
/// Time per byte is linear in `rounds` and independent of the data.
#[derive(Debug, Clone, Copy)]
struct Work {
    rounds: u32,
}

impl Work {
    fn on(&self, data: &[u8]) -> u64 {
        let mut acc = 0u64;
        for w in data.chunks_exact(8) {
            let mut x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
            for _ in 0..self.rounds {
                x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            }
            acc = acc.wrapping_add(x);
        }
        std::hint::black_box(acc)
    }
}

impl BlockKernel for Work {
    type Partial = u64;
    fn process(&self, block: &Block<'_>) -> u64 {
        self.on(block.data)
    }
}

/// I/O alone: touches nothing, returns the length.
#[derive(Debug)]
struct NoOp;

impl BlockKernel for NoOp {
    type Partial = u64;
    fn process(&self, block: &Block<'_>) -> u64 {
        block.data.len() as u64
    }
}

fn parse_size(text: &str) -> anyhow::Result<u64> {
    Ok(sluice_io::parse_size(text)?)
}

/// The repository: `$SLUICE_BENCH_REPO` (set by `bench/overlap`), else where this was built.
fn repo_root() -> PathBuf {
    std::env::var_os("SLUICE_BENCH_REPO").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
    })
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`; false (warned once) if not permitted.
fn drop_caches(warned: &mut bool) -> bool {
    let _ = std::process::Command::new("sync").status();
    let ok = std::fs::write("/proc/sys/vm/drop_caches", "3\n");
    if let Err(e) = &ok
        && !*warned
    {
        eprintln!("[overlap] WARNING: cannot drop the page cache ({e}); 'cold' runs are NOT cold");
        *warned = true;
    }
    ok.is_ok()
}

fn generate(path: &Path, size: u64) -> anyhow::Result<()> {
    let tmp = path.with_extension("part");
    let mut f = File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; (8 * MIB) as usize];
    let mut left = size;
    while left > 0 {
        for w in buf.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            w.copy_from_slice(&state.to_le_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Reads the file through the page cache so a warm run finds it there.
fn warm_up(path: &Path) -> anyhow::Result<()> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; (8 * MIB) as usize];
    while f.read(&mut buf)? > 0 {}
    Ok(())
}

/// The kernel alone on `total` bytes taken cyclically from `sample`, in blocks of `block`,
/// `workers` threads pulling blocks from a shared counter (as pipeline workers do). Seconds.
fn compute_alone(
    sample: &[u8],
    total: u64,
    block: usize,
    workers: usize,
    work: Work,
) -> (f64, u64) {
    let blocks_per_sample = (sample.len() / block).max(1);
    let nblocks = total.div_ceil(block as u64) as usize;
    let next = AtomicUsize::new(0);
    let sum = AtomicU64::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut acc = 0u64;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= nblocks {
                        break;
                    }
                    let start = (i % blocks_per_sample) * block;
                    let len = if i + 1 == nblocks {
                        (total - i as u64 * block as u64) as usize
                    } else {
                        block
                    };
                    let len = len.min(sample.len() - start);
                    acc = acc.wrapping_add(work.on(&sample[start..start + len]));
                }
                sum.fetch_add(acc, Ordering::Relaxed);
            });
        }
    });
    (t0.elapsed().as_secs_f64(), sum.load(Ordering::Relaxed))
}

struct Runner {
    args: Args,
    plan: Plan,
    workers: usize,
    warned: bool,
    dropped_all: bool,
}

/// One pipeline run: wall seconds, the fold of the partials, the run's statistics.
struct Measured {
    wall: f64,
    sum: u64,
    stats: Value,
}

impl Runner {
    fn builder(&self, engine: Engine) -> anyhow::Result<PipelineBuilder> {
        let mut b =
            PipelineBuilder::new().engine(engine).direct(DirectMode::Auto).workers(self.workers);
        if let Some(bs) = &self.args.block_size {
            b = b.block_size(usize::try_from(parse_size(bs)?)?);
        }
        if let Some(q) = self.args.queue_depth {
            b = b.queue_depth(q);
        }
        if let Some(n) = self.args.io_threads {
            b = b.io_threads(n);
        }
        Ok(b)
    }

    fn run<K: BlockKernel<Partial = u64>>(
        &mut self,
        engine: Engine,
        kernel: &K,
        cold: bool,
    ) -> anyhow::Result<Measured> {
        if cold {
            self.dropped_all &= drop_caches(&mut self.warned);
        }
        let pipeline = self.builder(engine)?.build()?;
        let t0 = Instant::now();
        let mut sum = 0u64;
        let stats = pipeline.run_ordered(&self.plan, kernel, |p| sum = sum.wrapping_add(p))?;
        let wall = t0.elapsed().as_secs_f64();
        Ok(Measured { wall, sum, stats: serde_json::to_value(&stats)? })
    }
}

/// User + system CPU seconds of this process so far (all threads; /proc counts in 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// The 1-minute load average (how busy the shared machine was).
fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}

fn summary(v: &[f64]) -> Value {
    if v.is_empty() {
        return json!({"median": null, "min": null, "max": null, "n": 0});
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({"median": median(v), "min": min, "max": max, "n": v.len()})
}

fn fmt(v: &[f64]) -> String {
    if v.is_empty() {
        return "n/a".into();
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.3}  ({:.3}-{:.3}, n={})", median(v), min, max, v.len())
}

fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let size = match &args.size {
        Some(s) => parse_size(s)?,
        None if args.quick => GIB,
        None => 4 * GIB,
    };
    let size = size - size % 4096;
    if size < 64 * MIB {
        bail!("--size must be at least 64 MiB");
    }
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));

    // The input: given, reused, or generated.
    let (path, generated, created_dir) = match &args.file {
        Some(f) => (f.clone(), false, None),
        None => {
            let dir = args.dir.clone().unwrap_or_else(|| {
                if Path::new("/work").is_dir() {
                    PathBuf::from("/work/bench-data")
                } else {
                    std::env::temp_dir().join("sluice-bench-data")
                }
            });
            let created = !dir.exists();
            std::fs::create_dir_all(&dir)?;
            let dir = dir.canonicalize()?;
            if dir.starts_with(repo_root()) {
                bail!(
                    "--dir {} is inside the repository; generated data must never be committed",
                    dir.display()
                );
            }
            let path = dir.join(format!("overlap-{size}.bin"));
            if std::fs::metadata(&path).map(|m| m.len() == size).unwrap_or(false) {
                eprintln!("[overlap] reusing {}", path.display());
            } else {
                eprintln!(
                    "[overlap] generating {:.3} GiB in {}",
                    size as f64 / GIB as f64,
                    path.display()
                );
                generate(&path, size)?;
            }
            (path, true, created.then_some(dir))
        }
    };
    let keep = args.keep;
    let result = measure(args, &path, size, workers);
    if generated && !keep {
        let _ = std::fs::remove_file(&path);
        if let Some(d) = created_dir {
            let _ = std::fs::remove_dir(d);
        }
    }
    result
}

fn measure(args: Args, path: &Path, size_hint: u64, workers: usize) -> anyhow::Result<()> {
    let plan = Plan::file(
        path,
        RecordLayout::Fixed(std::num::NonZeroUsize::new(8).unwrap_or(std::num::NonZeroUsize::MIN)),
    )?;
    let size = plan.total_len();
    let _ = size_hint;
    let reps = args.reps;
    let no_warm = args.no_warm;
    let compute_ratio = args.compute_ratio;
    let fixed_rounds = args.rounds;
    let mut r = Runner { args, plan, workers, warned: false, dropped_all: true };

    // Calibration: read bandwidth cold (no-op kernel), then kernel cost per byte in memory.
    let io = r.run(Engine::Ioc, &NoOp, true)?;
    if io.sum != size {
        bail!("no-op run saw {} bytes, the file has {size}", io.sum);
    }
    let block = io.stats["block_size"].as_u64().filter(|&b| b > 0).unwrap_or(MIB) as usize;
    let sample_len = (size.min(512 * MIB) as usize / block).max(1) * block;
    let mut sample = vec![0u8; sample_len.min(size as usize)];
    File::open(path)?.read_exact(&mut sample)?;
    let t_io0 = io.wall;
    let rounds = match fixed_rounds {
        Some(n) => n,
        None => {
            // time(bytes, rounds) = bytes * (a + b * rounds) with `workers` threads.
            let probe_bytes = (sample.len() as u64 * 2).min(size);
            let (r1, r2) = (4u32, 36u32);
            let (t1, _) = compute_alone(&sample, probe_bytes, block, workers, Work { rounds: r1 });
            let (t2, _) = compute_alone(&sample, probe_bytes, block, workers, Work { rounds: r2 });
            let per_byte = |t: f64| t / probe_bytes as f64;
            let b = ((per_byte(t2) - per_byte(t1)) / f64::from(r2 - r1)).max(1e-15);
            let a = per_byte(t1) - b * f64::from(r1);
            let target = compute_ratio * t_io0 / size as f64;
            (((target - a) / b).round().max(1.0)) as u32
        }
    };
    let work = Work { rounds };
    eprintln!(
        "[overlap] calibration: cold read {:.2} GB/s ({t_io0:.2} s), block {} KiB, {workers} workers -> {rounds} rounds/word",
        size as f64 / t_io0 / 1e9,
        block / 1024
    );

    let mut rows: Vec<Value> = Vec::new();
    let (mut q_ioc, mut q_sync, mut q_warm, mut achieved) = (vec![], vec![], vec![], vec![]);
    let mut q_ioc_wb = vec![];
    let mut checksum: Option<u64> = None;
    for k in 0..reps {
        let mut t = std::collections::BTreeMap::new();
        let mut stats = serde_json::Map::new();
        let mut cpu = std::collections::BTreeMap::new();
        let load_start = loadavg();
        let order = ["io", "compute", "ioc", "sync"];
        for i in 0..order.len() {
            let name = order[(i + k) % order.len()];
            let cpu0 = cpu_seconds();
            let m = match name {
                "io" => r.run(Engine::Ioc, &NoOp, true)?,
                "compute" => {
                    let (wall, sum) = compute_alone(&sample, size, block, workers, work);
                    Measured { wall, sum, stats: Value::Null }
                }
                "ioc" => r.run(Engine::Ioc, &work, true)?,
                _ => r.run(Engine::Sync, &work, true)?,
            };
            if name == "io" && m.sum != size {
                bail!("no-op run saw {} bytes, the file has {size}", m.sum);
            }
            if (name == "ioc" || name == "sync") && *checksum.get_or_insert(m.sum) != m.sum {
                bail!("{name} run gave a different checksum from an earlier run");
            }
            cpu.insert(name, (cpu_seconds() - cpu0) / (m.wall * workers as f64));
            t.insert(name, m.wall);
            stats.insert(name.to_string(), m.stats);
        }
        if !no_warm {
            warm_up(path)?;
            let cpu0 = cpu_seconds();
            let m = r.run(Engine::Ioc, &work, false)?;
            cpu.insert("ioc_warm", (cpu_seconds() - cpu0) / (m.wall * workers as f64));
            t.insert("ioc_warm", m.wall);
            stats.insert("ioc_warm".into(), m.stats);
        }
        let bound = t["io"].max(t["compute"]);
        q_ioc.push(t["ioc"] / bound);
        q_sync.push(t["sync"] / bound);
        achieved.push(t["compute"] / t["io"]);
        if let Some(w) = t.get("ioc_warm") {
            q_warm.push(w / t["compute"]);
            q_ioc_wb.push(t["ioc"] / t["io"].max(*w));
        }
        eprintln!(
            "[overlap] rep {}/{reps}: T_io {:.2} s, T_compute {:.2} s, T_ioc {:.2} s, T_sync {:.2} s{} -> ioc/max {:.3}, sync/max {:.3}",
            k + 1,
            t["io"],
            t["compute"],
            t["ioc"],
            t["sync"],
            t.get("ioc_warm").map(|w| format!(", T_ioc_warm {w:.2} s")).unwrap_or_default(),
            t["ioc"] / bound,
            t["sync"] / bound
        );
        rows.push(json!({
            "seconds": t,
            "cpu_share": cpu,
            "loadavg_1min": [load_start, loadavg()],
            "run_stats": stats,
        }));
    }

    println!(
        "\nbench/overlap: {:.3} GiB, {workers} workers, block {} KiB, kernel {rounds} rounds/word, {reps} paired repetitions{}",
        size as f64 / GIB as f64,
        block / 1024,
        if r.dropped_all { "" } else { "  (WARNING: page cache NOT dropped)" }
    );
    println!("ratio per repetition: median (min-max, n)");
    println!("  T_ioc  / max(T_io, T_compute)   {}   target <= 1.1", fmt(&q_ioc));
    println!("  T_sync / max(T_io, T_compute)   {}", fmt(&q_sync));
    println!("  T_compute / T_io (achieved c/t) {}   aimed at {compute_ratio}", fmt(&achieved));
    if !q_warm.is_empty() {
        println!("  T_ioc_warm / T_compute          {}", fmt(&q_warm));
        println!("  T_ioc / max(T_io, T_ioc_warm)   {}", fmt(&q_ioc_wb));
    }
    let col = |key: &str| -> Vec<f64> {
        rows.iter().filter_map(|r| r["seconds"][key].as_f64()).collect()
    };
    println!(
        "seconds, median (min-max); CPU share = process CPU time / (wall x {workers} workers), median:"
    );
    let mut secs = serde_json::Map::new();
    let mut shares = serde_json::Map::new();
    for key in ["io", "compute", "ioc", "sync", "ioc_warm"] {
        let v = col(key);
        if !v.is_empty() {
            let share: Vec<f64> =
                rows.iter().filter_map(|r| r["cpu_share"][key].as_f64()).collect();
            println!("  T_{key:9} {}   CPU share {:.2}", fmt(&v), median(&share));
            secs.insert(key.into(), summary(&v));
            shares.insert(key.into(), summary(&share));
        }
    }
    let doc = json!({
        "benchmark": "overlap",
        "parameters": {
            "size_bytes": size, "workers": workers, "block_size": block, "rounds": rounds,
            "compute_ratio_target": compute_ratio, "reps": reps, "file": path,
            "caches_dropped": r.dropped_all,
            "calibration": {"t_io_cold_s": t_io0, "sample_bytes": sample.len()},
        },
        "summary": {
            "ioc_over_bound": summary(&q_ioc),
            "sync_over_bound": summary(&q_sync),
            "compute_over_io": summary(&achieved),
            "ioc_warm_over_compute": summary(&q_warm),
            "ioc_over_io_or_warm": summary(&q_ioc_wb),
            "seconds": secs,
            "cpu_share": shares,
        },
        "reps": rows,
        "environment": {
            "date_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
            "git_commit": std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(repo_root())
                .output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()),
        },
    });
    let out = r.args.out.clone().unwrap_or_else(|| repo_root().join("bench/out/overlap.json"));
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&doc)? + "\n")?;
    println!("JSON: {}", out.display());
    Ok(())
}
