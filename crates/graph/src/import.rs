//! Import: text and binary edge lists into a grid store, out of core.
//!
//! # Passes
//! 1. **Vertices.** LDBC reads the `.v` file; Matrix Market takes `1..=n` from its size line;
//!    SNAP and binary inputs collect every id seen in an edge (a bitmap while ids are small,
//!    else sorted runs merged). Sorting the ids gives the order-preserving dense numbering.
//! 2. **Bucketing.** Every edge is parsed again (in parallel, by the block pipeline), mapped to
//!    dense ids, and appended to the bucket file of its destination column group in the scratch
//!    directory (`--tmp-dir`); directed graphs also bucket the reversed edge for `rev.*`.
//! 3. **Blocks.** One bucket at a time (its size checked against `--memory`) is sorted by
//!    (destination partition, source partition, d, s) and written as grid blocks.
//!
//! # Contract
//! 1. Dense id order is original id order; vertices only in `.v` (isolated) are vertices.
//! 2. A malformed line is an error naming `file:line`; a weight that is NaN, infinite or
//!    negative is an error; an id wider than `--id-bytes` is an error; a graph with no vertex
//!    is an error.
//! 3. Duplicate edges and self loops are kept, unless `simple` is set, which removes both
//!    (keeping the smallest weight of duplicates).
//! 4. The store appears at its target only when complete (temporary directory + rename);
//!    scratch and partial files are removed on error and on SIGINT/SIGTERM
//!    ([`crate::cleanup`]).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use sluice_io::{Block, BlockKernel, Budget, Pipeline, Plan, RecordLayout};

use crate::Error;
use crate::cleanup::TempDir;
use crate::store::{self, EDGE_BYTES, FileSum, GridIndex, Meta, SumWriter};

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextStyle {
    Snap,
    Mtx,
    Ldbc,
}

#[derive(Debug, Clone)]
enum FileKind {
    Text { style: TextStyle, data_offset: u64 },
    Bin { id_bytes: usize, weight: BinWeight },
}

#[derive(Debug, Clone)]
struct EdgeFile {
    path: PathBuf,
    kind: FileKind,
    gz: bool,
}

#[derive(Debug, Clone)]
enum Vertices {
    FromEdges,
    List(PathBuf),
    Range(u64),
}

#[derive(Debug, Clone)]
struct Source {
    files: Vec<EdgeFile>,
    directed: bool,
    weighted: bool,
    vertices: Vertices,
    /// Largest id allowed (`--id-bytes`).
    id_max: u64,
    id_bytes: u8,
    /// Matrix Market: `(rows, cols, nnz)`.
    mtx: Option<(u64, u64, u64)>,
    format_name: &'static str,
}

/// Imports `inputs` into a grid store at `out` (see the module docs).
pub fn import(
    inputs: &[PathBuf],
    out: &Path,
    opts: &ImportOptions,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<ImportReport, Error> {
    let start = Instant::now();
    if inputs.is_empty() {
        return Err(Error::Config("no input file given".into()));
    }
    let source = describe(inputs, opts)?;
    let input_bytes: u64 =
        source.files.iter().map(|f| std::fs::metadata(&f.path).map(|m| m.len()).unwrap_or(0)).sum();

    // Target and temporary directories.
    if out.exists() {
        if !opts.force {
            return Err(Error::Config(format!(
                "{} exists (use --force to replace it)",
                out.display()
            )));
        }
        if out.is_dir()
            && !out.join("meta.json").exists()
            && out.read_dir().map_or(true, |mut d| d.next().is_some())
        {
            return Err(Error::Config(format!(
                "{} exists and is not a grid store; not replacing it",
                out.display()
            )));
        }
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name =
        out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "store".into());
    let stage = TempDir::new(parent.join(format!(".{name}.tmp-{}", std::process::id())))?;
    let scratch = match &opts.tmp_dir {
        Some(t) => Some(TempDir::new(t.join(format!(".sluice-import-{}", std::process::id())))?),
        None => None,
    };
    let scratch_dir = scratch.as_ref().map_or(stage.path(), |s| s.path()).to_path_buf();

    // Pass 1: vertices.
    let ids = collect_vertices(&source, pipeline)?;
    let n = ids.len() as u64;
    if n == 0 {
        return Err(Error::Input {
            path: inputs[0].clone(),
            msg: "empty graph: no vertices".into(),
        });
    }
    let (p, psize) = store::layout_for(n)?;

    // Free space: scratch (8 or 16 bytes per bucketed edge) plus the store.
    let est_input_edges = estimate_edges(&source, input_bytes);
    let per_edge_stored = EDGE_BYTES + if source.weighted { 8 } else { 0 };
    let copies = 2; // undirected: both directions; directed: forward + reverse grids
    let store_bytes = est_input_edges * copies * per_edge_stored + n * 16;
    let scratch_bytes_est = est_input_edges * copies * (8 + if source.weighted { 8 } else { 0 });
    check_space(stage.path(), store_bytes + if scratch.is_none() { scratch_bytes_est } else { 0 })?;
    if let Some(s) = &scratch {
        check_space(s.path(), scratch_bytes_est)?;
    }

    // Pass 2: bucketing.
    let lookup = Lookup::new(ids, &source);
    let groups = p.min(128);
    let cols_per_group = p.div_ceil(groups);
    let groups = p.div_ceil(cols_per_group);
    let nbuckets = groups * if source.directed { 2 } else { 1 };
    let buf_bytes = ((budget.available() / 8) / nbuckets.max(1)).clamp(4096, 1 << 20) as usize;
    let _buf_res = budget.reserve("import bucket buffers", buf_bytes as u64 * nbuckets)?;
    let mut buckets = Buckets::create(&scratch_dir, nbuckets as usize, buf_bytes, source.weighted)?;
    let route = Route { psize, cols_per_group, groups, directed: source.directed };
    let input_edges = bucket_edges(&source, &lookup, pipeline, &mut buckets, &route)?;
    let bucket_info = buckets.finish()?;
    let scratch_bytes: u64 = bucket_info.iter().map(|b| b.1).sum();
    let ids = lookup.into_ids();

    // Pass 3: blocks.
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
        files: Default::default(),
        meta_crc32: String::new(),
    };
    let mut out_deg = vec![0u32; n as usize];
    let mut in_deg = vec![0u32; n as usize];
    let dir = stage.path().to_path_buf();
    let grids: &[(&str, usize)] =
        if source.directed { &[("fwd", 0), ("rev", 1)] } else { &[("fwd", 0)] };
    for &(grid, which) in grids {
        let degrees = if which == 0 { Some((&mut out_deg, &mut in_deg)) } else { None };
        let bucket_range = (which * groups as usize)..((which + 1) * groups as usize);
        let w = write_grid(
            &dir,
            grid,
            &bucket_info[bucket_range],
            &meta,
            cols_per_group,
            opts.simple,
            degrees,
            budget,
        )?;
        for (name, sum) in w.files {
            meta.files.insert(name, sum);
        }
        if which == 0 {
            meta.num_edges = w.edges;
            meta.self_loops = w.self_loops;
        }
    }
    drop(bucket_info);
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

    // Publish.
    drop(scratch);
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| Error::io(out, "cannot replace", e))?;
    }
    std::fs::rename(&dir, out)
        .map_err(|e| Error::io(out, "cannot move the new store into place", e))?;
    stage.keep();
    Ok(ImportReport { meta, seconds: start.elapsed().as_secs_f64(), input_bytes, scratch_bytes })
}

fn check_space(dir: &Path, needed: u64) -> Result<(), Error> {
    let available = store::free_space(dir)?;
    if available < needed {
        return Err(Error::NoSpace { path: dir.to_path_buf(), needed, available });
    }
    Ok(())
}

fn estimate_edges(source: &Source, input_bytes: u64) -> u64 {
    if let Some((_, _, nnz)) = source.mtx {
        return nnz;
    }
    match source.files.first().map(|f| &f.kind) {
        Some(FileKind::Bin { id_bytes, weight }) => {
            let w = match weight {
                BinWeight::None => 0,
                BinWeight::F32 => 4,
                BinWeight::F64 => 8,
            };
            input_bytes / (2 * *id_bytes as u64 + w)
        }
        // A text line holds at least "1 2\n"; gzip may hide up to ~10x that.
        _ => {
            let gz = source.files.iter().any(|f| f.gz);
            input_bytes / 4 * if gz { 10 } else { 1 } / 4
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Describing the input.

fn describe(inputs: &[PathBuf], opts: &ImportOptions) -> Result<Source, Error> {
    let id_bytes = opts.id_bytes.unwrap_or(if opts.format == Format::Bin { 4 } else { 8 });
    if id_bytes != 4 && id_bytes != 8 {
        return Err(Error::Config(format!("--id-bytes must be 4 or 8, not {id_bytes}")));
    }
    let id_max = if id_bytes == 4 { u32::MAX as u64 } else { u64::MAX };
    let need_direction = |what: &str| {
        opts.directed
            .ok_or_else(|| Error::Config(format!("{what}: say --directed or --undirected")))
    };
    for i in inputs {
        if !i.is_file() {
            return Err(Error::Input { path: i.clone(), msg: "no such file".into() });
        }
    }
    match opts.format {
        Format::Snap => {
            let directed = need_direction("a SNAP edge list does not say its direction")?;
            let files: Vec<EdgeFile> = inputs
                .iter()
                .map(|p| EdgeFile {
                    path: p.clone(),
                    kind: FileKind::Text { style: TextStyle::Snap, data_offset: 0 },
                    gz: p.extension().is_some_and(|e| e == "gz"),
                })
                .collect();
            let weighted = first_data_fields(&files[0], b'#')? == Some(3);
            Ok(Source {
                files,
                directed,
                weighted,
                vertices: Vertices::FromEdges,
                id_max,
                id_bytes,
                mtx: None,
                format_name: "snap",
            })
        }
        Format::Bin => {
            let ib = id_bytes as usize;
            let files = inputs
                .iter()
                .map(|p| EdgeFile {
                    path: p.clone(),
                    kind: FileKind::Bin { id_bytes: ib, weight: opts.bin_weight },
                    gz: false,
                })
                .collect();
            Ok(Source {
                files,
                directed: opts.directed.unwrap_or(true),
                weighted: opts.bin_weight != BinWeight::None,
                vertices: Vertices::FromEdges,
                id_max,
                id_bytes,
                mtx: None,
                format_name: "bin",
            })
        }
        Format::Mtx => {
            if inputs.len() != 1 {
                return Err(Error::Config("Matrix Market import takes one file".into()));
            }
            describe_mtx(&inputs[0], opts, id_max, id_bytes)
        }
        Format::Ldbc => describe_ldbc(inputs, opts, id_max, id_bytes),
    }
}

/// Number of fields on the first data line of a text file (None: no data line).
fn first_data_fields(f: &EdgeFile, comment: u8) -> Result<Option<usize>, Error> {
    let mut reader = open_text(f)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut carry = Vec::new();
    loop {
        let k = reader.read(&mut buf).map_err(|e| Error::io(&f.path, "read failed", e))?;
        carry.extend_from_slice(&buf[..k]);
        for line in carry.split(|&b| b == b'\n') {
            let line = trim_cr(line);
            if line.is_empty() || line[0] == comment {
                continue;
            }
            return Ok(Some(
                line.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty()).count(),
            ));
        }
        if k == 0 || carry.len() > (1 << 24) {
            return Ok(None);
        }
        // keep only the last partial line
        if let Some(i) = memchr::memrchr(b'\n', &carry) {
            carry.drain(..=i);
        }
    }
}

fn open_text(f: &EdgeFile) -> Result<Box<dyn Read>, Error> {
    let file = File::open(&f.path).map_err(|e| Error::io(&f.path, "cannot open", e))?;
    Ok(if f.gz { Box::new(flate2::read::MultiGzDecoder::new(file)) } else { Box::new(file) })
}

fn describe_mtx(
    path: &Path,
    opts: &ImportOptions,
    id_max: u64,
    id_bytes: u8,
) -> Result<Source, Error> {
    let text = {
        let mut f = File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
        let mut head = vec![0u8; 1 << 20];
        let mut got = 0;
        loop {
            let k = f.read(&mut head[got..]).map_err(|e| Error::io(path, "read failed", e))?;
            if k == 0 {
                break;
            }
            got += k;
            if got == head.len() {
                break;
            }
        }
        head.truncate(got);
        head
    };
    let bad =
        |line: u64, msg: &str| Error::Parse { path: path.to_path_buf(), line, msg: msg.into() };
    let mut offset = 0usize;
    let mut line_no = 0u64;
    let mut header: Option<Vec<String>> = None;
    let mut size: Option<(u64, u64, u64)> = None;
    while offset < text.len() {
        let end =
            memchr::memchr(b'\n', &text[offset..]).map(|i| offset + i + 1).unwrap_or(text.len());
        let line = trim_cr(&text[offset..end]);
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = trim_cr(line);
        line_no += 1;
        offset = end;
        let s = String::from_utf8_lossy(line).to_string();
        if line_no == 1 {
            let words: Vec<String> = s.split_whitespace().map(|w| w.to_ascii_lowercase()).collect();
            if words.len() < 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
                return Err(bad(
                    1,
                    "not a Matrix Market file (expected '%%MatrixMarket matrix coordinate ...')",
                ));
            }
            if words[2] != "coordinate" {
                return Err(bad(1, "only the coordinate format is supported"));
            }
            header = Some(words);
            continue;
        }
        if s.trim().is_empty() || s.starts_with('%') {
            continue;
        }
        let nums: Vec<u64> = s
            .split_whitespace()
            .map(|t| t.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad(line_no, "bad size line (expected 'rows cols entries')"))?;
        if nums.len() != 3 {
            return Err(bad(line_no, "bad size line (expected 'rows cols entries')"));
        }
        size = Some((nums[0], nums[1], nums[2]));
        break;
    }
    let header = header.ok_or_else(|| bad(1, "empty file"))?;
    let size = size.ok_or_else(|| bad(line_no, "no size line"))?;
    let weighted = match header[3].as_str() {
        "pattern" => false,
        "real" | "integer" | "double" => true,
        other => {
            return Err(bad(
                1,
                &format!("field type {other:?} is not supported (pattern, real, integer)"),
            ));
        }
    };
    let directed = match header[4].as_str() {
        "general" => opts.directed.ok_or_else(|| {
            Error::Config("a general Matrix Market matrix does not say its direction: say --directed or --undirected".into())
        })?,
        "symmetric" => false,
        other => return Err(bad(1, &format!("symmetry {other:?} is not supported (general, symmetric)"))),
    };
    let n = size.0.max(size.1);
    if n > id_max {
        return Err(bad(line_no, &format!("{n} rows do not fit {id_bytes}-byte ids")));
    }
    Ok(Source {
        files: vec![EdgeFile {
            path: path.to_path_buf(),
            kind: FileKind::Text { style: TextStyle::Mtx, data_offset: offset as u64 },
            gz: false,
        }],
        directed,
        weighted,
        vertices: Vertices::Range(n),
        id_max,
        id_bytes,
        mtx: Some(size),
        format_name: "mtx",
    })
}

/// Parsed `.properties` of an LDBC graph.
#[derive(Debug, Clone)]
pub struct LdbcProperties {
    /// The graph name (`graph.<name>.`).
    pub name: String,
    /// Every `graph.<name>.<key> = value`, keyed by `<key>`.
    pub values: std::collections::BTreeMap<String, String>,
    /// The folder of the file.
    pub dir: PathBuf,
    /// The file.
    pub path: PathBuf,
}

impl LdbcProperties {
    /// Reads a `.properties` file.
    pub fn read(path: &Path) -> Result<LdbcProperties, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e))?;
        let mut values = std::collections::BTreeMap::new();
        let mut name: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let (k, v) = line.split_once('=').ok_or_else(|| Error::Parse {
                path: path.to_path_buf(),
                line: i as u64 + 1,
                msg: "expected 'key = value'".into(),
            })?;
            let k = k.trim();
            let Some(rest) = k.strip_prefix("graph.") else { continue };
            // The graph name is everything up to the known key suffix.
            let known = [
                "vertex-file",
                "edge-file",
                "meta.vertices",
                "meta.edges",
                "directed",
                "edge-properties.names",
                "edge-properties.types",
                "algorithms",
                "bfs.source-vertex",
                "cdlp.max-iterations",
                "pr.damping-factor",
                "pr.num-iterations",
                "sssp.weight-property",
                "sssp.source-vertex",
            ];
            let Some(key) = known.iter().find(|s| rest.ends_with(&format!(".{s}"))) else {
                continue;
            };
            let gname = &rest[..rest.len() - key.len() - 1];
            if name.is_none() {
                name = Some(gname.to_string());
            }
            values.insert(key.to_string(), v.trim().to_string());
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        Ok(LdbcProperties { name: name.unwrap_or_default(), values, dir, path: path.to_path_buf() })
    }

    /// The value of a required key, or an error naming it.
    pub fn get(&self, key: &str) -> Result<&str, Error> {
        self.values.get(key).map(String::as_str).ok_or_else(|| Error::Input {
            path: self.path.clone(),
            msg: format!("missing key graph.{}.{key}", self.name),
        })
    }
}

fn describe_ldbc(
    inputs: &[PathBuf],
    opts: &ImportOptions,
    id_max: u64,
    id_bytes: u8,
) -> Result<Source, Error> {
    let (vfile, efile, directed, weighted) = if inputs.len() == 1 {
        let props = LdbcProperties::read(&inputs[0])?;
        let v = props.dir.join(props.get("vertex-file")?);
        let e = props.dir.join(props.get("edge-file")?);
        let directed = match props.get("directed")? {
            "true" => true,
            "false" => false,
            other => {
                return Err(Error::Input {
                    path: props.path.clone(),
                    msg: format!("graph.{}.directed is {other:?}, not true or false", props.name),
                });
            }
        };
        let weighted =
            props.values.get("edge-properties.names").is_some_and(|s| !s.trim().is_empty());
        for f in [&v, &e] {
            if !f.is_file() {
                return Err(Error::Input {
                    path: f.clone(),
                    msg: format!("named in {} but not found", props.path.display()),
                });
            }
        }
        (v, e, directed, weighted)
    } else if inputs.len() == 2 {
        let directed = opts.directed.ok_or_else(|| {
            Error::Config(
                "a .v/.e pair does not say its direction: say --directed or --undirected".into(),
            )
        })?;
        let e = EdgeFile {
            path: inputs[1].clone(),
            kind: FileKind::Text { style: TextStyle::Ldbc, data_offset: 0 },
            gz: false,
        };
        let weighted = first_data_fields(&e, b'#')? == Some(3);
        (inputs[0].clone(), inputs[1].clone(), directed, weighted)
    } else {
        return Err(Error::Config(
            "LDBC import takes a .properties file or a .v and an .e file".into(),
        ));
    };
    Ok(Source {
        files: vec![EdgeFile {
            path: efile,
            kind: FileKind::Text { style: TextStyle::Ldbc, data_offset: 0 },
            gz: false,
        }],
        directed,
        weighted,
        vertices: Vertices::List(vfile),
        id_max,
        id_bytes,
        mtx: None,
        format_name: "ldbc",
    })
}

// ---------------------------------------------------------------------------------------------
// Parsing.

/// Edges parsed from one piece of input, original ids.
#[derive(Debug, Default)]
struct RawEdges {
    src: Vec<u64>,
    dst: Vec<u64>,
    w: Vec<f64>,
    /// Text: file offset of each edge's line (for `file:line` errors).
    offsets: Vec<u64>,
}

/// A parse failure: byte offset in the file (of the line start) and message.
#[derive(Debug)]
struct ParseFail {
    offset: u64,
    msg: String,
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn parse_u64(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in tok {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

fn check_weight(w: f64) -> Result<f64, String> {
    if w.is_finite() && w >= 0.0 {
        Ok(w)
    } else {
        Err(format!("weight {w} is not a finite non-negative number"))
    }
}

/// How text lines are read.
#[derive(Debug, Clone, Copy)]
struct TextRules {
    comment: Option<u8>,
    weighted: bool,
    id_max: u64,
    id_bytes: u8,
    /// Matrix Market: ids are 1..=n (rows, cols).
    mtx: Option<(u64, u64)>,
}

/// Parses whole lines in `data`, which starts at byte `base` of the file.
fn parse_text(data: &[u8], base: u64, r: &TextRules) -> Result<RawEdges, ParseFail> {
    let mut out = RawEdges::default();
    let fields = if r.weighted { 3 } else { 2 };
    let mut pos = 0usize;
    while pos < data.len() {
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let line = trim_cr(&data[pos..end]);
        let line_start = base + pos as u64;
        pos = end + 1;
        let first = line.iter().position(|b| !b.is_ascii_whitespace());
        let Some(first) = first else { continue };
        if Some(line[first]) == r.comment {
            continue;
        }
        let fail = |msg: String| ParseFail { offset: line_start, msg };
        let mut toks = line.split(|b| *b == b' ' || *b == b'\t').filter(|t| !t.is_empty());
        let mut ids = [0u64; 2];
        for (k, id) in ids.iter_mut().enumerate() {
            let tok = toks.next().ok_or_else(|| fail(format!("expected {fields} fields")))?;
            let v = parse_u64(tok).ok_or_else(|| {
                if tok.iter().all(u8::is_ascii_digit) {
                    fail(format!(
                        "vertex id {} does not fit in {} bytes",
                        String::from_utf8_lossy(tok),
                        r.id_bytes
                    ))
                } else {
                    fail(format!("bad vertex id {:?}", String::from_utf8_lossy(tok)))
                }
            })?;
            if v > r.id_max {
                return Err(fail(format!(
                    "vertex id {v} does not fit in {} bytes (--id-bytes)",
                    r.id_bytes
                )));
            }
            if let Some((rows, cols)) = r.mtx {
                let lim = if k == 0 { rows } else { cols };
                if v == 0 || v > lim {
                    return Err(fail(format!("entry index {v} is outside 1..={lim}")));
                }
            }
            *id = v;
        }
        if r.weighted {
            let tok = toks
                .next()
                .ok_or_else(|| fail(format!("expected {fields} fields (src dst weight)")))?;
            let s = std::str::from_utf8(tok).map_err(|_| fail("bad weight".into()))?;
            let w: f64 = s.parse().map_err(|_| fail(format!("bad weight {s:?}")))?;
            out.w.push(check_weight(w).map_err(fail)?);
        }
        if toks.next().is_some() {
            return Err(fail(format!("expected {fields} fields, found more")));
        }
        out.src.push(ids[0]);
        out.dst.push(ids[1]);
        out.offsets.push(line_start);
    }
    Ok(out)
}

fn parse_bin(
    data: &[u8],
    base: u64,
    id_bytes: usize,
    weight: BinWeight,
) -> Result<RawEdges, ParseFail> {
    let wb = match weight {
        BinWeight::None => 0,
        BinWeight::F32 => 4,
        BinWeight::F64 => 8,
    };
    let rec = 2 * id_bytes + wb;
    let mut out = RawEdges::default();
    let n = data.len() / rec;
    out.src.reserve(n);
    out.dst.reserve(n);
    if data.len() % rec != 0 {
        return Err(ParseFail {
            offset: base + (n * rec) as u64,
            msg: format!("file length is not a multiple of the {rec}-byte record"),
        });
    }
    for (i, r) in data.chunks_exact(rec).enumerate() {
        let id = |b: &[u8]| -> u64 {
            if id_bytes == 4 {
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64
            } else {
                u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
            }
        };
        out.src.push(id(&r[..id_bytes]));
        out.dst.push(id(&r[id_bytes..2 * id_bytes]));
        if wb > 0 {
            let wr = &r[2 * id_bytes..];
            let w = if wb == 4 {
                f32::from_le_bytes([wr[0], wr[1], wr[2], wr[3]]) as f64
            } else {
                f64::from_le_bytes([wr[0], wr[1], wr[2], wr[3], wr[4], wr[5], wr[6], wr[7]])
            };
            let w = check_weight(w)
                .map_err(|msg| ParseFail { offset: base + (i * rec) as u64, msg })?;
            out.w.push(w);
        }
    }
    Ok(out)
}

/// Turns a parse failure into an error naming `file:line` (text) or the record (binary).
fn fail_to_error(f: &EdgeFile, fail: ParseFail) -> Error {
    match f.kind {
        FileKind::Bin { id_bytes, weight } => {
            let wb = match weight {
                BinWeight::None => 0,
                BinWeight::F32 => 4,
                BinWeight::F64 => 8,
            };
            let rec = (2 * id_bytes + wb) as u64;
            Error::BadRecord {
                path: f.path.clone(),
                record: fail.offset / rec,
                offset: fail.offset,
                msg: fail.msg,
            }
        }
        FileKind::Text { .. } => {
            let line = line_of(f, fail.offset).unwrap_or(0);
            Error::Parse { path: f.path.clone(), line, msg: fail.msg }
        }
    }
}

/// 1-based line number of byte `offset` (of the decompressed text).
fn line_of(f: &EdgeFile, offset: u64) -> Result<u64, Error> {
    let mut r = open_text(f)?.take(offset);
    let mut buf = vec![0u8; 1 << 16];
    let mut lines = 1u64;
    loop {
        let k = r.read(&mut buf).map_err(|e| Error::io(&f.path, "read failed", e))?;
        if k == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
    }
}

/// Runs `per_chunk` over every piece of every edge file, in stream order, with `sink`
/// receiving each result on the calling thread. Plain files go through the block pipeline
/// (parallel); gzip files are decompressed sequentially.
fn for_each_chunk<T: Send>(
    source: &Source,
    pipeline: &Pipeline,
    per_chunk: &(dyn Fn(RawEdges) -> Result<T, (usize, String)> + Sync),
    sink: &mut dyn FnMut(T),
) -> Result<(), Error> {
    for f in &source.files {
        let rules = TextRules {
            comment: match f.kind {
                FileKind::Text { style: TextStyle::Snap, .. } => Some(b'#'),
                FileKind::Text { style: TextStyle::Mtx, .. } => Some(b'%'),
                _ => None,
            },
            weighted: source.weighted,
            id_max: source.id_max,
            id_bytes: source.id_bytes,
            mtx: source.mtx.map(|(r, c, _)| (r, c)),
        };
        let parse = |data: &[u8], base: u64| -> Result<RawEdges, ParseFail> {
            match f.kind {
                FileKind::Text { .. } => parse_text(data, base, &rules),
                FileKind::Bin { id_bytes, weight } => {
                    let raw = parse_bin(data, base, id_bytes, weight)?;
                    for (i, (&s, &d)) in raw.src.iter().zip(&raw.dst).enumerate() {
                        if s.max(d) > source.id_max {
                            let rec = (data.len() / raw.src.len().max(1)) as u64;
                            return Err(ParseFail {
                                offset: base + i as u64 * rec,
                                msg: format!(
                                    "vertex id {} does not fit in {} bytes",
                                    s.max(d),
                                    source.id_bytes
                                ),
                            });
                        }
                    }
                    Ok(raw)
                }
            }
        };
        let mut first_fail: Option<ParseFail> = None;
        if f.gz {
            let mut r = open_text(f)?;
            let mut carry: Vec<u8> = Vec::new();
            let mut base = 0u64;
            let mut buf = vec![0u8; 4 << 20];
            loop {
                let k =
                    r.read(&mut buf).map_err(|e| Error::io(&f.path, "decompression failed", e))?;
                carry.extend_from_slice(&buf[..k]);
                let cut = if k == 0 {
                    carry.len()
                } else {
                    memchr::memrchr(b'\n', &carry).map_or(0, |i| i + 1)
                };
                if cut > 0 {
                    let piece: Vec<u8> = carry.drain(..cut).collect();
                    let res = parse(&piece, base)
                        .and_then(|raw| run_chunk(per_chunk, raw, base, rec_len(&f.kind)));
                    base += piece.len() as u64;
                    match res {
                        Ok(t) => sink(t),
                        Err(e) => return Err(fail_to_error(f, e)),
                    }
                }
                if k == 0 {
                    break;
                }
            }
            continue;
        }
        let (layout, offset) = match f.kind {
            FileKind::Text { data_offset, .. } => (RecordLayout::Delimited(b'\n'), data_offset),
            FileKind::Bin { id_bytes, weight } => {
                let wb = match weight {
                    BinWeight::None => 0,
                    BinWeight::F32 => 4,
                    BinWeight::F64 => 8,
                };
                let rec = std::num::NonZeroUsize::new(2 * id_bytes + wb)
                    .unwrap_or(std::num::NonZeroUsize::MIN);
                (RecordLayout::Fixed(rec), 0)
            }
        };
        let len =
            std::fs::metadata(&f.path).map_err(|e| Error::io(&f.path, "cannot stat", e))?.len();
        let mut plan = Plan::new(layout);
        if len > offset {
            plan.push_extent(&f.path, offset, len - offset)?;
        }
        struct K<'a, T> {
            parse: &'a (dyn Fn(&[u8], u64) -> Result<RawEdges, ParseFail> + Sync),
            per_chunk: &'a (dyn Fn(RawEdges) -> Result<T, (usize, String)> + Sync),
            offset: u64,
            rec: u64,
        }
        impl<T: Send> BlockKernel for K<'_, T> {
            type Partial = Result<T, ParseFail>;
            fn process(&self, b: &Block<'_>) -> Self::Partial {
                let base = self.offset + b.stream_offset;
                let raw = (self.parse)(b.data, base)?;
                run_chunk(self.per_chunk, raw, base, self.rec)
            }
        }
        let kernel = K { parse: &parse, per_chunk, offset, rec: rec_len(&f.kind) };
        let stop = AtomicBool::new(false);
        pipeline.run_ordered(&plan, &kernel, |p| {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match p {
                Ok(t) => sink(t),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_fail = Some(e);
                }
            }
        })?;
        if let Some(e) = first_fail {
            return Err(fail_to_error(f, e));
        }
    }
    Ok(())
}

/// Bytes per record of a binary file (0 for text).
fn rec_len(kind: &FileKind) -> u64 {
    match *kind {
        FileKind::Text { .. } => 0,
        FileKind::Bin { id_bytes, weight } => {
            (2 * id_bytes) as u64
                + match weight {
                    BinWeight::None => 0,
                    BinWeight::F32 => 4,
                    BinWeight::F64 => 8,
                }
        }
    }
}

/// Runs `per_chunk`, turning an error about edge `i` into a failure at that edge's offset.
fn run_chunk<T>(
    per_chunk: &(dyn Fn(RawEdges) -> Result<T, (usize, String)> + Sync),
    mut raw: RawEdges,
    base: u64,
    rec: u64,
) -> Result<T, ParseFail> {
    let offsets = std::mem::take(&mut raw.offsets);
    per_chunk(raw).map_err(|(i, msg)| ParseFail {
        offset: offsets.get(i).copied().unwrap_or(base + i as u64 * rec),
        msg,
    })
}

// ---------------------------------------------------------------------------------------------
// Pass 1: vertices.

/// Ids below this are collected in a bitmap (at most 128 MiB).
const BITMAP_LIMIT: u64 = 1 << 30;

#[derive(Debug, Default)]
struct IdCollector {
    bitmap: Vec<u64>,
    sorted: Vec<u64>,
    pending: Vec<u64>,
    use_sorted: bool,
}

impl IdCollector {
    fn add(&mut self, ids: &[u64]) {
        if !self.use_sorted {
            if ids.iter().all(|&v| v < BITMAP_LIMIT) {
                for &v in ids {
                    let w = (v / 64) as usize;
                    if w >= self.bitmap.len() {
                        self.bitmap.resize((w + 1).next_power_of_two(), 0);
                    }
                    self.bitmap[w] |= 1 << (v % 64);
                }
                return;
            }
            self.use_sorted = true;
            let from_bitmap = bitmap_ids(&self.bitmap);
            self.bitmap = Vec::new();
            self.sorted = from_bitmap;
        }
        self.pending.extend_from_slice(ids);
        if self.pending.len() > (1 << 24).max(self.sorted.len() / 2) {
            self.merge();
        }
    }
    fn merge(&mut self) {
        let mut p = std::mem::take(&mut self.pending);
        p.par_sort_unstable();
        p.dedup();
        let mut out = Vec::with_capacity(self.sorted.len() + p.len());
        let (mut i, mut j) = (0, 0);
        let a = &self.sorted;
        while i < a.len() || j < p.len() {
            let v = if j == p.len() || (i < a.len() && a[i] <= p[j]) {
                i += 1;
                a[i - 1]
            } else {
                j += 1;
                p[j - 1]
            };
            if out.last() != Some(&v) {
                out.push(v);
            }
        }
        self.sorted = out;
    }
    fn finish(mut self) -> Vec<u64> {
        if self.use_sorted {
            self.merge();
            self.sorted
        } else {
            bitmap_ids(&self.bitmap)
        }
    }
}

fn bitmap_ids(bitmap: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for (w, &bits) in bitmap.iter().enumerate() {
        let mut b = bits;
        while b != 0 {
            out.push(w as u64 * 64 + b.trailing_zeros() as u64);
            b &= b - 1;
        }
    }
    out
}

fn collect_vertices(source: &Source, pipeline: &Pipeline) -> Result<Vec<u64>, Error> {
    match &source.vertices {
        Vertices::Range(n) => Ok((1..=*n).collect()),
        Vertices::List(path) => {
            let text =
                std::fs::read(path).map_err(|e| Error::io(path, "cannot read vertex file", e))?;
            let mut ids = Vec::new();
            for (i, line) in text.split(|&b| b == b'\n').enumerate() {
                let line = trim_cr(line);
                let t: Vec<&[u8]> =
                    line.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty()).collect();
                if t.is_empty() {
                    continue;
                }
                let fail =
                    |msg: String| Error::Parse { path: path.clone(), line: i as u64 + 1, msg };
                let v = parse_u64(t[0]).ok_or_else(|| {
                    fail(format!("bad vertex id {:?}", String::from_utf8_lossy(t[0])))
                })?;
                if v > source.id_max {
                    return Err(fail(format!(
                        "vertex id {v} does not fit in {} bytes (--id-bytes)",
                        source.id_bytes
                    )));
                }
                ids.push(v);
            }
            ids.par_sort_unstable();
            if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::Input {
                    path: path.clone(),
                    msg: format!("vertex {} is listed twice", w[0]),
                });
            }
            Ok(ids)
        }
        Vertices::FromEdges => {
            let mut c = IdCollector::default();
            let per_chunk = |raw: RawEdges| -> Result<Vec<u64>, (usize, String)> {
                let mut v = raw.src;
                v.extend_from_slice(&raw.dst);
                v.sort_unstable();
                v.dedup();
                Ok(v)
            };
            for_each_chunk(source, pipeline, &per_chunk, &mut |ids: Vec<u64>| c.add(&ids))?;
            Ok(c.finish())
        }
    }
}

/// Original id → dense id.
#[derive(Debug)]
struct Lookup {
    ids: Vec<u64>,
    table: Option<Vec<u32>>,
}

impl Lookup {
    fn new(ids: Vec<u64>, _source: &Source) -> Lookup {
        let max = ids.last().copied().unwrap_or(0);
        let n = ids.len() as u64;
        // A direct table when ids are dense enough (at most 4 slots per vertex + 1 Mi).
        let table = (max < u32::MAX as u64 && max < 4 * n + (1 << 20)).then(|| {
            let mut t = vec![u32::MAX; max as usize + 1];
            for (i, &v) in ids.iter().enumerate() {
                t[v as usize] = i as u32;
            }
            t
        });
        Lookup { ids, table }
    }
    #[inline]
    fn get(&self, v: u64) -> Option<u32> {
        match &self.table {
            Some(t) => t.get(v as usize).copied().filter(|&d| d != u32::MAX),
            None => self.ids.binary_search(&v).ok().map(|i| i as u32),
        }
    }
    fn into_ids(self) -> Vec<u64> {
        self.ids
    }
}

// ---------------------------------------------------------------------------------------------
// Pass 2: bucketing.

#[derive(Debug)]
struct Buckets {
    writers: Vec<BufWriter<File>>,
    paths: Vec<PathBuf>,
    counts: Vec<u64>,
    weighted: bool,
}

impl Buckets {
    fn create(dir: &Path, n: usize, buf: usize, weighted: bool) -> Result<Buckets, Error> {
        let mut writers = Vec::with_capacity(n);
        let mut paths = Vec::with_capacity(n);
        for i in 0..n {
            let p = dir.join(format!("bucket-{i}.tmp"));
            let f = File::create(&p).map_err(|e| Error::io(&p, "cannot create scratch file", e))?;
            writers.push(BufWriter::with_capacity(buf, f));
            paths.push(p);
        }
        Ok(Buckets { writers, paths, counts: vec![0; n], weighted })
    }
    #[inline]
    fn push(&mut self, b: usize, s: u32, d: u32, w: f64) -> Result<(), Error> {
        let mut rec = [0u8; 16];
        rec[..4].copy_from_slice(&s.to_le_bytes());
        rec[4..8].copy_from_slice(&d.to_le_bytes());
        let len = if self.weighted {
            rec[8..].copy_from_slice(&w.to_le_bytes());
            16
        } else {
            8
        };
        self.counts[b] += 1;
        self.writers[b]
            .write_all(&rec[..len])
            .map_err(|e| Error::io(&self.paths[b], "scratch write failed", e))
    }
    /// Flushes and returns (path, bytes, records) per bucket.
    fn finish(self) -> Result<Vec<(PathBuf, u64, u64)>, Error> {
        let rec = if self.weighted { 16 } else { 8 };
        let mut out = Vec::new();
        for ((mut w, p), c) in self.writers.into_iter().zip(self.paths).zip(self.counts) {
            w.flush().map_err(|e| Error::io(&p, "scratch write failed", e))?;
            out.push((p, c * rec, c));
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, Copy)]
struct Route {
    psize: u64,
    cols_per_group: u64,
    groups: u64,
    directed: bool,
}

fn bucket_edges(
    source: &Source,
    lookup: &Lookup,
    pipeline: &Pipeline,
    buckets: &mut Buckets,
    route: &Route,
) -> Result<u64, Error> {
    let mut input_edges = 0u64;
    let per_chunk = |raw: RawEdges| -> Result<(Vec<u32>, Vec<u32>, Vec<f64>), (usize, String)> {
        let mut s = Vec::with_capacity(raw.src.len());
        let mut d = Vec::with_capacity(raw.src.len());
        for (i, (&a, &b)) in raw.src.iter().zip(&raw.dst).enumerate() {
            let x = lookup
                .get(a)
                .ok_or_else(|| (i, format!("vertex {a} is not in the vertex file")))?;
            let y = lookup
                .get(b)
                .ok_or_else(|| (i, format!("vertex {b} is not in the vertex file")))?;
            s.push(x);
            d.push(y);
        }
        Ok((s, d, raw.w))
    };
    let mut err: Option<Error> = None;
    let group_of = |v: u32| (v as u64 / route.psize / route.cols_per_group) as usize;
    let mut sink = |(s, d, w): (Vec<u32>, Vec<u32>, Vec<f64>)| {
        if err.is_some() {
            return;
        }
        input_edges += s.len() as u64;
        for i in 0..s.len() {
            let wt = w.get(i).copied().unwrap_or(1.0);
            let (a, b) = (s[i], d[i]);
            let r = buckets.push(group_of(b), a, b, wt).and_then(|()| {
                if route.directed {
                    buckets.push(route.groups as usize + group_of(a), b, a, wt)
                } else if a != b {
                    buckets.push(group_of(a), b, a, wt)
                } else {
                    Ok(())
                }
            });
            if let Err(e) = r {
                err = Some(e);
                return;
            }
        }
    };
    let res = for_each_chunk(source, pipeline, &per_chunk, &mut sink);
    if let Some(e) = err {
        return Err(e);
    }
    res?;
    if let Some((_, _, nnz)) = source.mtx {
        if nnz != input_edges {
            return Err(Error::Input {
                path: source.files[0].path.clone(),
                msg: format!("the size line promises {nnz} entries, the file has {input_edges}"),
            });
        }
    }
    Ok(input_edges)
}

// ---------------------------------------------------------------------------------------------
// Pass 3: blocks.

struct GridWritten {
    files: Vec<(String, FileSum)>,
    edges: u64,
    self_loops: u64,
}

#[allow(clippy::too_many_arguments)]
fn write_grid(
    dir: &Path,
    grid: &str,
    buckets: &[(PathBuf, u64, u64)],
    meta: &Meta,
    cols_per_group: u64,
    simple: bool,
    mut degrees: Option<(&mut Vec<u32>, &mut Vec<u32>)>,
    budget: &Budget,
) -> Result<GridWritten, Error> {
    let p = meta.partitions;
    let psize = meta.partition_size;
    let weighted = meta.weighted;
    let nblocks = (p * p) as usize;
    let mut index = GridIndex { offsets: vec![0; nblocks + 1], crcs: vec![0; nblocks] };
    let epath = dir.join(format!("{grid}.edges"));
    let wpath = dir.join(format!("{grid}.weights"));
    let mut ew = SumWriter::create(&epath)?;
    let mut ww = if weighted { Some(SumWriter::create(&wpath)?) } else { None };
    let mut written = 0u64;
    let mut self_loops = 0u64;
    let mut block_counts = vec![0u64; nblocks];
    for (g, (path, bytes, count)) in buckets.iter().enumerate() {
        let rec = if weighted { 16 } else { 8 };
        let _res = budget.reserve(
            &format!("sorting column group {g} of the {grid} grid"),
            bytes + count * if weighted { 12 } else { 4 } + 8 * cols_per_group * p,
        )?;
        let data =
            std::fs::read(path).map_err(|e| Error::io(path, "cannot read scratch file", e))?;
        if data.len() as u64 != *bytes {
            return Err(Error::corrupt(path, "scratch file has the wrong length"));
        }
        let _ = std::fs::remove_file(path);
        let dp0 = g as u64 * cols_per_group;
        let cols = cols_per_group.min(p - dp0.min(p)) as usize;
        let gblocks = cols * p as usize;
        // Counting sort by block (dp, sp) of the group, then a small sort per block by (d, s)
        // (and weight, rule 3), blocks in parallel: cache-sized sorts instead of one big one.
        let decode = |c: &[u8]| -> (u64, u64) {
            (
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64,
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]) as u64,
            )
        };
        let mut starts = vec![0usize; gblocks + 1];
        for c in data.chunks_exact(rec) {
            let (s, d) = decode(c);
            starts[((d / psize - dp0) * p + s / psize) as usize + 1] += 1;
        }
        for i in 0..gblocks {
            starts[i + 1] += starts[i];
        }
        let mut fill = starts.clone();
        let mut keys = vec![0u32; data.len() / rec];
        let mut ws = if weighted { vec![0f64; keys.len()] } else { Vec::new() };
        for c in data.chunks_exact(rec) {
            let (s, d) = decode(c);
            let (sp, dp) = (s / psize, d / psize);
            let bi = ((dp - dp0) * p + sp) as usize;
            let at = fill[bi];
            fill[bi] += 1;
            keys[at] = (((d - dp * psize) << 16) | (s - sp * psize)) as u32;
            if weighted {
                ws[at] = f64::from_le_bytes(c[8..16].try_into().unwrap_or([0; 8]));
            }
        }
        drop(data);
        // Split into per-block slices and sort them in parallel.
        let mut kslices: Vec<&mut [u32]> = Vec::with_capacity(gblocks);
        let mut wslices: Vec<&mut [f64]> = Vec::with_capacity(gblocks);
        {
            let (mut krest, mut wrest) = (&mut keys[..], &mut ws[..]);
            for i in 0..gblocks {
                let len = starts[i + 1] - starts[i];
                let (k, kr) = krest.split_at_mut(len);
                krest = kr;
                kslices.push(k);
                if weighted {
                    let (w, wr) = wrest.split_at_mut(len);
                    wrest = wr;
                    wslices.push(w);
                }
            }
        }
        let lens: Vec<usize> = if weighted {
            kslices
                .par_iter_mut()
                .zip(wslices.par_iter_mut())
                .enumerate()
                .map(|(bi, (k, w))| {
                    let mut pairs: Vec<(u32, f64)> =
                        k.iter().copied().zip(w.iter().copied()).collect();
                    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
                    if simple {
                        pairs.dedup_by_key(|a| a.0);
                        let (dp, sp) = (dp0 + (bi / p as usize) as u64, (bi % p as usize) as u64);
                        if dp == sp {
                            pairs.retain(|&(x, _)| x >> 16 != x & 0xffff);
                        }
                    }
                    for (i, (x, y)) in pairs.iter().enumerate() {
                        k[i] = *x;
                        w[i] = *y;
                    }
                    pairs.len()
                })
                .collect()
        } else {
            kslices
                .par_iter_mut()
                .enumerate()
                .map(|(bi, k)| {
                    k.sort_unstable();
                    if !simple {
                        return k.len();
                    }
                    let (dp, sp) = (dp0 + (bi / p as usize) as u64, (bi % p as usize) as u64);
                    let mut n = 0;
                    for i in 0..k.len() {
                        let x = k[i];
                        if (n > 0 && k[n - 1] == x) || (dp == sp && x >> 16 == x & 0xffff) {
                            continue;
                        }
                        k[n] = x;
                        n += 1;
                    }
                    n
                })
                .collect()
        };
        // Write the blocks in order: (dp, sp) ascending is stream order.
        let mut ebuf: Vec<u8> = Vec::with_capacity(1 << 20);
        let mut wbuf: Vec<u8> = Vec::new();
        for bi in 0..gblocks {
            let (dp, sp) = (dp0 + (bi / p as usize) as u64, (bi % p as usize) as u64);
            let b = (dp * p + sp) as usize;
            let len = lens[bi];
            ebuf.clear();
            wbuf.clear();
            for (i, &x) in kslices[bi][..len].iter().enumerate() {
                let (d, s) = ((x >> 16) as u64, (x & 0xffff) as u64);
                ebuf.extend_from_slice(&(s as u16).to_le_bytes());
                ebuf.extend_from_slice(&(d as u16).to_le_bytes());
                if weighted {
                    wbuf.extend_from_slice(&wslices[bi][i].to_le_bytes());
                }
                if sp == dp && s == d {
                    self_loops += 1;
                }
                if let Some((out_deg, in_deg)) = degrees.as_mut() {
                    let sg = (sp * psize + s) as usize;
                    let dg = (dp * psize + d) as usize;
                    out_deg[sg] = out_deg[sg]
                        .checked_add(1)
                        .ok_or_else(|| Error::TooLarge("a degree exceeds 2^32".into()))?;
                    in_deg[dg] = in_deg[dg]
                        .checked_add(1)
                        .ok_or_else(|| Error::TooLarge("a degree exceeds 2^32".into()))?;
                }
            }
            index.crcs[b] = crc32fast::hash(&ebuf);
            block_counts[b] = len as u64;
            ew.write(&ebuf)?;
            if let Some(ww) = ww.as_mut() {
                ww.write(&wbuf)?;
            }
            written += len as u64;
        }
    }
    // Blocks were written in column-major order because groups are column ranges and keys sort
    // by (dp, sp): offsets are the prefix sums of the counts.
    for b in 0..nblocks {
        index.offsets[b + 1] = index.offsets[b] + block_counts[b];
        if block_counts[b] == 0 {
            index.crcs[b] = crc32fast::hash(&[]);
        }
    }
    let mut files = vec![(format!("{grid}.edges"), ew.finish()?)];
    if let Some(ww) = ww {
        files.push((format!("{grid}.weights"), ww.finish()?));
    }
    let ipath = dir.join(format!("{grid}.index"));
    files.push((format!("{grid}.index"), store::write_file(&ipath, &index.to_bytes())?));
    Ok(GridWritten { files, edges: written, self_loops })
}
