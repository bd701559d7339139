//! Writing per-vertex results: LDBC text (`id value` lines, `specs/graphalytics.md` §1), `.npy`
//! (a structured array of `id` and `value`), or the top K.

use std::io::Write;
use std::path::Path;

use crate::Error;

/// One value per vertex.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    /// Doubles (PageRank).
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

/// Dense ids of the `k` largest values (ties: smaller id first).
pub fn top_k_f64(values: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    let k = k.min(values.len());
    if k == 0 {
        return Vec::new();
    }
    let cmp = |a: &usize, b: &usize| values[*b].total_cmp(&values[*a]).then(a.cmp(b));
    idx.select_nth_unstable_by(k - 1, cmp);
    idx.truncate(k);
    idx.sort_by(cmp);
    idx
}
