//! The reverse grid of a directed graph, built from the forward grid just written (see the
//! parent module): block (sp, dp) of `rev` is block (dp, sp) of `fwd` turned round, read back by
//! row-group extents and checked block by block.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use sluice_io::Budget;

use super::sink::{Batch, GridSink, write_behind};
use super::{Degrees, GridWritten, block_out, prepare_columns, read_ahead};
use crate::Error;
use crate::store::{self, Encoding, GridIndex, Meta, packed};

/// Builds the reverse grid `rev` of a directed graph in `dir` from its forward grid `fwd.*`,
/// just written there with index `fwd` (see the module docs): one row group of `fwd` (a column
/// group of `rev`) at a time, read back by extents and checked block by block. Fills `degrees`
/// (the out-degrees) when given; stops with `Cancelled` once `cancelled` says so.
pub(in crate::import) fn write_reverse(
    dir: &Path,
    fwd: &GridIndex,
    meta: &Meta,
    cols_per_group: u64,
    mut degrees: Option<Degrees<'_>>,
    budget: &Budget,
    cancelled: &dyn Fn() -> bool,
) -> Result<GridWritten, Error> {
    let (p, psize, weighted) = (meta.partitions, meta.partition_size, meta.weighted);
    let packed = meta.encoding == Encoding::Packed;
    let (epath, wpath) = (dir.join("fwd.edges"), dir.join("fwd.weights"));
    let open = |path: &Path| File::open(path).map_err(|e| Error::io(path, "cannot read back", e));
    let ef = open(&epath)?;
    let wf = if weighted { Some(open(&wpath)?) } else { None };
    let sink = GridSink::create(dir, "rev", meta)?;
    let sink = write_behind(sink, budget, |feed| {
        for (g, s0) in (0..p).step_by(cols_per_group as usize).enumerate() {
            if cancelled() {
                return Err(Error::from(sluice_io::Error::Cancelled));
            }
            let s1 = (s0 + cols_per_group).min(p);
            let cols = (s1 - s0) as usize;
            if s1 < p {
                // The next row group's extents, read ahead while this one is turned round.
                let s2 = (s1 + cols_per_group).min(p);
                let at = |dp: u64, sp: u64| fwd.bytes[(dp * p + sp) as usize];
                let next: Vec<(u64, u64)> =
                    (0..p).map(|dp| (at(dp, s1), at(dp, s2) - at(dp, s1))).collect();
                read_ahead(&epath, &next);
            }
            // Row `dp`'s blocks (dp, s0 .. s1) of `fwd` are one extent of each file.
            let extent = |dp: u64| ((dp * p + s0) as usize, (dp * p + s1) as usize);
            let ext = |dp: u64, at: &[u64]| at[extent(dp).1] - at[extent(dp).0];
            let ebytes: u64 = (0..p).map(|dp| ext(dp, &fwd.bytes)).sum();
            let edges: u64 = (0..p).map(|dp| ext(dp, &fwd.offsets)).sum();
            // The extents and the weights as values; then the blocks as stored (at most 4 bytes
            // per edge and one frame per block) and their weights, held until written. A task's
            // sort buffers hold one block.
            let reading = feed.reserve(
                &format!("turning row group {g} of the fwd grid round"),
                ebytes + edges * if weighted { 16 } else { 0 },
            )?;
            let frames = if packed { cols as u64 * p * packed::FRAME_BYTES as u64 } else { 0 };
            let stored = feed.reserve(
                &format!("row group {g} of the fwd grid turned round"),
                edges * if weighted { 12 } else { 4 } + frames,
            )?;
            let mut data = vec![0u8; ebytes as usize];
            let mut wdata = vec![0u8; if weighted { edges as usize * 8 } else { 0 }];
            let (mut at, mut wat) = (0usize, 0usize);
            for dp in 0..p {
                let (lo, len) = (fwd.bytes[extent(dp).0], ext(dp, &fwd.bytes) as usize);
                ef.read_exact_at(&mut data[at..at + len], lo)
                    .map_err(|e| Error::io(&epath, "cannot read back", e))?;
                at += len;
                if let Some(wf) = &wf {
                    let (lo, len) =
                        (fwd.offsets[extent(dp).0] * 8, ext(dp, &fwd.offsets) as usize * 8);
                    wf.read_exact_at(&mut wdata[wat..wat + len], lo)
                        .map_err(|e| Error::io(&wpath, "cannot read back", e))?;
                    wat += len;
                }
            }
            // Where block (dp, sp) of `fwd` lies in `data` (and its weights in `wdata`).
            let mut row_at = Vec::with_capacity(p as usize);
            let (mut at, mut wat) = (0u64, 0u64);
            for dp in 0..p {
                row_at.push((at, wat));
                at += ext(dp, &fwd.bytes);
                wat += ext(dp, &fwd.offsets) * 8;
            }
            let block_of = |dp: u64, sp: u64| -> (usize, &[u8], &[u8]) {
                let b = (dp * p + sp) as usize;
                let first = extent(dp).0;
                let lo = (row_at[dp as usize].0 + fwd.bytes[b] - fwd.bytes[first]) as usize;
                let len = (fwd.bytes[b + 1] - fwd.bytes[b]) as usize;
                let weights = match weighted {
                    true => {
                        let wlo = row_at[dp as usize].1 + (fwd.offsets[b] - fwd.offsets[first]) * 8;
                        let wlen = (fwd.offsets[b + 1] - fwd.offsets[b]) * 8;
                        &wdata[wlo as usize..(wlo + wlen) as usize]
                    }
                    false => &[][..],
                };
                (b, &data[lo..lo + len], weights)
            };
            let blocks = prepare_columns(
                &mut degrees,
                (s0, cols),
                (p, psize),
                |turn: &mut Turn, c, dp, deg| {
                    let (b, bytes, wbytes) = block_of(dp, s0 + c as u64);
                    turn.load(fwd, (b, p as usize), (bytes, wbytes), (&epath, &wpath))?;
                    turn.sort();
                    let out =
                        block_out(&turn.keys, &turn.weights, packed, dp == s0 + c as u64, deg)?;
                    Ok((turn.keys.len() as u64, out))
                },
            )?;
            drop((data, wdata, reading));
            feed.send(Batch { blocks, _held: stored })?;
        }
        Ok(())
    })?;
    sink.finish(dir, "rev")
}

/// One forward block turned round, with the buffers reused from block to block.
#[derive(Debug, Default)]
struct Turn {
    keys: Vec<u32>,
    weights: Vec<f64>,
    tmp_keys: Vec<u32>,
    tmp_weights: Vec<f64>,
    raw: Vec<u8>,
}

impl Turn {
    /// Checks block `b` of `fwd` (`bytes`, and `wbytes` its weights) against the index and
    /// loads its edges turned round: keys `s << 16 | d`, in `fwd`'s order.
    fn load(
        &mut self,
        fwd: &GridIndex,
        (b, p): (usize, usize),
        (bytes, wbytes): (&[u8], &[u8]),
        (epath, wpath): (&Path, &Path),
    ) -> Result<(), Error> {
        let corrupt = |path: &Path, what: &str| {
            Error::corrupt(
                path,
                format!("block ({}, {}) {what} after it was written", b % p, b / p),
            )
        };
        if crc32fast::hash(bytes) != fwd.crcs[b] {
            return Err(corrupt(epath, "fails its checksum"));
        }
        let edges = fwd.offsets[b + 1] - fwd.offsets[b];
        let raw = match fwd.packed {
            true => {
                self.raw.clear();
                packed::unpack_block(bytes, edges, &mut self.raw)
                    .map_err(|e| corrupt(epath, &format!("does not decode ({e})")))?;
                &self.raw[..]
            }
            false => bytes,
        };
        if raw.len() as u64 != edges * 4 {
            return Err(corrupt(epath, "has the wrong length"));
        }
        // Stored edges are `s`, `d` as u16 LE: the u32 LE is the key `d << 16 | s`.
        self.keys.clear();
        self.keys.extend(
            raw.chunks_exact(4)
                .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]).rotate_left(16)),
        );
        self.weights.clear();
        if !fwd.weight_crcs.is_empty() {
            if store::weights::block_sum(wbytes) != fwd.weight_crcs[b] {
                return Err(corrupt(wpath, "fails its checksum"));
            }
            self.weights.extend(
                wbytes
                    .chunks_exact(8)
                    .map(|w| f64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])),
            );
        }
        Ok(())
    }

    /// Sorts the keys (weights beside them) stably by their high 16 bits, the new `d`: with
    /// `fwd`'s order (d, s, weight) kept among equal ones, that is the order (s, d, weight).
    /// Two counting passes of 8 bits each.
    fn sort(&mut self) {
        let n = self.keys.len();
        let weighted = !self.weights.is_empty();
        for shift in [16, 24] {
            let mut count = [0usize; 256];
            for &k in &self.keys {
                count[(k >> shift) as usize & 0xff] += 1;
            }
            if count.contains(&n) {
                continue; // one digit value: the pass would not move anything
            }
            let mut at = 0;
            for c in count.iter_mut() {
                (*c, at) = (at, at + *c);
            }
            self.tmp_keys.resize(n, 0);
            if weighted {
                self.tmp_weights.resize(n, 0.0);
            }
            for (i, &k) in self.keys.iter().enumerate() {
                let slot = &mut count[(k >> shift) as usize & 0xff];
                self.tmp_keys[*slot] = k;
                if weighted {
                    self.tmp_weights[*slot] = self.weights[i];
                }
                *slot += 1;
            }
            std::mem::swap(&mut self.keys, &mut self.tmp_keys);
            if weighted {
                std::mem::swap(&mut self.weights, &mut self.tmp_weights);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::keys;
    use super::*;

    /// A forward block turned round equals the same edges sorted afresh by (s, d, weight):
    /// the stable sort keeps `fwd`'s (d, s, weight) order among equal keys.
    #[test]
    fn a_turned_block_is_in_reverse_order_with_its_weights() {
        for (n, mask) in [(0, !0), (1, !0), (3000, !0), (3000, 0x00ff_00ff), (3000, 0xffff)] {
            let mut fwd: Vec<(u32, f64)> = keys(n, 9, mask)
                .into_iter()
                .enumerate()
                .map(|(i, k)| (k, ((i * 7919) % 13) as f64))
                .collect();
            fwd.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let mut turn = Turn {
                keys: fwd.iter().map(|e| e.0.rotate_left(16)).collect(),
                weights: fwd.iter().map(|e| e.1).collect(),
                ..Turn::default()
            };
            turn.sort();
            let mut want: Vec<(u32, f64)> =
                fwd.iter().map(|e| (e.0.rotate_left(16), e.1)).collect();
            want.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let got: Vec<(u32, f64)> = turn.keys.into_iter().zip(turn.weights).collect();
            assert_eq!(got, want, "n {n}, mask {mask:#x}");
        }
    }

    /// A forward block read back with bytes that are not those written is refused, naming the
    /// file and the block; a packed block that does not decode too.
    #[test]
    fn a_block_read_back_is_checked() {
        let edges: Vec<u8> =
            [0x0002_0001u32, 0x0002_0003].iter().flat_map(|k| k.to_le_bytes()).collect();
        let index = |bytes: &[u8], packed: bool| GridIndex {
            offsets: vec![0, 2],
            bytes: vec![0, bytes.len() as u64],
            packed,
            crcs: vec![crc32fast::hash(bytes)],
            weight_crcs: Vec::new(),
        };
        let paths = (Path::new("fwd.edges"), Path::new("fwd.weights"));
        let mut turn = Turn::default();
        turn.load(&index(&edges, false), (0, 1), (&edges, &[]), paths).unwrap();
        assert_eq!(turn.keys, [0x0001_0002, 0x0003_0002]);
        let mut bad = edges.clone();
        bad[5] ^= 1;
        let e = turn.load(&index(&edges, false), (0, 1), (&bad, &[]), paths).unwrap_err();
        assert!(
            e.to_string().contains("fwd.edges") && e.to_string().contains("block (0, 0)"),
            "{e}"
        );
        // Matching checksum, but a frame too short to be one.
        let e = turn.load(&index(&edges, true), (0, 1), (&edges, &[]), paths).unwrap_err();
        assert!(e.to_string().contains("does not decode"), "{e}");
    }
}
