//! Writing an output file so that a reader never sees half of it, and nothing that is not ours
//! is ever replaced (issue 17, defect 1).
//!
//! # Contract
//! 1. The target is resolved first: symbolic links are followed (at most 40 hops) to the path
//!    that would be written.
//! 2. A resolved regular file, or a new name, is written to a temporary file beside it
//!    ([`temps`] rule 3 names it) and renamed over it by [`OutputFile::commit`]; a replaced
//!    file's permission bits are kept. Dropped without `commit`, or interrupted by a signal
//!    ([`signals`]), the temporary file is removed and the target is untouched. Leftover
//!    temporaries of a killed run on the same target are removed when the next one starts.
//! 3. `-`, `/dev/stdout`, `/dev/fd/1` and `/proc/self/fd/1` are standard output, written through
//!    a duplicate of descriptor 1 (a closed stdout is an error at `create`, not lost output).
//!    Any other target that is not a regular file (a character device, a FIFO, a socket, a
//!    `/dev/fd/N` or `/proc/*/fd/N` descriptor link) is opened and written directly, never
//!    replaced.
//! 4. A write or flush error, `EPIPE` included, is returned to the caller with the path.
//!
//! # Modules
//! * `temps`: the registry of temporary paths, the publish lock, leftovers of killed runs;
//! * `signals`: the thread that turns SIGINT/SIGTERM/SIGHUP into a clean exit (130/143/129).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

pub mod signals;
pub mod temps;

/// An output being written; see the module contract.
#[derive(Debug)]
pub struct OutputFile {
    writer: BufWriter<File>,
    temp: Option<PathBuf>,
    /// The path the caller named.
    target: PathBuf,
    /// The resolved path the temporary file is renamed to.
    dest: PathBuf,
}

/// Where an output goes once its path is resolved (contract rules 1 and 3).
#[derive(Debug, PartialEq, Eq)]
enum Resolved {
    Stdout,
    Direct(PathBuf),
    Replace(PathBuf, Option<std::fs::Permissions>),
}

/// Follows `target`'s symbolic links to what an output to it must do.
fn resolve(target: &Path) -> std::io::Result<Resolved> {
    let mut path = target.to_path_buf();
    for _ in 0..40 {
        if is_stdout_name(&path) {
            return Ok(Resolved::Stdout);
        }
        if is_descriptor_link(&path) {
            return Ok(Resolved::Direct(path));
        }
        let meta = match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Resolved::Replace(path, None));
            }
            Err(e) => return Err(with_path(e, &path)),
            Ok(m) => m,
        };
        if meta.file_type().is_symlink() {
            let link = std::fs::read_link(&path).map_err(|e| with_path(e, &path))?;
            path = match path.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                _ => link,
            };
        } else if meta.is_file() {
            return Ok(Resolved::Replace(path, Some(meta.permissions())));
        } else {
            return Ok(Resolved::Direct(path));
        }
    }
    Err(with_path(std::io::Error::other("too many levels of symbolic links"), target))
}

fn is_stdout_name(path: &Path) -> bool {
    ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"].iter().any(|n| path.as_os_str() == *n)
}

/// `/dev/fd/N` and `/proc/PID/fd/N`: "links" that name an open descriptor, not a path.
fn is_descriptor_link(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.starts_with("/dev/fd/")
        || s.strip_prefix("/proc/")
            .and_then(|r| r.split_once('/'))
            .is_some_and(|(_, rest)| rest.starts_with("fd/"))
        || s == "/dev/stderr"
}

/// Returns true if and only if standard output was closed when the process started (Rust's
/// runtime then reopens descriptor 1 on `/dev/null`, so output would vanish with exit 0):
/// [`crate::sys::stdout_closed_at_start`], a check made before the runtime's. A `/dev/null`
/// the caller opened on purpose, write-only (`>/dev/null`) or read-write
/// (`subprocess.DEVNULL`), is not mistaken for it.
pub fn stdout_was_closed() -> bool {
    crate::sys::stdout_closed_at_start()
}

impl OutputFile {
    /// Opens `target` for writing (see the module contract). Errors name the path.
    pub fn create(target: impl AsRef<Path>) -> std::io::Result<OutputFile> {
        let target = target.as_ref().to_path_buf();
        let (file, temp) = match resolve(&target)? {
            Resolved::Stdout => {
                if stdout_was_closed() {
                    return Err(std::io::Error::other(
                        "stdout is closed; redirect it to a file or /dev/null",
                    ));
                }
                let fd = std::io::stdout().as_fd().try_clone_to_owned().map_err(|e| {
                    std::io::Error::new(e.kind(), format!("stdout is not open: {e}"))
                })?;
                (File::from(fd), None)
            }
            Resolved::Direct(path) => {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| with_path(e, &path))?;
                (file, None)
            }
            Resolved::Replace(path, permissions) => {
                let (file, temp) = create_temp(&path)?;
                if let Some(p) = permissions {
                    file.set_permissions(p).map_err(|e| with_path(e, &temp))?;
                }
                (file, Some((temp, path)))
            }
        };
        let (temp, dest) = match temp {
            Some((t, p)) => (Some(t), p),
            None => (None, target.clone()),
        };
        Ok(OutputFile { writer: BufWriter::with_capacity(1 << 16, file), temp, target, dest })
    }

    /// The target path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes and, for a regular file, syncs the temporary file and renames it over the target
    /// (an interruption comes wholly before or after the rename).
    pub fn commit(mut self) -> std::io::Result<()> {
        self.writer.flush().map_err(|e| with_path(e, &self.target))?;
        if let Some(temp) = self.temp.take() {
            let published = self.writer.get_ref().sync_all().and_then(|()| {
                temps::critical(|| {
                    std::fs::rename(&temp, &self.dest)?;
                    temps::unregister(&temp);
                    Ok(())
                })
            });
            if let Err(e) = published {
                temps::remove_any(&temp);
                temps::unregister(&temp);
                return Err(with_path(e, &self.target));
            }
        }
        Ok(())
    }
}

/// Creates the temporary file for a regular-file target, after removing the leftovers of
/// killed runs on the same target (contract rule 2).
fn create_temp(path: &Path) -> std::io::Result<(File, PathBuf)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.tmp-");
    temps::clean_leftovers(&dir, &prefix);
    for n in 0u32.. {
        let suffix = if n == 0 { String::new() } else { format!("-{n}") };
        let temp = dir.join(format!("{prefix}{}{suffix}", std::process::id()));
        let made = temps::create_registered(&temp, |t| {
            std::fs::OpenOptions::new().write(true).create_new(true).open(t)
        });
        match made {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(with_path(e, &temp)),
        }
    }
    unreachable!("the loop returns")
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            temps::remove_any(&temp);
            temps::unregister(&temp);
        }
    }
}

fn with_path(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// A version 1.0 `.npy` header (NumPy's `format.write_array_header_1_0`): magic, version,
/// length, then the dict padded with spaces and a newline to a multiple of 64 bytes. `descr` is
/// the Python literal of the dtype, quotes included: `'<f8'`, or a structured dtype such as
/// `[('id', '<u8'), ('value', '<f8')]`. One writer for every crate that writes `.npy`.
pub fn npy_header(descr: &str, shape: &[u64], fortran_order: bool) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran_order { "True" } else { "False" };
    let mut dict =
        format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape_text}, }}");
    let total = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(total.div_ceil(64) * 64 - total));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_output_leaves_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, "old").unwrap();
        {
            let mut out = OutputFile::create(&target).unwrap();
            out.write_all(b"new but unfinished").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temp file removed");
        let mut out = OutputFile::create(&target).unwrap();
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn rule1_links_are_followed_to_what_is_written() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("file"), "x").unwrap();
        symlink("file", d.join("rel")).unwrap();
        symlink(d.join("rel"), d.join("abs")).unwrap();
        symlink("missing", d.join("dangling")).unwrap();
        symlink("loop", d.join("loop")).unwrap();
        symlink("/dev/stdout", d.join("out")).unwrap();
        symlink("/dev/null", d.join("null")).unwrap();
        assert!(
            matches!(resolve(&d.join("abs")).unwrap(), Resolved::Replace(p, Some(_)) if p == d.join("file"))
        );
        assert_eq!(
            resolve(&d.join("dangling")).unwrap(),
            Resolved::Replace(d.join("missing"), None)
        );
        assert_eq!(resolve(&d.join("out")).unwrap(), Resolved::Stdout);
        assert_eq!(resolve(&d.join("null")).unwrap(), Resolved::Direct("/dev/null".into()));
        assert_eq!(
            resolve(Path::new("/proc/self/fd/2")).unwrap(),
            Resolved::Direct("/proc/self/fd/2".into())
        );
        assert!(resolve(&d.join("loop")).is_err());
    }

    #[test]
    fn non_regular_target_is_written_directly() {
        let mut out = OutputFile::create("/dev/null").unwrap();
        out.write_all(b"x").unwrap();
        out.commit().unwrap();
        assert!(Path::new("/dev/null").exists());
    }
}
