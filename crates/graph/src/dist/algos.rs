//! The distributed algorithms: the single-process ones (`crate::algo`, same kernels, same
//! semantics) with one exchange per iteration (see the parent module).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use rayon::prelude::*;
use sluice_bsp::Ctx;

use super::exchange::Exchange;
use super::halo::Halo;
use super::{Cost, DistGraph};
use crate::algo::bfs::{UNREACHED, Visit};
use crate::algo::cdlp::{Cdlp, relabel_from};
use crate::algo::pagerank::{PageRank, PageRankOptions, Sum};
use crate::algo::spmv::Product;
use crate::algo::sssp::Relax;
use crate::{Direction, EdgeKernel, Error, Neighbours, VertexArray, VertexId, VertexSet};

/// Names the rank in a local failure.
fn at(dg: &DistGraph) -> impl Fn(Error) -> Error + use<> {
    let rank = dg.rank();
    move |e| match e {
        Error::Bsp { .. } | Error::AtRank { .. } => e,
        e => Error::AtRank { rank, source: Box::new(e) },
    }
}

/// PageRank (as [`crate::algo::pagerank::pagerank`]); every rank gets every rank value.
pub fn pagerank(
    ctx: &mut Ctx,
    dg: &DistGraph,
    opts: &PageRankOptions,
) -> Result<(PageRank, Cost), Error> {
    if !(0.0..=1.0).contains(&opts.damping) {
        return Err(Error::Parameter {
            name: "damping factor",
            value: opts.damping,
            range: "[0, 1]",
        });
    }
    let (g, local) = (dg.graph(), at(dg));
    let (d, nf) = (opts.damping, g.num_vertices() as f64);
    let mut rank = VertexArray::new(g, "pagerank ranks", 1.0 / nf).map_err(&local)?;
    let mut contrib = VertexArray::new(g, "pagerank contributions", 0.0f64).map_err(&local)?;
    let mut sum = VertexArray::new(g, "pagerank sums", 0.0f64).map_err(&local)?;
    let (n, psize) = (g.num_vertices(), g.meta().partition_size as usize);
    let deg = g.out_degree();
    let all = VertexSet::all(g);
    let started = std::time::Instant::now();
    let halo = Halo::build(ctx, dg)?;
    let setup_s = started.elapsed().as_secs_f64();
    let mut x = Exchange::with_halo(ctx, dg, 8, 2, Some(halo))?;
    // Per partition: [change, sink mass], each folded from 0 in vertex order, as
    // `Graph::sum_vertices` folds a partition; the sums fold partitions in order.
    let sink_of = |rank: &[f64], p: usize| {
        (p * psize..((p + 1) * psize).min(n))
            .fold(0.0, |acc, v| acc + if deg[v] == 0 { rank[v] } else { 0.0 })
    };
    let mut partials = vec![0.0f64; 2 * g.meta().partitions as usize];
    for p in 0..partials.len() / 2 {
        partials[2 * p + 1] = sink_of(&rank, p);
    }
    let (mut done, mut change) = (0, f64::INFINITY);
    while done < opts.iterations {
        x.begin();
        // Sinks have no out-edges, so no halo holds them: their mass travels as partials.
        let sink = partials.iter().skip(1).step_by(2).fold(0.0, |a, b| a + b);
        // Current values: the owned vertices and the halo, all that the pass reads.
        g.sum_vertices(&mut contrib, |v, c| {
            let k = deg[v as usize];
            *c = if k == 0 { 0.0 } else { rank[v as usize] / k as f64 };
            0.0
        });
        sum.iter_mut().for_each(|s| *s = 0.0);
        g.stream_edges(&Sum { contrib: contrib.padded() }, &all, Direction::Out, &mut sum)
            .map_err(&local)?;
        let base = (1.0 - d) / nf + d * sink / nf;
        for p in dg.owned_partitions() {
            let vs = p * psize..((p + 1) * psize).min(n);
            partials[2 * p] = rank[vs.clone()].iter_mut().zip(&sum[vs]).fold(0.0, |acc, (r, s)| {
                let old = std::mem::replace(r, base + d * s);
                acc + (*r - old).abs()
            });
            partials[2 * p + 1] = sink_of(&rank, p);
        }
        x.halo(ctx, &mut rank, &mut partials)?;
        change = partials.iter().step_by(2).fold(0.0, |a, b| a + b);
        done += 1;
        if opts.tolerance.is_some_and(|t| change < t) {
            break;
        }
    }
    // Every rank gets every value: one more superstep, the owned ranges everywhere.
    x.begin();
    x.owned(ctx, &mut rank, &mut [])?;
    let mut cost = x.finish(ctx)?;
    cost.setup_s = setup_s;
    Ok((PageRank { ranks: rank.into_vec(), iterations: done, last_change: change }, cost))
}

/// The owned members of `next` with their values.
fn owned_changes<T: Copy>(dg: &DistGraph, next: &VertexSet, state: &[T]) -> Vec<(u32, T)> {
    dg.owned().filter(|&v| next.contains(v)).map(|v| (v, state[v as usize])).collect()
}

/// Runs frontier passes of `kernel(level)` from `active` until no rank changes a value.
fn until_quiet<K, F>(
    ctx: &mut Ctx,
    dg: &DistGraph,
    dir: Direction,
    state: &mut VertexArray<K::State>,
    mut active: VertexSet,
    kernel: F,
) -> Result<Cost, Error>
where
    K: crate::EdgeKernel,
    K::State: sluice_bsp::collectives::Elem,
    F: Fn(u32) -> Result<K, Error>,
{
    let (g, local) = (dg.graph(), at(dg));
    let mut x = Exchange::new(ctx, dg, std::mem::size_of::<K::State>())?;
    let mut level = 1;
    while !active.is_empty() {
        x.begin();
        let k = kernel(level).map_err(&local)?;
        let next = g.stream_edges(&k, &active, dir, state).map_err(&local)?;
        let mine = owned_changes(dg, &next, state);
        active = VertexSet::none(g);
        mine.iter().for_each(|&(v, _)| {
            active.insert(v);
        });
        x.changed(ctx, &mine, |v, value| {
            state[v as usize] = value;
            active.insert(v);
        })?;
        level += 1;
    }
    x.finish(ctx)
}

/// BFS (as [`crate::algo::bfs::bfs`]).
pub fn bfs(ctx: &mut Ctx, dg: &DistGraph, root: u64) -> Result<(Vec<u32>, Cost), Error> {
    let g = dg.graph();
    let root = g.dense_id(root)?;
    let mut depth = VertexArray::new(g, "bfs depths", UNREACHED).map_err(at(dg))?;
    depth[root as usize] = 0;
    let frontier = VertexSet::single(g, root);
    let cost = until_quiet(ctx, dg, Direction::Out, &mut depth, frontier, |level| {
        Ok(Visit { depth: level })
    })?;
    Ok((depth.into_vec(), cost))
}

/// WCC's kernel across ranks: min-label propagation, one superstep per pass. The single-process
/// WCC is a union-find in one edge pass ([`crate::algo::wcc`]); across ranks each rank sees only
/// its column stripe, so labels propagate by exchange until no rank changes one.
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
    fn apply(&self, _d: VertexId, v: u32, label: &mut u32) -> bool {
        let lower = v < *label;
        if lower {
            *label = v;
        }
        lower
    }
}

/// WCC (as [`crate::algo::wcc::wcc`]).
pub fn wcc(ctx: &mut Ctx, dg: &DistGraph) -> Result<(Vec<u32>, Cost), Error> {
    let g = dg.graph();
    let mut label = VertexArray::new(g, "wcc labels", u32::MAX).map_err(at(dg))?;
    label.iter_mut().enumerate().for_each(|(v, l)| *l = v as u32);
    let all = VertexSet::all(g);
    let cost = until_quiet(ctx, dg, Direction::Both, &mut label, all, |_| Ok(MinLabel))?;
    Ok((label.into_vec(), cost))
}

/// SSSP (as [`crate::algo::sssp::sssp`]).
pub fn sssp(ctx: &mut Ctx, dg: &DistGraph, root: u64) -> Result<(Vec<f64>, Cost), Error> {
    let g = dg.graph();
    let root = g.dense_id(root)?;
    let mut dist = VertexArray::new(g, "sssp distances", f64::INFINITY).map_err(at(dg))?;
    dist[root as usize] = 0.0;
    let bad_weight = AtomicBool::new(false);
    let frontier = VertexSet::single(g, root);
    let cost = until_quiet(ctx, dg, Direction::Out, &mut dist, frontier, |_| {
        if bad_weight.load(Relaxed) {
            return Err(Error::Input {
                path: g.dir().to_path_buf(),
                msg: "an edge weight is negative or not a finite number".into(),
            });
        }
        Ok(Relax { bad_weight: &bad_weight })
    })?;
    if bad_weight.load(Relaxed) {
        return Err(at(dg)(Error::Input {
            path: g.dir().to_path_buf(),
            msg: "an edge weight is negative or not a finite number".into(),
        }));
    }
    Ok((dist.into_vec(), cost))
}

/// SpMV (as [`crate::algo::spmv::spmv`]); every rank gets all of `y`.
pub fn spmv(ctx: &mut Ctx, dg: &DistGraph, x: &[f64]) -> Result<(Vec<f64>, Cost), Error> {
    let (g, local) = (dg.graph(), at(dg));
    if x.len() != g.num_vertices() {
        return Err(Error::VectorLength { len: x.len(), vertices: g.num_vertices() });
    }
    let mut xs = VertexArray::new(g, "spmv input vector", 0.0f64).map_err(&local)?;
    xs.copy_from_slice(x);
    let mut y = VertexArray::new(g, "spmv output vector", 0.0f64).map_err(&local)?;
    let mut ex = Exchange::new(ctx, dg, 8)?;
    ex.begin();
    g.stream_edges(&Product { x: xs.padded() }, &VertexSet::all(g), Direction::Out, &mut y)
        .map_err(&local)?;
    ex.owned(ctx, &mut y, &mut [])?;
    let cost = ex.finish(ctx)?;
    Ok((y.into_vec(), cost))
}

/// CDLP (as [`crate::algo::cdlp::cdlp`]): the adjacency of the owned partitions only, then the
/// changed labels; the fixpoint test counts every rank's changes.
pub fn cdlp(ctx: &mut Ctx, dg: &DistGraph, iterations: u32) -> Result<(Cdlp, Cost), Error> {
    let (g, local) = (dg.graph(), at(dg));
    let mut labels = VertexArray::new(g, "cdlp labels", 0 as VertexId).map_err(&local)?;
    labels.iter_mut().enumerate().for_each(|(v, l)| *l = v as VertexId);
    let mut x = Exchange::new(ctx, dg, 4)?;
    let mut done = 0;
    while done < iterations {
        x.begin();
        let (prev, label) = labels.begin_pass().map_err(&local)?;
        let mut mine: Vec<(u32, VertexId)> = Vec::new();
        g.stream_neighbour_values_in(Neighbours::Both, prev, dg.owned_partitions(), |adj| {
            let r = adj.vertices();
            let changed: Vec<(u32, VertexId)> = label[r.start as usize..r.end as usize]
                .par_iter_mut()
                .zip(r.into_par_iter())
                .map_init(Vec::new, |buf, (l, v)| {
                    relabel_from(buf, adj.of(v), l).then_some((v, *l))
                })
                .flatten()
                .collect();
            mine.extend(changed);
            Ok(())
        })
        .map_err(&local)?;
        let total = x.changed(ctx, &mine, |v, l| label[v as usize] = l)?;
        done += 1;
        if total == 0 {
            break;
        }
    }
    let cost = x.finish(ctx)?;
    Ok((Cdlp { labels: labels.into_vec(), iterations: done }, cost))
}
