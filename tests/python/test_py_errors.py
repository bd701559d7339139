"""The Python package's exceptions: the right SluiceError subclass, naming the file, with the
same message as the CLI prints (`sluice: MESSAGE`) for the same fault.

Needs the package (`pip install ./crates/py`); the CLI comparisons need SLUICE_BIN as the rest
of tests/python.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import REAL

sluice = pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")


def cli_message(sluice_run, *args):
    p = sluice_run(*args)
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("sluice: "), line
    return line[len("sluice: "):]


@pytest.fixture
def cli(sluice):
    """conftest's CLI runner (its name is the package's here)."""
    return sluice


def test_hierarchy():
    for cls in (sluice.InputError, sluice.StoreCorrupt, sluice.BudgetError, sluice.BspError):
        assert issubclass(cls, sluice.SluiceError) and issubclass(cls, Exception)


def test_missing_store_is_an_input_error_as_the_cli_says(tmp_path, cli):
    missing = tmp_path / "nope.grid"
    with pytest.raises(sluice.InputError) as e:
        sluice.Graph.open(missing)
    assert str(missing) in str(e.value)
    assert str(e.value) == cli_message(cli, "graph", "pagerank", missing)


def test_bad_edge_line_names_file_and_line_as_the_cli_does(tmp_path, cli):
    bad = tmp_path / "bad.txt"
    bad.write_text("# edges\n1 2\n2 x\n")
    with pytest.raises(sluice.InputError) as e:
        sluice.Graph.import_(str(bad), tmp_path / "py.grid", directed=True)
    assert f"{bad}:3:" in str(e.value)
    said = cli_message(
        cli, "graph", "import", bad, "-o", tmp_path / "cli.grid", "--format", "snap", "--directed"
    )
    assert str(e.value) in said
    # No half-written store is left behind.
    assert not (tmp_path / "py.grid").exists()


def test_corrupt_store_is_store_corrupt(tmp_path):
    src, dst = np.array([1, 2, 3]), np.array([2, 3, 1])
    g = sluice.Graph.import_((src, dst), tmp_path / "c.grid", directed=True)
    del g
    meta = tmp_path / "c.grid" / "meta.json"
    m = json.loads(meta.read_text())
    m["format_version"] = m.get("format_version", 1) + 100
    meta.write_text(json.dumps(m))
    with pytest.raises(sluice.StoreCorrupt) as e:
        sluice.Graph.open(tmp_path / "c.grid")
    assert "meta.json" in str(e.value)


def test_truncated_index_is_store_corrupt(tmp_path):
    src = np.arange(1000) % 97
    g = sluice.Graph.import_((src, (src * 7 + 1) % 97), tmp_path / "t.grid", directed=True)
    del g
    files = sorted(p for p in (tmp_path / "t.grid").rglob("*") if p.is_file() and p.name != "meta.json")
    victim = max(files, key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(sluice.StoreCorrupt) as e:
        sluice.Graph.open(tmp_path / "t.grid").pagerank()
    assert str(tmp_path / "t.grid") in str(e.value)


def test_memory_over_budget_is_a_budget_error(tmp_path):
    g = sluice.Graph.import_(str(REAL / "wiki-Vote/wiki-Vote.txt"), tmp_path / "b.grid", directed=True)
    del g
    with pytest.raises(sluice.BudgetError) as e:
        sluice.Graph.open(tmp_path / "b.grid", memory="64K").pagerank()
    assert "budget" in str(e.value) or "memory" in str(e.value)


def test_unknown_source_vertex_names_the_parameter(tmp_path):
    g = sluice.Graph.import_((np.array([1, 2]), np.array([2, 3])), tmp_path / "s.grid", directed=True)
    with pytest.raises(sluice.InputError, match="source: vertex 99 is not in the graph"):
        g.bfs(99)
    with pytest.raises(sluice.InputError, match="the vector has 2 entries, the graph 3 vertices"):
        g.spmv(np.ones(2))
    with pytest.raises(sluice.InputError, match="damping factor 2 is not in"):
        g.pagerank(damping=2.0)


def test_negative_ids_and_length_mismatch_from_arrays(tmp_path):
    with pytest.raises(sluice.InputError, match="negative"):
        sluice.Graph.import_((np.array([-1, 2]), np.array([2, 3])), tmp_path / "n.grid")
    with pytest.raises(sluice.InputError, match="length"):
        sluice.Graph.import_((np.array([1, 2]), np.array([2])), tmp_path / "n.grid")


def test_kernel_errors_name_the_file(tmp_path, cli):
    raw = tmp_path / "x.raw"
    raw.write_bytes(b"\0" * 12)
    with pytest.raises(sluice.InputError) as e:
        sluice.stats(raw)
    assert str(raw) in str(e.value)
    assert str(e.value) in cli_message(cli, "stats", raw)
    with pytest.raises(sluice.InputError, match="not a multiple of the f64 item size 8"):
        sluice.stats(raw, dtype="f64")
    with pytest.raises(sluice.InputError) as e:
        sluice.grep("a", tmp_path / "missing.txt")
    assert str(tmp_path / "missing.txt") in str(e.value)
    with pytest.raises(sluice.InputError, match="bad pattern"):
        sluice.grep("(", raw)


def test_a_numpy_that_does_not_import_fails_the_import_of_sluice(tmp_path):
    # Every call returns NumPy arrays: NumPy is imported with sluice, not by the first result
    # (which charged a fresh process's first call ~70 ms, and failed a long run at its end).
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('numpy broken for this test')\n")
    p = subprocess.run([sys.executable, "-c", "import sluice"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert p.returncode != 0
    assert "ImportError: numpy broken for this test" in p.stderr, p.stderr
    assert "Panic" not in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-c", "import sys, sluice; print('numpy' in sys.modules)"],
                       capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "True"
