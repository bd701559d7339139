//! LDBC Graphalytics output validation (`specs/graphalytics.md` §3), and the reading of
//! per-vertex `id value` files it needs (also used for SpMV's input vector).
//!
//! * **Coverage**: both files must hold the same vertex ids, each exactly once.
//! * **Exact** (BFS, CDLP): equal as integers.
//! * **Equivalence** (WCC): the labels define the same partition (a bijection of labels).
//! * **Epsilon** (PR, LCC, SSSP, SpMV): with `r` the reference and `s` the output value, `r = s =
//!   ±∞`, or both finite and `|r − s| ≤ 1e-4 · |r|` (so a reference 0 needs an exact 0).
//!
//! Files are text lines `id value` (any whitespace or a comma between; blank lines skipped), a
//! folder of such files (LDBC lets an output span several), or the `.npy` that
//! [`crate::output::write`] writes. Floats parse with Rust's parser plus `inf`, `infinity`, `Infinity`,
//! `+Infinity` (any case, either sign).
//!
//! Memory: [`validate_within`] and [`read_values_within`] reserve from a budget before they
//! allocate: a file's bytes before it is read, its entries (counted by line ends) before they
//! are parsed, the id maps before they are built; the reservations are held to the end.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sluice_io::{Budget, Reservation};

use crate::Error;

/// LDBC's relative tolerance.
pub const EPSILON: f64 = 1e-4;

/// A match rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Equal integers.
    Exact,
    /// The same partition.
    Equivalence,
    /// Relative error at most [`EPSILON`], infinities equal.
    Epsilon,
}

impl Rule {
    /// The rule's name as reports print it: `exact`, `equivalence`, `epsilon 1e-4`.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Exact => "exact",
            Rule::Equivalence => "equivalence",
            Rule::Epsilon => "epsilon 1e-4",
        }
    }
}

/// The algorithms whose outputs can be validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Breadth-first search.
    Bfs,
    /// PageRank.
    Pr,
    /// Weakly connected components.
    Wcc,
    /// Community detection by label propagation.
    Cdlp,
    /// Local clustering coefficient.
    Lcc,
    /// Single-source shortest paths.
    Sssp,
    /// Sparse matrix-vector product.
    Spmv,
}

impl Algorithm {
    /// Every algorithm, LDBC's six first.
    pub const ALL: [Algorithm; 7] = [
        Algorithm::Bfs,
        Algorithm::Pr,
        Algorithm::Wcc,
        Algorithm::Cdlp,
        Algorithm::Lcc,
        Algorithm::Sssp,
        Algorithm::Spmv,
    ];

    /// The rule LDBC applies (`Algorithm.java`; SpMV: epsilon).
    pub fn rule(self) -> Rule {
        match self {
            Algorithm::Bfs | Algorithm::Cdlp => Rule::Exact,
            Algorithm::Wcc => Rule::Equivalence,
            Algorithm::Pr | Algorithm::Lcc | Algorithm::Sssp | Algorithm::Spmv => Rule::Epsilon,
        }
    }
    /// The lower-case name (`bfs`, `pr`, ...), as in `.properties` files.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Bfs => "bfs",
            Algorithm::Pr => "pr",
            Algorithm::Wcc => "wcc",
            Algorithm::Cdlp => "cdlp",
            Algorithm::Lcc => "lcc",
            Algorithm::Sssp => "sssp",
            Algorithm::Spmv => "spmv",
        }
    }
    /// The algorithm called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// One line of a value file.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The vertex id.
    pub id: u64,
    /// The value as written.
    pub value: String,
    /// Where it was read: file and 1-based line (record index for `.npy`).
    pub file: usize,
    /// 1-based line.
    pub line: u64,
}

/// The entries of a value file (or folder of files), with the files they came from.
#[derive(Debug, Clone)]
pub struct Values {
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    /// Every entry, in file order.
    pub entries: Vec<Entry>,
}

impl Values {
    fn parse_error(&self, e: &Entry, msg: impl Into<String>) -> Error {
        Error::Parse { path: self.files[e.file].clone(), line: e.line, msg: msg.into() }
    }
}

/// Parses a float as LDBC files write it (see the module docs).
pub fn parse_f64(text: &str) -> Option<f64> {
    let t = text.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'+') => (false, &t[1..]),
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Some(if neg { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    if body.eq_ignore_ascii_case("nan") {
        return None;
    }
    t.parse().ok()
}

/// Reads `path`: a text file, a folder of text files, or a `.npy` of `(id, value)` records.
pub fn read_values(path: &Path) -> Result<Values, Error> {
    read_values_within(path, &Budget::unlimited(), &mut Vec::new())
}

/// Heap bytes of one parsed entry beyond the file's own bytes: the struct and the smallest
/// allocation of its value string.
const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64 + 32;

/// [`read_values`] within `budget`: each reservation it makes is pushed to `held` (see the
/// module docs).
pub fn read_values_within(
    path: &Path,
    budget: &Budget,
    held: &mut Vec<Reservation>,
) -> Result<Values, Error> {
    let mut files = Vec::new();
    if path.is_dir() {
        let rd = std::fs::read_dir(path).map_err(|e| Error::io(path, "cannot list", e))?;
        for e in rd {
            let p = e.map_err(|e| Error::io(path, "cannot list", e))?.path();
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if p.is_file() && !name.starts_with('.') && !name.starts_with('_') {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut entries = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        let len = std::fs::metadata(f).map_err(|e| Error::io(f, "cannot read", e))?.len();
        held.push(budget.reserve(&format!("{}: its bytes", f.display()), len)?);
        let bytes = std::fs::read(f).map_err(|e| Error::io(f, "cannot read", e))?;
        // At most one entry per 16-byte record, or per line end (plus a last unterminated
        // line) of at least 4 bytes; a value's characters are counted with the file.
        let most = if bytes.starts_with(b"\x93NUMPY") {
            len / 16
        } else {
            (bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1).min(len / 4 + 1)
        };
        held.push(
            budget.reserve(&format!("{}: its parsed values", f.display()), most * ENTRY_BYTES)?,
        );
        if bytes.starts_with(b"\x93NUMPY") {
            read_npy(f, fi, &bytes, &mut entries)?;
            continue;
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::Input { path: f.clone(), msg: "not UTF-8 text".into() })?;
        for (i, line) in text.lines().enumerate() {
            let line_no = i as u64 + 1;
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let mut it = l.split(|c: char| c.is_whitespace() || c == ',').filter(|t| !t.is_empty());
            let (Some(id), Some(value), None) = (it.next(), it.next(), it.next()) else {
                return Err(Error::Parse {
                    path: f.clone(),
                    line: line_no,
                    msg: format!("expected `id value`, found {l:?}"),
                });
            };
            let id = id.parse::<u64>().map_err(|_| Error::Parse {
                path: f.clone(),
                line: line_no,
                msg: format!("vertex id {id:?} is not an unsigned integer"),
            })?;
            entries.push(Entry { id, value: value.to_string(), file: fi, line: line_no });
        }
    }
    Ok(Values { files, entries })
}

/// The `.npy` of [`crate::output::write`]: records of `id <u8` and `value <f8 | <i8`.
fn read_npy(path: &Path, fi: usize, bytes: &[u8], out: &mut Vec<Entry>) -> Result<(), Error> {
    let bad = |msg: &str| Error::Input {
        path: path.to_path_buf(),
        msg: format!("unsupported .npy: {msg}"),
    };
    let (hlen, start) = match bytes.get(6) {
        Some(1) if bytes.len() >= 10 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        Some(2 | 3) if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        _ => return Err(bad("header")),
    };
    let header =
        bytes.get(start..start + hlen).map(String::from_utf8_lossy).ok_or_else(|| bad("header"))?;
    let h: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    let float = if h.contains("('id','<u8'),('value','<f8')") {
        true
    } else if h.contains("('id','<u8'),('value','<i8')") {
        false
    } else {
        return Err(bad("expected records [('id', '<u8'), ('value', '<f8' or '<i8')]"));
    };
    if h.contains("'fortran_order':True") {
        return Err(bad("fortran order"));
    }
    let data = &bytes[start + hlen..];
    if !data.len().is_multiple_of(16) {
        return Err(bad("truncated data"));
    }
    for (i, r) in data.chunks_exact(16).enumerate() {
        let id = u64::from_le_bytes(r[..8].try_into().unwrap_or([0; 8]));
        let raw: [u8; 8] = r[8..].try_into().unwrap_or([0; 8]);
        let value = if float {
            format!("{:?}", f64::from_le_bytes(raw))
        } else {
            i64::from_le_bytes(raw).to_string()
        };
        out.push(Entry { id, value, file: fi, line: i as u64 + 1 });
    }
    Ok(())
}

/// The outcome of [`validate`].
#[derive(Debug, Clone)]
pub struct Report {
    /// The rule applied.
    pub rule: Rule,
    /// Vertices in the reference.
    pub expected_vertices: usize,
    /// Vertices in the output.
    pub actual_vertices: usize,
    /// Vertices that fail (missing, extra, repeated, or a wrong value).
    pub mismatches: usize,
    /// The first mismatches, described.
    pub first: Vec<String>,
}

impl Report {
    /// Whether the output passes.
    pub fn ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// How many mismatches a [`Report`] describes.
pub const SHOWN: usize = 10;

/// Validates the output at `actual` against the reference at `reference` for `alg`.
/// Unreadable or malformed files are errors; a wrong output is a [`Report`] that is not ok.
pub fn validate(actual: &Path, reference: &Path, alg: Algorithm) -> Result<Report, Error> {
    validate_within(actual, reference, alg, &Budget::unlimited())
}

/// [`validate`] within `budget` (see the module docs).
pub fn validate_within(
    actual: &Path,
    reference: &Path,
    alg: Algorithm,
    budget: &Budget,
) -> Result<Report, Error> {
    let mut held = Vec::new();
    let act = read_values_within(actual, budget, &mut held)?;
    let exp = read_values_within(reference, budget, &mut held)?;
    let rule = alg.rule();
    // The two id maps (key, index and a control byte per slot, at most 8/7 full), and for the
    // equivalence rule the two label maps (i128 pairs).
    let ids = (act.entries.len() + exp.entries.len()) as u64;
    let labels = if rule == Rule::Equivalence { act.entries.len() as u64 * 2 * 33 } else { 0 };
    held.push(budget.reserve("the vertex id maps", ids * 17 * 8 / 7 + labels * 8 / 7)?);
    let mut rep =
        Report { rule, expected_vertices: 0, actual_vertices: 0, mismatches: 0, first: Vec::new() };
    let fail = |rep: &mut Report, msg: String| {
        rep.mismatches += 1;
        if rep.first.len() < SHOWN {
            rep.first.push(msg);
        }
    };
    // The reference: each id once.
    let mut expected: HashMap<u64, usize> = HashMap::with_capacity(exp.entries.len());
    for (i, e) in exp.entries.iter().enumerate() {
        if expected.insert(e.id, i).is_some() {
            return Err(
                exp.parse_error(e, format!("vertex {} appears twice in the reference", e.id))
            );
        }
    }
    rep.expected_vertices = expected.len();
    let mut seen: HashMap<u64, usize> = HashMap::with_capacity(act.entries.len());
    let mut labels_fwd: HashMap<i128, i128> = HashMap::new();
    let mut labels_back: HashMap<i128, i128> = HashMap::new();
    for (i, a) in act.entries.iter().enumerate() {
        if seen.insert(a.id, i).is_some() {
            fail(&mut rep, format!("vertex {}: appears more than once in the output", a.id));
            continue;
        }
        let Some(&ei) = expected.get(&a.id) else {
            fail(&mut rep, format!("vertex {}: in the output, not in the reference", a.id));
            continue;
        };
        let e = &exp.entries[ei];
        match rule {
            Rule::Exact | Rule::Equivalence => {
                let int = |v: &Values, x: &Entry| {
                    x.value.parse::<i128>().map_err(|_| {
                        v.parse_error(x, format!("value {:?} is not an integer", x.value))
                    })
                };
                let (av, ev) = (int(&act, a)?, int(&exp, e)?);
                if rule == Rule::Exact {
                    if av != ev {
                        fail(&mut rep, format!("vertex {}: {av}, expected {ev}", a.id));
                    }
                } else {
                    let f = *labels_fwd.entry(av).or_insert(ev);
                    let b = *labels_back.entry(ev).or_insert(av);
                    if f != ev || b != av {
                        fail(
                            &mut rep,
                            format!(
                                "vertex {}: label {av} (expected label {ev}) — output label {av} also stands for expected {f}, expected {ev} also for output {b}",
                                a.id
                            ),
                        );
                    }
                }
            }
            Rule::Epsilon => {
                let float = |v: &Values, x: &Entry| {
                    parse_f64(&x.value).ok_or_else(|| {
                        v.parse_error(x, format!("value {:?} is not a number", x.value))
                    })
                };
                let (s, r) = (float(&act, a)?, float(&exp, e)?);
                let ok = if r.is_infinite() || s.is_infinite() {
                    r == s
                } else {
                    (r - s).abs() <= EPSILON * r.abs()
                };
                if !ok {
                    fail(&mut rep, format!("vertex {}: {s:e}, expected {r:e}", a.id));
                }
            }
        }
    }
    rep.actual_vertices = seen.len();
    let mut missing: Vec<u64> =
        expected.keys().filter(|id| !seen.contains_key(id)).copied().collect();
    missing.sort_unstable();
    for id in missing {
        fail(&mut rep, format!("vertex {id}: in the reference, not in the output"));
    }
    Ok(rep)
}
