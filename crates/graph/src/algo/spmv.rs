//! SpMV: `y_d = Σ over stored edges s → d of w(s, d) · x_s` (w = 1 on unweighted stores), i.e.
//! `y = Aᵀx` for the adjacency matrix `A[s][d] = w(s, d)`; undirected graphs store both
//! directions, so `A` is symmetric there. One weighted edge pass (4 bytes per stored edge plus
//! 8 for its weight); memory 16 bytes per vertex (x, y) beside [`Graph::open`]'s 16. Multigraphs: duplicate edges
//! add up (as scipy.sparse sums duplicate entries); a self loop is a diagonal entry (an
//! undirected one stored once).

use crate::{Direction, EdgeKernel, Error, Graph, VertexArray, VertexId, VertexSet};

pub(crate) struct Product<'a> {
    pub(crate) x: &'a [f64],
}

impl EdgeKernel for Product<'_> {
    type Value = f64;
    type State = f64;
    const WEIGHTED: bool = true;
    #[inline(always)]
    fn gather(&self, s: VertexId, _prev: &[f64], w: f64) -> Option<f64> {
        Some(w * self.x[s as usize])
    }
    #[inline(always)]
    fn apply(&self, _d: VertexId, v: f64, y: &mut f64) -> bool {
        *y += v;
        false
    }
}

/// `y = Aᵀx` for `x` indexed by dense id (|V| long).
pub fn spmv(g: &Graph, x: &[f64]) -> Result<Vec<f64>, Error> {
    if x.len() != g.num_vertices() {
        return Err(Error::VectorLength { len: x.len(), vertices: g.num_vertices() });
    }
    let mut xs = VertexArray::new(g, "spmv input vector", 0.0f64)?;
    xs.copy_from_slice(x);
    let mut y = VertexArray::new(g, "spmv output vector", 0.0f64)?;
    g.stream_edges(&Product { x: xs.padded() }, &VertexSet::all(g), Direction::Out, &mut y)?;
    Ok(y.into_vec())
}
