//! `grep` over one shared file on every process of a BSP section (`dist` rules 1–3): each
//! process searches its stripe (delimited records: stripes start at record starts, so a record
//! that straddles a nominal boundary is searched once, whole; fixed records: stripes of whole
//! records), the counts are allgathered, and with listing the matches are gathered to rank 0
//! in rank order, which is global byte order.

use std::path::Path;

use serde::Serialize;
use sluice_bsp::Ctx;
use sluice_bsp::collectives::gather_varied;
use sluice_io::placement::{self, Piece};
use sluice_io::{Budget, Pipeline, Plan, RecordLayout, RunStats};

use super::exchange::{Words, agree, put};
use crate::Error;
use crate::grep::{GrepConfig, GrepKernel, RecordMatch};

/// What a distributed grep found, with the fields and key order of
/// [`GrepReport`](crate::GrepReport) less the listed matches (handed to the callback instead).
#[derive(Debug, Serialize)]
pub struct DistGrepReport {
    /// The figure asked for: matching records, or matches with `count_matches`.
    pub count: u64,
    /// `records` or `matches`: what `count` counts.
    pub counting: &'static str,
    /// Records with at least one match.
    pub records_matched: u64,
    /// Every match (only counted with `count_matches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches_total: Option<u64>,
    /// Statistics of this process's pass.
    pub run: RunStats,
}

/// Searches `path` on every process of `ctx`'s section (collective). Unless `config.count`,
/// `on_match` runs on rank 0 for every matching record in file order (offsets are file
/// offsets); every process returns the same counts.
pub fn grep<F>(
    ctx: &mut Ctx,
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    mut on_match: F,
) -> Result<DistGrepReport, Error>
where
    F: FnMut(&RecordMatch) -> Result<(), Error>,
{
    let (rank, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    let local = search(path, config, pipeline, budget, rank, p);
    let (payload, local) = match local {
        Ok(x) => {
            let mut words = Vec::new();
            put(&mut words, x.0);
            put(&mut words, x.1);
            (Ok(words), Some(x))
        }
        Err(e) => (Err(e), None),
    };
    let counts = agree(ctx, payload)?;
    let (_, _, found, run) = local.expect("agree returned Ok");
    let (mut records, mut matches) = (0, 0);
    for c in &counts {
        let mut w = Words(c);
        records += w.next();
        matches += w.next();
    }
    if !config.count {
        let mut bytes = Vec::new();
        for m in &found {
            put(&mut bytes, m.offset);
            put(&mut bytes, m.record.len() as u64);
            bytes.extend_from_slice(&m.record);
        }
        drop(found);
        let (all, _) = gather_varied(ctx, 0, &bytes)?;
        let mut rest = &all[..];
        while !rest.is_empty() {
            let mut w = Words(rest);
            let (offset, len) = (w.next(), w.next() as usize);
            let record = w.0[..len].to_vec();
            rest = &w.0[len..];
            // Selected lines only: distributed grep takes no context, line numbers or -o.
            let end = offset + record.len() as u64 + 1;
            let m = RecordMatch {
                offset,
                record,
                end,
                selected: true,
                line: 0,
                binary: false,
                spans: Vec::new(),
            };
            on_match(&m)?;
        }
    }
    Ok(DistGrepReport {
        count: if config.count_matches { matches } else { records },
        counting: if config.count_matches { "matches" } else { "records" },
        records_matched: records,
        matches_total: config.count_matches.then_some(matches),
        run,
    })
}

/// This process's stripe of `path`, searched: (records matched, matches, the matching records
/// with file offsets, the pass's figures).
fn search(
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    rank: usize,
    p: usize,
) -> Result<(u64, u64, Vec<RecordMatch>, RunStats), Error> {
    let kernel = GrepKernel::new(config, budget.clone())?;
    let layout = config.layout()?;
    let len = std::fs::metadata(path)
        .map_err(|source| Error::Io(sluice_io::Error::Open { path: path.to_path_buf(), source }))?
        .len();
    let piece = match layout {
        RecordLayout::Delimited(b) => placement::delimited_stripe(path, 0, len, b, rank, p)?,
        RecordLayout::Fixed(n) => {
            let n = n.get() as u64;
            let own = placement::balanced(len.div_ceil(n), rank, p);
            let (start, end) = ((own.start * n).min(len), (own.end * n).min(len));
            Piece { path: path.to_path_buf(), offset: start, len: end - start, first_read: 0 }
        }
    };
    let mut plan = Plan::new(layout);
    if piece.len > 0 {
        plan.push_extent(path, piece.offset, piece.len)?;
    }
    let (mut records, mut matches, mut found, mut held) = (0, 0, Vec::new(), Vec::new());
    let mut failed = None;
    let run = pipeline.run_ordered(&plan, &kernel, |partial| match partial {
        Ok(mut block) => {
            records += block.records;
            matches += block.matches;
            // Stream offsets count from the stripe's start; report file offsets.
            block.found.iter_mut().for_each(|m| m.offset += piece.offset);
            found.append(&mut block.found);
            held.push(block);
        }
        Err(e) => {
            failed.get_or_insert(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(Error::Listing { path: path.to_path_buf(), source: Box::new(e) });
    }
    Ok((records, matches, found, run))
}
