//! `sluice graph verify`: checks a whole store.

use std::io::Read;
use std::path::Path;

use crate::Error;
use crate::store::weights::{self, WEIGHT_BYTES};
use crate::store::{self, EDGE_BYTES, GridIndex, invariants};

/// What [`verify`] checked.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    /// Files whose length and CRC-32 matched `meta.json`.
    pub files: usize,
    /// Blocks whose CRC-32 matched the index.
    pub blocks: u64,
    /// Edges whose ids were checked to lie inside their partitions.
    pub edges: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// Checks `meta.json` (its own checksum and version), the length and CRC-32 of every file, every
/// block's CRC-32 (edges and weights), that every stored id lies inside its partition, that ids are strictly
/// increasing, the structural invariants of `store::invariants` (both rules: every vertex's
/// degrees are counted from the edges). The first fault is the error.
pub fn verify(dir: &Path) -> Result<VerifyReport, Error> {
    let meta = store::read_meta(dir)?;
    let mut report = VerifyReport { files: 0, blocks: 0, edges: 0, bytes: 0 };
    for (name, sum) in &meta.files {
        let path = dir.join(name);
        let got = store::file_sum(&path)?;
        if got.len != sum.len {
            return Err(Error::corrupt(
                &path,
                format!("{} bytes, meta.json says {}", got.len, sum.len),
            ));
        }
        if got.crc32 != sum.crc32 {
            return Err(Error::corrupt(
                &path,
                format!("checksum mismatch (stored {:08x}, computed {:08x})", sum.crc32, got.crc32),
            ));
        }
        report.files += 1;
        report.bytes += got.len;
    }
    let ids = store::u64s(&store::read_checked(dir, &meta, "ids.bin")?);
    if ids.len() as u64 != meta.num_vertices || ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::corrupt(dir.join("ids.bin"), "not |V| strictly increasing ids"));
    }
    let out_deg = store::u32s(&store::read_checked(dir, &meta, "out_degree.bin")?);
    let in_deg = store::u32s(&store::read_checked(dir, &meta, "in_degree.bin")?);
    let n = meta.num_vertices as usize;
    if out_deg.len() != n || in_deg.len() != n {
        return Err(Error::corrupt(dir, "vertex arrays do not have |V| entries"));
    }
    // Degrees counted from the forward grid's edges (invariants rule 2).
    let (mut out_count, mut in_count) = (vec![0u32; n], vec![0u32; n]);
    let mut indexes = Vec::new();
    let p = meta.partitions;
    let grids: &[&str] = if meta.directed { &["fwd", "rev"] } else { &["fwd"] };
    for g in grids {
        let iname = format!("{g}.index");
        // A part's grids hold different numbers of edges: each its listed file length (raw), or
        // what its index says (packed; the invariants check it).
        let listed = meta.files.get(&format!("{g}.edges")).map_or(meta.num_edges, |f| f.len);
        let edges = match meta.encoding {
            store::Encoding::Raw => Some(listed / EDGE_BYTES),
            store::Encoding::Packed => meta.part.is_none().then_some(meta.num_edges),
        };
        let index = GridIndex::decode(
            &dir.join(&iname),
            &store::read_checked(dir, &meta, &iname)?,
            (p, edges),
            meta.weighted,
            meta.encoding,
        )?;
        indexes.push(index.clone());
        let epath = dir.join(format!("{g}.edges"));
        let mut f = store::open_regular(&epath)?;
        let wpath = dir.join(format!("{g}.weights"));
        let mut wf = if meta.weighted { Some(store::open_regular(&wpath)?) } else { None };
        let (mut buf, mut wbuf) = (Vec::new(), Vec::new());
        for b in 0..(p * p) as usize {
            let (sp, dp) = ((b as u64) % p, (b as u64) / p);
            buf.resize(index.block_bytes(b) as usize, 0);
            f.read_exact(&mut buf).map_err(|e| Error::io(&epath, "read failed", e))?;
            if crc32fast::hash(&buf) != index.crcs[b] {
                return Err(Error::corrupt(
                    &epath,
                    format!("block ({sp}, {dp}) fails its checksum"),
                ));
            }
            if index.packed {
                let mut raw = Vec::new();
                store::packed::unpack_block(&buf, index.block_edges(b), &mut raw)
                    .map_err(|e| Error::corrupt(&epath, format!("block ({sp}, {dp}): {e}")))?;
                buf = raw;
            }
            let (slen, dlen) = (meta.partition_len(sp), meta.partition_len(dp));
            let mut prev = (0u32, 0u32);
            for e in buf.chunks_exact(4) {
                let s = u16::from_le_bytes([e[0], e[1]]) as u32;
                let d = u16::from_le_bytes([e[2], e[3]]) as u32;
                if s as u64 >= slen || d as u64 >= dlen || (d, s) < prev {
                    return Err(Error::corrupt(
                        &epath,
                        format!(
                            "block ({sp}, {dp}) holds an edge outside its partitions or out of order"
                        ),
                    ));
                }
                prev = (d, s);
                if *g == "fwd" {
                    let (s, d) = (
                        (sp * meta.partition_size) as usize + s as usize,
                        (dp * meta.partition_size) as usize + d as usize,
                    );
                    out_count[s] = out_count[s].saturating_add(1);
                    in_count[d] = in_count[d].saturating_add(1);
                }
            }
            if let Some(wf) = wf.as_mut() {
                wbuf.resize((index.block_edges(b) * WEIGHT_BYTES) as usize, 0);
                wf.read_exact(&mut wbuf).map_err(|e| Error::io(&wpath, "read failed", e))?;
                weights::verify_block(&wpath, &index, p as usize, b, &wbuf)?;
            }
            report.blocks += 1;
            report.edges += index.block_edges(b);
        }
    }
    let refs: Vec<&GridIndex> = indexes.iter().collect();
    invariants::check_open(dir, &meta, &ids, (&out_deg, &in_deg), &refs)?;
    if meta.part.is_none() {
        // A part holds one column stripe's edges: its counts cover only those columns.
        invariants::check_degrees(dir, (&out_deg, &in_deg), (&out_count, &in_count))?;
    }
    Ok(report)
}
