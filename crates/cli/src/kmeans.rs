//! `sluice kmeans FILE --k K`: Lloyd's k-means over the records of a typed array, one streaming
//! pass per iteration. Parses the flags into a [`KmeansConfig`] (a hint that contradicts a flag
//! is an error), calls [`sluice_kernels::kmeans::kmeans`], writes the centres and prints a
//! summary or one JSON object. Under `mpirun` it runs [`sluice_kernels::dist::kmeans`] on every
//! rank (`crate::dist`): each reads its stripe, and rank 0 writes and prints the same result,
//! bit for bit, as one process.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use sluice_kernels::kmeans::{KmeansConfig, KmeansError, KmeansReport};

use crate::common::{DirectArg, PipelineArgs, Progress};

/// Arguments of `sluice kmeans`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Lloyd's algorithm as scikit-learn's KMeans(algorithm=\"lloyd\"): \
nearest centre by |c|^2 - 2x.c, empty clusters take the records farthest from their centres, \
stop after --max-iter passes, when no label changes, or when the squared centre shift is at \
most --threshold times the mean feature variance. Labels, counts and inertia are those of a \
final assignment against the final centres.")]
pub(crate) struct KmeansArgs {
    /// The records: a (n, d) .npy in C order (f32 or f64), or a raw file with --dtype and --dims.
    file: PathBuf,
    /// Number of clusters.
    #[arg(long, value_name = "K")]
    k: Option<String>,
    /// Features per record (needed for a raw or 1-d file; a 2-d .npy must agree).
    #[arg(long, value_name = "D")]
    dims: Option<String>,
    /// Element type of a raw file: f32|f64 (a .npy must agree).
    #[arg(long, value_name = "TYPE")]
    dtype: Option<String>,
    /// Byte order of a raw file: little|big [default: little].
    #[arg(long, value_name = "ORDER")]
    endian: Option<String>,
    /// Initial centres: a (k, d) .npy, or k-means++ on a seeded sample [default: k-means++].
    #[arg(long, value_name = "FILE|k-means++")]
    init: Option<String>,
    /// Stop when the squared centre shift is at most T x the mean feature variance
    /// (scikit-learn's tol) [default: 1e-4].
    #[arg(long, value_name = "T")]
    threshold: Option<String>,
    /// Most iterations [default: 300].
    #[arg(long, value_name = "N")]
    max_iter: Option<String>,
    /// Seed of the k-means++ sampling [default: 0].
    #[arg(long, value_name = "S")]
    seed: Option<String>,
    /// Write the final centres here as a (k, d) .npy of the data's type.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the final labels here as an (n,) int32 .npy.
    #[arg(long, value_name = "FILE")]
    labels: Option<String>,
    /// Kernel parameter as an active-storage hint (keys: k, dims, dtype, endian, init,
    /// threshold, max_iter, seed, labels); repeatable.
    #[arg(long = "hint", value_name = "KEY=VALUE")]
    hints: Vec<String>,
    /// Print one JSON object (centres, counts, inertia per iteration, a `run` object).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub(crate) fn run(args: KmeansArgs) -> anyhow::Result<ExitCode> {
    let mut config = KmeansConfig::default();
    let flags = [
        ("k", &args.k),
        ("dims", &args.dims),
        ("dtype", &args.dtype),
        ("endian", &args.endian),
        ("init", &args.init),
        ("threshold", &args.threshold),
        ("max_iter", &args.max_iter),
        ("seed", &args.seed),
        ("labels", &args.labels),
    ];
    crate::common::apply_flags(&mut config, &flags, &args.hints)?;
    if config.k == 0 {
        anyhow::bail!("give the number of clusters with --k (at least 1)");
    }
    let budget = args.pipeline.budget()?;
    // FILE.part-0000, FILE.part-0001, ...: one part per rank (sluice_kernels::dist::kmeans_parts).
    let parts = sluice_io::placement::find_parts(&args.file);
    if crate::dist::launched_ranks().is_some() || !parts.is_empty() {
        // Under mpirun: every rank reads its stripe, rank 0 writes and prints.
        let pipeline = args.pipeline.builder(&budget)?.build()?;
        let ranked = crate::dist::run(|ctx| {
            let report = match parts.is_empty() {
                true => sluice_kernels::dist::kmeans(ctx, &args.file, &config, &pipeline, &budget),
                false => {
                    sluice_kernels::dist::kmeans_parts(ctx, &parts, &config, &pipeline, &budget)
                }
            };
            report.map_err(with_flags)
        })?;
        if ranked.rank == 0 {
            print(&ranked.value, args.output.as_deref(), args.json)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let total = std::fs::metadata(&args.file).map_or(0, |m| m.len());
    warm_page_cache(&args.pipeline, &args.file, total, budget.total());
    let progress = Progress::start("kmeans", total, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report = sluice_kernels::kmeans::kmeans(&args.file, &config, &pipeline, &budget)
        .map_err(with_flags)?;
    drop(progress);
    print(&report, args.output.as_deref(), args.json)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the centres to `output`, if given, and prints the summary or the JSON object.
fn print(
    report: &KmeansReport,
    output: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<()> {
    if let Some(out) = output {
        report.write_centres(out).context("-o")?;
    }
    let text = if json { serde_json::to_string(report)? + "\n" } else { summary(report) };
    crate::common::print(format_args!("{text}"))
}

/// Under `--direct auto`, a file that fits in half the budget is read once through the page
/// cache first, so that every pass finds it cached and maps it (no read, no copy) instead of
/// reading it with O_DIRECT each time. Best effort: a failure here shows up in the first pass.
fn warm_page_cache(pipeline: &PipelineArgs, path: &PathBuf, len: u64, budget: u64) {
    if !matches!(pipeline.direct, DirectArg::Auto) || len > budget / 2 {
        return;
    }
    if let Ok(mut f) = std::fs::File::open(path) {
        let mut buf = vec![0u8; 1 << 20];
        while matches!(f.read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// Names the flag behind a library error where there is one.
fn with_flags(e: KmeansError) -> anyhow::Error {
    match e {
        KmeansError::RawNeedsDtype { .. } => {
            anyhow::Error::new(e).context("give --dtype (and --dims) for a raw array")
        }
        KmeansError::DtypeMismatch { what, .. } => {
            anyhow::Error::new(e).context(format!("--{what}"))
        }
        KmeansError::Init { .. } => anyhow::Error::new(e).context("--init"),
        KmeansError::TooFewRecords { .. } => anyhow::Error::new(e).context("--k"),
        e => e.into(),
    }
}

fn summary(r: &KmeansReport) -> String {
    let mut out = format!(
        "file             {} ({} {}, {} records of {} features)\n",
        r.file.display(),
        r.format,
        r.dtype,
        r.n,
        r.d
    );
    out.push_str(&format!(
        "k-means          k = {}, init {}, {} iterations (stop: {:?}), inertia {:e}\n",
        r.k, r.init, r.iterations, r.stop, r.inertia
    ));
    for (i, it) in r.history.iter().enumerate() {
        out.push_str(&format!(
            "  iteration {:<4} inertia {:e}  shift {:e}  relocated {}  {:.3} s\n",
            i + 1,
            it.inertia,
            it.shift,
            it.relocated,
            it.seconds
        ));
    }
    for (j, (c, n)) in r.centres.iter().zip(&r.counts).enumerate() {
        let c: Vec<String> = c.iter().map(|x| format!("{x:.6}")).collect();
        out.push_str(&format!("  centre {j:<4} {n:>10} records  [{}]\n", c.join(", ")));
    }
    out.push_str(&crate::common::run_figures(&r.run, crate::common::Layout::Row));
    out
}
