//! WCC (`specs/graphalytics.md` §2.3): every vertex gets the smallest dense id of its weakly
//! connected component, i.e. (ids being order-preserving) the smallest original id, as the
//! reference outputs do. Min-label propagation over edges in both directions, synchronous
//! (each pass reads the previous pass's labels), streaming only blocks whose source partition
//! holds a vertex whose label changed, until no label changes.

use crate::{Direction, EdgeKernel, Error, Graph, VertexId};

struct MinLabel<'a> {
    prev: &'a [u32],
}

impl EdgeKernel for MinLabel<'_> {
    type Value = u32;
    type State = u32;
    #[inline(always)]
    fn gather(&self, s: VertexId, _w: f64) -> Option<u32> {
        Some(self.prev[s as usize])
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
    let n = g.num_vertices();
    let (mut label, _r1) = g.vertex_array("wcc labels", u32::MAX)?;
    let (mut prev, _r2) = g.vertex_array("wcc previous labels", u32::MAX)?;
    for (v, l) in label.iter_mut().enumerate().take(n) {
        *l = v as u32;
    }
    let mut active = crate::VertexSet::all(g);
    while !active.is_empty() {
        prev.copy_from_slice(&label);
        active = g.stream_edges(&MinLabel { prev: &prev }, &active, Direction::Both, &mut label)?;
    }
    label.truncate(n);
    Ok(label)
}
