//! One pass's figures combined in the canonical tree over the pipeline's blocks (rule 7), so
//! that one process and any number of ranks, each reading a stripe, combine the same sums in
//! the same pairs: the same bits.
//!
//! Leaves are the pipeline's sink keys (`sluice_io` pipeline rule 2 and `pipeline/README.md`):
//! read `j`'s body is leaf `2j + 1`, the seam record completed by read `j`'s head is leaf `2j`;
//! keys without a block are empty leaves. A stripe that starts on a read boundary which is also
//! a record boundary ([`stripe`]) makes the same reads, cuts and seams as one process does
//! there, so its leaves are the whole stream's, shifted by twice its first read.

use sluice_io::placement::{balanced, reads_in};
use sluice_io::{Pipeline, Plan, RunStats};

use super::kernel::{BlockPartial, Farthest, KmeansKernel};
use super::resident::Resident;
use super::{KmeansError, Matrix};
use crate::dist::tree::{Combine, Node, TreeFold};

/// Bytes every pipeline read starts aligned to (`sluice_io` pipeline rule 1).
const ALIGN: u64 = 4096;

/// The additive figures of a run of blocks: one node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sums {
    pub(crate) records: u64,
    /// `k × d` (empty in a pass that does not update).
    pub(crate) sums: Vec<f64>,
    pub(crate) counts: Vec<i64>,
    /// Per cluster.
    pub(crate) inertia: Vec<f64>,
    /// Some block kept or found no bounds ([`BlockPartial::lacking`]).
    pub(crate) lacking: bool,
    /// Records assigned in full.
    pub(crate) assigned: u64,
}

impl Sums {
    fn empty() -> Sums {
        Sums {
            records: 0,
            sums: Vec::new(),
            counts: Vec::new(),
            inertia: Vec::new(),
            lacking: false,
            assigned: 0,
        }
    }
}

impl Combine for Sums {
    fn combine(&self, right: &Sums) -> Sums {
        if self.records == 0 {
            return right.clone();
        }
        if right.records == 0 {
            return self.clone();
        }
        Sums {
            records: self.records + right.records,
            sums: self.sums.iter().zip(&right.sums).map(|(a, b)| a + b).collect(),
            counts: self.counts.iter().zip(&right.counts).map(|(a, b)| a + b).collect(),
            inertia: self.inertia.iter().zip(&right.inertia).map(|(a, b)| a + b).collect(),
            lacking: self.lacking || right.lacking,
            assigned: self.assigned + right.assigned,
        }
    }
}

/// Where a process's share of the records lies, and how its blocks number among the whole
/// stream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stripe {
    /// First byte in the file.
    pub(crate) offset: u64,
    pub(crate) len: u64,
    /// Its first record among all records.
    pub(crate) record0: u64,
    /// Its first read among the whole extent's reads.
    pub(crate) first_read: u64,
}

/// Rank `rank`'s stripe of the records of `m` among `p`, for reads of `block` bytes: cut at
/// the first read boundary at or after the balanced split that is also a record boundary
/// (the whole data for `p = 1`).
pub(crate) fn stripe(m: &Matrix, block: usize, rank: usize, p: usize) -> Stripe {
    let (offset, len) = (m.info.data_offset, m.info.data_len());
    let rec = (m.d * m.info.dtype.itemsize()) as u64;
    let (base, end, bs) = (offset - offset % ALIGN, offset + len, block as u64);
    let reads = reads_in(offset, len, block);
    let at = |r: u64| (base + r * bs).clamp(offset, end);
    let good = |r: u64| {
        let b = at(r);
        r == 0 || b == end || ((b - offset) % rec == 0 && b % ALIGN == 0)
    };
    let cut = |r: u64| (r..=reads).find(|&r| good(r)).unwrap_or(reads);
    let own = balanced(reads, rank, p);
    let (a, b) = (cut(own.start), cut(own.end).max(cut(own.start)));
    let (start, stop) = (at(a), at(b));
    Stripe { offset: start, len: stop - start, record0: (start - offset) / rec, first_read: a }
}

/// One process's pass: its tree nodes (maximal aligned, in leaf order), farthest records, first
/// bad record, and the pipeline's figures.
pub(crate) struct Local {
    pub(crate) nodes: Vec<Node<Sums>>,
    pub(crate) far: Farthest,
    pub(crate) bad: Option<u64>,
    pub(crate) run: RunStats,
}

/// Runs `kernel` over `stripe` of `m` (from memory where `resident` holds it), handing each
/// block's labels to `labels`.
pub(crate) fn pass(
    m: &Matrix,
    stripe: Stripe,
    kernel: KmeansKernel,
    pipeline: &Pipeline,
    k: usize,
    resident: Option<&mut Resident>,
    mut labels: impl FnMut(&[i32]),
) -> Result<Local, KmeansError> {
    let rec = (m.d * m.info.dtype.itemsize()) as u64;
    let bs = pipeline.block_size() as u64;
    let shift = stripe.offset % ALIGN;
    let record = std::num::NonZeroUsize::new(rec as usize).expect("d ≥ 1");
    let mut plan = Plan::new(sluice_io::RecordLayout::Fixed(record));
    if stripe.len > 0 {
        plan.push_extent(&m.info.path, stripe.offset, stripe.len)?;
    }
    let kernel = kernel.starting_at(stripe.record0);
    let mut tree = TreeFold::default();
    let mut next = 2 * stripe.first_read;
    let mut far = Farthest::new(k);
    let mut bad: Option<u64> = None;
    let mut sink = |mut p: BlockPartial| {
        labels(&p.labels);
        bad = match (bad, p.bad) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for q in std::mem::take(&mut p.far).into_sorted() {
            far.push(q);
        }
        if p.records == 0 {
            return;
        }
        let from = (p.first - stripe.record0) * rec + shift;
        let to = from + p.records * rec - 1;
        let key = 2 * stripe.first_read
            + if from / bs == to / bs { 2 * (from / bs) + 1 } else { 2 * (to / bs) };
        while next < key {
            tree.push_leaf(next, Sums::empty());
            next += 1;
        }
        let counts = if p.counts.is_empty() { count(&p.labels, k) } else { p.counts };
        let (sums, inertia, lacking, assigned) = (p.sums, p.inertia, p.lacking, p.assigned);
        let records = p.records;
        tree.push_leaf(key, Sums { records, sums, counts, inertia, lacking, assigned });
        next = key + 1;
    };
    let run = match resident {
        Some(r) if stripe.len > 0 => r.pass(&kernel, pipeline, &mut sink, |record, sink| {
            Ok(pipeline.run_ordered(&plan, record, sink)?)
        })?,
        None if stripe.len > 0 => pipeline.run_ordered(&plan, &kernel, &mut sink)?,
        _ => RunStats::default(),
    };
    Ok(Local { nodes: tree.into_nodes(), far, bad, run })
}

/// Records per cluster among `labels`.
fn count(labels: &[i32], k: usize) -> Vec<i64> {
    let mut counts = vec![0; k];
    labels.iter().for_each(|&j| counts[j as usize] += 1);
    counts
}

/// The whole stream's figures, from the nodes of every process in rank order (or one's).
pub(crate) struct Whole {
    pub(crate) tree: TreeFold<Sums>,
    pub(crate) far: Farthest,
    pub(crate) bad: Option<u64>,
}

impl Whole {
    pub(crate) fn new(k: usize) -> Whole {
        Whole { tree: TreeFold::default(), far: Farthest::new(k), bad: None }
    }

    /// Adds one process's pass (processes in rank order).
    pub(crate) fn add(&mut self, local: Local) {
        local.nodes.into_iter().for_each(|n| self.tree.push(n));
        local.far.into_sorted().into_iter().for_each(|q| self.far.push(q));
        self.bad = match (self.bad, local.bad) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The pass's figures: the root of the tree (every vector at its full length), the
    /// farthest records, the first bad one.
    pub(crate) fn finish(self, k: usize, d: usize) -> (Sums, Farthest, Option<u64>) {
        let root = self.tree.finish().filter(|s| s.records > 0);
        let mut s = root.unwrap_or_else(Sums::empty);
        if s.sums.is_empty() {
            s.sums = vec![0.0; k * d];
        }
        if s.counts.is_empty() {
            s.counts = vec![0; k];
        }
        if s.inertia.is_empty() {
            s.inertia = vec![0.0; k];
        }
        (s, self.far, self.bad)
    }
}

/// `local`'s nodes, farthest records and bad record as bytes (little-endian words), for the
/// exchange between processes; [`decode`] reads them back.
pub(crate) fn encode(local: &Local) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |x: u64| out.extend_from_slice(&x.to_le_bytes());
    put(local.bad.map_or(0, |b| b + 1));
    let far = local.far.clone().into_sorted();
    put(far.len() as u64);
    for q in &far {
        put(q.dist.to_bits());
        put(q.index);
        put(q.label as u64);
        put(q.coords.len() as u64);
        q.coords.iter().for_each(|c| put(c.to_bits()));
    }
    put(local.nodes.len() as u64);
    for n in &local.nodes {
        let s = &n.value;
        for w in [u64::from(n.level), n.index, s.records, u64::from(s.lacking), s.assigned] {
            put(w);
        }
        put(s.sums.len() as u64);
        s.sums.iter().for_each(|x| put(x.to_bits()));
        put(s.counts.len() as u64);
        s.counts.iter().for_each(|&c| put(c as u64));
        put(s.inertia.len() as u64);
        s.inertia.iter().for_each(|x| put(x.to_bits()));
    }
    out
}

/// The [`Local`] that [`encode`] wrote (with no pipeline figures), for `k` clusters.
pub(crate) fn decode(bytes: &[u8], k: usize) -> Local {
    let mut words = bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8")));
    let mut next = || words.next().expect("a record encode wrote");
    let bad = next().checked_sub(1);
    let mut far = Farthest::new(k);
    for _ in 0..next() {
        let (dist, index, label) = (f64::from_bits(next()), next(), next() as usize);
        let coords = (0..next()).map(|_| f64::from_bits(next())).collect();
        far.push(super::kernel::FarPoint { dist, index, label, coords });
    }
    let mut nodes = Vec::new();
    for _ in 0..next() {
        let (level, index, records) = (next() as u32, next(), next());
        let (lacking, assigned) = (next() != 0, next());
        let sums = (0..next()).map(|_| f64::from_bits(next())).collect();
        let counts = (0..next()).map(|_| next() as i64).collect();
        let inertia = (0..next()).map(|_| f64::from_bits(next())).collect();
        let value = Sums { records, sums, counts, inertia, lacking, assigned };
        nodes.push(Node { level, index, value });
    }
    Local { nodes, far, bad, run: RunStats::default() }
}
