//! `--include`, `--exclude` and `--exclude-dir` as GNU grep 3.8 applies them (its `grep.c`
//! `skipped_file` over gnulib's `exclude.c`).
//!
//! # Contract
//! 1. Patterns are shell wildcards matched as `fnmatch(3)` with no flags: `*` and `?` match any
//!    byte, `/` and a leading `.` included; `[...]` is a set (`!` or `^` negates, `a-z` ranges,
//!    a `]` first is literal; a `[` without its `]` is literal); `\` quotes the next byte.
//!    POSIX classes (`[[:alpha:]]`) are not supported.
//! 2. A file found while walking a directory is matched by its base name; a file named on the
//!    command line by its name as given or any suffix of it that starts right after a `/`
//!    (GNU's "name suffix"). Standard input (`-`) is never skipped.
//! 3. `--include`/`--exclude`: the last option whose pattern matches decides (`--include`
//!    keeps the file, `--exclude` skips it); when none matches, the file is skipped if and only
//!    if the first of these options is an `--include`.
//! 4. `--exclude-dir`: a directory found while walking whose base name matches is not entered;
//!    a directory named on the command line is skipped when a name suffix matches, except the
//!    `.` searched by default when no FILE is given.

use std::ffi::OsString;
use std::path::Path;

/// The patterns, in command-line order.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    /// `(include, pattern)` for each `--include`/`--exclude`, in order (rule 3).
    files: Vec<(bool, Vec<u8>)>,
    dirs: Vec<Vec<u8>>,
}

impl Filters {
    /// The filters of `--include` (`includes`), `--exclude` and `--exclude-dir`; `args` is the
    /// command line, read only for the order of includes and excludes (clap keeps each kind's
    /// order but not their interleaving, which rule 3 needs).
    pub(crate) fn new(
        includes: &[String],
        excludes: &[String],
        exclude_dirs: &[String],
        args: impl IntoIterator<Item = OsString>,
    ) -> Filters {
        let bytes = |s: &String| s.as_bytes().to_vec();
        let mut files: Vec<(bool, Vec<u8>)> = includes.iter().map(|p| (true, bytes(p))).collect();
        files.extend(excludes.iter().map(|p| (false, bytes(p))));
        if !includes.is_empty() && !excludes.is_empty() {
            let ordered = order(args);
            let kind = |include: bool, v: &[(bool, Vec<u8>)]| -> Vec<Vec<u8>> {
                v.iter().filter(|(i, _)| *i == include).map(|(_, p)| p.clone()).collect()
            };
            // Use the scanned order only when it holds exactly what clap parsed.
            if kind(true, &ordered) == kind(true, &files)
                && kind(false, &ordered) == kind(false, &files)
            {
                files = ordered;
            }
        }
        Filters { files, dirs: exclude_dirs.iter().map(bytes).collect() }
    }

    /// Returns true if and only if the file `path` is skipped (rules 2 and 3).
    pub(crate) fn skips_file(&self, path: &Path, command_line: bool) -> bool {
        let Some(&(first_is_include, _)) = self.files.first() else {
            return false;
        };
        let name = path.as_os_str().as_encoded_bytes();
        match self.files.iter().rev().find(|(_, p)| matches(p, name, command_line)) {
            Some(&(include, _)) => !include,
            None => first_is_include,
        }
    }

    /// Returns true if and only if the directory `path` is skipped (rule 4).
    pub(crate) fn skips_dir(&self, path: &Path, command_line: bool) -> bool {
        let name = path.as_os_str().as_encoded_bytes();
        self.dirs.iter().any(|p| matches(p, name, command_line))
    }
}

/// The `--include`/`--exclude` options of the command line `args`, in order.
fn order(args: impl IntoIterator<Item = OsString>) -> Vec<(bool, Vec<u8>)> {
    let mut out = Vec::new();
    let mut args = args.into_iter().map(|a| a.as_encoded_bytes().to_vec());
    while let Some(arg) = args.next() {
        if arg == b"--" {
            break;
        }
        for (flag, include) in [(&b"--include"[..], true), (&b"--exclude"[..], false)] {
            if arg == flag {
                if let Some(value) = args.next() {
                    out.push((include, value));
                }
            } else if arg.starts_with(flag) && arg.get(flag.len()) == Some(&b'=') {
                out.push((include, arg[flag.len() + 1..].to_vec()));
            }
        }
    }
    out
}

/// Rule 2: `pattern` against `name` (a base name), or on the command line against `name` and
/// each suffix of it that starts right after a `/` (not at another `/`).
fn matches(pattern: &[u8], name: &[u8], command_line: bool) -> bool {
    if !command_line {
        let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
        return fnmatch(pattern, base);
    }
    fnmatch(pattern, name)
        || (0..name.len()).any(|i| {
            name[i] == b'/' && name.get(i + 1).is_some_and(|&c| c != b'/') && {
                fnmatch(pattern, &name[i + 1..])
            }
        })
}

/// `fnmatch(pattern, name, 0)` (rule 1): iterative, backtracking to the last `*` only, so
/// linear in practice.
fn fnmatch(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                star = Some((pi + 1, si));
                pi += 1;
                continue;
            }
            Some(b'?') => Some(pi + 1),
            Some(b'[') => match bracket(p, pi + 1, s[si]) {
                Some((true, next)) => Some(next),
                Some((false, _)) => None,
                None => (s[si] == b'[').then_some(pi + 1),
            },
            Some(b'\\') if pi + 1 < p.len() => (p[pi + 1] == s[si]).then_some(pi + 2),
            Some(&c) => (c == s[si]).then_some(pi + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                si += 1;
            }
            (None, Some((after, from))) => {
                star = Some((after, from + 1));
                pi = after;
                si = from + 1;
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The set that starts at `p[at]` (after its `[`) against `c`: whether `c` is in it and the
/// index after its `]`; `None` when the set has no closing `]`.
fn bracket(p: &[u8], mut at: usize, c: u8) -> Option<(bool, usize)> {
    let negate = matches!(p.get(at), Some(b'!' | b'^'));
    if negate {
        at += 1;
    }
    let mut found = false;
    let mut first = true;
    loop {
        let mut lo = *p.get(at)?;
        if lo == b']' && !first {
            return Some((found != negate, at + 1));
        }
        first = false;
        if lo == b'\\' {
            at += 1;
            lo = *p.get(at)?;
        }
        at += 1;
        let mut hi = lo;
        if p.get(at) == Some(&b'-') && p.get(at + 1).is_some_and(|&e| e != b']') {
            hi = p[at + 1];
            if hi == b'\\' {
                hi = *p.get(at + 2)?;
                at += 1;
            }
            at += 2;
        }
        found |= lo <= c && c <= hi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_follows_posix_wildcards() {
        let yes = [
            ("*.txt", "a.txt"),
            ("*", ".hidden"),
            ("*", "a/b"),
            ("a?c", "abc"),
            ("[a-c]x", "bx"),
            ("[!a-c]x", "dx"),
            ("[]]", "]"),
            ("\\*", "*"),
            ("[", "["),
            ("*a*b*", "xxaxxbxx"),
            ("", ""),
        ];
        for (p, s) in yes {
            assert!(fnmatch(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
        let no = [("*.txt", "a.tx"), ("a?c", "ac"), ("[!a-c]x", "bx"), ("\\*", "a"), ("a", "")];
        for (p, s) in no {
            assert!(!fnmatch(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
    }

    #[test]
    fn the_last_matching_option_decides_and_an_include_first_skips_the_rest() {
        let args = ["sluice", "grep", "--include=*.c", "--exclude", "x*", "--include=xy.c", "p"];
        let f = Filters::new(
            &["*.c".into(), "xy.c".into()],
            &["x*".into()],
            &[],
            args.map(OsString::from),
        );
        assert!(!f.skips_file(Path::new("a.c"), false));
        assert!(f.skips_file(Path::new("xa.c"), false));
        assert!(!f.skips_file(Path::new("xy.c"), false));
        assert!(f.skips_file(Path::new("a.h"), false));
        // On the command line, any name suffix after a `/` counts.
        assert!(!f.skips_file(Path::new("dir/a.c"), true));
        assert!(f.skips_file(Path::new("d/xa.c"), true));
    }
}
