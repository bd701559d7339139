//! Prints the `sluice bsp bench` table: `cargo run -p sluice-bsp --release --example bsp_bench --
//! [--quick|--tiny] [--p N]... [--json PATH] [--save-probe]`.
//!
//! `--save-probe` merges the measured g and ℓ into the probe table
//! (`$XDG_CACHE_HOME/sluice/bsp-probe.json`) that `probe` interpolates.

use sluice_bsp::bench::{self, BenchConfig};
use sluice_bsp::probe::CostTable;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut mode = "full".to_string();
    let mut ps: Vec<u32> = Vec::new();
    let mut json = None;
    let mut save_probe = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => mode = "quick".into(),
            "--tiny" => mode = "tiny".into(),
            "--p" => {
                ps.push(args.next().ok_or_else(|| anyhow::anyhow!("--p needs a value"))?.parse()?)
            }
            "--json" => {
                json = Some(args.next().ok_or_else(|| anyhow::anyhow!("--json needs a path"))?)
            }
            "--save-probe" => save_probe = true,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    if ps.is_empty() {
        ps.push(2);
    }
    let mut reports = Vec::new();
    for p in ps {
        let config = match mode.as_str() {
            "quick" => BenchConfig::quick(p),
            "tiny" => BenchConfig::tiny(p),
            _ => BenchConfig::full(p),
        };
        let report = bench::run(&config)?;
        println!("{}", report.table());
        reports.push(report);
    }
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&reports)?)?;
        println!("wrote {path}");
    }
    if save_probe {
        let path =
            CostTable::default_path().ok_or_else(|| anyhow::anyhow!("no cache directory"))?;
        let old = CostTable::load(&path).ok();
        bench::to_cost_table(&reports, old.as_ref()).save(&path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
