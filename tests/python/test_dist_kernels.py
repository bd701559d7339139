"""Distributed kernels under `mpirun --oversubscribe -np 1..4` (issue 12): `sluice stats` on
every rank gives the figures of one process bit for bit (a shared file read in stripes, and
per-rank parts), matching numpy; a corrupt part fails every rank within 10 s, naming the rank
and the file. Needs a sluice built with `--features mpi` (SLUICE_BIN) and OpenMPI's mpirun;
skips, saying why, without them."""

import json
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from conftest import sluice_bin

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
for var in ("SLUICE_BSP_ENGINE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
    ENV.pop(var, None)


def mpirun(np_, *args, timeout=120, env=ENV):
    """`mpirun -np NP sluice ARGS`; a leading `--output-filename DIR` goes to mpirun."""
    opts = []
    if args and args[0] == "--output-filename":
        opts, args = ["--output-filename", str(args[1])], args[2:]
    cmd = ["mpirun", "--oversubscribe", *opts, "-np", str(np_), sluice_bin(), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def rank_errors(proc_dir, np_):
    """Each rank's own stderr (mpirun --output-filename keeps them apart: merged, their lines
    interleave mid-line)."""
    return [(proc_dir / "1" / f"rank.{r}" / "stderr").read_text() for r in range(np_)]


def assert_every_rank_failed_naming(errors, rank, path):
    """Every rank reports the failure, naming the failing rank and the file; a rank mpirun
    terminated after the first exit (SIGTERM) may say only that."""
    for r, text in enumerate(errors):
        named = f"rank {rank}" in text and str(path) in text
        assert named or "interrupted by SIGTERM" in text, f"rank {r}: {text!r}"
    assert sum(f"rank {rank}" in t and str(path) in t for t in errors) >= 1, errors


def single(*args):
    return subprocess.run([sluice_bin(), *map(str, args)], capture_output=True, text=True,
                          env=ENV, timeout=120)


@pytest.fixture(scope="module")
def mpi():
    if shutil.which("mpirun") is None:
        pytest.skip("skipping: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
    probe = mpirun(2, "stats", "--help")
    if "built without MPI" in probe.stderr:
        pytest.skip("skipping: SLUICE_BIN was built without --features mpi")
    assert probe.returncode == 0, probe.stderr


def figures(proc):
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    report.pop("run")
    return report


def write_npy(path, a):
    np.save(path, a)
    return path


def wide_values(n, seed):
    """Values over 12 decades with NaNs: the bracketing of the sums shows in the last bits."""
    rng = np.random.default_rng(seed)
    a = rng.random(n) * 10.0 ** rng.integers(-3, 9, n)
    a[::97] = np.nan
    return a


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_stats_of_a_shared_file_equal_one_process_bit_for_bit(mpi, tmp_path, nprocs):
    # 4 KiB blocks: 37 blocks, not a multiple of 2, 3 or 4; the .npy header shifts every block.
    a = wide_values(37 * 512 - 40, 1)
    path = write_npy(tmp_path / "x.npy", a)
    flags = ["--block-size", "4K", "--bins", "7", "--range", "0,1e6", "--json"]
    want = figures(single("stats", path, *flags))
    got = figures(mpirun(nprocs, "stats", path, *flags))
    assert got == want
    ok = ~np.isnan(a)
    assert got["count"] == a.size and got["nan_count"] == a.size - ok.sum()
    assert abs(got["sum"] - np.nansum(a)) <= 1e-13 * abs(np.nansum(a))
    assert abs(got["variance"] - np.nanvar(a)) <= 1e-12 * np.nanvar(a)
    assert got["histogram"]["counts"] == np.histogram(a[ok], 7, (0, 1e6))[0].tolist()


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_stats_of_integers_more_ranks_than_blocks(mpi, tmp_path, nprocs):
    a = np.random.default_rng(2).integers(-2**62, 2**62, 300, dtype=np.int64)
    path = tmp_path / "x.i64"
    a.astype(">i8").tofile(path)
    flags = ["--dtype", "i64", "--endian", "big", "--json"]
    got = figures(mpirun(nprocs, "stats", path, *flags))
    assert got == figures(single("stats", path, *flags))
    assert got["sum"] == sum(int(x) for x in a)
    assert (got["min"], got["max"]) == (int(a.min()), int(a.max()))


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_stats_of_parts_equal_one_process_on_the_parts(mpi, tmp_path, nprocs):
    sizes = [3000, 0, 5000, 1234]
    arrays = [wide_values(n, 10 + i) for i, n in enumerate(sizes)]
    for i, a in enumerate(arrays):
        os.rename(write_npy(tmp_path / f"p{i}.npy", a), tmp_path / f"data.part-{i:04d}")
    base = tmp_path / "data"
    flags = ["--block-size", "4K", "--json"]
    want = figures(single("stats", base, *flags))
    got = figures(mpirun(nprocs, "stats", base, *flags))
    assert got == want
    whole = np.concatenate(arrays)
    assert got["count"] == whole.size and got["shape"] == [whole.size]
    assert abs(got["sum"] - np.nansum(whole)) <= 1e-13 * abs(np.nansum(whole))


def test_a_corrupt_part_fails_every_rank_naming_the_rank_and_the_file(mpi, tmp_path):
    for i in range(4):
        write_npy(tmp_path / f"p{i}.npy", np.arange(1000, dtype=np.float64))
        os.rename(tmp_path / f"p{i}.npy", tmp_path / f"data.part-{i:04d}")
    bad = tmp_path / "data.part-0002"
    bad.write_bytes(bad.read_bytes()[:-5])  # no longer whole elements
    start = time.monotonic()
    out = tmp_path / "ranks"
    proc = mpirun(4, "--output-filename", out, "stats", tmp_path / "data", timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode != 0
    assert elapsed < 10, f"took {elapsed:.1f} s"
    assert_every_rank_failed_naming(rank_errors(out, 4), 2, bad)


def test_parts_listed_on_the_command_line(mpi, tmp_path):
    paths = []
    for i in range(3):
        paths.append(write_npy(tmp_path / f"c{i}.npy", wide_values(2000 + i, 20 + i)))
    want = figures(single("stats", *paths, "--json"))
    assert figures(mpirun(2, "stats", *paths, "--json")) == want


def text_with_long_lines(path, seed):
    """Lines of 0..120 bytes and every 40th of 20 KB (longer than a 4 KiB block and than the
    stripes of small files), so that lines straddle every stripe and block boundary; every 7th
    holds the needle."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(1500):
        n = 20000 if i % 40 == 0 else int(rng.integers(0, 120))
        body = bytes(rng.integers(97, 117, n, dtype=np.uint8))
        lines.append(body + (b"needle" if i % 7 == 0 else b"") + b"\n")
    path.write_bytes(b"".join(lines) + b"no newline at the end needle")
    return path


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_grep_output_is_byte_identical_to_one_process_and_gnu_grep(mpi, tmp_path, nprocs):
    path = text_with_long_lines(tmp_path / "t.txt", 3)
    for flags in (["--block-size", "4K"], ["--block-size", "4K", "-b"], ["--block-size", "4K", "-c"]):
        want = single("grep", "needle", path, *flags)
        got = mpirun(nprocs, "grep", "needle", path, *flags)
        assert got.returncode == want.returncode == 0, got.stderr
        assert got.stdout == want.stdout
    gnu = subprocess.run(["grep", "-b", "needle", str(path)], capture_output=True, text=True)
    assert got.stdout.strip() == str(len(gnu.stdout.splitlines()))
    listed = mpirun(nprocs, "grep", "-b", "needle", path, "--block-size", "4K").stdout
    assert listed == gnu.stdout  # offset:line, as grep -b prints it
    plain = subprocess.run(["grep", "needle", str(path)], capture_output=True, text=True)
    assert mpirun(nprocs, "grep", "needle", path, "--block-size", "4K").stdout == plain.stdout


def test_grep_json_and_no_match_under_mpirun(mpi, tmp_path):
    path = text_with_long_lines(tmp_path / "t.txt", 4)
    want = json.loads(single("grep", "needle", path, "--json").stdout)
    got = json.loads(mpirun(3, "grep", "needle", path, "--json").stdout)
    want.pop("run"), got.pop("run"), got.pop("transfer")
    assert got == want
    none = mpirun(3, "grep", "no-such-text", path)
    assert none.returncode == 1 and none.stdout == ""


def dense_text(path, seed):
    """3000 lines of 0..200 bytes, two in three holding the needle: a block's matching lines
    are far more than dist::HOLD_SHARE of it, so distributed grep holds every block."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(3000):
        body = bytes(rng.integers(97, 117, int(rng.integers(0, 200)), dtype=np.uint8))
        lines.append(body + (b"needle" if i % 3 else b"") + b"\n")
    path.write_bytes(b"".join(lines))
    return path


def sent_by_other_ranks(data, gnu_b_output, nprocs):
    """Bytes of the matching lines (each with its newline) in the stripes of ranks 1..N-1,
    from GNU grep's `-b` listing: rank 1's stripe starts at the first line start at or after
    byte len // N (sluice_io::placement's rule for line files)."""
    if nprocs == 1:
        return 0
    nominal = len(data) // nprocs
    start = nominal if nominal == 0 or data[nominal - 1] == ord("\n") else data.index(b"\n", nominal) + 1
    total = 0
    for row in gnu_b_output.splitlines(keepends=True):
        offset, line = row.split(b":", 1)
        if int(offset) >= start:
            total += len(line)  # the line and its newline, as in the file
    return total


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_grep_sends_matching_lines_from_the_pool_buffers_without_a_copy(mpi, tmp_path, nprocs):
    """Issue 12 item 4: every rank puts its matching lines to rank 0 straight from the pool
    buffers it read them into. Reads into pool buffers (not a mapping of the warm file:
    SLUICE_NO_MMAP=1), one per rank (the block is larger than a stripe)."""
    path = dense_text(tmp_path / "d.txt", 7)
    data = path.read_bytes()
    env = dict(ENV, SLUICE_NO_MMAP="1")
    gnu = subprocess.run(["grep", "-b", "needle", str(path)], capture_output=True, check=True)
    plain = subprocess.run(["grep", "needle", str(path)], capture_output=True, text=True)
    flags = ["--block-size", "1M"]
    got = mpirun(nprocs, "grep", "needle", path, *flags, env=env)
    assert got.returncode == 0, got.stderr
    assert got.stdout == single("grep", "needle", path, *flags).stdout == plain.stdout
    listed = mpirun(nprocs, "grep", "-b", "needle", path, *flags, env=env)
    assert listed.stdout.encode() == gnu.stdout
    report = json.loads(mpirun(nprocs, "grep", "needle", path, *flags, "--json", env=env).stdout)
    want = sent_by_other_ranks(data, gnu.stdout, nprocs)
    assert nprocs == 1 or want > 0
    assert report["run"]["copies"]["user_copy_bytes"] == 0
    assert report["transfer"] == {"zero_copy_sent_bytes": want, "copied_sent_bytes": 0}


def test_grep_of_a_cold_file_sends_from_the_pool_buffers(mpi, tmp_path):
    """The default path for data bigger than memory: a file not in the page cache is read with
    O_DIRECT into pool buffers (1 MiB), and the matching lines go to rank 0 from there; only
    lines stitched across reads (and blocks refused a hold) are copied."""
    lines = [(b"x" * (i % 150)) + (b"needle" if i % 3 else b"") + b"\n" for i in range(120_000)]
    path = tmp_path / "cold.txt"
    path.write_bytes(b"".join(lines))
    data = path.read_bytes()
    gnu = subprocess.run(["grep", "-b", "needle", str(path)], capture_output=True, check=True)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    proc = mpirun(2, "grep", "needle", path, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    if report["run"]["mapped_bytes"] > 0 or report["run"]["copies"]["page_cache_bytes"] > 0:
        pytest.skip("skipping: the file stayed in the page cache (tmpfs?), so it was mapped")
    transfer = report["transfer"]
    want = sent_by_other_ranks(data, gnu.stdout, 2)
    assert transfer["zero_copy_sent_bytes"] + transfer["copied_sent_bytes"] == want
    assert transfer["zero_copy_sent_bytes"] >= 0.9 * want
    assert report["run"]["copies"]["user_copy_bytes"] >= transfer["copied_sent_bytes"]
    listed = mpirun(2, "grep", "-b", "needle", path)
    assert listed.stdout.encode() == gnu.stdout


def test_grep_counts_the_copies_it_cannot_avoid(mpi, tmp_path):
    """Small blocks: lines across a read boundary are stitched (a copy), and holds stop at
    half the pool: those lines are copied and counted; every line still arrives once."""
    path = dense_text(tmp_path / "d.txt", 8)
    data = path.read_bytes()
    env = dict(ENV, SLUICE_NO_MMAP="1")
    gnu = subprocess.run(["grep", "-b", "needle", str(path)], capture_output=True, check=True)
    proc = mpirun(3, "grep", "-b", "needle", path, "--block-size", "4K", env=env)
    assert proc.stdout.encode() == gnu.stdout
    report = json.loads(mpirun(3, "grep", "needle", path, "--block-size", "4K", "--json",
                               env=env).stdout)
    transfer = report["transfer"]
    assert transfer["zero_copy_sent_bytes"] + transfer["copied_sent_bytes"] == \
        sent_by_other_ranks(data, gnu.stdout, 3)
    assert transfer["zero_copy_sent_bytes"] > 0 and transfer["copied_sent_bytes"] > 0
    assert report["run"]["copies"]["user_copy_bytes"] >= transfer["copied_sent_bytes"]


# --- k-means (issue 12 item 2 with issue 13): local assignment and partial sums, one exchange of
# the k x d sums per iteration in the canonical tree, labels gathered to rank 0. ---


def blobs(n, d, k, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-50, 50, (k, d))
    return (centres[rng.integers(0, k, n)] + rng.normal(0, 4, (n, d))).astype(dtype)


def kmeans_fit(proc):
    report = figures(proc)
    for it in report["history"]:
        it.pop("seconds")
    return report


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_kmeans_equals_one_process_bit_for_bit_and_scikit_learn(mpi, tmp_path, nprocs):
    # Records of 7 f64 (56 bytes) in 4 KiB blocks: stripes must find read
    # boundaries that are record boundaries; 5003 records make 86 reads.
    x = blobs(5003, 7, 6, 2)
    path = write_npy(tmp_path / "x.npy", x)
    init = write_npy(tmp_path / "init.npy", x[[0, 100, 200, 300, 400, 500]])
    flags = ["--k", "6", "--init", init, "--max-iter", "12", "--threshold", "0",
             "--block-size", "4K", "--json"]
    want = kmeans_fit(single("kmeans", path, *flags, "--labels", tmp_path / "one.npy",
                             "-o", tmp_path / "one-c.npy"))
    got = kmeans_fit(mpirun(nprocs, "kmeans", path, *flags, "--labels", tmp_path / "l.npy",
                            "-o", tmp_path / "c.npy"))
    want.pop("labels"), got.pop("labels")
    assert got == want
    labels = np.load(tmp_path / "l.npy")
    assert labels.tobytes() == np.load(tmp_path / "one.npy").tobytes()
    assert np.load(tmp_path / "c.npy").tobytes() == np.load(tmp_path / "one-c.npy").tobytes()
    sklearn = pytest.importorskip("sklearn.cluster")
    ref = sklearn.KMeans(6, init=np.load(init), n_init=1, max_iter=12, tol=0,
                         algorithm="lloyd").fit(x)
    np.testing.assert_allclose(np.array(got["centres"]), ref.cluster_centers_, rtol=1e-9)
    assert (labels == ref.labels_).all()


@pytest.mark.parametrize("nprocs", [2, 3])
def test_kmeans_plusplus_init_and_f32_agree_across_ranks(mpi, tmp_path, nprocs):
    x = blobs(6007, 5, 9, 3, np.float32)
    path = write_npy(tmp_path / "x.npy", x)
    flags = ["--k", "9", "--seed", "7", "--block-size", "4K", "--json"]
    want = kmeans_fit(single("kmeans", path, *flags))
    got = kmeans_fit(mpirun(nprocs, "kmeans", path, *flags))
    assert got == want and got["init"] == "k-means++" and sum(got["counts"]) == 6007


def test_kmeans_nan_fails_every_rank_naming_the_file(mpi, tmp_path):
    x = blobs(5003, 4, 3, 4)
    x[4000, 2] = np.nan
    path = write_npy(tmp_path / "x.npy", x)
    start = time.monotonic()
    proc = mpirun(3, "kmeans", path, "--k", "3", "--block-size", "4K",
                  "--labels", tmp_path / "l.npy")
    assert time.monotonic() - start < 10 + 5
    assert proc.returncode != 0
    assert "x.npy" in proc.stderr and "record 4000" in proc.stderr
    assert not (tmp_path / "l.npy").exists()


def test_kmeans_read_error_on_one_rank_fails_every_rank_naming_it(mpi, tmp_path):
    # Only rank 2 has the injected read error (an MPMD launch): it fails in its first pass,
    # and the others learn it at that pass's exchange.
    path = write_npy(tmp_path / "x.npy", blobs(20000, 10, 4, 5))
    args = ["kmeans", path, "--k", "4", "--max-iter", "5", "--block-size", "64K"]
    out = tmp_path / "ranks"
    cmd = ["mpirun", "--oversubscribe", "--output-filename", str(out), "-np", "2", sluice_bin(),
           *map(str, args), ":",
           "-np", "1", "env", "SLUICE_INJECT_READ_ERROR=100", sluice_bin(), *map(str, args)]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=60)
    assert time.monotonic() - start < 10 + 5
    assert proc.returncode != 0
    assert_every_rank_failed_naming(rank_errors(out, 3), 2, path)


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_kmeans_over_parts_equals_one_process_on_the_concatenation(mpi, tmp_path, nprocs):
    """One part per rank (`sluice_kernels::dist::kmeans_parts`). Raw parts of whole 4 KiB reads
    (128 records of 4 f64) but the last: the concatenation's reads, so one process on the
    concatenated file gives the same bits, labels included. .npy parts of any size: the same
    clustering as scikit-learn on the stacked array (1e-9)."""
    x = blobs(2500, 4, 5, 6)
    sizes = [384, 640, 256][: nprocs - 1]
    sizes.append(len(x) - sum(sizes))
    whole = tmp_path / "whole.raw"
    x.tofile(whole)
    init = write_npy(tmp_path / "init.npy", x[[1, 700, 1300, 1800, 2400]])
    flags = ["--k", "5", "--init", init, "--max-iter", "12", "--threshold", "0",
             "--block-size", "4K", "--json"]
    raw = ["--dims", "4", "--dtype", "f64"]
    want = kmeans_fit(single("kmeans", whole, *raw, *flags, "--labels", tmp_path / "one.npy"))
    at = 0
    for i, n in enumerate(sizes):
        x[at:at + n].tofile(tmp_path / f"r.part-{i:04d}")
        write_npy(tmp_path / f"n{i}.npy", x[at:at + n])
        os.rename(tmp_path / f"n{i}.npy", tmp_path / f"n.part-{i:04d}")
        at += n
    got = kmeans_fit(mpirun(nprocs, "kmeans", tmp_path / "r", *raw, *flags,
                            "--labels", tmp_path / "l.npy"))
    for key in ("file", "labels"):
        want.pop(key, None), got.pop(key, None)
    assert got == want
    assert np.load(tmp_path / "l.npy").tobytes() == np.load(tmp_path / "one.npy").tobytes()
    sklearn = pytest.importorskip("sklearn.cluster")
    ref = sklearn.KMeans(5, init=np.load(init), n_init=1, max_iter=12, tol=0,
                         algorithm="lloyd").fit(x)
    npy = kmeans_fit(mpirun(nprocs, "kmeans", tmp_path / "n", *flags))
    np.testing.assert_allclose(np.array(npy["centres"]), ref.cluster_centers_, rtol=1e-9)
    assert npy["counts"] == np.bincount(ref.labels_, minlength=5).tolist()


def test_kmeans_over_parts_names_the_part_holding_a_nan_and_refuses_kmeanspp(mpi, tmp_path):
    x = blobs(1500, 3, 3, 7)
    x[500 + 321, 1] = np.nan
    for i in range(3):
        x[i * 500:(i + 1) * 500].tofile(tmp_path / f"r.part-{i:04d}")
    init = write_npy(tmp_path / "init.npy", x[[0, 600, 1200]])
    args = ["kmeans", tmp_path / "r", "--dims", "3", "--dtype", "f64", "--k", "3"]
    proc = mpirun(3, *args, "--init", init)
    assert proc.returncode != 0
    assert "r.part-0001" in proc.stderr and "record 321" in proc.stderr, proc.stderr
    proc = mpirun(3, *args)
    assert proc.returncode != 0 and "--init" in proc.stderr, proc.stderr
    proc = mpirun(2, *args, "--init", init)
    assert proc.returncode != 0 and "3 parts on 2 ranks" in proc.stderr, proc.stderr
