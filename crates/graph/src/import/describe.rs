//! What the input is: its format, edge files, direction, weights and where the vertices come
//! from, read from the options, the Matrix Market header, an LDBC `.properties` file or the
//! first data line. Nothing here reads past the first line of an edge list.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::parse::trim_cr;
use super::read::open_text;
use super::{BinWeight, Format, ImportOptions};
use crate::Error;

/// How a text edge list marks comments (and, for Matrix Market, where its data starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextStyle {
    Snap,
    Mtx,
    Ldbc,
}

/// The encoding of one edge file.
#[derive(Debug, Clone)]
pub(super) enum FileKind {
    /// Text lines from byte `data_offset` on.
    Text { style: TextStyle, data_offset: u64 },
    /// Headerless records `src, dst[, weight]` with `id_bytes`-byte ids.
    Bin { id_bytes: usize, weight: BinWeight },
}

impl FileKind {
    /// Bytes per record of a binary file (0 for text).
    pub(super) fn record_bytes(&self) -> u64 {
        match *self {
            FileKind::Text { .. } => 0,
            FileKind::Bin { id_bytes, weight } => (2 * id_bytes + weight.bytes()) as u64,
        }
    }
}

/// One file of edges.
#[derive(Debug, Clone)]
pub(super) struct EdgeFile {
    pub(super) path: PathBuf,
    pub(super) kind: FileKind,
    /// Gzip-compressed (read sequentially, not through the block pipeline).
    pub(super) gz: bool,
}

/// Where the vertex set comes from (pass 1).
#[derive(Debug, Clone)]
pub(super) enum Vertices {
    /// Every id seen in an edge.
    FromEdges,
    /// An LDBC `.v` file, one id a line.
    List(PathBuf),
    /// Matrix Market: `1..=n`.
    Range(u64),
}

/// The input as the passes see it.
#[derive(Debug, Clone)]
pub(super) struct Source<'a> {
    pub(super) files: Vec<EdgeFile>,
    /// Edges in memory, read instead of files (then `files` is empty).
    pub(super) arrays: Option<super::EdgeArrays<'a>>,
    pub(super) directed: bool,
    pub(super) weighted: bool,
    pub(super) vertices: Vertices,
    /// Largest id allowed ([`ImportOptions::id_bytes`]).
    pub(super) id_max: u64,
    pub(super) id_bytes: u8,
    /// Matrix Market: `(rows, cols, nnz)`.
    pub(super) mtx: Option<(u64, u64, u64)>,
    pub(super) format_name: &'static str,
}

/// Where [`describe_in`] reads the input files from: the disk, or bytes in memory keyed by path
/// (the fuzz harness, which would otherwise write a file per input: `import::fuzz`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Files<'a> {
    Disk,
    Memory(&'a [(PathBuf, &'a [u8])]),
}

impl<'a> Files<'a> {
    fn in_memory(&self, path: &Path) -> Option<Option<&'a [u8]>> {
        match *self {
            Files::Disk => None,
            Files::Memory(files) => Some(files.iter().find(|(p, _)| p == path).map(|(_, b)| *b)),
        }
    }

    fn not_found(path: &Path) -> Error {
        Error::io(path, "cannot open", std::io::ErrorKind::NotFound.into())
    }

    /// `Ok` if `path` is a regular file, else why not.
    fn check(&self, path: &Path) -> Result<(), String> {
        match self.in_memory(path) {
            Some(Some(_)) => return Ok(()),
            Some(None) => return Err("no such file".to_string()),
            None => {}
        }
        Err(match std::fs::metadata(path) {
            Ok(m) if m.is_file() => return Ok(()),
            Ok(m) if m.is_dir() => "is a directory, not an input file".to_string(),
            Ok(_) => "is not a regular file".to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such file".to_string(),
            Err(e) => format!("cannot read: {e}"),
        })
    }

    /// Up to the first `limit` bytes of `path`.
    fn head(&self, path: &Path, limit: usize) -> Result<Vec<u8>, Error> {
        if let Some(bytes) = self.in_memory(path) {
            let bytes = bytes.ok_or_else(|| Files::not_found(path))?;
            return Ok(bytes[..bytes.len().min(limit)].to_vec());
        }
        let mut f = File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
        let mut head = vec![0u8; limit];
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
        Ok(head)
    }

    /// The whole of `path` as UTF-8 text.
    fn read_to_string(&self, path: &Path) -> Result<String, Error> {
        let Some(bytes) = self.in_memory(path) else {
            return std::fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read", e));
        };
        let bytes = bytes.ok_or_else(|| Files::not_found(path))?;
        String::from_utf8(bytes.to_vec()).map_err(|e| {
            Error::io(path, "cannot read", std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })
    }

    /// A reader of text edge file `f`, through a gzip decoder when it is compressed.
    fn text(&self, f: &EdgeFile) -> Result<Box<dyn Read + 'a>, Error> {
        let Some(bytes) = self.in_memory(&f.path) else { return open_text(f) };
        let bytes = bytes.ok_or_else(|| Files::not_found(&f.path))?;
        Ok(if f.gz { Box::new(flate2::read::MultiGzDecoder::new(bytes)) } else { Box::new(bytes) })
    }
}

/// Doubts about how `--format bin` inputs will be read, one sentence each (issue 16 item 8): a
/// binary edge list has no header, so the direction is assumed when not given, and a file
/// written with f32 weights can also be cut into 8-byte records. The second doubt is raised only
/// when the start of the file looks weighted: read as 12-byte records, every third word is a
/// normal f32 of moderate size while the ids below 2^23 would be subnormal floats.
pub fn layout_doubts(inputs: &[PathBuf], opts: &ImportOptions) -> Vec<String> {
    let mut doubts = Vec::new();
    if opts.format != Format::Bin {
        return doubts;
    }
    if opts.directed.is_none() {
        doubts.push(
            "a bin edge list does not say its direction: read as directed (say --undirected \
             otherwise, or --directed to silence this)"
                .to_string(),
        );
    }
    let id_bytes = opts.id_bytes.unwrap_or(4);
    if opts.bin_weight != BinWeight::None || id_bytes != 4 {
        return doubts;
    }
    for path in inputs {
        if looks_weighted(path).unwrap_or(false) {
            doubts.push(format!(
                "{}: the records look like (u32 src, u32 dst, f32 weight), 12 bytes, but are read \
                 as 8-byte (src, dst) pairs: if the file has weights, import with --weight f32",
                path.display()
            ));
        }
    }
    doubts
}

/// Returns true if and only if the file's size is a whole number of 12-byte records and its
/// first (up to 512) such records have a normal f32 below 2^24 in magnitude as the third word
/// while the two id words are below 2^23.
fn looks_weighted(path: &Path) -> std::io::Result<bool> {
    let len = std::fs::metadata(path)?.len();
    if len == 0 || len % 12 != 0 {
        return Ok(false);
    }
    let mut head = vec![0u8; (len.min(512 * 12)) as usize];
    File::open(path)?.read_exact(&mut head)?;
    let word = |r: &[u8], i: usize| {
        u32::from_le_bytes([r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]])
    };
    Ok(head.chunks_exact(12).all(|r| {
        let w = f32::from_bits(word(r, 2));
        word(r, 0) < 1 << 23 && word(r, 1) < 1 << 23 && w.is_normal() && w.abs() < (1 << 24) as f32
    }))
}

/// Describes `inputs` read as `opts` say.
pub(super) fn describe(inputs: &[PathBuf], opts: &ImportOptions) -> Result<Source<'static>, Error> {
    describe_in(Files::Disk, inputs, opts)
}

/// [`describe`] with the files read from `files`.
pub(super) fn describe_in(
    files: Files<'_>,
    inputs: &[PathBuf],
    opts: &ImportOptions,
) -> Result<Source<'static>, Error> {
    let id_bytes = opts.id_bytes.unwrap_or(if opts.format == Format::Bin { 4 } else { 8 });
    if id_bytes != 4 && id_bytes != 8 {
        return Err(Error::BadIdBytes { bytes: id_bytes });
    }
    let id_max = if id_bytes == 4 { u32::MAX as u64 } else { u64::MAX };
    for i in inputs {
        // Name the real problem (issue 17: `import /tmp` said "no such file").
        files.check(i).map_err(|msg| Error::Input { path: i.clone(), msg })?;
    }
    let fs = files;
    match opts.format {
        Format::Snap => {
            let directed = opts.directed.ok_or_else(|| Error::NoDirection {
                path: inputs[0].clone(),
                input: "a SNAP edge list",
            })?;
            let files: Vec<EdgeFile> = inputs
                .iter()
                .map(|p| EdgeFile {
                    path: p.clone(),
                    kind: FileKind::Text { style: TextStyle::Snap, data_offset: 0 },
                    gz: p.extension().is_some_and(|e| e == "gz"),
                })
                .collect();
            let weighted = first_data_fields(fs, &files[0])? == Some(3);
            Ok(Source {
                files,
                arrays: None,
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
                arrays: None,
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
                return Err(Error::InputCount {
                    format: "Matrix Market",
                    expected: "one file",
                    given: inputs.len(),
                });
            }
            describe_mtx(fs, &inputs[0], opts, id_max, id_bytes)
        }
        Format::Ldbc => describe_ldbc(fs, inputs, opts, id_max, id_bytes),
    }
}

/// Number of fields on the first data line of a text file, skipping `#` comments (None: no
/// data line).
fn first_data_fields(files: Files<'_>, f: &EdgeFile) -> Result<Option<usize>, Error> {
    let mut reader = files.text(f)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut carry = Vec::new();
    loop {
        let k = reader.read(&mut buf).map_err(|e| Error::io(&f.path, "read failed", e))?;
        carry.extend_from_slice(&buf[..k]);
        for line in carry.split(|&b| b == b'\n') {
            let line = trim_cr(line);
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            return Ok(Some(
                line.split(|b| b.is_ascii_whitespace() || *b == b',')
                    .filter(|t| !t.is_empty())
                    .count(),
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

/// Reads the header and size line of a Matrix Market file.
fn describe_mtx(
    files: Files<'_>,
    path: &Path,
    opts: &ImportOptions,
    id_max: u64,
    id_bytes: u8,
) -> Result<Source<'static>, Error> {
    let text = files.head(path, 1 << 20)?;
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
        "general" => opts.directed.ok_or_else(|| Error::NoDirection {
            path: path.to_path_buf(),
            input: "a general Matrix Market matrix",
        })?,
        "symmetric" => false,
        other => {
            return Err(bad(
                1,
                &format!("symmetry {other:?} is not supported (general, symmetric)"),
            ));
        }
    };
    let n = size.0.max(size.1);
    if n > id_max {
        return Err(bad(line_no, &format!("{n} rows do not fit {id_bytes}-byte ids")));
    }
    // Every vertex of `1..=n` is stored: a size no store can hold is refused here, before
    // anything is allocated for it (issue 17, defect 11).
    if let Err(e) = crate::store::layout_for(n) {
        return Err(bad(line_no, &format!("a {}x{} matrix is too large: {e}", size.0, size.1)));
    }
    Ok(Source {
        arrays: None,
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
        LdbcProperties::read_in(Files::Disk, path)
    }

    fn read_in(files: Files<'_>, path: &Path) -> Result<LdbcProperties, Error> {
        let text = files.read_to_string(path)?;
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

/// Reads an LDBC `.properties` file, or takes a `.v` and an `.e` file.
fn describe_ldbc(
    files: Files<'_>,
    inputs: &[PathBuf],
    opts: &ImportOptions,
    id_max: u64,
    id_bytes: u8,
) -> Result<Source<'static>, Error> {
    let (vfile, efile, directed, weighted) = if inputs.len() == 1 {
        let props = LdbcProperties::read_in(files, &inputs[0])?;
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
            if files.check(f).is_err() {
                return Err(Error::Input {
                    path: f.clone(),
                    msg: format!("named in {} but not found", props.path.display()),
                });
            }
        }
        (v, e, directed, weighted)
    } else if inputs.len() == 2 {
        let directed = opts
            .directed
            .ok_or_else(|| Error::NoDirection { path: inputs[1].clone(), input: "a .v/.e pair" })?;
        let e = EdgeFile {
            path: inputs[1].clone(),
            kind: FileKind::Text { style: TextStyle::Ldbc, data_offset: 0 },
            gz: false,
        };
        let weighted = first_data_fields(files, &e)? == Some(3);
        (inputs[0].clone(), inputs[1].clone(), directed, weighted)
    } else {
        return Err(Error::InputCount {
            format: "LDBC",
            expected: "a .properties file or a .v and an .e file",
            given: inputs.len(),
        });
    };
    Ok(Source {
        arrays: None,
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
