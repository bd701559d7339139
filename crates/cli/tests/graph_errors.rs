//! Bad input through the CLI (issue 3, "Bad input"): every case is a clear error with exit
//! status 2, never a panic or a wrong answer.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_testkit::assert_error;

const LDBC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/ldbc");

fn sluice<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(args: I) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("run sluice")
}

fn import_snap(dir: &Path, name: &str, text: &str, extra: &[&str]) -> (Output, PathBuf) {
    let input = dir.join(name);
    std::fs::write(&input, text).unwrap();
    let store = dir.join(format!("{name}.grid"));
    let mut args: Vec<String> = vec![
        "graph".into(),
        "import".into(),
        "--format".into(),
        "snap".into(),
        "--directed".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(input.to_string_lossy().into());
    args.push("-o".into());
    args.push(store.to_string_lossy().into());
    (sluice(&args), store)
}

#[test]
fn malformed_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (out, store) = import_snap(dir.path(), "bad.txt", "# c\n1 2\n2 x3\n", &[]);
    assert_error(&out, &["bad.txt:3", "bad vertex id"]);
    assert!(!store.exists());
    let (out, _) = import_snap(dir.path(), "short.txt", "1 2\n2\n", &[]);
    assert_error(&out, &["short.txt:2", "expected 2 fields"]);
}

#[test]
fn ids_wider_than_id_bytes_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = import_snap(dir.path(), "wide.txt", "1 2\n2 5000000000\n", &["--id-bytes", "4"]);
    assert_error(&out, &["wide.txt:2", "does not fit in 4 bytes"]);
    let (out, _) = import_snap(dir.path(), "huge.txt", "1 99999999999999999999999\n", &[]);
    assert_error(&out, &["huge.txt:1", "does not fit in 8 bytes"]);
    // A binary file whose length is not a multiple of the record.
    let bin = dir.path().join("odd.bin");
    std::fs::write(&bin, [1u8, 0, 0, 0, 2, 0, 0, 0, 7]).unwrap();
    let out = sluice([
        "graph",
        "import",
        "--format",
        "bin",
        bin.to_str().unwrap(),
        "-o",
        dir.path().join("odd.grid").to_str().unwrap(),
    ]);
    assert_error(&out, &["odd.bin", "multiple of the 8-byte record"]);
}

#[test]
fn nan_and_negative_weights_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = import_snap(dir.path(), "nan.txt", "1 2 0.5\n2 3 NaN\n", &[]);
    assert_error(&out, &["nan.txt:2", "weight"]);
    let (out, _) = import_snap(dir.path(), "neg.txt", "1 2 0.5\n2 3 1\n3 1 -2.5\n", &[]);
    assert_error(&out, &["neg.txt:3", "weight -2.5"]);
    let bin = dir.path().join("w.bin");
    let mut rec = Vec::new();
    for (s, d, w) in [(1u32, 2u32, 1.0f32), (2, 3, f32::NAN)] {
        rec.extend_from_slice(&s.to_le_bytes());
        rec.extend_from_slice(&d.to_le_bytes());
        rec.extend_from_slice(&w.to_le_bytes());
    }
    std::fs::write(&bin, rec).unwrap();
    let out = sluice([
        "graph",
        "import",
        "--format",
        "bin",
        "--weight",
        "f32",
        bin.to_str().unwrap(),
        "-o",
        dir.path().join("w.grid").to_str().unwrap(),
    ]);
    assert_error(&out, &["w.bin: record 1", "weight"]);
}

#[test]
fn empty_graph_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = import_snap(dir.path(), "empty.txt", "# nothing\n", &[]);
    assert_error(&out, &["empty graph"]);
    let left: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}

#[test]
fn missing_properties_key_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.v"), "1\n2\n").unwrap();
    std::fs::write(dir.path().join("g.e"), "1 2\n").unwrap();
    let props = dir.path().join("g.properties");
    std::fs::write(&props, "graph.g.vertex-file = g.v\ngraph.g.edge-file = g.e\n").unwrap();
    let out = sluice([
        "graph",
        "import",
        "--format",
        "ldbc",
        props.to_str().unwrap(),
        "-o",
        dir.path().join("g.grid").to_str().unwrap(),
    ]);
    assert_error(&out, &["missing key graph.g.directed"]);
    // An edge naming a vertex the .v file lacks.
    std::fs::write(
        &props,
        "graph.g.vertex-file = g.v\ngraph.g.edge-file = g.e\ngraph.g.directed = true\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("g.e"), "1 2\n2 3\n").unwrap();
    let out = sluice([
        "graph",
        "import",
        "--format",
        "ldbc",
        props.to_str().unwrap(),
        "-o",
        dir.path().join("g.grid").to_str().unwrap(),
    ]);
    assert_error(&out, &["g.e:2", "vertex 3 is not in the vertex file"]);
}

#[test]
fn source_that_is_not_a_vertex_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, store) = import_snap(dir.path(), "g.txt", "1 2\n", &[]);
    assert!(out.status.success());
    let out = sluice(["graph", "bfs", store.to_str().unwrap(), "--source", "7"]);
    assert_error(&out, &["vertex 7 is not in the graph"]);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_flipped_byte_in_any_store_file_is_an_error_never_a_wrong_answer() {
    let props = PathBuf::from(LDBC).join("example-directed/example-directed.properties");
    if !props.is_file() {
        println!("skipping: {} not found", props.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("clean.grid");
    let out = sluice([
        "graph",
        "import",
        "--format",
        "ldbc",
        props.to_str().unwrap(),
        "-o",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(sluice(["graph", "verify", store.to_str().unwrap()]).status.success());
    let clean = |alg: &str, s: &Path| -> Output {
        let o = dir.path().join(format!("{alg}.out"));
        let _ = std::fs::remove_file(&o);
        let mut out = sluice(["graph", alg, s.to_str().unwrap(), "-o", o.to_str().unwrap()]);
        if out.status.success() {
            out.stdout = std::fs::read(&o).unwrap();
        }
        out
    };
    let reference: Vec<Vec<u8>> =
        ["pagerank", "wcc"].iter().map(|a| clean(a, &store).stdout).collect();
    let bad = dir.path().join("bad.grid");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&store).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut cases = 0;
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len() as usize;
        let step = (len / 5).max(1);
        for pos in (0..len).step_by(step).chain([len - 1]) {
            let _ = std::fs::remove_dir_all(&bad);
            copy_dir(&store, &bad);
            let target = bad.join(f.file_name().unwrap());
            let mut bytes = std::fs::read(&target).unwrap();
            bytes[pos] ^= 0xff;
            std::fs::write(&target, &bytes).unwrap();
            let what = format!("{} byte {pos}", f.file_name().unwrap().to_string_lossy());
            let v = sluice(["graph", "verify", bad.to_str().unwrap()]);
            assert_eq!(v.status.code(), Some(2), "verify accepted {what}");
            assert_error(&v, &[]);
            for (alg, want) in ["pagerank", "wcc"].iter().zip(&reference) {
                let out = clean(alg, &bad);
                if out.status.success() {
                    // Only files the algorithm never reads may be corrupt here (weights, say).
                    assert_eq!(&out.stdout, want, "{alg} gave a different answer with {what}");
                } else {
                    assert_error(&out, &[]);
                }
            }
            cases += 1;
        }
    }
    assert!(cases > 40);
}

#[test]
fn a_store_of_another_format_version_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, store) = import_snap(dir.path(), "g.txt", "1 2\n", &[]);
    assert!(out.status.success());
    let meta = store.join("meta.json");
    let text = std::fs::read_to_string(&meta)
        .unwrap()
        .replace("\"format_version\": 1", "\"format_version\": 2");
    std::fs::write(&meta, text).unwrap();
    for cmd in [vec!["graph", "info"], vec!["graph", "verify"], vec!["graph", "wcc"]] {
        let mut args = cmd.clone();
        args.push(store.to_str().unwrap());
        assert_error(&sluice(&args), &["format version 2", "reads version 1"]);
    }
}

#[test]
fn existing_output_is_not_overwritten_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = import_snap(dir.path(), "g.txt", "1 2\n", &[]);
    assert!(out.status.success());
    let (out, _) = import_snap(dir.path(), "g.txt", "1 2\n", &[]);
    assert_error(&out, &["exists"]);
    let (out, _) = import_snap(dir.path(), "g.txt", "1 2\n", &["--force"]);
    assert!(out.status.success());
}

#[test]
fn interrupted_import_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("k.bin");
    let out = sluice(["graph", "gen", "--scale", "16", "-o", bin.to_str().unwrap()]);
    assert!(out.status.success());
    let store = dir.path().join("k.grid");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "graph",
            "import",
            "--format",
            "bin",
            bin.to_str().unwrap(),
            "-o",
            store.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?} (status {status:?})");
    // Either the signal arrived (no store) or the import had finished (a whole store).
    assert_eq!(store.exists(), status.success());
}
