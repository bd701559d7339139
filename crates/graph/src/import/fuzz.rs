//! Entry points for the fuzz harness (`fuzz/`, issue 17): the parsers of [`import`](super) run
//! on the files of one input, each returning its error, never panicking. Not a stable API: it
//! lets the harness reach the code an import runs (headers, properties, `.v` lists, text and
//! binary edges, the grid index) without a store, a pipeline pass or threads.

use std::path::{Path, PathBuf};

use sluice_io::{Budget, Pipeline};

use super::describe::{self, FileKind, TextStyle, Vertices};
use super::parse::{TextRules, parse_bin, parse_text};
use super::{ImportOptions, vertices};
use crate::Error;
use crate::store::GridIndex;

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
        let budget = Budget::new(256 << 20)?;
        vertices::collect_vertices(&source, pipeline, None, &budget, &std::env::temp_dir())?;
    }
    let mut edges = 0;
    for f in source.files.iter().filter(|f| !f.gz) {
        let data = std::fs::read(&f.path).map_err(|e| Error::io(&f.path, "cannot read", e))?;
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
