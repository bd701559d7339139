//! Per-vertex result files: the one writer of LDBC text (`id value` lines,
//! `specs/graphalytics.md` §1) and `.npy` (a structured array of `id` and `value`), and the
//! reader of an input vector in the same formats (SpMV's `x`).
//!
//! # Contract
//! 1. Text: one `id value` line per vertex in dense-id order. Doubles print as Rust's `{:e}`
//!    (`1.5e-3`), +∞ as `infinity` (§2.6, as LDBC's SSSP reference files write it); integers in
//!    decimal, BFS's unreached as `9223372036854775807` (§2.1); labels as original ids.
//! 2. `.npy` (the name ends in `.npy`): records `('id', '<u8'), ('value', '<f8' or '<i8')`.
//! 3. The file appears whole or not at all (temp file + rename).

use std::io::Write;
use std::path::Path;

use crate::{Error, Graph, VertexArray, VertexSet, validate};

/// One value per vertex.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    /// Doubles (PageRank, LCC, SSSP, SpMV).
    F64(&'a [f64]),
    /// Integers, with `u32::MAX` written as `unreached` (BFS: 2^63 − 1).
    U32 {
        /// The values.
        values: &'a [u32],
        /// What `u32::MAX` stands for.
        unreached: i64,
    },
    /// Integers written as the original id of the dense id they hold (WCC labels).
    Label(&'a [u32]),
}

impl Values<'_> {
    fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::U32 { values, .. } => values.len(),
            Values::Label(v) => v.len(),
        }
    }
}

/// Writes `values` for vertices with original ids `ids` to `out`: `.npy` if the name ends in
/// `.npy`, else LDBC text. Written atomically (temp file + rename).
pub fn write(out: &Path, ids: &[u64], values: Values<'_>) -> Result<(), Error> {
    assert_eq!(ids.len(), values.len());
    let mut f =
        sluice_io::OutputFile::create(out).map_err(|e| Error::io(out, "cannot create", e))?;
    let werr = |e| Error::io(out, "write failed", e);
    if out.extension().is_some_and(|e| e == "npy") {
        let vtype = if matches!(values, Values::F64(_)) { "<f8" } else { "<i8" };
        let descr = format!("[('id', '<u8'), ('value', '{vtype}')]");
        f.write_all(&sluice_io::npy_header(&descr, &[ids.len() as u64], false)).map_err(werr)?;
        for (i, &id) in ids.iter().enumerate() {
            f.write_all(&id.to_le_bytes()).map_err(werr)?;
            let v: [u8; 8] = match values {
                Values::F64(v) => v[i].to_le_bytes(),
                Values::U32 { values, unreached } => {
                    let x = values[i];
                    (if x == u32::MAX { unreached } else { x as i64 }).to_le_bytes()
                }
                Values::Label(l) => (ids[l[i] as usize] as i64).to_le_bytes(),
            };
            f.write_all(&v).map_err(werr)?;
        }
    } else {
        for (i, &id) in ids.iter().enumerate() {
            match values {
                Values::F64(v) if v[i] == f64::INFINITY => writeln!(f, "{id} infinity"),
                Values::F64(v) => writeln!(f, "{id} {:e}", v[i]),
                Values::U32 { values, unreached } => {
                    let x = values[i];
                    if x == u32::MAX {
                        writeln!(f, "{id} {unreached}")
                    } else {
                        writeln!(f, "{id} {x}")
                    }
                }
                Values::Label(l) => writeln!(f, "{id} {}", ids[l[i] as usize]),
            }
            .map_err(werr)?;
        }
    }
    f.commit().map_err(|e| Error::io(out, "cannot finish", e))
}

/// Reads `x` (indexed by dense id) from `path`: `id value` lines with original ids, or a `.npy`
/// of `(id, value)` records (see [`validate::read_values`]). A vertex not listed has `x = 0`; an
/// id that is not a vertex, a repeated id, or a value that is not a finite number is an error
/// naming the file and line. The vector and the parsed file are held against the graph's
/// budget (the file's only while it is read).
pub fn read_vector(g: &Graph, path: &Path) -> Result<VertexArray<f64>, Error> {
    let mut x = VertexArray::new(g, "the input vector", 0.0)?;
    let mut held = Vec::new();
    let vals = validate::read_values_within(path, g.budget(), &mut held)?;
    let mut seen = VertexSet::none(g);
    for e in &vals.entries {
        let at = |msg: String| Error::Parse { path: vals.files[e.file].clone(), line: e.line, msg };
        let v = g.dense_id(e.id).map_err(|_| at(format!("vertex {} is not in the graph", e.id)))?;
        let value = validate::parse_f64(&e.value)
            .filter(|f| f.is_finite())
            .ok_or_else(|| at(format!("value {:?} is not a finite number", e.value)))?;
        if !seen.insert(v) {
            return Err(at(format!("vertex {} is listed twice", e.id)));
        }
        x[v as usize] = value;
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_writes_infinity_unreached_and_labels_as_ldbc_does() {
        let dir = tempfile::tempdir().unwrap();
        let ids = [10u64, 20, 30];
        let out = dir.path().join("f");
        write(&out, &ids, Values::F64(&[0.5, f64::INFINITY, 0.0])).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "10 5e-1\n20 infinity\n30 0e0\n");
        let depth = [0, u32::MAX, 1];
        write(&out, &ids, Values::U32 { values: &depth, unreached: i64::MAX }).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text, "10 0\n20 9223372036854775807\n30 1\n");
        write(&out, &ids, Values::Label(&[0, 0, 2])).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "10 10\n20 10\n30 30\n");
    }

    #[test]
    fn npy_records_read_back_through_the_validator() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("f.npy");
        write(&out, &[7, 9], Values::F64(&[1.5, f64::INFINITY])).unwrap();
        let back = validate::read_values(&out).unwrap();
        let got: Vec<(u64, f64)> =
            back.entries.iter().map(|e| (e.id, validate::parse_f64(&e.value).unwrap())).collect();
        assert_eq!(got, vec![(7, 1.5), (9, f64::INFINITY)]);
    }
}
