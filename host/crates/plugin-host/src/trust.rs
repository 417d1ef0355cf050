//! Which folders rkmcp trusts with code, and which file grants would let a plugin reach them.
//!
//! Compiled components in the cache run as native code, and plugin files are what the sandbox
//! is built from; whoever can write either runs code as the user. So the cache, its index and
//! the plugin folders must be writable by the user alone (like `~/.ssh`), and no file grant may
//! give a plugin write access to them (or any access to rkmcp's config, which holds secrets).
//! The rules are pure functions over modes and paths; [`check_folder`] and
//! [`check_file`] apply them to the filesystem.
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Why a folder or file is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    #[error("{path} is writable by {who}; fix with: chmod go-w {path}")]
    Writable { path: String, who: &'static str },
    #[error(
        "{path} is owned by another user (uid {owner}, you are {me}); use a folder of your own"
    )]
    Owner { path: String, owner: u32, me: u32 },
    #[error("cannot check {path}: {message}")]
    Unreadable { path: String, message: String },
}

/// The rule for one path's mode and owner. `sticky_root_ok`: for ancestors, a root-owned
/// world-writable folder with the sticky bit (`/tmp`) is fine, since nobody else can rename or
/// replace what is inside it; the folder itself must be ours.
pub fn judge(path: &Path, mode: u32, owner: u32, me: u32, ancestor: bool) -> Result<(), Untrusted> {
    let shown = || path.display().to_string();
    let sticky = mode & 0o1000 != 0;
    if ancestor && owner == 0 && sticky {
        return Ok(());
    }
    if owner != me && !(ancestor && owner == 0) {
        return Err(Untrusted::Owner {
            path: shown(),
            owner,
            me,
        });
    }
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (_, true) => "everyone",
        (true, false) => "its group",
        (false, false) => return Ok(()),
    };
    Err(Untrusted::Writable { path: shown(), who })
}

fn me() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn meta(path: &Path) -> Result<std::fs::Metadata, Untrusted> {
    std::fs::metadata(path).map_err(|e| Untrusted::Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Checks a folder that holds code rkmcp runs: it and every folder above it.
pub fn check_folder(dir: &Path) -> Result<(), Untrusted> {
    // The folder of a bare file name (`Path::parent` of `x.wasm`) is the empty path: here.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let real = std::fs::canonicalize(dir).map_err(|e| Untrusted::Unreadable {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let me = me();
    let m = meta(&real)?;
    judge(&real, m.mode(), m.uid(), me, false)?;
    for up in real.ancestors().skip(1) {
        let m = meta(up)?;
        judge(up, m.mode(), m.uid(), me, true)?;
    }
    Ok(())
}

/// Checks one file of code (a `.wasm`, a `.cwasm`): ours and not writable by others.
pub fn check_file(file: &Path) -> Result<(), Untrusted> {
    let m = meta(file)?;
    judge(file, m.mode(), m.uid(), me(), false)
}

/// Creates `dir` (and missing parents) readable and writable by the user only, then checks it.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    Ok(())
}

/// Makes a file we just wrote private (a `.cwasm`, an index entry).
pub fn make_private(file: &Path) -> io::Result<()> {
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
}

/// A folder no file grant may reach, with what it is (for the error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    pub path: PathBuf,
    pub what: &'static str,
    /// Read-only grants are refused too (the config holds secrets); otherwise only
    /// read-write grants are refused (reading compiled code or plugin files is harmless).
    pub no_read: bool,
}

/// `path` made absolute and free of `.`/`..`; the longest existing prefix is resolved through
/// symlinks (the rest, not yet created, cannot be a link).
pub fn normalize(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = abs.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return lexical(&out);
        }
        // The last component, `..` included (`file_name` has none for `a/..`): a missing
        // component cannot be a symlink, so what follows it is resolved lexically.
        match (existing.parent(), existing.components().next_back()) {
            (
                Some(p),
                Some(last @ (Component::Normal(_) | Component::ParentDir | Component::CurDir)),
            ) => {
                rest.push(last.as_os_str());
                existing = p;
            }
            _ => return lexical(&abs),
        }
    }
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether a grant of `granted` (normalised) reaches `protected` (normalised): one contains
/// the other. Pure: compares path components, never the filesystem.
pub fn overlaps(granted: &Path, protected: &Path) -> bool {
    granted.starts_with(protected) || protected.starts_with(granted)
}

/// The first protected folder a grant would reach, if any.
pub fn grant_conflict<'a>(
    granted: &Path,
    read_write: bool,
    protected: &'a [Protected],
) -> Option<&'a Protected> {
    protected
        .iter()
        .find(|p| (read_write || p.no_read) && overlaps(granted, &p.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 1000;

    #[test]
    fn own_private_folders_are_trusted() {
        assert!(judge(Path::new("/h/c"), 0o40700, ME, ME, false).is_ok());
        assert!(judge(Path::new("/h/c"), 0o40755, ME, ME, false).is_ok());
    }

    #[test]
    fn group_or_world_writable_is_refused_with_the_fix() {
        let e = judge(Path::new("/h/c"), 0o40777, ME, ME, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/h/c is writable by everyone; fix with: chmod go-w /h/c"
        );
        let e = judge(Path::new("/h/c"), 0o40770, ME, ME, false).unwrap_err();
        assert!(e.to_string().contains("by its group"), "{e}");
    }

    #[test]
    fn another_owner_is_refused() {
        let e = judge(Path::new("/h/c"), 0o40700, 1001, ME, false).unwrap_err();
        assert!(matches!(e, Untrusted::Owner { owner: 1001, .. }), "{e}");
        // Root's folders above ours are fine; root owning the folder itself is not.
        assert!(judge(Path::new("/usr"), 0o40755, 0, ME, true).is_ok());
        assert!(judge(Path::new("/c"), 0o40755, 0, ME, false).is_err());
    }

    #[test]
    fn the_empty_folder_of_a_bare_file_name_is_the_current_one() {
        let shown = |r: Result<(), Untrusted>| r.map_err(|e| e.to_string());
        assert_eq!(
            shown(check_folder(Path::new(""))),
            shown(check_folder(Path::new(".")))
        );
    }

    #[test]
    fn sticky_tmp_is_a_fine_ancestor_but_not_a_cache() {
        assert!(judge(Path::new("/tmp"), 0o41777, 0, ME, true).is_ok());
        assert!(judge(Path::new("/tmp"), 0o41777, 0, ME, false).is_err());
        // A world-writable ancestor without the sticky bit lets anyone rename our folder.
        assert!(judge(Path::new("/shared"), 0o40777, 0, ME, true).is_err());
    }

    fn protected() -> Vec<Protected> {
        vec![
            Protected {
                path: "/home/u/.cache/rkmcp/components".into(),
                what: "the compile cache",
                no_read: false,
            },
            Protected {
                path: "/home/u/.config/rkmcp".into(),
                what: "rkmcp's config folder",
                no_read: true,
            },
        ]
    }

    #[test]
    fn grants_containing_or_inside_protected_folders_conflict() {
        let p = protected();
        let home = Path::new("/home/u");
        assert_eq!(
            grant_conflict(home, true, &p).unwrap().what,
            "the compile cache"
        );
        assert_eq!(
            grant_conflict(home, false, &p).unwrap().what,
            "rkmcp's config folder"
        );
        let inside = Path::new("/home/u/.cache/rkmcp/components/x");
        assert!(grant_conflict(inside, true, &p).is_some());
        assert!(grant_conflict(inside, false, &p).is_none());
        assert!(grant_conflict(Path::new("/home/u/project"), true, &p).is_none());
        // Component-wise, not string prefixes.
        assert!(grant_conflict(Path::new("/home/u/.config/rkmcp-other"), false, &p).is_none());
    }

    #[test]
    fn normalize_resolves_dots_and_missing_tails() {
        let d = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(d.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        assert_eq!(normalize(&real.join("link/a/../b")), real.join("b"));
        assert_eq!(normalize(&real.join("missing/x")), real.join("missing/x"));
    }
}
