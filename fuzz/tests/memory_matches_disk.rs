//! The fuzz targets parse in memory (`import::fuzz::parse_bytes`, `npy::read_header_from`,
//! `import::fuzz::store_meta`); an import reads files. This checks the two agree — the same edge
//! count or the same error, up to the folder in the paths — on every seed of every import target
//! and on mutants of each (cuts, flipped bytes, inserted tokens), so the fuzzing covers the code
//! an import runs.

use std::path::Path;

use sluice_fuzz::{datasets, seeds::seeds, targets};

/// Mutants of `seed`: itself, cuts at 8 points, a byte flipped at 8 points, each token of `dict`
/// inserted at 4 points.
fn mutants(seed: &[u8], dict: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = vec![seed.to_vec()];
    let points: Vec<usize> = (0..8).map(|i| seed.len() * i / 8).collect();
    for &p in &points {
        out.push(seed[..p].to_vec());
        if p < seed.len() {
            let mut m = seed.to_vec();
            m[p] ^= 0x5a;
            out.push(m);
        }
    }
    for token in dict {
        for &p in points.iter().step_by(2) {
            let mut m = seed[..p].to_vec();
            m.extend_from_slice(token);
            m.extend_from_slice(&seed[p..]);
            out.push(m);
        }
    }
    out
}

#[test]
fn in_memory_imports_agree_with_imports_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = targets::Ctx::new(dir.path().to_path_buf(), &datasets()).unwrap();
    let prefix = format!("{}/", dir.path().display());
    let (mut oks, mut errs) = (0, 0);
    for t in targets::TARGETS {
        let seeds = seeds(t.name, &datasets());
        if ctx.import_case(t.name, b"").is_none() {
            continue;
        }
        assert!(!seeds.is_empty(), "{}: no seeds", t.name);
        for data in seeds.iter().flat_map(|s| mutants(s, t.dict)) {
            let case = ctx.import_case(t.name, &data).unwrap();
            let memory = case.parse().map_err(|e| e.to_string());
            let disk = case.parse_on_disk(&ctx).map_err(|e| e.to_string().replace(&prefix, ""));
            assert_eq!(memory, disk, "{}: input {:?}", t.name, String::from_utf8_lossy(&data));
            match memory {
                Ok(_) => oks += 1,
                Err(_) => errs += 1,
            }
        }
    }
    // Both outcomes are exercised, not only rejections.
    assert!(oks > 50 && errs > 50, "{oks} accepted, {errs} rejected");
}

#[test]
fn in_memory_headers_and_meta_agree_with_files() {
    let dir = tempfile::tempdir().unwrap();
    let t = |name: &str| targets::TARGETS.iter().find(|t| t.name == name).unwrap();
    for data in seeds("npy", &datasets()).iter().flat_map(|s| mutants(s, t("npy").dict)) {
        let path = dir.path().join("x.npy");
        std::fs::write(&path, &data).unwrap();
        let disk = sluice_kernels::npy::read_header(&path).map_err(|e| e.to_string());
        let memory = sluice_kernels::npy::read_header_from(&path, &data[..], data.len() as u64)
            .map_err(|e| e.to_string());
        assert_eq!(memory, disk, "npy: input {:?}", String::from_utf8_lossy(&data));
    }
    for data in seeds("store-meta", &datasets()).iter().flat_map(|s| mutants(s, &[b"1"])) {
        std::fs::write(dir.path().join("meta.json"), &data).unwrap();
        let disk = sluice_graph::store::read_meta(dir.path()).map_err(|e| e.to_string());
        let memory = sluice_graph::import::fuzz::store_meta(&data).map_err(|e| {
            e.to_string().replace(
                "meta.json",
                &format!("{}", Path::new(dir.path()).join("meta.json").display()),
            )
        });
        assert_eq!(memory.map(|m| format!("{m:?}")), disk.map(|m| format!("{m:?}")));
    }
}
