//! WCC (`specs/graphalytics.md` §2.3): every vertex gets the smallest dense id of its weakly
//! connected component, i.e. (ids being order-preserving) the smallest original id, as the
//! reference outputs do. Min-label propagation over edges in both directions, synchronous
//! (each pass reads the previous pass's labels), streaming only blocks whose source partition
//! holds a vertex whose label changed, until no label changes.

use crate::{Direction, EdgeKernel, Error, Graph, VertexArray, VertexId, VertexSet};

pub(crate) struct MinLabel;

impl EdgeKernel for MinLabel {
    type Value = u32;
    type State = u32;
    const SYNC: bool = true;
    #[inline(always)]
    fn gather(&self, s: VertexId, prev: &[u32], _w: f64) -> Option<u32> {
        Some(prev[s as usize])
    }
    #[inline(always)]
    fn combine(&self, a: u32, b: u32) -> u32 {
        a.min(b)
    }
    #[inline(always)]
    fn apply(&self, _d: VertexId, v: u32, label: &mut u32) -> bool {
        let lower = v < *label;
        if lower {
            *label = v;
        }
        lower
    }
}

/// Component label (a dense id: the smallest in the component) of each vertex.
pub fn wcc(g: &Graph) -> Result<Vec<u32>, Error> {
    let mut label = VertexArray::new(g, "wcc labels", u32::MAX)?;
    label.iter_mut().enumerate().for_each(|(v, l)| *l = v as u32);
    let mut active = VertexSet::all(g);
    while !active.is_empty() {
        active = g.stream_edges(&MinLabel, &active, Direction::Both, &mut label)?;
    }
    Ok(label.into_vec())
}
