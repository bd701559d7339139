//! LCC (`specs/graphalytics.md` §2.5): with N(v) = N_in(v) ∪ N_out(v) as a set and d = |N(v)|,
//! `LCC(v) = t(v) / (d(d − 1))` where `t(v) = Σ_{u ∈ N(v)} |N(v) ∩ N_out(u)|` counts the edges
//! among v's neighbours as ordered pairs (a two-way pair twice); 0 when d ≤ 1.
//!
//! d and t come from the engine's [`Graph::triangles_per_vertex`]: by triangle listing when its
//! oriented lists fit the budget (O(m^1.5) work), else by windows of out-lists against streamed
//! neighbour sets (out of core, much slower on skewed graphs); its doc gives memory and costs.
//! Multigraphs: the lists are sets, so duplicate edges and self loops are ignored (the simple
//! graph's value).

use crate::{Error, Graph};

/// The local clustering coefficient of every vertex.
pub fn lcc(g: &Graph) -> Result<Vec<f64>, Error> {
    g.triangles_per_vertex(|d, t| match d {
        0 | 1 => 0.0,
        k => t as f64 / (k as f64 * (k as f64 - 1.0)),
    })
}
