"""--memory caps the whole process (issue 2): peak RSS stays under the budget, and a budget too
small for the run is a clear error before any work starts."""

import json
import subprocess

import numpy as np

from conftest import sluice_bin


def _max_rss_bytes_of(cmd):
    # The child's own peak, from GNU time: the ru_maxrss a Python parent reads from wait4 or
    # RUSAGE_CHILDREN includes the parent's own high-water mark (Linux folds it in at exec).
    p = subprocess.run(["/usr/bin/time", "-f", "peak-rss-kib %M", *cmd], capture_output=True, text=True, errors="replace")
    err, _, line = p.stderr.rstrip("\n").rpartition("\n")
    assert line.startswith("peak-rss-kib "), p.stderr
    return {"rc": p.returncode, "rss": int(line.split()[1]) * 1024, "err": err, "out": p.stdout}


def test_stats_peak_rss_stays_within_memory_budget(tmp_path):
    path = tmp_path / "big.npy"
    rng = np.random.default_rng(7)
    # 192 MiB of data under a 128 MiB budget: the run must stream, not load.
    np.save(path, rng.standard_normal(24 << 20))
    budget = 128 << 20
    r = _max_rss_bytes_of([sluice_bin(), "stats", str(path), "--memory", str(budget), "--json"])
    assert r["rc"] == 0, r["err"]
    assert json.loads(r["out"])["count"] == 24 << 20
    assert r["rss"] <= budget, f"peak RSS {r['rss']} over the {budget}-byte budget"


def test_budget_smaller_than_the_program_is_a_clear_error(tmp_path, sluice):
    path = tmp_path / "small.npy"
    np.save(path, np.arange(10, dtype=np.float64))
    proc = sluice("stats", path, "--memory", "1M")
    assert proc.returncode == 2
    assert "memory budget" in proc.stderr and "panicked" not in proc.stderr
