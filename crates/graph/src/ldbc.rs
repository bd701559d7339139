//! The LDBC Graphalytics driver: imports the graph a `.properties` file describes, runs every
//! algorithm it lists (`graph.<name>.algorithms`) with its parameters, writes each output in
//! LDBC's format to `<out_dir>/<name>-<ALG>`, and validates it against the reference
//! `<name>-<ALG>` beside the `.properties` file when there is one (`specs/graphalytics.md` §3).

use std::path::{Path, PathBuf};
use std::time::Instant;

use sluice_io::{Budget, Pipeline};

use crate::algo::{bfs, cdlp, lcc, pagerank, sssp, wcc};
use crate::import::{Format, ImportOptions, LdbcProperties, import};
use crate::output::{self, Values};
use crate::validate::{self, Algorithm, Report};
use crate::{Error, Graph};

/// One algorithm's run.
#[derive(Debug)]
pub struct Outcome {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Its parameters, as `key=value` words.
    pub parameters: String,
    /// Seconds the algorithm ran (output and validation excluded).
    pub seconds: f64,
    /// The output written.
    pub output: PathBuf,
    /// The reference compared with, if one exists.
    pub reference: Option<PathBuf>,
    /// The validation, if a reference exists.
    pub report: Option<Report>,
}

fn num<T: std::str::FromStr>(p: &LdbcProperties, key: &str) -> Result<T, Error> {
    let v = p.get(key)?;
    v.parse().map_err(|_| Error::Input {
        path: p.path.clone(),
        msg: format!("graph.{}.{key} = {v:?} is not a number", p.name),
    })
}

/// Runs the driver on `properties`, writing the store and the outputs in `out_dir`.
/// `pipeline` makes the block pipelines (one for the import, one for the runs).
pub fn run(
    properties: &Path,
    out_dir: &Path,
    pipeline: &dyn Fn() -> Result<Pipeline, Error>,
    budget: &Budget,
) -> Result<Vec<Outcome>, Error> {
    let props = LdbcProperties::read(properties)?;
    let algos: Vec<Algorithm> = props
        .get("algorithms")?
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            Algorithm::from_name(s).filter(|a| *a != Algorithm::Spmv).ok_or_else(|| Error::Input {
                path: props.path.clone(),
                msg: format!(
                    "graph.{}.algorithms lists {:?}, not an LDBC algorithm",
                    props.name,
                    s.trim()
                ),
            })
        })
        .collect::<Result<_, _>>()?;
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, "cannot create", e))?;
    let store = out_dir.join(format!("{}.grid", props.name));
    let mut opts = ImportOptions::new(Format::Ldbc);
    opts.force = true;
    import(&[properties.to_path_buf()], &store, &opts, &pipeline()?, budget)?;
    let g = Graph::open(&store, pipeline()?, budget.clone())?;
    let ids = g.original_ids();
    let mut outcomes = Vec::new();
    for alg in algos {
        let suffix = alg.name().to_ascii_uppercase();
        let out = out_dir.join(format!("{}-{suffix}", props.name));
        let t = Instant::now();
        let parameters = match alg {
            Algorithm::Bfs => {
                let src: u64 = num(&props, "bfs.source-vertex")?;
                let depth = bfs::bfs(&g, src)?;
                output::write(&out, ids, Values::U32 { values: &depth, unreached: i64::MAX })?;
                format!("source={src}")
            }
            Algorithm::Pr => {
                let (damping, iterations) =
                    (num(&props, "pr.damping-factor")?, num(&props, "pr.num-iterations")?);
                let r = pagerank::pagerank(
                    &g,
                    &pagerank::PageRankOptions { iterations, damping, tolerance: None },
                )?;
                output::write(&out, ids, Values::F64(&r.ranks))?;
                format!("damping={damping} iterations={iterations}")
            }
            Algorithm::Wcc => {
                output::write(&out, ids, Values::Label(&wcc::wcc(&g)?))?;
                String::new()
            }
            Algorithm::Cdlp => {
                let iterations = num(&props, "cdlp.max-iterations")?;
                output::write(&out, ids, Values::Label(&cdlp::cdlp(&g, iterations)?.labels))?;
                format!("iterations={iterations}")
            }
            Algorithm::Lcc => {
                output::write(&out, ids, Values::F64(&lcc::lcc(&g)?))?;
                String::new()
            }
            Algorithm::Sssp | Algorithm::Spmv => {
                let src: u64 = num(&props, "sssp.source-vertex")?;
                let dist = sssp::sssp(&g, src)?;
                output::write(&out, ids, Values::F64(&dist))?;
                format!("source={src}")
            }
        };
        let seconds = t.elapsed().as_secs_f64();
        let reference =
            Some(props.dir.join(format!("{}-{suffix}", props.name))).filter(|p| p.is_file());
        let report = reference.as_ref().map(|r| validate::validate(&out, r, alg)).transpose()?;
        outcomes.push(Outcome {
            algorithm: alg,
            parameters,
            seconds,
            output: out,
            reference,
            report,
        });
    }
    Ok(outcomes)
}
