//! Output safety, interruption and argument checks through the CLI (issue 17): nothing lost,
//! nothing half-written, nothing silently wrong. Each test reproduces one defect of the issue.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sluice")
}

fn sluice<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(args: I) -> Output {
    Command::new(bin()).args(args).output().expect("run sluice")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Names in `dir` that look like a Sluice temporary or leftover.
fn temps(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-") || n.contains(".old-"))
        .collect()
}

fn gen_file(path: &Path, scale: u32, seed: u32) {
    let out = sluice(
        ["graph", "gen", "--scale", &scale.to_string(), "--seed", &seed.to_string()]
            .into_iter()
            .map(String::from)
            .chain(["-o".into(), s(path).into()]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

fn import(input: &Path, store: &Path, force: bool) -> Command {
    let mut c = Command::new(bin());
    c.args(["graph", "import", "--format", "bin", "--undirected", s(input), "-o", s(store)]);
    if force {
        c.arg("--force");
    }
    c
}

// Defect 1: a symlink named by -o keeps being a link; the file it points to gets the data.
#[test]
fn output_through_a_symlink_writes_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.bin");
    gen_file(&plain, 6, 3);
    let target = dir.path().join("target.bin");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.bin");
    symlink(&target, &link).unwrap();
    gen_file(&link, 6, 3);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "link replaced");
    assert_eq!(std::fs::read(&target).unwrap(), std::fs::read(&plain).unwrap());
    assert!(temps(dir.path()).is_empty());
}

// Defect 1: a replaced file keeps its permissions (0600 stayed 0600).
#[test]
fn replaced_output_keeps_its_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("secret.bin");
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    gen_file(&target, 5, 1);
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    assert!(std::fs::metadata(&target).unwrap().len() > 3);
}

// Defect 1: `-o` naming a link to /dev/stdout writes to the process's stdout (here a file) and
// replaces neither the link nor anything under /dev.
#[test]
fn output_to_a_link_to_dev_stdout_goes_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.bin");
    gen_file(&plain, 5, 2);
    let link = dir.path().join("to-stdout");
    symlink("/dev/stdout", &link).unwrap();
    let captured = dir.path().join("captured.bin");
    let file = std::fs::File::create(&captured).unwrap();
    let out = Command::new(bin())
        .args(["graph", "gen", "--scale", "5", "--seed", "2", "-o", s(&link)])
        .stdout(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "link replaced");
    assert_eq!(std::fs::read(&captured).unwrap(), std::fs::read(&plain).unwrap());
}

// Defect 4: `gen -o -` writes the edges and nothing else to stdout.
#[test]
fn gen_to_stdout_writes_only_data() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.bin");
    gen_file(&plain, 6, 5);
    let out = sluice(["graph", "gen", "--scale", "6", "--seed", "5", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, std::fs::read(&plain).unwrap());
    assert!(stderr(&out).contains("wrote"), "the summary goes to stderr: {}", stderr(&out));
}

// Smaller: broken pipe is handled as everywhere else (the reader stopped: success, no temp).
#[test]
fn gen_into_a_closed_pipe_is_handled_like_every_command() {
    let mut child = Command::new(bin())
        .args(["graph", "gen", "--scale", "16", "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let info = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' graph gen --scale 4 -o - --json | true", bin()))
        .status()
        .unwrap();
    assert!(info.success());
    assert!(out.status.success(), "status {:?}: {}", out.status, stderr(&out));
}

// Smaller: output to a closed stdout is an error, not lost with exit 0.
#[test]
fn closed_stdout_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin");
    gen_file(&input, 4, 1);
    let store = dir.path().join("g.grid");
    assert!(import(&input, &store, false).output().unwrap().status.success());
    for args in [
        format!("graph info '{}'", s(&store)),
        "graph gen --scale 4 -o -".to_string(),
        format!("graph gen --scale 4 -o '{}'", s(&dir.path().join("x.bin"))),
    ] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("exec '{}' {args} >&-", bin()))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args}: {}", stderr(&out));
        assert!(stderr(&out).contains("stdout"), "{args}: {}", stderr(&out));
    }
}

// ... but a `/dev/null` the caller opened read-write on purpose (Python's `subprocess.DEVNULL`,
// daemons) is a stdout like any other: it was once mistaken for a closed one and refused.
#[test]
fn dev_null_opened_read_write_is_not_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("x.bin");
    let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").unwrap();
    let out = Command::new(bin())
        .args(["graph", "gen", "--scale", "4", "-o", s(&out_file)])
        .stdin(Stdio::null())
        .stdout(null)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // 16 edges per vertex, two u32 ids each: the file is whole.
    assert_eq!(std::fs::metadata(&out_file).unwrap().len(), 16 * 16 * 8);
}

/// The sorted file list and meta.json of a store, or None when it is not a whole store.
fn whole_store(store: &Path) -> Option<String> {
    let out = sluice(["graph", "verify", s(store)]);
    out.status.success().then(|| std::fs::read_to_string(store.join("meta.json")).unwrap())
}

// Defect 6: `import --force` interrupted at any point leaves the old store or the new one,
// whole, and exits 130/143 when the signal arrived before the end.
#[test]
fn interrupted_forced_import_leaves_one_whole_store() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
    gen_file(&a, 12, 1);
    gen_file(&b, 12, 2);
    let store = dir.path().join("g.grid");
    assert!(import(&a, &store, false).output().unwrap().status.success());
    let meta_a = whole_store(&store).expect("first store");
    let probe = std::time::Instant::now();
    assert!(import(&b, &store, true).output().unwrap().status.success());
    let full = probe.elapsed();
    let meta_b = whole_store(&store).expect("second store");
    let mut interrupted = 0;
    for i in 0..10u32 {
        let (input, from, to) =
            if i % 2 == 0 { (&a, &meta_b, &meta_a) } else { (&b, &meta_a, &meta_b) };
        let child = import(input, &store, true)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(full.mul_f64(f64::from(i) / 10.0 + 0.05));
        let sig = if i % 3 == 0 { "-TERM" } else { "-INT" };
        let _ = Command::new("kill").args([sig, &child.id().to_string()]).status();
        let out = child.wait_with_output().unwrap();
        let now = whole_store(&store);
        match out.status.code() {
            Some(0) => assert_eq!(now.as_ref(), Some(to), "run {i}: exit 0 but not the new store"),
            Some(130) | Some(143) => {
                interrupted += 1;
                assert!(
                    now.as_ref() == Some(from) || now.as_ref() == Some(to),
                    "run {i}: store not whole"
                );
                if now.as_ref() != Some(to) {
                    // Rerun so the next round starts from `to`.
                    assert!(import(input, &store, true).output().unwrap().status.success());
                }
            }
            // Killed by the signal itself: it came before `main` installed the handler (the
            // first thing `main` does), so nothing was touched yet: the old store, whole.
            None => assert_eq!(now.as_ref(), Some(from), "run {i}: killed, and the store changed"),
            other => panic!("run {i}: status {other:?}: {}", stderr(&out)),
        }
        assert!(temps(dir.path()).is_empty(), "run {i}: left {:?}", temps(dir.path()));
    }
    assert!(interrupted > 0, "no run was interrupted");
}

// Defect 7: --force never deletes a directory that is not a Sluice store.
#[test]
fn force_refuses_a_directory_that_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin");
    gen_file(&input, 4, 1);
    let other = dir.path().join("precious");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("meta.json"), "{\"mine\": true}").unwrap();
    std::fs::write(other.join("data.txt"), "keep me").unwrap();
    let out = import(&input, &other, true).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a grid store"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(other.join("data.txt")).unwrap(), "keep me");
}

// Defect 7: an import into a target another import holds is refused, not raced.
#[test]
fn import_into_a_locked_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin");
    gen_file(&input, 4, 1);
    let store = dir.path().join("g.grid");
    // util-linux flock(1) holds the lock while its command runs (File::lock needs Rust 1.89).
    let mut holder = Command::new("flock")
        .arg(dir.path().join(".g.grid.lock"))
        .args(["-c", "echo locked; sleep 30"])
        .process_group(0)
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock(1)");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let out = import(&input, &store, false).output().unwrap();
    // The whole group: the shell and sleep inherited the locked descriptor. `--` is needed:
    // without it procps kill(1) takes `-PID` for something else, kills nothing, and the test
    // waited out the 30 s sleep.
    let group = format!("-{}", holder.id());
    let killed = Command::new("kill").args(["-KILL", "--", &group]).status().unwrap();
    assert!(killed.success(), "kill -KILL -- {group}: {killed}");
    holder.wait().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("another"), "{}", stderr(&out));
    assert!(!store.exists());
    assert!(import(&input, &store, false).output().unwrap().status.success());
}

// Defect 8: gen interrupted removes its temporary file and says so truthfully (130 / 143).
#[test]
fn interrupted_gen_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("big.bin");
    for (sig, code) in [("-INT", 130), ("-TERM", 143)] {
        let child = Command::new(bin())
            .args(["graph", "gen", "--scale", "22", "-o", s(&target)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        let _ = Command::new("kill").args([sig, &child.id().to_string()]).status();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        assert!(temps(dir.path()).is_empty(), "left {:?}", temps(dir.path()));
        assert!(!target.exists());
    }
}

// Defect 8: the leftovers of a killed run (a dead process's temp) are removed by the next run on
// the same target; a live process's temp and unrelated files are not touched.
#[test]
fn leftovers_of_a_killed_run_are_cleaned_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.bin");
    let dead = dir.path().join(".out.bin.tmp-4000000");
    let live = dir.path().join(format!(".out.bin.tmp-{}", std::process::id()));
    let other = dir.path().join(".other.bin.tmp-4000000");
    for p in [&dead, &live, &other] {
        std::fs::write(p, "partial").unwrap();
    }
    gen_file(&target, 4, 1);
    assert!(!dead.exists(), "dead run's temp kept");
    assert!(live.exists() && other.exists());
    // A killed import's staging directory and aside copy.
    let input = target;
    let store = dir.path().join("g.grid");
    let stage = dir.path().join(".g.grid.tmp-4000001");
    std::fs::create_dir(&stage).unwrap();
    std::fs::write(stage.join("fwd.edges"), "partial").unwrap();
    assert!(import(&input, &store, false).output().unwrap().status.success());
    assert!(!stage.exists(), "dead import's staging directory kept");
}

// Defect 8: `ulimit -f` (SIGXFSZ) is an error with the temp file removed.
#[test]
fn file_size_limit_is_an_error_without_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("big.bin");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -f 64; exec '{}' graph gen --scale 16 -o '{}'", bin(), s(&target)))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(temps(dir.path()).is_empty(), "left {:?}", temps(dir.path()));
    assert!(!target.exists());
}

// Defect 14: a budget larger than the machine, or absurd, is refused with the numbers.
#[test]
fn memory_beyond_the_machine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin");
    gen_file(&input, 4, 1);
    for size in ["16777216T", "1000000T", "64P"] {
        let out = sluice(
            ["graph", "import", "--format", "bin", s(&input), "-o"]
                .into_iter()
                .map(String::from)
                .chain([s(&dir.path().join("g.grid")).to_string(), "--memory".into(), size.into()]),
        );
        assert_eq!(out.status.code(), Some(2), "{size}: {}", stderr(&out));
        assert!(stderr(&out).contains("--memory"), "{size}: {}", stderr(&out));
    }
    let out = sluice(
        ["graph", "import", "--format", "bin", s(&input), "-o"]
            .into_iter()
            .map(String::from)
            .chain([
                s(&dir.path().join("g.grid")).to_string(),
                "--memory".into(),
                "1000000T".into(),
            ]),
    );
    assert!(stderr(&out).contains("physical memory"), "{}", stderr(&out));
}

// Defect 14: gen refuses an output that cannot fit in the free space, before writing.
#[test]
fn gen_larger_than_the_free_space_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("huge.bin");
    let out = sluice(["graph", "gen", "--scale", "32", "--edge-factor", "4096", "-o", s(&target)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("free"), "{}", stderr(&out));
    assert!(!target.exists() && temps(dir.path()).is_empty());
}

// Smaller: `--hint dtype=f64` against `--dtype f32` is a conflict, not a silent override.
#[test]
fn hint_conflicting_with_a_flag_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("a.raw");
    std::fs::write(&raw, [0u8; 64]).unwrap();
    let out = sluice(["stats", s(&raw), "--dtype", "f32", "--hint", "dtype=f64"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--dtype") && stderr(&out).contains("conflict"),
        "{}",
        stderr(&out)
    );
    // The same value twice is no conflict.
    let out = sluice(["stats", s(&raw), "--dtype", "f32", "--hint", "dtype=f32"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

// Smaller: a histogram range too wide for finite bins is refused as NumPy refuses it.
#[test]
fn histogram_of_a_huge_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("a.raw");
    std::fs::write(&raw, [0u8; 64]).unwrap();
    let out = sluice([
        "stats",
        s(&raw),
        "--dtype",
        "f64",
        "--bins",
        "4",
        "--range=-1e308,1e308",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr(&out).contains("finite-sized bins"), "{}", stderr(&out));
}

// Smaller: `--tolerance nan` (or negative) is refused.
#[test]
fn nan_tolerance_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin");
    gen_file(&input, 4, 1);
    let store = dir.path().join("g.grid");
    assert!(import(&input, &store, false).output().unwrap().status.success());
    for t in ["nan", "-1", "inf"] {
        let out = sluice(["graph", "pagerank", s(&store), &format!("--tolerance={t}")]);
        assert_eq!(out.status.code(), Some(2), "{t}: {}", stderr(&out));
        assert!(stderr(&out).contains("--tolerance"), "{t}: {}", stderr(&out));
    }
}

// Smaller: `import DIR` names the real problem.
#[test]
fn import_of_a_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = sluice(
        ["graph", "import", "--format", "snap", "--directed", s(dir.path()), "-o"]
            .into_iter()
            .map(String::from)
            .chain([s(&dir.path().join("g.grid")).to_string()]),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("directory"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("No such file"), "{}", stderr(&out));
}
