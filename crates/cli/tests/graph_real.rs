//! PageRank, BFS and WCC on the small real graphs of `shared/datasets/real` (SNAP), through
//! the CLI, against naive in-memory implementations written here, apart from the engine
//! (dense arrays, a queue BFS, union-find WCC). Also covers `.gz` and Matrix Market input, the
//! same graph through every input path, and `--simple`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/real");

fn sluice(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("run sluice");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Edges of a SNAP file (original ids), as listed.
fn read_snap(path: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut t = l.split_whitespace().map(|x| x.parse::<u64>().unwrap());
            (t.next().unwrap(), t.next().unwrap())
        })
        .collect()
}

struct Naive {
    ids: Vec<u64>,
    /// Directed adjacency (both directions for undirected graphs; self loops once).
    out: Vec<Vec<usize>>,
    undirected_nbrs: Vec<Vec<usize>>,
}

impl Naive {
    fn new(edges: &[(u64, u64)], directed: bool, simple: bool) -> Naive {
        let mut ids: Vec<u64> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
        ids.sort_unstable();
        ids.dedup();
        let idx: HashMap<u64, usize> = ids.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        let n = ids.len();
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for &(a, b) in edges {
            let (a, b) = (idx[&a], idx[&b]);
            pairs.push((a, b));
            if !directed && a != b {
                pairs.push((b, a));
            }
        }
        if simple {
            pairs.retain(|&(a, b)| a != b);
            pairs.sort_unstable();
            pairs.dedup();
        }
        let mut out = vec![Vec::new(); n];
        let mut und = vec![Vec::new(); n];
        for &(a, b) in &pairs {
            out[a].push(b);
            und[a].push(b);
            und[b].push(a);
        }
        Naive { ids, out, undirected_nbrs: und }
    }

    fn pagerank(&self, iters: usize, d: f64) -> Vec<f64> {
        let n = self.ids.len();
        let mut r = vec![1.0 / n as f64; n];
        for _ in 0..iters {
            let sink: f64 = (0..n).filter(|&v| self.out[v].is_empty()).map(|v| r[v]).sum();
            let mut next = vec![(1.0 - d) / n as f64 + d * sink / n as f64; n];
            for (u, nbrs) in self.out.iter().enumerate() {
                for &v in nbrs {
                    next[v] += d * r[u] / nbrs.len() as f64;
                }
            }
            r = next;
        }
        r
    }

    fn bfs(&self, root: usize) -> Vec<i64> {
        let mut depth = vec![i64::MAX; self.ids.len()];
        depth[root] = 0;
        let mut q = VecDeque::from([root]);
        while let Some(u) = q.pop_front() {
            for &v in &self.out[u] {
                if depth[v] == i64::MAX {
                    depth[v] = depth[u] + 1;
                    q.push_back(v);
                }
            }
        }
        depth
    }

    /// Smallest original id of each vertex's component (union-find).
    fn wcc(&self) -> Vec<u64> {
        let n = self.ids.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for u in 0..n {
            for &v in &self.undirected_nbrs[u] {
                let (a, b) = (find(&mut parent, u), find(&mut parent, v));
                if a != b {
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        (0..n).map(|v| self.ids[find(&mut parent, v)]).collect()
    }
}

fn read_out(path: &Path) -> BTreeMap<u64, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.to_string())
        })
        .collect()
}

fn check_all(store: &Path, naive: &Naive, tmp: &Path, what: &str) {
    let s = store.to_str().unwrap();
    let pr_out = tmp.join("pr.txt");
    sluice(&["graph", "pagerank", s, "--iterations", "15", "-o", pr_out.to_str().unwrap()]);
    let pr = read_out(&pr_out);
    let want = naive.pagerank(15, 0.85);
    assert_eq!(pr.len(), naive.ids.len(), "{what}: vertex count");
    for (i, id) in naive.ids.iter().enumerate() {
        let got: f64 = pr[id].parse().unwrap();
        assert!(
            (got - want[i]).abs() <= 1e-9 * want[i].abs(),
            "{what}: PR of {id}: {got} vs {}",
            want[i]
        );
    }
    let root = naive.ids[0];
    let bfs_out = tmp.join("bfs.txt");
    sluice(&["graph", "bfs", s, "--source", &root.to_string(), "-o", bfs_out.to_str().unwrap()]);
    let bfs = read_out(&bfs_out);
    for (i, d) in naive.bfs(0).iter().enumerate() {
        assert_eq!(bfs[&naive.ids[i]], d.to_string(), "{what}: BFS depth of {}", naive.ids[i]);
    }
    let wcc_out = tmp.join("wcc.txt");
    sluice(&["graph", "wcc", s, "--in-memory", "-o", wcc_out.to_str().unwrap()]);
    let wcc = read_out(&wcc_out);
    for (i, l) in naive.wcc().iter().enumerate() {
        assert_eq!(wcc[&naive.ids[i]], l.to_string(), "{what}: WCC label of {}", naive.ids[i]);
    }
}

fn dataset(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(REAL).join(rel);
    if p.is_file() {
        Some(p)
    } else {
        println!("skipping: {} not found", p.display());
        None
    }
}

#[test]
fn real_graphs_match_a_naive_implementation() {
    let cases = [
        ("wiki-Vote/wiki-Vote.txt", true),
        ("p2p-Gnutella08/p2p-Gnutella08.edgelist", true),
        ("ca-GrQc/CA-GrQc.txt", false),
    ];
    for (rel, directed) in cases {
        let Some(path) = dataset(rel) else { continue };
        let tmp = tempfile::tempdir().unwrap();
        let edges = read_snap(&path);
        for simple in [false, true] {
            let store = tmp.path().join(format!("g{simple}.grid"));
            let dir_flag = if directed { "--directed" } else { "--undirected" };
            let mut args = vec![
                "graph",
                "import",
                "--format",
                "snap",
                dir_flag,
                path.to_str().unwrap(),
                "-o",
                store.to_str().unwrap(),
            ];
            if simple {
                args.push("--simple");
            }
            sluice(&args);
            check_all(
                &store,
                &Naive::new(&edges, directed, simple),
                tmp.path(),
                &format!("{rel} simple={simple}"),
            );
        }
    }
}

#[test]
fn every_input_path_gives_the_same_store_contents() {
    let Some(path) = dataset("facebook_combined/facebook_combined.txt") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let edges = read_snap(&path);
    let naive = Naive::new(&edges, false, false);
    // snap (plain)
    let plain = t.join("plain.grid");
    sluice(&[
        "graph",
        "import",
        "--format",
        "snap",
        "--undirected",
        path.to_str().unwrap(),
        "-o",
        plain.to_str().unwrap(),
    ]);
    check_all(&plain, &naive, t, "facebook snap");
    // bin, 8-byte ids
    let bin = t.join("fb.bin");
    let bytes: Vec<u8> =
        edges.iter().flat_map(|&(a, b)| [a.to_le_bytes(), b.to_le_bytes()]).flatten().collect();
    std::fs::write(&bin, bytes).unwrap();
    let from_bin = t.join("bin.grid");
    sluice(&[
        "graph",
        "import",
        "--format",
        "bin",
        "--id-bytes",
        "8",
        "--undirected",
        bin.to_str().unwrap(),
        "-o",
        from_bin.to_str().unwrap(),
    ]);
    // mtx symmetric (ids shifted by one: Matrix Market is 1-based)
    let mtx = t.join("fb.mtx");
    let mut text = format!(
        "%%MatrixMarket matrix coordinate pattern symmetric\n% facebook\n{} {} {}\n",
        naive.ids.len(),
        naive.ids.len(),
        edges.len()
    );
    for &(a, b) in &edges {
        text.push_str(&format!("{} {}\n", a + 1, b + 1));
    }
    std::fs::write(&mtx, text).unwrap();
    let from_mtx = t.join("mtx.grid");
    sluice(&[
        "graph",
        "import",
        "--format",
        "mtx",
        mtx.to_str().unwrap(),
        "-o",
        from_mtx.to_str().unwrap(),
    ]);
    // ldbc .v/.e pair
    let v = t.join("fb.v");
    let e = t.join("fb.e");
    std::fs::write(&v, naive.ids.iter().rev().map(|i| format!("{i}\n")).collect::<String>())
        .unwrap();
    std::fs::write(&e, edges.iter().map(|(a, b)| format!("{a} {b}\n")).collect::<String>())
        .unwrap();
    let from_ldbc = t.join("ldbc.grid");
    sluice(&[
        "graph",
        "import",
        "--format",
        "ldbc",
        "--undirected",
        v.to_str().unwrap(),
        e.to_str().unwrap(),
        "-o",
        from_ldbc.to_str().unwrap(),
    ]);
    let edges_of = |s: &Path| std::fs::read(s.join("fwd.edges")).unwrap();
    for other in [&from_bin, &from_mtx, &from_ldbc] {
        assert_eq!(edges_of(&plain), edges_of(other), "{}", other.display());
    }
    // gzip, if the gzip tool is here
    let gz = t.join("fb.txt.gz");
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -c '{}' > '{}'", path.display(), gz.display()))
        .status();
    if ok.is_ok_and(|s| s.success()) {
        let from_gz = t.join("gz.grid");
        sluice(&[
            "graph",
            "import",
            "--format",
            "snap",
            "--undirected",
            gz.to_str().unwrap(),
            "-o",
            from_gz.to_str().unwrap(),
        ]);
        assert_eq!(edges_of(&plain), edges_of(&from_gz));
    } else {
        println!("skipping the .gz case: no gzip tool");
    }
    // results do not depend on the mode or the run
    let s = plain.to_str().unwrap();
    let runs: Vec<String> = (0..2)
        .flat_map(|_| {
            let a = t.join("a.txt");
            let b = t.join("b.txt");
            sluice(&["graph", "pagerank", s, "-o", a.to_str().unwrap()]);
            sluice(&["graph", "pagerank", s, "--in-memory", "-o", b.to_str().unwrap()]);
            [std::fs::read_to_string(a).unwrap(), std::fs::read_to_string(b).unwrap()]
        })
        .collect();
    assert_eq!(runs[0], runs[2], "streaming PageRank is deterministic");
    assert_eq!(runs[1], runs[3], "in-memory PageRank is deterministic");
    // verify accepts every store
    for st in [&plain, &from_bin, &from_mtx, &from_ldbc] {
        sluice(&["graph", "verify", st.to_str().unwrap()]);
    }
}
