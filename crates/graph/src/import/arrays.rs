//! In-memory edges: borrowed `src`, `dst` (and weight) slices as the import's source instead of
//! edge files (a front end's arrays, e.g. NumPy's), read in place.
//!
//! # Contract
//! 1. The slices are borrowed for the import; nothing copies them whole: passes 1 and 2 read
//!    them in chunks of [`CHUNK`] edges, each converted to `u64` ids / `f64` weights as a parsed
//!    piece of a file would be, a batch of chunks at a time in parallel, results in order.
//! 2. Ids are `u32`, `u64`, `i32` or `i64`; a negative id is an error naming the argument and the
//!    index. A weight (`f32` or `f64`) that is NaN, infinite or negative is an error naming the
//!    index (rule 2 of the import). Lengths that differ are an error naming both arguments.
//! 3. The import from arrays equals the import of the same edges as a `bin` file of `u64` ids
//!    and `f64` weights, byte for byte (`meta.json` says `bin`): same passes, same order.
//! 4. A cancel request ([`sluice_io::Pipeline::cancel_requested`]) is seen between batches.

use std::path::PathBuf;

use rayon::prelude::*;
use sluice_io::Pipeline;

use super::describe::{Source, Vertices};
use super::parse::RawEdges;
use super::read::PerChunk;
use super::{ImportOptions, Progress};
use crate::Error;

/// Edges per chunk.
const CHUNK: usize = 1 << 16;

/// A column of vertex ids, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum Ids<'a> {
    /// Unsigned 32-bit ids.
    U32(&'a [u32]),
    /// Unsigned 64-bit ids.
    U64(&'a [u64]),
    /// Signed 32-bit ids (none negative).
    I32(&'a [i32]),
    /// Signed 64-bit ids (none negative).
    I64(&'a [i64]),
}

impl Ids<'_> {
    /// Number of ids.
    pub fn len(&self) -> usize {
        match self {
            Ids::U32(x) => x.len(),
            Ids::U64(x) => x.len(),
            Ids::I32(x) => x.len(),
            Ids::I64(x) => x.len(),
        }
    }

    /// Returns true if and only if there is no id.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends ids `start..end` as `u64`; a negative one fails with its index.
    fn extend(&self, start: usize, end: usize, out: &mut Vec<u64>) -> Result<(), (usize, String)> {
        fn signed<T: Copy + Into<i64>>(
            x: &[T],
            start: usize,
            out: &mut Vec<u64>,
        ) -> Result<(), (usize, String)> {
            for (i, &v) in x.iter().enumerate() {
                let v: i64 = v.into();
                if v < 0 {
                    return Err((start + i, format!("vertex id {v} is negative")));
                }
                out.push(v as u64);
            }
            Ok(())
        }
        match self {
            Ids::U32(x) => out.extend(x[start..end].iter().map(|&v| v as u64)),
            Ids::U64(x) => out.extend_from_slice(&x[start..end]),
            Ids::I32(x) => signed(&x[start..end], start, out)?,
            Ids::I64(x) => signed(&x[start..end], start, out)?,
        }
        Ok(())
    }
}

/// A column of edge weights, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum Weights<'a> {
    /// 32-bit floats (widened to `f64`, as a `bin` file's `f32` column is).
    F32(&'a [f32]),
    /// 64-bit floats.
    F64(&'a [f64]),
}

impl Weights<'_> {
    /// Number of weights.
    pub fn len(&self) -> usize {
        match self {
            Weights::F32(x) => x.len(),
            Weights::F64(x) => x.len(),
        }
    }

    /// Returns true if and only if there is no weight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Weights::F32(x) => x[i] as f64,
            Weights::F64(x) => x[i],
        }
    }
}

/// Edges held in memory: `src[i] -> dst[i]` with `weights[i]`, borrowed for one import.
#[derive(Debug, Clone, Copy)]
pub struct EdgeArrays<'a> {
    src: Ids<'a>,
    dst: Ids<'a>,
    weights: Option<Weights<'a>>,
}

impl<'a> EdgeArrays<'a> {
    /// The edges of equally long columns; differing lengths are an error naming the arguments.
    pub fn new(
        src: Ids<'a>,
        dst: Ids<'a>,
        weights: Option<Weights<'a>>,
    ) -> Result<EdgeArrays<'a>, Error> {
        let n = src.len();
        let mismatch = |what: &str, len: usize| Error::Input {
            path: PathBuf::from(what),
            msg: format!("length {len} differs from the length of src, {n}"),
        };
        if dst.len() != n {
            return Err(mismatch("dst", dst.len()));
        }
        if let Some(w) = &weights
            && w.len() != n
        {
            return Err(mismatch("weight", w.len()));
        }
        Ok(EdgeArrays { src, dst, weights })
    }

    /// Number of edges.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Returns true if and only if there is no edge.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the edges take as `bin` records of `u64` ids (and `f64` weights).
    pub(super) fn record_bytes(&self) -> u64 {
        self.len() as u64 * if self.weights.is_some() { 24 } else { 16 }
    }

    /// Edges `start..end`, or the argument, index and message of the first bad value.
    fn raw(&self, start: usize, end: usize) -> Result<RawEdges, (&'static str, usize, String)> {
        let mut raw = RawEdges {
            src: Vec::with_capacity(end - start),
            dst: Vec::with_capacity(end - start),
            ..RawEdges::default()
        };
        self.src.extend(start, end, &mut raw.src).map_err(|(i, m)| ("src", i, m))?;
        self.dst.extend(start, end, &mut raw.dst).map_err(|(i, m)| ("dst", i, m))?;
        if let Some(w) = &self.weights {
            raw.w.reserve(end - start);
            for i in start..end {
                let x = w.get(i);
                if !(x.is_finite() && x >= 0.0) {
                    let msg = format!("weight {x} is not a finite non-negative number");
                    return Err(("weight", i, msg));
                }
                raw.w.push(x);
            }
        }
        Ok(raw)
    }
}

/// The source the passes read: the arrays, as a `bin` input of `u64` ids would be described.
pub(super) fn describe<'a>(arrays: EdgeArrays<'a>, opts: &ImportOptions) -> Source<'a> {
    Source {
        files: Vec::new(),
        arrays: Some(arrays),
        directed: opts.directed.unwrap_or(true),
        weighted: arrays.weights.is_some(),
        vertices: Vertices::FromEdges,
        id_max: u64::MAX,
        id_bytes: 8,
        mtx: None,
        format_name: "bin",
    }
}

/// The error of a bad value: the argument and the index (rule 2).
fn bad_value(what: &str, index: usize, msg: String) -> Error {
    Error::Input { path: PathBuf::from(what), msg: format!("index {index}: {msg}") }
}

/// Runs `per_chunk` over every chunk of `arrays` (rule 1), `sink` receiving the results on the
/// calling thread in order; adds the bytes of every chunk (as `bin` records) to `progress`.
pub(super) fn for_each_chunk<T: Send>(
    arrays: &EdgeArrays<'_>,
    pipeline: &Pipeline,
    progress: Option<&Progress>,
    per_chunk: &PerChunk<'_, T>,
    sink: &mut dyn FnMut(T),
) -> Result<(), Error> {
    let n = arrays.len();
    let record = if arrays.weights.is_some() { 24 } else { 16 };
    let batch = CHUNK * 2 * rayon::current_num_threads().max(1);
    let mut start = 0;
    while start < n {
        if pipeline.cancel_requested() {
            return Err(sluice_io::Error::Cancelled.into());
        }
        let end = (start + batch).min(n);
        let results: Vec<Result<T, Error>> = (start..end)
            .step_by(CHUNK)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|s| {
                let e = (s + CHUNK).min(end);
                let raw = arrays.raw(s, e).map_err(|(what, i, m)| bad_value(what, i, m))?;
                per_chunk(raw).map_err(|(i, m)| bad_value("edge", s + i, m))
            })
            .collect();
        for r in results {
            sink(r?);
        }
        if let Some(p) = progress {
            p.add_bytes(((end - start) * record) as u64);
        }
        start = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_every_width_read_as_u64_and_a_negative_one_names_its_index() {
        let mut out = Vec::new();
        Ids::I32(&[3, 0, 7]).extend(1, 3, &mut out).unwrap();
        Ids::U32(&[u32::MAX]).extend(0, 1, &mut out).unwrap();
        Ids::I64(&[i64::MAX]).extend(0, 1, &mut out).unwrap();
        assert_eq!(out, [0, 7, u32::MAX as u64, i64::MAX as u64]);
        let err = Ids::I64(&[1, 2, -5]).extend(1, 3, &mut out).unwrap_err();
        assert_eq!(err, (2, "vertex id -5 is negative".to_string()));
    }

    #[test]
    fn bad_lengths_and_weights_name_the_argument_and_index() {
        let (s, d) = ([1u64, 2, 3], [2u64, 3, 1]);
        let err = EdgeArrays::new(Ids::U64(&s), Ids::U64(&d[..2]), None).unwrap_err();
        assert_eq!(err.to_string(), "dst: length 2 differs from the length of src, 3");
        let w = [1.0, f64::NAN, 2.0];
        let a = EdgeArrays::new(Ids::U64(&s), Ids::U64(&d), Some(Weights::F64(&w))).unwrap();
        let (what, i, msg) = a.raw(0, 3).unwrap_err();
        assert_eq!((what, i), ("weight", 1));
        assert!(msg.contains("NaN"), "{msg}");
        let w = [1.0f32, 0.5, -2.0];
        let a = EdgeArrays::new(Ids::U64(&s), Ids::U64(&d), Some(Weights::F32(&w))).unwrap();
        assert_eq!(a.raw(0, 2).unwrap().w, [1.0, 0.5]);
        assert_eq!(a.raw(1, 3).unwrap_err().1, 2);
    }
}
