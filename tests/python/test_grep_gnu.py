"""`sluice grep` against GNU grep, byte for byte: every flag people use (-v -n -w -i -o -l -L -c
-H -h -x -b -q -A/-B/-C -e -F -m --include --exclude --exclude-dir --color), on one file, several files, a directory and standard input, over
files with long lines, CRLF, no trailing newline, NUL bytes, lines across block boundaries and
empty files. Both run with LC_ALL=C (bytes); sluice with 4 KiB blocks, so that many lines and
matches sit on a seam between two reads. Compared: standard output and the exit status.

Known differences, kept out of the data (documented in `sluice grep --help` and the module doc):
patterns are Rust regexes (leftmost-first, not POSIX leftmost-longest, which `-o` can show with
alternatives like `a|ab`); in a binary file GNU grep also treats NUL as a line end, which changes
`-v` and `-c` there. `--color=always` is compared with GNU grep's default colours (GREP_COLORS
unset: sluice does not read it).
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import sluice_bin

pytestmark = pytest.mark.skipif(shutil.which("grep") is None, reason="skipping: no GNU grep")

ENV = {**os.environ, "LC_ALL": "C"}
WORDS = ["foo", "bar", "baz", "quux", "the", "end", "word", "Foo", "BAR", "x", "o", "a.b",
         "foobar", "3141", "12", "_id", "@at", "end."]


def text(rng, lines, max_words=12, cr=0.0):
    out = []
    for _ in range(lines):
        n = int(rng.integers(0, max_words + 1))
        line = " ".join(rng.choice(WORDS, size=n))
        if rng.random() < cr:
            line += "\r"
        out.append(line)
    return ("\n".join(out) + "\n").encode()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(16)
    d = tmp_path_factory.mktemp("corpus")
    files = {
        "plain.txt": text(rng, 300),
        # ~400 KiB of short lines: about a hundred 4 KiB seams, each cutting a line.
        "seams.txt": text(rng, 12_000),
        # Lines far longer than a block (and than GNU grep's 32 KiB first buffer).
        "long.txt": text(rng, 3, max_words=30_000) + b"short foo line\n" + text(rng, 2, 9_000),
        "crlf.txt": text(rng, 200, cr=1.0),
        "mixed_cr.txt": text(rng, 200, cr=0.3),
        "no_newline.txt": text(rng, 50)[:-1],
        "empty.txt": b"",
        "blank_lines.txt": b"\n\nfoo\n\n\nbar\n\n",
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    tree = d / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "a.txt").write_bytes(text(rng, 40))
    (tree / "sub" / "b.txt").write_bytes(text(rng, 40, cr=0.5))
    (tree / "sub" / "deeper" / "c.txt").write_bytes(text(rng, 40)[:-1])
    (tree / "sub" / "empty.txt").write_bytes(b"")
    (tree / "sub" / "blob.bin").write_bytes(b"foo\0bar\nfoo the end\n" * 10)
    return d


def run_both(args, cwd, stdin=None):
    g = subprocess.run(["grep", *args], cwd=cwd, capture_output=True, env=ENV, input=stdin)
    s = subprocess.run([sluice_bin(), "grep", *args, "--block-size", "4K"], cwd=cwd,
                       capture_output=True, env=ENV, input=stdin)
    return g, s


def assert_same(args, cwd, stdin=None, gnu_args=None):
    g, s = run_both(args, cwd, stdin)
    if gnu_args is not None:
        g = subprocess.run(["grep", *gnu_args], cwd=cwd, capture_output=True, env=ENV,
                           input=stdin)
    what = f"grep {' '.join(args)}"
    assert s.returncode == g.returncode, f"{what}: exit {s.returncode}, GNU {g.returncode}: " \
        f"{s.stderr.decode(errors='replace')}"
    assert s.stdout == g.stdout, f"{what}: first difference at byte " \
        f"{next((i for i, (a, b) in enumerate(zip(s.stdout, g.stdout)) if a != b), 'end')}"
    return g, s


FLAGS = [
    [], ["-v"], ["-n"], ["-w"], ["-i"], ["-o"], ["-l"], ["-L"], ["-c"], ["-H"], ["-h"], ["-x"],
    ["-b"], ["-q"], ["-n", "-b"], ["-o", "-b"], ["-o", "-n"], ["-o", "-i"], ["-w", "-o"],
    ["-w", "-i", "-n"], ["-A", "2"], ["-B", "3"], ["-C", "1"], ["-n", "-C", "2"],
    ["-v", "-n", "-A", "1"], ["-c", "-v"], ["-o", "-C", "1"], ["-b", "-B", "1"],
    ["-i", "-c"], ["-x", "-v", "-c"],
]
PATTERNS = ["foo", "ba[rz]", "^the", "end$", "o+", "[0-9]{3}", "x|quux", "", "\\bword\\b",
            "Foo"]
FILES = ["plain.txt", "seams.txt", "long.txt", "crlf.txt", "mixed_cr.txt", "no_newline.txt",
         "empty.txt", "blank_lines.txt"]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "".join(f) or "none")
@pytest.mark.parametrize("pattern", PATTERNS)
def test_one_file_each_flag(corpus, flags, pattern):
    if pattern == "" and "-v" in flags:
        # GNU grep exits 1 at once, printing nothing even with -c (grep.c: an empty pattern
        # with -v "cannot select anything"); sluice prints the count, 0.
        return
    for name in FILES:
        assert_same([*flags, "-E", "-e", pattern, name], corpus)


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "".join(f) or "none")
def test_several_files_and_a_directory(corpus, flags):
    assert_same([*flags, "-E", "foo|end", *FILES], corpus)
    # A directory: sluice skips binary files it finds there (GNU grep's -I).
    assert_same([*flags, "-E", "-r", "foo|end", "tree"], corpus,
                gnu_args=[*flags, "-E", "-r", "-I", "foo|end", "tree"])
    assert_same([*flags, "-E", "-r", "the"], corpus / "tree",
                gnu_args=[*flags, "-E", "-r", "-I", "the"])


@pytest.mark.parametrize("flags", [[], ["-n"], ["-c"], ["-v", "-C", "1"], ["-H"], ["-l"]])
def test_standard_input(corpus, flags):
    data = (corpus / "seams.txt").read_bytes()
    assert_same([*flags, "-E", "ba[rz] the"], corpus, stdin=data)
    assert_same([*flags, "-E", "ba[rz] the", "-"], corpus, stdin=data)
    assert_same([*flags, "-E", "ba[rz] the", "plain.txt", "-"], corpus, stdin=data)


@pytest.mark.parametrize("flags", [[], ["-o"], ["-c"], ["-w"], ["-x"], ["-i", "-n"]])
def test_fixed_strings_and_several_patterns(corpus, flags):
    for name in ["plain.txt", "seams.txt", "no_newline.txt"]:
        assert_same([*flags, "-F", "a.b", name], corpus)
        assert_same([*flags, "-F", "-e", "end.", "-e", "@at", name], corpus)
        assert_same([*flags, "-E", "-e", "^foo", "-e", "quux$", "-e", "3141", name], corpus)
        assert_same([*flags, "-F", "foo\nbar", name], corpus)


def test_binary_files_say_so_and_a_counts_them(corpus):
    d = corpus
    (d / "nul.bin").write_bytes(b"foo\0bar\nbaz foo\nnothing\n")
    g, s = assert_same(["foo", "nul.bin"], d)
    assert b"binary file matches" in g.stderr and b"nul.bin: binary file matches" in s.stderr
    assert_same(["foo", "nul.bin", "plain.txt"], d)
    assert_same(["-c", "foo", "nul.bin"], d)
    assert_same(["-l", "foo", "nul.bin", "plain.txt"], d)
    assert_same(["-a", "foo", "nul.bin"], d)
    assert_same(["-a", "-n", "-o", "ba.", "nul.bin"], d)
    g, s = assert_same(["zzz", "nul.bin"], d)
    assert b"binary" not in s.stderr
    # -a searches the binary files a directory holds.
    assert_same(["-a", "-r", "foo", "tree"], d)


def test_errors_exit_2_and_the_other_files_are_still_searched(corpus):
    g, s = assert_same(["foo", "missing.txt", "plain.txt"], corpus)
    assert g.returncode == 2 and b"missing.txt" in s.stderr
    assert_same(["-s", "foo", "missing.txt", "plain.txt"], corpus)
    assert_same(["-q", "foo", "plain.txt", "missing.txt"], corpus)
    assert_same(["zzz", "missing.txt", "plain.txt"], corpus)
    g, s = assert_same(["a(", "plain.txt"], corpus, gnu_args=["-E", "a(", "plain.txt"])
    assert b"a(" in s.stderr


MAX_FLAGS = [
    ["-m", "1"], ["-m", "3", "-n"], ["-m", "2", "-A", "2"], ["-m", "5", "-c"], ["-m", "0"],
    ["-m", "2", "-v"], ["-m", "3", "-C", "1", "-n"], ["-m", "1", "-l"], ["-m", "2", "-o", "-b"],
    ["-m", "4", "-B", "2"], ["-m", "2", "-v", "-A", "1"], ["-m", "7", "-q"], ["-m", "1", "-L"],
    ["-m", "40", "-A", "3"], ["-m", "1", "-A", "0"],
]


@pytest.mark.parametrize("flags", MAX_FLAGS, ids=lambda f: "".join(f))
@pytest.mark.parametrize("pattern", ["foo", "^the", "end$", ""])
def test_max_count(corpus, flags, pattern):
    """-m NUM: each file stops after NUM selected lines; its trailing context still prints (as
    context, matching lines too); counts and -l/-L/-q count at most NUM."""
    if pattern == "" and "-v" in flags:
        return  # GNU's shortcut for an empty pattern with -v, as in test_one_file_each_flag
    for name in FILES:
        assert_same([*flags, "-E", "-e", pattern, name], corpus)
    assert_same([*flags, "-E", "-e", pattern, *FILES], corpus)


COLOR_FLAGS = [f for f in FLAGS if "-q" not in f] + [["-v", "-C", "2"], ["-c", "-H"], ["-L"],
                                                     ["-o", "-n", "-b", "-H"], ["-A", "0"]]


@pytest.mark.parametrize("flags", COLOR_FLAGS, ids=lambda f: "".join(f) or "none")
@pytest.mark.parametrize("pattern", ["foo", "o+", "x|quux", "^", "\\bword\\b"])
def test_color_always_has_gnu_default_colors(corpus, flags, pattern):
    """--color=always: the SGR sequences GNU grep writes with GREP_COLORS unset (names, numbers,
    separators, matches in selected lines, or with -v in context lines)."""
    for name in FILES:
        assert_same(["--color=always", *flags, "-E", "-e", pattern, name], corpus)
    assert_same(["--color=always", *flags, "-E", "-e", pattern, *FILES[:4]], corpus)


@pytest.mark.parametrize("when", ["never", "auto"])
def test_color_never_and_auto_into_a_pipe_are_plain(corpus, when):
    for flags in [[], ["-n", "-H"], ["-C", "1"], ["-o"], ["-c"], ["-l"]]:
        assert_same([f"--color={when}", *flags, "foo", *FILES[:3]], corpus)
        assert_same([*flags, "foo", *FILES[:3]], corpus, gnu_args=[*flags, "foo", *FILES[:3]])


@pytest.fixture(scope="module")
def globs_tree(tmp_path_factory):
    rng = np.random.default_rng(17)
    d = tmp_path_factory.mktemp("globs")
    for rel in ["a.c", "b.h", ".hidden.c", "x.txt", "src/main.c", "src/util.h", "src/x.c",
                "src/sub/deep.c", "src/sub/notes.txt", "build/out.c", "build/obj/o.txt",
                "doc/readme.txt", "doc/c.c/inner.txt", "a[1].c", "star*.c"]:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text(rng, 20))
    return d


GLOB_CASES = [
    ["--include=*.c"], ["--include=*.h", "--include=*.txt"], ["--exclude=*.c"],
    ["--exclude=x*"], ["--exclude-dir=build"], ["--exclude-dir=s*"], ["--exclude-dir=sub"],
    ["--include=*.c", "--exclude=x*"], ["--exclude=x*", "--include=*.c"],
    ["--exclude=*.c", "--include=main.c"], ["--include=*.c", "--exclude-dir=src"],
    ["--include", "?.c"], ["--exclude", "[ab].*"], ["--include=[!a]*.c"], ["--include=a[[]1].c"],
    ["--exclude=star\\*.c"], ["--include=.*"], ["--exclude-dir=*.c"], ["--exclude-dir=doc",
                                                                       "--include=*.txt"],
    ["--exclude-dir=."], ["--exclude=*"], ["--include=*"],
]


@pytest.mark.parametrize("globs", GLOB_CASES, ids=lambda f: " ".join(f))
def test_include_exclude_and_exclude_dir(globs_tree, globs):
    """--include/--exclude (the last matching option wins; none matching skips the file if the
    first one is --include), --exclude-dir, on a tree walked recursively (base names), on files
    and directories named on the command line (any name suffix after a `/`), and with no FILE
    (`.`)."""
    for flags in [["-r"], ["-r", "-l"], ["-r", "-c"]]:
        assert_same([*flags, *globs, "foo", "."], globs_tree)
        assert_same([*flags, *globs, "foo"], globs_tree)
        assert_same([*flags, *globs, "foo", "src", "a.c", "b.h", "src/x.c", "build",
                     "./doc/readme.txt"], globs_tree)
