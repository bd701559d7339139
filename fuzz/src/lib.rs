//! The fuzz targets of Sluice's input parsers (issue 17, "the campaign"), shared by two drivers:
//! the stable, coverage-free mutator `sluice-fuzz` (`src/main.rs`) and the libFuzzer targets of
//! `fuzz/libfuzzer` (nightly, `cargo fuzz`), which call [`run`] from `fuzz_target!`.
//!
//! ```text
//! targets   one function per parser, the target table, the scratch context
//! seeds     seed inputs from ../shared/datasets and hand-made valid ones
//! ```

#![warn(missing_docs)]

pub mod seeds;
pub mod targets;

use std::path::PathBuf;
use std::sync::OnceLock;

/// The scratch context of this process's libFuzzer runs: a directory on `/dev/shm` where it
/// exists (the parsers read files: memory-backed files keep an execution in-process and fast).
fn ctx() -> &'static targets::Ctx {
    static CTX: OnceLock<(tempfile::TempDir, targets::Ctx)> = OnceLock::new();
    let (_, ctx) = CTX.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        let dir = match shm.is_dir() {
            true => tempfile::tempdir_in(shm),
            false => tempfile::tempdir(),
        }
        .expect("a scratch directory");
        let ctx = targets::Ctx::new(dir.path().to_path_buf(), &datasets()).expect("fuzz context");
        (dir, ctx)
    });
    ctx
}

/// The datasets folder the seeds come from: `$SLUICE_DATASETS`, else `../shared/datasets`
/// beside the repository.
pub fn datasets() -> PathBuf {
    std::env::var_os("SLUICE_DATASETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/datasets")),
        PathBuf::from,
    )
}

/// Writes target `name`'s seeds into `dir` (a libFuzzer corpus folder), one file each.
pub fn write_seeds(name: &str, dir: &std::path::Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let seeds = seeds::seeds(name, &datasets());
    for (i, s) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:04}")), s)?;
    }
    Ok(seeds.len())
}

/// Writes target `name`'s tokens as a libFuzzer dictionary (`-dict=FILE`): one quoted token a
/// line, bytes outside printable ASCII as `\xNN`.
pub fn write_dict(name: &str, file: &std::path::Path) -> std::io::Result<()> {
    let t = targets::TARGETS.iter().find(|t| t.name == name).expect("a fuzz target of that name");
    let mut text = String::new();
    for token in t.dict {
        text.push('"');
        for &b in *token {
            match b {
                b'"' | b'\\' => text.push_str(&format!("\\x{b:02x}")),
                0x20..=0x7e => text.push(b as char),
                _ => text.push_str(&format!("\\x{b:02x}")),
            }
        }
        text.push_str("\"\n");
    }
    std::fs::write(file, text)
}

/// Runs target `name` on `data` once: an `Err` is the parser rejecting the input (a pass); a
/// panic is a crash, left to unwind into the driver (libFuzzer aborts on it and saves the input).
pub fn run(name: &str, data: &[u8]) {
    let t = targets::TARGETS.iter().find(|t| t.name == name).expect("a fuzz target of that name");
    if data.len() <= t.max_len {
        let _ = (t.run)(ctx(), data);
    }
}
