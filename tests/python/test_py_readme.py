"""The README's Python example (the first ```python block under "## Python") runs as written.

Needs the package (`pip install ./crates/py`).
"""

import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def example():
    text = README.read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_is_five_lines_and_runs(tmp_path):
    code = example()
    assert len(code.strip().splitlines()) == 5
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # It prints the original id and rank of every vertex: ranks sum to 1 (LDBC PageRank).
    ranks = dict(eval(p.stdout))  # noqa: S307 - our own output
    assert sorted(ranks) == [1, 2, 3, 4] and abs(sum(ranks.values()) - 1.0) < 1e-9
