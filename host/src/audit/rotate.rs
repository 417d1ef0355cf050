//! An append-only file that rotates by size: `audit.jsonl` → `audit.jsonl.1` → … → `.N`, the
//! oldest dropped. Created readable by the owner only: it records what was sent to servers.
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: File,
    size: u64,
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
        })
    }

    /// Appends one line (`line` without its `\n`), rotating first if it would not fit.
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let len = line.len() as u64 + 1;
        if self.size > 0 && self.size + len > self.max_bytes {
            self.rotate()?;
        }
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        // One write per entry: a reader (`audit tail --follow`) never sees half an entry of a
        // finished write, and nothing is left in a buffer if rkmcp dies.
        self.file.write_all(&buf)?;
        self.size += len;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        if self.keep == 0 {
            self.file = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&self.path)?;
            self.file = open_append(&self.path)?;
        } else {
            for i in (1..self.keep).rev() {
                let from = numbered(&self.path, i);
                if from.exists() {
                    std::fs::rename(&from, numbered(&self.path, i + 1))?;
                }
            }
            std::fs::rename(&self.path, numbered(&self.path, 1))?;
            self.file = open_append(&self.path)?;
        }
        self.size = 0;
        Ok(())
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
        .append(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = RotatingFile::open(&path, 100, 2).unwrap();
        for i in 0..10 {
            f.write_line(format!("{i:0>39}").as_bytes()).unwrap(); // 40 bytes with \n
        }
        // 2 lines per file: 8,9 current; 6,7 in .1; 4,5 in .2; older dropped.
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert!(read(&path).ends_with("9\n") && read(&path).lines().count() == 2);
        assert!(read(&numbered(&path, 1)).contains(&format!("{:0>39}", 7)));
        assert!(read(&numbered(&path, 2)).contains(&format!("{:0>39}", 4)));
        assert!(!numbered(&path, 3).exists());
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
    }
}
