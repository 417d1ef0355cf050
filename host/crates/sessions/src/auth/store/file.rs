//! The file backend: `credentials.json`, mode 0600 in a 0700 directory. Refused, with the
//! `chmod` that fixes it, when other users could read it. Writes go to a temporary file in the
//! same directory and are renamed into place, so a crash never leaves half a file.
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{Entry, StoreError, StoreFile};

#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
}

impl FileStore {
    pub fn at(dir: impl Into<PathBuf>) -> FileStore {
        FileStore { dir: dir.into() }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("credentials.json")
    }

    /// Every entry. A missing file is an empty store; a file others can read is refused.
    pub fn entries(&self) -> Result<Vec<Entry>, StoreError> {
        let path = self.path();
        if !self.dir.exists() {
            return Ok(Vec::new());
        }
        check_private(&self.dir, 0o700)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    what: "read",
                    path,
                    source,
                });
            }
        };
        check_private(&path, 0o600)?;
        let file: StoreFile =
            serde_json::from_str(&text).map_err(|source| StoreError::Corrupt { path, source })?;
        Ok(file.entries)
    }

    pub fn write(&self, entries: Vec<Entry>) -> Result<(), StoreError> {
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { what, path, source }
        };
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(io("create", &self.dir))?;
            // `mode` only applies to the last component, and umask may have narrowed it further.
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io("protect", &self.dir))?;
        }
        check_private(&self.dir, 0o700)?;
        let text = serde_json::to_vec_pretty(&StoreFile {
            version: 1,
            entries,
        })
        .map_err(|source| StoreError::Corrupt {
            path: self.path(),
            source,
        })?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".credentials")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.dir)
            .map_err(io("create a file in", &self.dir))?;
        tmp.write_all(&text)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(io("write", tmp.path()))?;
        tmp.persist(self.path()).map_err(|e| StoreError::Io {
            what: "replace",
            path: self.path(),
            source: e.error,
        })?;
        Ok(())
    }

    /// Deletes the file (after its entries moved to the keyring).
    pub fn remove(&self) -> Result<(), StoreError> {
        match std::fs::remove_file(self.path()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Io {
                what: "remove",
                path: self.path(),
                source,
            }),
        }
    }
}

/// Refuses a path whose group/other bits are set (`want` is the mode to suggest).
fn check_private(path: &Path, want: u32) -> Result<(), StoreError> {
    let meta = std::fs::metadata(path).map_err(|source| StoreError::Io {
        what: "inspect",
        path: path.to_path_buf(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(StoreError::TooOpen {
            path: path.to_path_buf(),
            mode,
            want,
        });
    }
    Ok(())
}
