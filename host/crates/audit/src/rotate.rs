//! An append-only file that rotates by size: `audit.jsonl` → `audit.jsonl.1` → … → `.N`, the
//! oldest dropped. Created readable by the owner only: it records what was sent to servers.
//!
//! Each entry is sealed into the hash chain ([`super::chain`]) as it is appended. The chain is
//! continued from the file's last line when rkmcp starts (reading only the tail), across
//! rotations (the new file starts with a `rotated` record linked to the last line of the old
//! one), and across processes: every write takes an advisory lock on the file and, when another
//! rkmcp wrote or rotated since, re-reads the tail first — two processes sharing one log keep
//! one chain. That costs a lock and two `stat`s per entry, no reads while the file is ours alone.
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::chain::{self, GENESIS, Tail};

pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: File,
    /// The file's length as far as this process knows: another writer changed it if it differs.
    size: u64,
    /// The chain value of the file's last line; `None` until the tail has been read.
    prev: Option<String>,
    /// Whether `file` is locked by us (locking may be unsupported: then writes go unlocked).
    locked: bool,
    /// The file holds nothing but the chain record rkmcp wrote at its start: no use rotating.
    fresh: bool,
}

impl RotatingFile {
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> std::io::Result<RotatingFile> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1),
            keep,
            file,
            size,
            prev: None,
            locked: false,
            fresh: false,
        })
    }

    /// Appends one entry (a JSON object's text, without a newline), sealed into the chain,
    /// rotating first if it would not fit.
    pub fn write_entry(&mut self, content: &[u8]) -> std::io::Result<()> {
        self.lock();
        let result = self.write_locked(content);
        self.unlock();
        result
    }

    fn lock(&mut self) {
        self.locked = self.file.lock().is_ok();
    }

    fn unlock(&mut self) {
        if std::mem::take(&mut self.locked) {
            let _ = self.file.unlock();
        }
    }

    fn write_locked(&mut self, content: &[u8]) -> std::io::Result<()> {
        self.follow_path()?;
        let len = self.file.metadata()?.len();
        if self.prev.is_none() || len != self.size {
            self.size = len;
            self.continue_chain()?;
        }
        let sealed_len = (content.len() + chain::SEAL_OVERHEAD) as u64 + 1;
        if !self.fresh && self.size > 0 && self.size + sealed_len > self.max_bytes {
            self.rotate()?;
        }
        self.fresh = false;
        self.append_sealed(content.to_vec(), None)
    }

    /// Another process rotated the log (or it was moved away) since our last write: continue in
    /// the file the path names now.
    fn follow_path(&mut self) -> std::io::Result<()> {
        // Bounded: a log rotated over and over under our feet is written to where we are.
        for _ in 0..4 {
            let ours = self.file.metadata()?;
            match std::fs::metadata(&self.path) {
                Ok(now) if now.ino() == ours.ino() && now.dev() == ours.dev() => return Ok(()),
                _ => {}
            }
            let file = open_append(&self.path)?;
            self.unlock();
            self.file = file;
            self.lock();
            self.prev = None;
        }
        Ok(())
    }

    /// Reads the tail to link the next line to the last one, or starts a new chain saying why.
    fn continue_chain(&mut self) -> std::io::Result<()> {
        self.fresh = self.size == 0;
        match chain::read_tail(&self.file, self.size, &self.path) {
            Tail::Chained(last) => {
                self.prev = Some(last);
                Ok(())
            }
            Tail::Empty => {
                self.append_sealed(chain::marker("start", None).into_bytes(), Some(GENESIS))
            }
            Tail::Broken { reason, torn } => {
                if torn {
                    self.append_raw(b"\n")?;
                }
                tracing::warn!("audit log: a new hash chain starts: {reason}");
                self.append_sealed(
                    chain::marker("restart", Some(&reason)).into_bytes(),
                    Some(GENESIS),
                )
            }
        }
    }

    /// Seals `content` linked to `prev` (default: the last line) and appends it.
    fn append_sealed(&mut self, content: Vec<u8>, prev: Option<&str>) -> std::io::Result<()> {
        let prev = prev.or(self.prev.as_deref()).unwrap_or(GENESIS);
        let (mut line, chain) = chain::seal(&content, prev);
        line.push(b'\n');
        // One write per entry: a reader (`audit tail --follow`) never sees half an entry of a
        // finished write, and nothing is left in a buffer if rkmcp dies.
        self.append_raw(&line)?;
        self.prev = Some(chain);
        Ok(())
    }

    fn append_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        if self.keep == 0 {
            OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&self.path)?;
        } else {
            for i in (1..self.keep).rev() {
                let from = numbered(&self.path, i);
                if from.exists() {
                    std::fs::rename(&from, numbered(&self.path, i + 1))?;
                }
            }
            std::fs::rename(&self.path, numbered(&self.path, 1))?;
        }
        // The new file is locked before the old one is closed (which releases its lock): a
        // process waiting for the old file finds the path moved and waits for the new one.
        let file = open_append(&self.path)?;
        let was_locked = self.locked;
        self.locked = was_locked && file.lock().is_ok();
        self.file = file;
        self.size = 0;
        self.fresh = true;
        self.append_sealed(chain::marker("rotated", None).into_bytes(), None)
    }
}

pub fn numbered(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn rotates_by_size_and_keeps_n_files_with_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        // A chain record is ~225 bytes, an entry 157: two entries fit after it.
        let mut f = RotatingFile::open(&path, 600, 2).unwrap();
        for i in 0..10 {
            f.write_entry(format!(r#"{{"n":{i}}}"#).as_bytes()).unwrap();
        }
        // 2 entries per file: 8,9 current; 6,7 in .1; 4,5 in .2; older dropped.
        let entries =
            |p: &Path| -> Vec<i64> { lines(p).iter().filter_map(|e| e["n"].as_i64()).collect() };
        assert_eq!(entries(&path), [8, 9]);
        assert_eq!(entries(&numbered(&path, 1)), [6, 7]);
        assert_eq!(entries(&numbered(&path, 2)), [4, 5]);
        assert!(!numbered(&path, 3).exists());
        // Each file starts with a `rotated` record linked to the last line of the one before.
        let (older, newer) = (lines(&numbered(&path, 1)), lines(&path));
        assert_eq!(newer[0]["kind"], "audit_chain");
        assert_eq!(newer[0]["event"], "rotated");
        assert_eq!(newer[0]["prev"], older.last().unwrap()["chain"]);
        for pair in newer.windows(2) {
            assert_eq!(pair[1]["prev"], pair[0]["chain"]);
        }
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
    }

    #[test]
    fn a_new_log_starts_at_genesis_and_a_reopened_one_continues() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = RotatingFile::open(&path, 1 << 20, 2).unwrap();
        f.write_entry(br#"{"n":1}"#).unwrap();
        drop(f);
        let mut f = RotatingFile::open(&path, 1 << 20, 2).unwrap();
        f.write_entry(br#"{"n":2}"#).unwrap();
        let all = lines(&path);
        assert_eq!(all.len(), 3, "{all:?}");
        assert_eq!(all[0]["event"], "start");
        assert_eq!(all[0]["prev"], GENESIS);
        assert_eq!(all[1]["prev"], all[0]["chain"]);
        assert_eq!(
            all[2]["prev"], all[1]["chain"],
            "continued after the restart"
        );
    }

    #[test]
    fn two_writers_on_one_file_keep_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut a = RotatingFile::open(&path, 1500, 3).unwrap();
        let mut b = RotatingFile::open(&path, 1500, 3).unwrap();
        for i in 0..12 {
            let w = if i % 3 == 0 { &mut b } else { &mut a };
            w.write_entry(format!(r#"{{"n":{i}}}"#).as_bytes()).unwrap();
        }
        // Across rotations done by either: every line links to the one before it.
        let mut all = Vec::new();
        for p in [
            numbered(&path, 3),
            numbered(&path, 2),
            numbered(&path, 1),
            path.clone(),
        ] {
            if p.exists() {
                all.extend(lines(&p));
            }
        }
        assert!(numbered(&path, 1).exists(), "the test rotates");
        let ns: Vec<i64> = all.iter().filter_map(|e| e["n"].as_i64()).collect();
        assert_eq!(ns.last(), Some(&11));
        for pair in all.windows(2) {
            assert_eq!(pair[1]["prev"], pair[0]["chain"], "{all:#?}");
        }
    }
}
