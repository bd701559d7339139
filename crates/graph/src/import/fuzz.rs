//! Entry points for the fuzz harness (`fuzz/`, issue 17): the parsers of [`import`](super) run
//! on the files of one input, each returning its error, never panicking. Not a stable API: it
//! lets the harness reach the code an import runs (headers, properties, `.v` lists, text and
//! binary edges, the grid index) without a store, a pipeline pass or threads.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use sluice_io::{Budget, Pipeline};

use super::describe::{self, FileKind, Files, Source, TextStyle, Vertices};
use super::parse::{TextRules, parse_bin, parse_text};
use super::{ImportOptions, vertices};
use crate::Error;
use crate::store::{GridIndex, Meta};

/// Describes `inputs` as [`import`](super::import) does, reads a `.v` vertex list if the input
/// names one (`pipeline` is not used for it), and parses every edge file whole with the rules
/// the import's passes use. Returns the number of edges, or the first error.
pub fn parse_input(
    inputs: &[PathBuf],
    opts: &ImportOptions,
    pipeline: &Pipeline,
) -> Result<u64, Error> {
    let source = describe::describe(inputs, opts)?;
    if let Vertices::List(_) = source.vertices {
        // A fixed budget: a vertex file declaring more ids than fit is an error, not an
        // allocation (issue 17, defects 10-11), and spills go to the system's temp folder.
        let budget = Budget::new(VERTEX_BUDGET)?;
        vertices::collect_vertices(&source, pipeline, None, &budget, &std::env::temp_dir())?;
    }
    parse_edges(&source, |path| {
        std::fs::read(path).map(Cow::Owned).map_err(|e| Error::io(path, "cannot read", e))
    })
}

/// [`parse_input`] with the files in memory: `files` holds the bytes of every path the input
/// names (`inputs`, and an LDBC `.properties` file's `.v` and `.e`); a path not there is a
/// file not found. Nothing is written or read on disk, so a fuzz execution stays cheap.
pub fn parse_bytes(
    files: &[(PathBuf, &[u8])],
    inputs: &[PathBuf],
    opts: &ImportOptions,
) -> Result<u64, Error> {
    let lookup = |path: &Path| {
        let found = files.iter().find(|(p, _)| p == path).map(|(_, bytes)| *bytes);
        found.ok_or_else(|| Error::io(path, "cannot read", std::io::ErrorKind::NotFound.into()))
    };
    let source = describe::describe_in(Files::Memory(files), inputs, opts)?;
    if let Vertices::List(path) = &source.vertices {
        let text = lookup(path)?;
        let budget = Budget::new(VERTEX_BUDGET)?;
        let _text_res = budget.reserve("the vertex file", text.len() as u64)?;
        vertices::vertex_list(&source, path, text, &budget)?;
    }
    parse_edges(&source, |path| lookup(path).map(Cow::Borrowed))
}

/// The budget of a vertex list's ids.
const VERTEX_BUDGET: u64 = 256 << 20;

/// Parses every edge file of `source` (its bytes from `read`) whole, with the rules of
/// `read::for_each_chunk`; gzip files are skipped.
fn parse_edges<'a>(
    source: &Source<'_>,
    read: impl Fn(&Path) -> Result<Cow<'a, [u8]>, Error>,
) -> Result<u64, Error> {
    let mut edges = 0;
    for f in source.files.iter().filter(|f| !f.gz) {
        let data = read(&f.path)?;
        let parsed = match f.kind {
            FileKind::Text { style, data_offset } => {
                // The rules of `read::for_each_chunk`.
                let rules = TextRules {
                    comment: match style {
                        TextStyle::Snap => Some(b'#'),
                        TextStyle::Mtx => Some(b'%'),
                        TextStyle::Ldbc => None,
                    },
                    weighted: source.weighted,
                    id_max: source.id_max,
                    id_bytes: source.id_bytes,
                    mtx: source.mtx.map(|(r, c, _)| (r, c)),
                };
                let from = usize::try_from(data_offset).map_or(data.len(), |o| o.min(data.len()));
                parse_text(&data[from..], data_offset, &rules)
            }
            FileKind::Bin { id_bytes, weight } => parse_bin(&data, 0, id_bytes, weight),
        };
        match parsed {
            Ok(raw) => edges += raw.src.len() as u64,
            Err(fail) => {
                let msg = format!("byte {}: {}", fail.offset, fail.msg);
                return Err(Error::Input { path: f.path.clone(), msg });
            }
        }
    }
    Ok(edges)
}

/// Reads `bytes` as the grid index of a store with `p` partitions and `edges` edges (with the
/// weights' block CRCs when `weighted`).
pub fn grid_index(bytes: &[u8], p: u64, edges: u64, weighted: bool) -> Result<GridIndex, Error> {
    GridIndex::from_bytes(Path::new("index"), bytes, p, edges, weighted)
}

/// Checks `bytes` as a store's `meta.json`, as [`read_meta`](crate::store::read_meta) does once
/// it has read the file.
pub fn store_meta(bytes: &[u8]) -> Result<Meta, Error> {
    crate::store::parse_meta(Path::new("meta.json"), bytes.to_vec())
}
