//! The process's temporary paths, and the one lock that makes publishing them atomic with
//! respect to an interruption.
//!
//! # Contract
//! 1. A temporary path (file or directory) is created and registered in one step
//!    ([`create_registered`]) and unregistered when it is published or removed; [`remove_all`]
//!    (the signal handler's job) removes every registered path.
//! 2. [`critical`] runs a step that must not be cut in half (the renames that publish an
//!    output); the signal handler takes the same lock before removing anything, so an
//!    interruption happens wholly before or wholly after such a step.
//! 3. A temporary name is `{prefix}{pid}` or `{prefix}{pid}-{n}` beside its target.
//!    [`clean_leftovers`] removes the entries of a directory with that prefix whose process is
//!    gone (no `/proc/{pid}`): the leftovers of a killed run. A live process's temps, and names
//!    that do not have this shape, are never touched.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static REGISTERED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static CRITICAL: Mutex<()> = Mutex::new(());

/// Runs `step` so that no interruption is handled in the middle of it (rule 2).
pub fn critical<T>(step: impl FnOnce() -> T) -> T {
    let _guard = CRITICAL.lock().unwrap_or_else(|e| e.into_inner());
    step()
}

/// Runs `create` (which makes `path`) and registers `path`, as one step (rule 1).
pub fn create_registered<T>(
    path: &Path,
    create: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    critical(|| {
        let made = create(path)?;
        lock().push(path.to_path_buf());
        Ok(made)
    })
}

/// Registers a path that already exists and must be removed on interruption.
pub fn register(path: &Path) {
    lock().push(path.to_path_buf());
}

/// Forgets `path` (it was published, or removed by its owner).
pub fn unregister(path: &Path) {
    lock().retain(|p| p != path);
}

/// Removes every registered path, files and directories alike. Takes the critical lock first
/// and never gives it back: the caller exits next (rule 2).
pub fn remove_all_and_hold() {
    let guard = CRITICAL.lock().unwrap_or_else(|e| e.into_inner());
    for p in std::mem::take(&mut *lock()) {
        remove_while_written(&p);
    }
    std::mem::forget(guard);
}

/// Removes every registered path (rule 1).
pub fn remove_all() {
    critical(|| {
        for p in std::mem::take(&mut *lock()) {
            remove_any(&p);
        }
    });
}

/// Removes a file or a directory tree; a missing path is fine.
pub fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Removes `path` although other threads of the process may still be creating files in it:
/// the signal thread does not stop them, so a plain `remove_dir_all` can meet entries made
/// after it listed the directory and fail with "directory not empty" (CI saw a stage left so).
/// A directory is first renamed aside (to a name of rule 3's shape, so a later run cleans it if
/// this one cannot): creations by path then fail, and only those already under way can still
/// land in it; a few bounded rounds remove those. Nothing recreates a temporary directory.
fn remove_while_written(path: &Path) {
    let is_dir = std::fs::symlink_metadata(path).map(|m| m.is_dir()).unwrap_or(false);
    let mut target = path.to_path_buf();
    if is_dir {
        for n in 1_000_000..1_000_100u32 {
            let mut aside = path.as_os_str().to_owned();
            aside.push(format!("-{n}"));
            let aside = PathBuf::from(aside);
            if std::fs::symlink_metadata(&aside).is_err() && std::fs::rename(path, &aside).is_ok() {
                target = aside;
                break;
            }
        }
    }
    for _ in 0..200 {
        remove_any(&target);
        if std::fs::symlink_metadata(&target).is_err() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The process id in `name` if it is `{prefix}{pid}` or `{prefix}{pid}-{n}` (rule 3).
pub fn leftover_pid(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    let (pid, tail) = rest.split_once('-').unwrap_or((rest, ""));
    let valid_tail = tail.is_empty() || tail.bytes().all(|b| b.is_ascii_digit());
    let pid: u32 = pid.parse().ok().filter(|_| valid_tail && !pid.starts_with('+'))?;
    Some(pid)
}

/// Returns true if and only if process `pid` exists (on this machine's `/proc`).
pub fn process_alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the leftovers of killed runs in `dir` whose names start with `prefix` (rule 3);
/// returns the paths removed.
pub fn clean_leftovers(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = leftover_pid(&name.to_string_lossy(), prefix) else { continue };
        if !process_alive(pid) {
            let path = entry.path();
            remove_any(&path);
            removed.push(path);
        }
    }
    removed
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_names_are_recognised_exactly() {
        assert_eq!(leftover_pid(".a.bin.tmp-42", ".a.bin.tmp-"), Some(42));
        assert_eq!(leftover_pid(".a.bin.tmp-42-3", ".a.bin.tmp-"), Some(42));
        for other in [".a.bin.tmp-", ".a.bin.tmp-x", ".a.bin.tmp-4x", ".b.bin.tmp-42", "a.bin"] {
            assert_eq!(leftover_pid(other, ".a.bin.tmp-"), None, "{other}");
        }
    }

    #[test]
    fn only_dead_processes_leftovers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // pid_max is at most 2^22 on Linux: this process cannot exist.
        let dead = dir.path().join(".t.tmp-4194399");
        let live = dir.path().join(format!(".t.tmp-{}", std::process::id()));
        let other = dir.path().join("t.tmp-4194399");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("x"), "x").unwrap();
        std::fs::write(&live, "x").unwrap();
        std::fs::write(&other, "x").unwrap();
        assert_eq!(clean_leftovers(dir.path(), ".t.tmp-"), vec![dead.clone()]);
        assert!(!dead.exists() && live.exists() && other.exists());
    }

    #[test]
    fn a_directory_still_being_written_is_removed() {
        // The interruption case: writer threads go on creating files while the directory is
        // removed (CI once saw one left behind when a single remove_dir_all raced them).
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let stage = dir.path().join(format!(".s.tmp-{round}"));
            std::fs::create_dir(&stage).unwrap();
            let writers: Vec<_> = (0..3)
                .map(|w| {
                    let stage = stage.clone();
                    std::thread::spawn(move || {
                        for n in 0..20_000 {
                            if std::fs::write(stage.join(format!("{w}-{n}")), [0u8; 64]).is_err() {
                                return;
                            }
                        }
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(2));
            remove_while_written(&stage);
            for w in writers {
                w.join().unwrap();
            }
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
            assert!(left.is_empty(), "round {round}: left behind {left:?}");
        }
    }
}
