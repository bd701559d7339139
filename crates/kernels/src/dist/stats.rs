//! `stats` over a [`Dataset`] on every process of a BSP section (`dist` rules 1–3).
//!
//! Two rounds: first every process says what it holds (blocks, elements, dtype) or why it
//! failed; then it folds its blocks into tree nodes numbered from its first global block, and
//! the nodes of all processes are allgathered and pushed, in rank order, into one
//! [`TreeFold`]: the same combines as one process makes (`tree` rule 3).

use std::num::NonZeroUsize;
use std::path::Path;

use sluice_bsp::Ctx;
use sluice_bsp::collectives::allreduce;
use sluice_io::placement::{self, Piece};
use sluice_io::{Budget, Pipeline, Plan, RecordLayout, RunStats};

use super::Dataset;
use super::exchange::{Words, agree, put, put_i128};
use super::tree::{Node, TreeFold};
use crate::pairwise::Neumaier;
use crate::stats::{ArrayInfo, BlockStats, StatsConfig, StatsFold, StatsKernel, StatsNode};
use crate::stats::{StatsReport, figures, open_array};
use crate::{Dtype, Error, Scalar};

/// What one process holds, as the first round tells it.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    reads: u64,
    count: u64,
    /// [`encode_dtype`], 0 when the process holds no file.
    dtype: u64,
    npy: bool,
    fortran: bool,
}

/// Computes the statistics of `dataset` (collective over `ctx`'s section; `dist` rules 1–3),
/// each process reading its placement's share with `pipeline`. Every process returns the same
/// figures; `run` holds this process's pass only.
pub fn stats(
    ctx: &mut Ctx,
    dataset: &Dataset,
    config: &StatsConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<StatsReport, Error> {
    let (rank, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    let histogram = config.histogram()?;
    let block_size = pipeline.block_size();
    // Round 1: what each process holds.
    let (payload, local) =
        split(hold(dataset, config, block_size, rank, p), |(h, _)| encode_held(h));
    let held = agree(ctx, payload)?;
    let held: Vec<Held> = held.iter().map(|r| decode_held(r)).collect();
    let (mine, pieces) = local.expect("agree returned Ok, so this process's round 1 was Ok");
    let first = held.iter().find(|h| h.dtype != 0).copied().unwrap_or(mine);
    let dtype = decode_dtype(first.dtype).unwrap_or(Dtype::new(Scalar::F64, Default::default()));
    if let Some(other) = held.iter().position(|h| h.dtype != 0 && h.dtype != first.dtype) {
        return Err(Error::PartsDisagree {
            rank: other,
            dtype: first_descr(&held, other),
            first: dtype.descr(),
        });
    }
    // Round 2: this process's tree nodes.
    let kernel = StatsKernel::new(dtype, histogram);
    let first_read = match dataset {
        Dataset::Shared(_) => pieces.first().map_or(0, |piece| piece.first_read),
        Dataset::Parts(_) => held[..rank].iter().map(|h| h.reads).sum(),
    };
    let pass = pass(&kernel, &pieces, dtype, first_read, pipeline, budget, histogram);
    let (payload, pass) = split(pass, |(nodes, _)| nodes.clone());
    let nodes = agree(ctx, payload)?;
    let (_, run) = pass.expect("agree returned Ok");
    let mut tree = TreeFold::default();
    for record in &nodes {
        record.chunks_exact(NODE_BYTES).for_each(|n| tree.push(decode_node(n)));
    }
    let mut figures = figures(tree.finish().as_ref(), &kernel);
    if let Some(h) = figures.histogram.as_mut() {
        allreduce(ctx, &mut h.counts, |a, b| a + b)?;
    }
    let (file, shape) = match dataset {
        Dataset::Shared(path) => (path.clone(), shape_of(path, config)?),
        Dataset::Parts(parts) => {
            (parts.first().cloned().unwrap_or_default(), vec![held.iter().map(|h| h.count).sum()])
        }
    };
    let npy = first.npy;
    Ok(StatsReport {
        file,
        format: if npy { "npy" } else { "raw" },
        dtype: dtype.descr(),
        shape,
        fortran_order: first.fortran,
        figures,
        run,
    })
}

/// `(Ok(encode(&x)), Some(x))` or `(Err(e), None)`: what to send, and what to keep.
fn split<T>(
    r: Result<T, Error>,
    encode: impl Fn(&T) -> Vec<u8>,
) -> (Result<Vec<u8>, Error>, Option<T>) {
    match r {
        Ok(x) => (Ok(encode(&x)), Some(x)),
        Err(e) => (Err(e), None),
    }
}

/// The shape of a shared file (every process reads its header).
fn shape_of(path: &Path, config: &StatsConfig) -> Result<Vec<u64>, Error> {
    Ok(open_array(path, config)?.shape)
}

fn first_descr(held: &[Held], rank: usize) -> String {
    decode_dtype(held[rank].dtype).map_or_else(|| "?".to_string(), Dtype::descr)
}

/// Round 1 on this process: its pieces of the dataset and what they hold.
fn hold(
    dataset: &Dataset,
    config: &StatsConfig,
    block_size: usize,
    rank: usize,
    p: usize,
) -> Result<(Held, Vec<Piece>), Error> {
    let infos: Vec<ArrayInfo> = match dataset {
        Dataset::Shared(path) => vec![open_array(path, config)?],
        Dataset::Parts(parts) => parts[placement::parts_of_rank(parts.len(), rank, p)]
            .iter()
            .map(|part| open_array(part, config))
            .collect::<Result<_, _>>()?,
    };
    let mut held = Held::default();
    let mut pieces = Vec::new();
    for info in &infos {
        let (offset, len, size) = (info.data_offset, info.data_len(), info.dtype.itemsize());
        let piece = match dataset {
            Dataset::Shared(_) => {
                placement::fixed_stripe(&info.path, offset, len, size, block_size, rank, p)?
            }
            Dataset::Parts(_) => Piece { path: info.path.clone(), offset, len, first_read: 0 },
        };
        let dtype = encode_dtype(info.dtype);
        if held.dtype != 0 && held.dtype != dtype {
            return Err(Error::PartsDisagree {
                rank,
                dtype: info.dtype.descr(),
                first: decode_dtype(held.dtype).map_or_else(String::new, Dtype::descr),
            });
        }
        held.dtype = dtype;
        held.reads += placement::reads_in(piece.offset, piece.len, block_size);
        held.count += info.count;
        held.npy = info.npy.is_some();
        held.fortran = info.npy.as_ref().is_some_and(|h| h.fortran_order);
        pieces.push(piece);
    }
    Ok((held, pieces))
}

/// Round 2 on this process: one pass over its pieces, folded into tree nodes numbered from
/// block `first_read`; returns the encoded nodes and the pass's figures.
fn pass(
    kernel: &StatsKernel,
    pieces: &[Piece],
    dtype: Dtype,
    first_read: u64,
    pipeline: &Pipeline,
    budget: &Budget,
    histogram: Option<(usize, f64, f64)>,
) -> Result<(Vec<u8>, RunStats), Error> {
    let _state = budget.reserve("the stats histogram", StatsKernel::state_bytes_for(histogram))?;
    let itemsize = NonZeroUsize::new(dtype.itemsize()).expect("item sizes are 1..=8");
    let mut plan = Plan::new(RecordLayout::Fixed(itemsize));
    for piece in pieces.iter().filter(|piece| piece.len > 0) {
        plan.push_extent(&piece.path, piece.offset, piece.len)?;
    }
    let mut fold = StatsFold::starting_at(first_read);
    let run = pipeline.run_ordered(&plan, kernel, |b: BlockStats| fold.add(&b))?;
    let mut out = Vec::new();
    fold.into_tree().into_nodes().iter().for_each(|node| encode_node(node, &mut out));
    Ok((out, run))
}

fn encode_dtype(d: Dtype) -> u64 {
    let kind = if d.scalar.is_float() {
        b'f'
    } else if d.descr().contains('i') {
        b'i'
    } else {
        b'u'
    };
    1 | u64::from(kind) << 8
        | (d.itemsize() as u64) << 16
        | u64::from(d.endian == crate::Endian::Big) << 24
}

fn decode_dtype(word: u64) -> Option<Dtype> {
    if word == 0 {
        return None;
    }
    let scalar = Scalar::from_numpy(char::from((word >> 8) as u8), (word >> 16 & 0xff) as usize)?;
    let endian = if word >> 24 & 1 == 1 { crate::Endian::Big } else { crate::Endian::Little };
    Some(Dtype::new(scalar, endian))
}

fn encode_held(h: &Held) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [h.reads, h.count, h.dtype, u64::from(h.npy), u64::from(h.fortran)] {
        put(&mut out, w);
    }
    out
}

fn decode_held(bytes: &[u8]) -> Held {
    let mut w = Words(bytes);
    Held {
        reads: w.next(),
        count: w.next(),
        dtype: w.next(),
        npy: w.next() != 0,
        fortran: w.next() != 0,
    }
}

/// Bytes of one encoded node: level, index, 3 counts, 6 floats, 3 i128.
const NODE_BYTES: usize = 17 * 8;

fn encode_node(node: &Node<StatsNode>, out: &mut Vec<u8>) {
    let s = &node.value.stats;
    let (sum, compensation) = node.value.fsum.to_parts();
    put(out, u64::from(node.level));
    put(out, node.index);
    for w in [s.total, s.nan, s.n] {
        put(out, w);
    }
    for f in [sum, compensation, s.fmin, s.fmax, s.mean, s.m2] {
        put(out, f.to_bits());
    }
    for i in [s.isum, s.imin, s.imax] {
        put_i128(out, i);
    }
}

fn decode_node(bytes: &[u8]) -> Node<StatsNode> {
    let mut w = Words(bytes);
    let (level, index) = (w.next() as u32, w.next());
    let mut s = BlockStats::empty();
    (s.total, s.nan, s.n) = (w.next(), w.next(), w.next());
    let mut f = || f64::from_bits(w.next());
    let (sum, compensation) = (f(), f());
    (s.fmin, s.fmax, s.mean, s.m2) = (f(), f(), f(), f());
    (s.isum, s.imin, s.imax) = (w.next_i128(), w.next_i128(), w.next_i128());
    let fsum = Neumaier::from_parts(sum, compensation);
    Node { level, index, value: StatsNode { stats: s, fsum } }
}
