//! Import: text and binary edge lists into a grid store, out of core.
//!
//! # Passes
//! 1. **Vertices.** LDBC reads the `.v` file; Matrix Market takes `1..=n` from its size line;
//!    SNAP and binary inputs collect every id seen in an edge (a bitmap while ids are small,
//!    else sorted runs merged). Sorting the ids gives the order-preserving dense numbering.
//! 2. **Bucketing.** Every edge is parsed again (in parallel, by the block pipeline), mapped to
//!    dense ids, and appended to the bucket file of its destination column group in the scratch
//!    directory ([`ImportOptions::tmp_dir`]); undirected graphs also bucket the reversed edge.
//! 3. **Blocks.** One bucket at a time (its size reserved from the memory budget) is sorted by
//!    (destination partition, source partition, d, s) and written as grid blocks. A directed
//!    graph's reverse grid `rev.*` is then built from the forward grid, read back one row group
//!    at a time (`blocks::write_reverse`), not from buckets of its own.
//!
//! The input is edge files ([`import`]) or edges in memory ([`import_from`] with
//! [`Input::Arrays`]: borrowed `src`/`dst`/weight slices, read in place, no edge file written).
//! [`ImportOptions::progress`] tells another thread the pass running ([`Phase`]); the pipeline's
//! cancel flag is seen in every pass (the blocks pass checks it per column group).
//!
//! # Contract
//! 1. Dense id order is original id order; vertices only in `.v` (isolated) are vertices.
//! 2. A malformed line is an error naming `file:line`; a weight that is NaN, infinite or
//!    negative is an error; an id wider than [`ImportOptions::id_bytes`] is an error; a graph
//!    with no vertex is an error.
//! 3. Duplicate edges and self loops are kept, unless `simple` is set, which removes both
//!    (keeping the smallest weight of duplicates).
//! 4. The store appears at its target only when complete: it is built in a temporary directory
//!    beside the target, the old store is renamed aside, the new one renamed in, then the old
//!    one deleted; scratch and partial files are removed on error and on SIGINT/SIGTERM
//!    ([`crate::cleanup`]), and leftovers of a killed import are cleaned by the next one.
//! 5. One import at a time per target: an advisory lock on `.{name}.lock` beside it (removed
//!    when the import ends); a second import is an error. `force` replaces only an empty
//!    directory or a grid store whose `meta.json` has the format marker and a valid checksum.
//!
//! # Modules
//! This file holds the options, the report and [`import`], which runs the passes:
//! * `describe`: what the input is (format, files, direction, weights, where the vertices come
//!   from), read from the options, headers and `.properties` ([`LdbcProperties`]);
//! * `arrays`: edges in memory ([`EdgeArrays`]), read in chunks in place of files;
//! * `parse`: bytes to edges (text lines, binary records), pure functions;
//! * `read`: every edge file in chunks, through the block pipeline or a gzip decoder, with
//!   parse failures turned into `file:line` errors; passes 1 and 2 both read through it;
//! * `vertices`: pass 1, the sorted original ids and the original-to-dense `Lookup`;
//! * `buckets`: pass 2, edges routed to scratch bucket files by destination column group;
//! * `blocks`: pass 3, one bucket sorted into grid blocks and written with its index.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Instant;

use sluice_io::{Budget, Pipeline};

use sluice_io::output::temps;

use crate::Error;
use crate::cleanup::{self, TempDir};
use crate::store::{self, EDGE_BYTES, Encoding, Meta};

mod arrays;
mod blocks;
mod buckets;
mod describe;
#[doc(hidden)]
pub mod fuzz;
mod parse;
mod read;
mod vertices;

pub use arrays::{EdgeArrays, Ids, Weights};
pub use describe::{LdbcProperties, layout_doubts};

use blocks::Degrees;
use buckets::{Buckets, Route};
use describe::{FileKind, Source};
use vertices::Lookup;

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SNAP text edge list (`#` comments, whitespace separated, optional weight, `.gz` allowed).
    Snap,
    /// Matrix Market coordinate format.
    Mtx,
    /// LDBC Graphalytics `.properties` (or a `.v` / `.e` pair).
    Ldbc,
    /// Headerless little-endian `src, dst[, weight]` records.
    Bin,
}

/// Weight column of a binary input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BinWeight {
    /// No weights.
    #[default]
    None,
    /// `f32` weights.
    F32,
    /// `f64` weights.
    F64,
}

impl BinWeight {
    /// Bytes of the weight column in one record: 0, 4 or 8.
    pub fn bytes(self) -> usize {
        match self {
            BinWeight::None => 0,
            BinWeight::F32 => 4,
            BinWeight::F64 => 8,
        }
    }
}

/// Options of [`import`].
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The input format.
    pub format: Format,
    /// Direction, where the format does not say (`snap`, `mtx` general; `bin` defaults to
    /// directed).
    pub directed: Option<bool>,
    /// Remove self loops and duplicate edges.
    pub simple: bool,
    /// Width of original ids: 4 or 8 bytes (binary records; an upper bound for text ids).
    pub id_bytes: Option<u8>,
    /// Weight column of a binary input.
    pub bin_weight: BinWeight,
    /// Scratch directory for buckets (default: the temporary store directory beside the output).
    pub tmp_dir: Option<PathBuf>,
    /// Replace an existing store at the output path.
    pub force: bool,
    /// Where the import stands, for a progress display on another thread.
    pub progress: Option<Arc<Progress>>,
    /// How the grids' edges are stored (`store` contract rule 6); `None`: the default,
    /// [`Encoding::Raw`] (packed halves the bytes a pass reads but, decoded at about 10 ns per
    /// edge, costs more time than it saves while passes are compute-bound: issue 15, measured).
    pub encoding: Option<Encoding>,
}

/// The pass an import runs (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Pass 1: collecting the vertex ids.
    Vertices,
    /// Pass 2: routing edges to bucket files.
    Bucketing,
    /// Pass 3: sorting buckets into grid blocks and writing them.
    Blocks,
}

impl Phase {
    /// The pass's name as a progress bar shows it: "vertices", "bucketing" or "blocks".
    pub fn name(self) -> &'static str {
        match self {
            Phase::Vertices => "vertices",
            Phase::Bucketing => "bucketing",
            Phase::Blocks => "blocks",
        }
    }
}

/// Where an import stands, written by the import and read by any thread: the pass it runs, and
/// the bytes of in-memory edges read (as `bin` records; files count through the pipeline's
/// progress counter instead).
#[derive(Debug, Default)]
pub struct Progress {
    phase: AtomicU8,
    bytes: AtomicU64,
}

impl Progress {
    /// The pass running now; `None` before the first and after the last.
    pub fn phase(&self) -> Option<Phase> {
        match self.phase.load(Ordering::Relaxed) {
            1 => Some(Phase::Vertices),
            2 => Some(Phase::Bucketing),
            3 => Some(Phase::Blocks),
            _ => None,
        }
    }

    /// Bytes of in-memory edges read so far (both passes).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn set(&self, phase: Option<Phase>) {
        let v = match phase {
            None => 0,
            Some(Phase::Vertices) => 1,
            Some(Phase::Bucketing) => 2,
            Some(Phase::Blocks) => 3,
        };
        self.phase.store(v, Ordering::Relaxed);
    }

    fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }
}

/// What [`import_from`] reads.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// Edge files in [`ImportOptions::format`].
    Files(&'a [PathBuf]),
    /// Edges in memory (the format, id width and weight options do not apply).
    Arrays(EdgeArrays<'a>),
}

impl ImportOptions {
    /// Options for `format` with every other setting at its default.
    pub fn new(format: Format) -> ImportOptions {
        ImportOptions {
            format,
            directed: None,
            simple: false,
            id_bytes: None,
            bin_weight: BinWeight::None,
            tmp_dir: None,
            force: false,
            progress: None,
            encoding: None,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// The store's metadata.
    pub meta: Meta,
    /// Wall time.
    pub seconds: f64,
    /// Bytes of input read per pass.
    pub input_bytes: u64,
    /// Bytes of scratch (bucket) data written.
    pub scratch_bytes: u64,
    /// Wall time of each pass: vertices, bucketing, the forward (or only) grid's blocks, the
    /// reverse grid's blocks (0 for an undirected graph); the rest (checks, the vertex arrays,
    /// publishing) is `seconds` less their sum.
    pub pass_seconds: [f64; 4],
}

/// Imports `inputs` into a grid store at `out` (see the module docs).
pub fn import(
    inputs: &[PathBuf],
    out: &Path,
    opts: &ImportOptions,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<ImportReport, Error> {
    import_from(Input::Files(inputs), out, opts, pipeline, budget)
}

/// Imports edge files or edges in memory into a grid store at `out` (see the module docs).
pub fn import_from(
    input: Input<'_>,
    out: &Path,
    opts: &ImportOptions,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<ImportReport, Error> {
    let progress = opts.progress.as_deref();
    let result = import_passes(input, out, opts, pipeline, budget, progress);
    if let Some(p) = progress {
        p.set(None);
    }
    result
}

fn import_passes(
    input: Input<'_>,
    out: &Path,
    opts: &ImportOptions,
    pipeline: &Pipeline,
    budget: &Budget,
    progress: Option<&Progress>,
) -> Result<ImportReport, Error> {
    let start = Instant::now();
    let phase = |ph: Phase| {
        if let Some(p) = progress {
            p.set(Some(ph));
        }
    };
    let (source, input_bytes, first_input) = match input {
        Input::Files(inputs) => {
            let Some(first) = inputs.first() else { return Err(Error::NoInput) };
            let source = describe::describe(inputs, opts)?;
            let bytes: u64 = source
                .files
                .iter()
                .map(|f| std::fs::metadata(&f.path).map_or(0, |m| m.len()))
                .sum();
            (source, bytes, first.clone())
        }
        Input::Arrays(a) => (arrays::describe(a, opts), a.record_bytes(), PathBuf::from("src")),
    };

    // Target and temporary directories: the target is locked for the whole import, checked
    // under the lock, and the leftovers of killed imports into it are cleaned first.
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name =
        out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "store".into());
    let _lock = lock_target(&parent, &name)?;
    recover_leftovers(out, &parent, &name);
    check_target(out, opts.force)?;
    let stage = TempDir::new(parent.join(format!(".{name}.tmp-{}", std::process::id())))?;
    let scratch = match &opts.tmp_dir {
        Some(t) => Some(TempDir::new(t.join(format!(".sluice-import-{}", std::process::id())))?),
        None => None,
    };
    let scratch_dir = scratch.as_ref().map_or(stage.path(), |s| s.path()).to_path_buf();

    let mut pass_seconds = [0.0; 4];
    let mut lap = Instant::now();
    let mut took = |i: usize| {
        pass_seconds[i] = lap.elapsed().as_secs_f64();
        lap = Instant::now();
    };
    // Pass 1: vertices.
    phase(Phase::Vertices);
    let vertices::VertexIds { ids, reservation: _vertex_arrays } =
        vertices::collect_vertices(&source, pipeline, progress, budget, &scratch_dir)?;
    let n = ids.len() as u64;
    if n == 0 {
        return Err(Error::Input { path: first_input, msg: "empty graph: no vertices".into() });
    }
    let (p, psize) = store::layout_for(n)?;

    // Free space: scratch (8 or 16 bytes per bucketed edge) plus the store.
    let est_input_edges = estimate_edges(&source, input_bytes);
    let per_edge_stored = EDGE_BYTES + if source.weighted { 8 } else { 0 };
    let copies = 2; // undirected: both directions; directed: forward + reverse grids
    let store_bytes = est_input_edges * copies * per_edge_stored + n * 16;
    // Directed graphs bucket the forward edges only (the reverse grid comes from the forward).
    let bucketed = if source.directed { 1 } else { 2 };
    let scratch_bytes_est = est_input_edges * bucketed * (8 + if source.weighted { 8 } else { 0 });
    check_space(stage.path(), store_bytes + if scratch.is_none() { scratch_bytes_est } else { 0 })?;
    if let Some(s) = &scratch {
        check_space(s.path(), scratch_bytes_est)?;
    }

    took(0);
    // Pass 2: bucketing.
    phase(Phase::Bucketing);
    let lookup = Lookup::new(ids, budget);
    let groups = p.min(128);
    let cols_per_group = p.div_ceil(groups);
    let groups = p.div_ceil(cols_per_group);
    let nbuckets = groups;
    let buf_bytes = ((budget.available() / 8) / nbuckets.max(1)).clamp(4096, 1 << 20) as usize;
    let _buf_res = budget.reserve("import bucket buffers", buf_bytes as u64 * nbuckets)?;
    let mut buckets = Buckets::create(&scratch_dir, nbuckets as usize, buf_bytes, source.weighted)?;
    let route = Route { psize, cols_per_group, directed: source.directed };
    let queue_bytes = (budget.available() / 16).min(32 << 20);
    let _queue_res = budget.reserve("the queue of pass 2's writes", queue_bytes)?;
    let input_edges = buckets::bucket_edges(
        &source,
        &lookup,
        pipeline,
        progress,
        &mut buckets,
        &route,
        queue_bytes,
    )?;
    let bucket_info = buckets.finish()?;
    let scratch_bytes: u64 = bucket_info.iter().map(|b| b.bytes).sum();
    let ids = lookup.into_ids();

    took(1);
    // Pass 3: blocks.
    phase(Phase::Blocks);
    let cancelled = || pipeline.cancel_requested();
    let mut meta = Meta {
        format: store::FORMAT_NAME.into(),
        format_version: store::FORMAT_VERSION,
        num_vertices: n,
        num_edges: 0,
        input_edges,
        directed: source.directed,
        weighted: source.weighted,
        simple: opts.simple,
        self_loops: 0,
        partitions: p,
        partition_size: psize,
        source_format: source.format_name.into(),
        encoding: opts.encoding.unwrap_or_default(),
        files: Default::default(),
        part: None,
        meta_crc32: String::new(),
    };
    let mut out_deg = vec![0u32; n as usize];
    let mut in_deg = vec![0u32; n as usize];
    let dir = stage.path().to_path_buf();
    // Each grid counts its destinations: the forward grid's are in-degrees, the reverse
    // grid's out-degrees (an undirected grid holds both directions: the same counts).
    let degrees = Some(Degrees { deg: &mut in_deg, ids: &ids });
    let fwd = blocks::write_grid(
        &dir,
        "fwd",
        &bucket_info,
        &meta,
        cols_per_group,
        degrees,
        budget,
        &cancelled,
    )?;
    meta.num_edges = fwd.edges;
    meta.self_loops = fwd.self_loops;
    meta.files.extend(fwd.files);
    drop(bucket_info);
    took(2);
    if source.directed {
        let degrees = Some(Degrees { deg: &mut out_deg, ids: &ids });
        let rev = blocks::write_reverse(
            &dir,
            &fwd.index,
            &meta,
            cols_per_group,
            degrees,
            budget,
            &cancelled,
        )?;
        meta.files.extend(rev.files);
        took(3);
    }
    if !source.directed {
        out_deg.copy_from_slice(&in_deg);
    }
    let id_bytes: Vec<u8> = ids.iter().flat_map(|v| v.to_le_bytes()).collect();
    meta.files.insert("ids.bin".into(), store::write_file(&dir.join("ids.bin"), &id_bytes)?);
    let deg_bytes = |d: &[u32]| d.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    meta.files.insert(
        "out_degree.bin".into(),
        store::write_file(&dir.join("out_degree.bin"), &deg_bytes(&out_deg))?,
    );
    meta.files.insert(
        "in_degree.bin".into(),
        store::write_file(&dir.join("in_degree.bin"), &deg_bytes(&in_deg))?,
    );
    store::write_meta(&dir, &mut meta)?;

    // Publish (contract rule 4).
    drop(scratch);
    publish(&dir, out, &parent.join(format!(".{name}.old-{}", std::process::id())))?;
    stage.keep();
    let seconds = start.elapsed().as_secs_f64();
    Ok(ImportReport { meta, seconds, input_bytes, scratch_bytes, pass_seconds })
}

/// Moves the finished store `stage` to `out` atomically: the old store (if any) is renamed
/// aside to `aside`, the new one renamed in, then the old one deleted. Both renames are one
/// critical step (an interruption comes before or after them, never between); the aside copy is
/// registered as a temporary, so an interruption while it is deleted still removes it.
fn publish(stage: &Path, out: &Path, aside: &Path) -> Result<(), Error> {
    let had_old = temps::critical(|| -> Result<bool, Error> {
        let had_old = out.symlink_metadata().is_ok();
        if had_old {
            std::fs::rename(out, aside)
                .map_err(|e| Error::io(out, "cannot move the old store aside", e))?;
            temps::register(aside);
        }
        if let Err(e) = std::fs::rename(stage, out) {
            if had_old {
                let _ = std::fs::rename(aside, out);
                temps::unregister(aside);
            }
            return Err(Error::io(out, "cannot move the new store into place", e));
        }
        temps::unregister(stage);
        Ok(had_old)
    })?;
    if had_old {
        temps::remove_any(aside);
        temps::unregister(aside);
    }
    Ok(())
}

/// The import lock of a target: an advisory `flock` on `.{name}.lock` beside it. The file is
/// removed when the lock is given back (and by the signal handler), so no lock file outlives
/// the import that took it.
#[derive(Debug)]
struct TargetLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl Drop for TargetLock {
    fn drop(&mut self) {
        // Removed while still locked: whoever opened this inode meanwhile sees it unlinked
        // (`lock_target` checks) and takes a fresh file.
        let _ = std::fs::remove_file(&self.path);
        temps::unregister(&self.path);
    }
}

/// Takes the import lock of `parent/name`; another import holding it is an error, not a wait.
fn lock_target(parent: &Path, name: &str) -> Result<TargetLock, Error> {
    use std::os::unix::fs::MetadataExt;
    let path = parent.join(format!(".{name}.lock"));
    loop {
        let file = temps::create_registered(&path, |p| {
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(p)
        })
        .map_err(|e| Error::io(&path, "cannot create the lock file", e))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                // Not ours to remove, even on a signal.
                temps::unregister(&path);
                return Err(Error::io(
                    &path,
                    "another import into this store is running (it holds the lock)",
                    std::io::ErrorKind::WouldBlock.into(),
                ));
            }
            Err(e) => return Err(Error::io(&path, "cannot lock", e.into())),
        }
        // The holder before us may have removed the file between our open and our lock.
        let same = match (file.metadata(), std::fs::metadata(&path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if same {
            return Ok(TargetLock { path, _file: file });
        }
        temps::unregister(&path);
    }
}

/// Cleans what killed imports into `out` left (called under the lock): staging directories
/// `.{name}.tmp-{pid}` of dead processes are removed; an aside copy `.{name}.old-{pid}` is the
/// old store of an import killed between its two renames: it is moved back when `out` is
/// missing, else removed.
fn recover_leftovers(out: &Path, parent: &Path, name: &str) {
    cleanup::clean_leftovers(parent, &format!(".{name}.tmp-"));
    let prefix = format!(".{name}.old-");
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let Some(pid) = temps::leftover_pid(&entry.file_name().to_string_lossy(), &prefix) else {
            continue;
        };
        if temps::process_alive(pid) {
            continue;
        }
        if out.symlink_metadata().is_err() && std::fs::rename(entry.path(), out).is_ok() {
            continue;
        }
        temps::remove_any(&entry.path());
    }
}

/// Refuses an existing `out` unless `force` is set, and never replaces anything but an empty
/// directory or a grid store (a `meta.json` with the format marker and a valid checksum),
/// `force` or not: a symbolic link, a file, or a directory of anything else is kept.
fn check_target(out: &Path, force: bool) -> Result<(), Error> {
    let Ok(meta) = out.symlink_metadata() else { return Ok(()) };
    if !force {
        return Err(Error::TargetExists { path: out.to_path_buf() });
    }
    let empty_dir = meta.is_dir() && out.read_dir().is_ok_and(|mut d| d.next().is_none());
    if !meta.is_dir() || !(empty_dir || store::read_meta(out).is_ok()) {
        return Err(Error::TargetNotAStore { path: out.to_path_buf() });
    }
    Ok(())
}

fn check_space(dir: &Path, needed: u64) -> Result<(), Error> {
    let available = store::free_space(dir)?;
    if available < needed {
        return Err(Error::NoSpace { path: dir.to_path_buf(), needed, available });
    }
    Ok(())
}

fn estimate_edges(source: &Source<'_>, input_bytes: u64) -> u64 {
    if let Some((_, _, nnz)) = source.mtx {
        return nnz;
    }
    if let Some(a) = &source.arrays {
        return a.len() as u64;
    }
    match source.files.first().map(|f| &f.kind) {
        Some(kind @ FileKind::Bin { .. }) => input_bytes / kind.record_bytes(),
        // A text line holds at least "1 2\n"; gzip may hide up to ~10x that.
        _ => {
            let gz = source.files.iter().any(|f| f.gz);
            input_bytes / 4 * if gz { 10 } else { 1 } / 4
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_weight_bytes_are_the_width_of_the_weight_column() {
        assert_eq!(
            [BinWeight::None, BinWeight::F32, BinWeight::F64].map(BinWeight::bytes),
            [0, 4, 8]
        );
    }
}
