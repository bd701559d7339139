//! Per-vertex triangle counts, the primitive under LCC: [`Graph::triangles_per_vertex`] (its doc
//! is the contract: what is computed, memory, costs). How:
//!
//! In memory (the usual case): t(v) is a sum over the triangles of the undirected simple graph
//! through v, each adding the number (1 or 2) of directed edges between its other two corners.
//! A pass over the in-lists and one over the out-lists (sets) build, per undirected pair, one
//! entry in the list of its lower-ranked end (rank: stored degree, then id) tagged with that
//! count; each triangle {a < b < c} is then found once, from a's marked list and b's list, in
//! O(m^1.5) work however skewed the degrees. Vertices are renumbered by rank first, so the hubs'
//! entries cluster in cache.
//!
//! Out of core (when that does not fit the budget): the out-lists are cut into windows that fit
//! ([`Graph::adjacency_windows`]); per window, one [`Graph::stream_adjacency`] pass over the
//! N(v) sets adds, for every `u ∈ N(v)` whose out-list the window holds, `|N(v) ∩ N_out(u)|`.
//!
//! The budget reservations keep their `lcc …` names (they appear in budget errors).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use rayon::prelude::*;

use crate::{Adjacency, Error, Graph, Neighbours, VertexArray, VertexId};

impl Graph {
    /// `f(d(v), t(v))` for every vertex v, in vertex order on the calling thread, where on the
    /// simple graph under the store (lists as sets: duplicate edges and self loops are ignored),
    /// with N(v) = N_in(v) ∪ N_out(v): d(v) = |N(v)| and `t(v) = Σ_{u ∈ N(v)} |N(v) ∩ N_out(u)|`,
    /// the edges among v's neighbours as ordered pairs (a two-way pair twice). Both are exact
    /// integers, the same on either path below.
    ///
    /// * **Triangle listing**, when its lists fit the budget: O(m^1.5) work however skewed the
    ///   degrees, and two passes (the in-lists, then the out-lists). Memory: 4 bytes per stored
    ///   out-edge plus 40 per vertex, and per thread 9 more per vertex (marks, t), beside
    ///   [`Graph::open`]'s.
    /// * **Windows of out-lists** otherwise (any budget that holds one partition's lists beside
    ///   the window): per window, a load of its out-lists and one pass over the N(v) sets.
    ///   Memory: 12 bytes per vertex plus a |V|-bit bitmap per thread, one partition's lists,
    ///   and the window. The work is Σ over neighbour pairs (v, u) of min(|N(v)|, |N_out(u)|)
    ///   set operations, which on skewed graphs grows much faster than |E| (Kronecker scale 20:
    ///   ~50 s on two cores).
    ///
    /// Every list read is checked against its block's CRC-32; when the in- and out-lists hold
    /// different edges the result is [`Error::Corrupt`].
    pub fn triangles_per_vertex<R>(&self, f: impl Fn(u32, u64) -> R) -> Result<Vec<R>, Error> {
        match listed(self, &f)? {
            Some(x) => Ok(x),
            None => windowed(self, &f),
        }
    }
}

/// |a ∩ b| for sorted sets: a merge, or binary searches of the shorter in the longer.
fn common(a: &[VertexId], b: &[VertexId]) -> u64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() * 16 < long.len() {
        let mut rest = long;
        let mut n = 0;
        for x in short {
            let i = rest.partition_point(|y| y < x);
            n += (rest.get(i) == Some(x)) as u64;
            rest = &rest[i..];
        }
        return n;
    }
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        n += (x == y) as u64;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    n
}

/// Neighbourhoods at least this large are marked in a bitmap, so each out-list entry of a
/// neighbour costs one probe instead of a search.
const MARK_MIN: usize = 32;

thread_local! {
    static MARKS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    static COUNTS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Σ over `u ∈ nv` held in `out` of |nv ∩ N_out(u)|.
fn pairs_among(nv: &[VertexId], out: &Adjacency, words: usize) -> u64 {
    let held = nv.iter().filter(|&&u| out.contains(u));
    if nv.len() < MARK_MIN {
        return held.map(|&u| common(nv, out.of(u))).sum();
    }
    MARKS.with_borrow_mut(|mark| {
        mark.resize(words, 0);
        let bit = |w: VertexId| (w / 64) as usize;
        nv.iter().for_each(|&w| mark[bit(w)] |= 1 << (w % 64));
        let n = held
            .map(|&u| match out.of(u) {
                ou if ou.len() <= 4 * nv.len() => {
                    ou.iter().filter(|&&w| mark[bit(w)] >> (w % 64) & 1 == 1).count() as u64
                }
                ou => common(nv, ou),
            })
            .sum();
        nv.iter().for_each(|&w| mark[bit(w)] = 0);
        n
    })
}

/// An entry of an oriented list: the neighbour's id, with this bit set when the pair is joined
/// both ways.
const TWO: u32 = 1 << 31;

/// Vertices renumbered by rank (stored degree, then id; hubs last, so the lists' entries and the
/// marks they probe cluster in cache) and, per vertex, its neighbours of higher rank, each tagged
/// with [`TWO`] when joined both ways.
struct Oriented {
    rank: Vec<u32>,
    offsets: Vec<usize>,
    lists: Vec<u32>,
}

impl Oriented {
    fn of(&self, v: usize) -> &[u32] {
        &self.lists[self.offsets[v]..self.offsets[v + 1]]
    }
}

fn orient(g: &Graph) -> Result<Oriented, Error> {
    let n = g.num_vertices();
    let (ins, outs) = (g.in_degree(), g.out_degree());
    let mut by_rank: Vec<u32> = (0..n as u32).collect();
    by_rank.par_sort_unstable_by_key(|&v| {
        (u64::from(ins[v as usize]) + u64::from(outs[v as usize]), v)
    });
    let mut rank = vec![0u32; n];
    by_rank.iter().enumerate().for_each(|(r, &v)| rank[v as usize] = r as u32);
    drop(by_rank);
    let ends = |v: VertexId, u: VertexId| {
        let (a, b) = (rank[v as usize], rank[u as usize]);
        (a.min(b), a.max(b))
    };
    // Each directed edge once (the lists are sets); a pair joined both ways comes twice. Counted
    // from the in-lists, placed from the out-lists: both grids are read (and checksummed).
    let cursor: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    g.stream_adjacency(Neighbours::In, true, |adj| {
        adj.vertices().into_par_iter().for_each(|v| {
            for &u in adj.of(v) {
                cursor[ends(v, u).0 as usize].fetch_add(1, Relaxed);
            }
        });
        Ok(())
    })?;
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    for c in &cursor {
        let start = offsets[offsets.len() - 1];
        offsets.push(start + c.load(Relaxed));
        c.store(start, Relaxed);
    }
    let lists: Vec<AtomicU32> = (0..offsets[n]).map(|_| AtomicU32::new(0)).collect();
    g.stream_adjacency(Neighbours::Out, true, |adj| {
        adj.vertices().into_par_iter().for_each(|v| {
            for &u in adj.of(v) {
                let (lo, hi) = ends(v, u);
                if let Some(x) = lists.get(cursor[lo as usize].fetch_add(1, Relaxed)) {
                    x.store(hi, Relaxed);
                }
            }
        });
        Ok(())
    })?;
    if cursor.iter().zip(&offsets[1..]).any(|(c, &end)| c.load(Relaxed) != end) {
        return Err(Error::corrupt(g.dir(), "the in- and out-lists hold different edges"));
    }
    drop(cursor);
    let mut lists: Vec<u32> = lists.into_iter().map(AtomicU32::into_inner).collect();
    // Sort each list, fold a repeated neighbour into one entry tagged TWO, then compact.
    let mut slices = Vec::with_capacity(n);
    let mut rest = &mut lists[..];
    for w in offsets.windows(2) {
        let (a, b) = rest.split_at_mut(w[1] - w[0]);
        slices.push(a);
        rest = b;
    }
    let lens: Vec<usize> = slices
        .par_iter_mut()
        .map(|s| {
            if g.pipeline.cancel_requested() {
                return 0; // the lengths are dropped below
            }
            s.sort_unstable();
            let mut k = 0;
            for j in 0..s.len() {
                if k > 0 && s[k - 1] == s[j] {
                    s[k - 1] |= TWO;
                } else {
                    s[k] = s[j];
                    k += 1;
                }
            }
            k
        })
        .collect();
    g.check_cancel()?;
    let mut out = 0;
    for (v, len) in lens.into_iter().enumerate() {
        let lo = offsets[v];
        lists.copy_within(lo..lo + len, out);
        offsets[v] = out;
        out += len;
    }
    offsets[n] = out;
    lists.truncate(out);
    lists.shrink_to_fit();
    Ok(Oriented { rank, offsets, lists })
}

/// `f(d, t)` per vertex by triangle listing, or `None` when its lists do not fit the budget.
fn listed<R>(g: &Graph, f: &impl Fn(u32, u64) -> R) -> Result<Option<Vec<R>>, Error> {
    let n = g.num_vertices();
    let threads = rayon::current_num_threads() as u64;
    let stored: u64 = g.out_degree().iter().map(|&d| u64::from(d)).sum();
    // Lists, offsets, cursors (then lengths), ranks and their sort, d, and per thread a mark and
    // a t array.
    let bytes = 4 * stored + 32 * (n as u64 + 1) + 9 * n as u64 * threads;
    let headroom = g.largest_partition_adjacency(Neighbours::Out);
    if n >= TWO as usize || g.budget().available() < bytes.saturating_add(headroom) {
        return Ok(None);
    }
    let Ok(_held) = g.budget().reserve("lcc oriented lists", bytes) else { return Ok(None) };
    let o = orient(g)?;
    let size: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    // One t array per pool thread: no cache line shared between threads on hub vertices.
    let t: Vec<Vec<AtomicU64>> =
        (0..threads).map(|_| (0..n).map(|_| AtomicU64::new(0)).collect()).collect();
    let count = |e: u32| 1 + u64::from(e >> 31);
    let id = |e: u32| (e & !TWO) as usize;
    (0..n).into_par_iter().for_each(|a| {
        if g.pipeline.cancel_requested() {
            return; // Ctrl-C in a front end: the result is dropped below
        }
        let la = o.of(a);
        size[a].fetch_add(la.len() as u32, Relaxed);
        la.iter().for_each(|&e| _ = size[id(e)].fetch_add(1, Relaxed));
        if la.len() < 2 {
            return;
        }
        let t = &t[rayon::current_thread_index().unwrap_or(0) % t.len()];
        COUNTS.with_borrow_mut(|mark| {
            mark.resize(n, 0);
            la.iter().for_each(|&e| mark[id(e)] = count(e) as u8);
            let mut ta = 0;
            for &eb in la {
                let lb = o.of(id(eb));
                let mut tb = 0;
                let mut found = |ac: u32, bc: u32| {
                    ta += count(bc);
                    tb += count(ac);
                    t[id(ac)].fetch_add(count(eb), Relaxed);
                };
                if la.len() * (usize::BITS - lb.len().leading_zeros()) as usize >= lb.len() {
                    // Scan b's list against a's marks.
                    for &bc in lb {
                        if let m @ 1.. = mark[id(bc)] {
                            found(((m as u32 - 1) << 31) | (bc & !TWO), bc);
                        }
                    }
                } else {
                    // b's list is long: search it for each of a's neighbours.
                    let mut rest = lb;
                    for &ac in la {
                        let i = rest.partition_point(|&x| id(x) < id(ac));
                        match rest.get(i) {
                            Some(&bc) if id(bc) == id(ac) => found(ac, bc),
                            _ => {}
                        }
                        rest = &rest[i..];
                    }
                }
                if tb > 0 {
                    t[id(eb)].fetch_add(tb, Relaxed);
                }
            }
            t[a].fetch_add(ta, Relaxed);
            la.iter().for_each(|&e| mark[id(e)] = 0);
        });
    });
    g.check_cancel()?;
    let r = |v: usize| o.rank[v] as usize;
    Ok(Some(
        (0..n)
            .map(|v| f(size[r(v)].load(Relaxed), t.iter().map(|x| x[r(v)].load(Relaxed)).sum()))
            .collect(),
    ))
}

/// `f(d, t)` per vertex by windows of out-lists against streamed neighbour sets (any budget
/// that holds one partition's lists beside the window).
fn windowed<R>(g: &Graph, f: &impl Fn(u32, u64) -> R) -> Result<Vec<R>, Error> {
    let n = g.num_vertices();
    let mut pairs = VertexArray::new(g, "lcc neighbour pairs", 0u64)?;
    let mut size = VertexArray::new(g, "lcc neighbourhood sizes", 0u32)?;
    let words = g.padded_len() / 64;
    let _r3 = g
        .budget()
        .reserve("lcc neighbour bitmaps", (words * 8 * rayon::current_num_threads()) as u64)?;
    let headroom = g.largest_partition_adjacency(Neighbours::Both);
    for window in g.adjacency_windows(Neighbours::Out, headroom) {
        let out = g.load_adjacency(Neighbours::Out, true, window)?;
        let (pairs, size) = (pairs.padded_mut(), size.padded_mut());
        g.stream_adjacency(Neighbours::Both, true, |adj| {
            let r = adj.vertices();
            let (lo, hi) = (r.start as usize, r.end as usize);
            pairs[lo..hi].par_iter_mut().zip(&mut size[lo..hi]).zip(r).for_each(|((t, d), v)| {
                let nv = adj.of(v);
                *d = nv.len() as u32;
                *t += pairs_among(nv, &out, words);
            });
            Ok(())
        })?;
    }
    Ok((0..n).map(|v| f(size[v], pairs[v])).collect())
}

#[cfg(test)]
mod tests {
    //! The listing path against the windowed one and a naive count of (d, t), on skewed random
    //! multigraphs (duplicates, self loops, two-way pairs) of several partitions.

    use std::collections::BTreeSet;

    use rand::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use sluice_io::{Budget, PipelineBuilder};

    use crate::Graph;
    use crate::import::{Format, ImportOptions, import};

    #[test]
    fn listing_matches_windows_and_naive() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Xoshiro256PlusPlus::seed_from_u64(5);
        // Ids skewed towards small values (hubs), spread over ~3 partitions.
        let id = |r: &mut Xoshiro256PlusPlus| {
            (r.next_u64() % 200_000) * (r.next_u64() % 200_000) / 200_000
        };
        let mut edges: Vec<(u64, u64)> = (0..200_000)
            .map(|i| match i % 3 {
                0 => (r.next_u64() % 3000, r.next_u64() % 3000), // a dense core: many triangles
                _ => (id(&mut r), id(&mut r)),
            })
            .collect();
        let back: Vec<(u64, u64)> = edges[..20_000].iter().map(|&(s, d)| (d, s)).collect();
        edges.extend(back); // two-way pairs
        edges.extend_from_within(..5_000); // duplicates
        edges.extend((0..100).map(|i| (i * 7, i * 7))); // self loops
        let input = dir.path().join("g.txt");
        std::fs::write(&input, edges.iter().map(|(s, d)| format!("{s} {d}\n")).collect::<String>())
            .unwrap();
        for directed in [true, false] {
            let store = dir.path().join(format!("g{directed}.grid"));
            let mut opts = ImportOptions::new(Format::Snap);
            opts.directed = Some(directed);
            import(
                std::slice::from_ref(&input),
                &store,
                &opts,
                &PipelineBuilder::new().build().unwrap(),
                &Budget::unlimited(),
            )
            .unwrap();
            let mut g = Graph::open(
                &store,
                PipelineBuilder::new().block_size(1 << 16).build().unwrap(),
                Budget::unlimited(),
            )
            .unwrap();
            assert!(g.meta().partitions >= 2, "the test needs several partitions");
            let n = g.num_vertices();
            let mut out: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
            for &(s, d) in &edges {
                let (s, d) = (g.dense_id(s).unwrap(), g.dense_id(d).unwrap());
                if s != d {
                    out[s as usize].insert(d);
                    if !directed {
                        out[d as usize].insert(s);
                    }
                }
            }
            let mut nb = out.clone();
            for (v, l) in out.iter().enumerate() {
                l.iter().for_each(|&u| _ = nb[u as usize].insert(v as u32));
            }
            let naive: Vec<(u32, u64)> = (0..n)
                .map(|v| {
                    let t = nb[v].iter().map(|&u| out[u as usize].intersection(&nb[v]).count());
                    (nb[v].len() as u32, t.sum::<usize>() as u64)
                })
                .collect();
            assert!(naive.iter().filter(|&&(_, t)| t > 0).count() > 100, "too few triangles");
            let pair = |d, t| (d, t);
            for in_memory in [false, true] {
                if in_memory {
                    g.load_edges().unwrap();
                }
                let fast = super::listed(&g, &pair).unwrap().expect("fits an unlimited budget");
                assert_eq!(fast, naive, "directed={directed} in_memory={in_memory}");
                assert_eq!(
                    super::windowed(&g, &pair).unwrap(),
                    naive,
                    "directed={directed} in_memory={in_memory}"
                );
                assert_eq!(g.triangles_per_vertex(pair).unwrap(), naive);
            }
        }
    }
}
