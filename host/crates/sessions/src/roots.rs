//! The client's roots: directories the user lets servers work in, announced as `file://` URIs.
//!
//! One [`Roots`] is shared by every session of a run (and by the chat's `/roots` command), so a
//! change is seen by the next `roots/list` of any server. Paths are kept absolute; the URI is
//! built by the `url` crate, which percent-encodes what a path may hold and a URI may not.
#![allow(deprecated)] // Roots are deprecated by SEP-2577 (2026-07-28) but servers use them today.
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rmcp::model::Root;

/// Why a path cannot be a root. The message names the path.
#[derive(Debug, thiserror::Error)]
pub enum RootsError {
    #[error("root `{path}`: {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("root `{0}` is not a directory")]
    NotADirectory(PathBuf),
    #[error("root `{0}` cannot be written as a file:// URI")]
    NotAUri(PathBuf),
}

/// The shared, mutable list of root directories.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    paths: Arc<RwLock<Vec<PathBuf>>>,
}

impl Roots {
    /// Roots from already-checked absolute paths (duplicates dropped, order kept).
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> Roots {
        let mut unique: Vec<PathBuf> = Vec::new();
        for path in paths {
            if !unique.contains(&path) {
                unique.push(path);
            }
        }
        Roots {
            paths: Arc::new(RwLock::new(unique)),
        }
    }

    /// Checks `paths` (relative ones are taken from `base`) and makes them roots. An empty list
    /// means the current directory, as the config documents.
    pub fn resolve(paths: &[PathBuf], base: &Path) -> Result<Roots, RootsError> {
        if paths.is_empty() {
            let cwd = std::env::current_dir().map_err(|source| RootsError::Unreadable {
                path: PathBuf::from("."),
                source,
            })?;
            return Ok(Roots::new([cwd]));
        }
        let checked = paths
            .iter()
            .map(|p| checked_dir(&base.join(p)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Roots::new(checked))
    }

    pub fn paths(&self) -> Vec<PathBuf> {
        self.paths.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds a directory (relative to the current directory). `Ok(false)` when it was a root
    /// already.
    pub fn add(&self, path: &Path) -> Result<bool, RootsError> {
        let path = checked_dir(path)?;
        let mut paths = self.paths.write().unwrap_or_else(|e| e.into_inner());
        if paths.contains(&path) {
            return Ok(false);
        }
        paths.push(path);
        Ok(true)
    }

    /// Removes a root, matched as given or as its absolute form. `false` when it was no root.
    pub fn remove(&self, path: &Path) -> bool {
        let absolute = std::path::absolute(path).ok();
        let canonical = std::fs::canonicalize(path).ok();
        let mut paths = self.paths.write().unwrap_or_else(|e| e.into_inner());
        let before = paths.len();
        paths
            .retain(|p| p != path && Some(p) != absolute.as_ref() && Some(p) != canonical.as_ref());
        paths.len() != before
    }

    /// The roots as MCP sends them: a `file://` URI each, named after the directory.
    pub fn to_mcp(&self) -> Vec<Root> {
        self.paths()
            .iter()
            .filter_map(|p| match to_root(p) {
                Ok(root) => Some(root),
                Err(err) => {
                    tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, "{err}");
                    None
                }
            })
            .collect()
    }
}

/// A root for an absolute directory path.
pub fn to_root(path: &Path) -> Result<Root, RootsError> {
    let url = url::Url::from_directory_path(path)
        .map_err(|()| RootsError::NotAUri(path.to_path_buf()))?;
    // `from_directory_path` ends the URI with `/`; roots are conventionally written without it.
    let mut uri = url.to_string();
    if uri.len() > "file:///".len() && uri.ends_with('/') {
        uri.pop();
    }
    let root = Root::new(uri);
    Ok(match path.file_name() {
        Some(name) => root.with_name(name.to_string_lossy()),
        None => root,
    })
}

/// The roots a connected client asked for (`rkmcp serve`), narrowed to `allowed`: a client may
/// narrow what the servers behind the gateway see, never widen it — a server such as
/// server-filesystem lets its client's roots decide which files it opens, and the gateway's
/// client may be a program on another machine. Returns the kept roots and, for each dropped one,
/// why (for the log). A root is kept when its path (symlinks resolved where it exists here) lies
/// inside an allowed directory; URIs that are not `file://` are dropped (`..` segments are
/// resolved when the URI is parsed, so a root cannot climb out of a directory it names).
pub fn narrow_roots(asked: &[Root], allowed: &[PathBuf]) -> (Vec<Root>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for root in asked {
        let path = url::Url::parse(&root.uri)
            .ok()
            .filter(|u| u.scheme() == "file")
            .and_then(|u| u.to_file_path().ok());
        let Some(path) = path else {
            dropped.push(format!("`{}`: not a file:// URI", root.uri));
            continue;
        };
        let real = std::fs::canonicalize(&path).unwrap_or(path);
        if allowed.iter().any(|a| real.starts_with(a)) {
            kept.push(root.clone());
        } else {
            dropped.push(format!(
                "`{}`: outside the configured roots ({})",
                root.uri,
                allowed
                    .iter()
                    .map(|a| a.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    (kept, dropped)
}

fn checked_dir(path: &Path) -> Result<PathBuf, RootsError> {
    let canonical = std::fs::canonicalize(path).map_err(|source| RootsError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(RootsError::NotADirectory(path.to_path_buf()));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_roots_narrow_the_configured_ones_and_never_widen_them() {
        let base = tempfile::tempdir().unwrap();
        let allowed = std::fs::canonicalize(base.path()).unwrap();
        let inside = allowed.join("project");
        std::fs::create_dir(&inside).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let asked = vec![
            to_root(&inside).unwrap(),
            to_root(&allowed).unwrap(),
            to_root(outside.path()).unwrap(),
            Root::new("https://example.org/repo"),
            Root::new(format!("file://{}/project/../..", allowed.display())),
            // Not on this machine: judged by its path alone.
            to_root(&allowed.join("later")).unwrap(),
        ];
        let (kept, dropped) = narrow_roots(&asked, std::slice::from_ref(&allowed));
        let kept: Vec<&str> = kept.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            kept,
            [
                asked[0].uri.as_str(),
                asked[1].uri.as_str(),
                asked[5].uri.as_str()
            ]
        );
        assert_eq!(dropped.len(), 3, "{dropped:?}");
        // URL parsing resolves `..` first: what climbs out is outside.
        assert!(
            dropped[0].contains("outside the configured roots"),
            "{dropped:?}"
        );
        assert!(dropped[1].contains("not a file://"), "{dropped:?}");
        assert!(
            dropped[2].contains("outside the configured roots"),
            "{dropped:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_client_root_linked_out_of_the_configured_ones_is_dropped() {
        let base = tempfile::tempdir().unwrap();
        let allowed = std::fs::canonicalize(base.path()).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let link = allowed.join("link");
        std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
        let (kept, dropped) = narrow_roots(&[to_root(&link).unwrap()], &[allowed]);
        assert!(kept.is_empty(), "{dropped:?}");
    }

    #[test]
    fn uris_are_percent_encoded_and_named() {
        let root = to_root(Path::new("/tmp/a dir/ü")).unwrap();
        assert_eq!(root.uri, "file:///tmp/a%20dir/%C3%BC");
        assert_eq!(root.name.as_deref(), Some("ü"));
        assert_eq!(to_root(Path::new("/")).unwrap().uri, "file:///");
    }

    #[test]
    fn add_and_remove_by_relative_or_absolute_path() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let roots = Roots::resolve(&[PathBuf::from("sub")], dir.path()).unwrap();
        let canonical = std::fs::canonicalize(&sub).unwrap();
        assert_eq!(roots.paths(), vec![canonical.clone()]);
        assert!(!roots.add(&sub).unwrap(), "a root is not added twice");
        assert!(roots.add(dir.path()).unwrap());
        assert!(roots.remove(&sub));
        assert!(!roots.remove(&sub));
        assert_eq!(roots.to_mcp().len(), 1);
    }

    #[test]
    fn a_file_or_missing_path_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let err = Roots::resolve(std::slice::from_ref(&file), dir.path()).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err = Roots::default()
            .add(&dir.path().join("missing"))
            .unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
