//! `rkmcp audit verify`: recomputes the hash chain ([`super::chain`]) over the log and its
//! rotated files, oldest first, and names the first line that breaks it.
//!
//! Each line is checked twice: its own hash (does `chain` match `prev` and the content? if not,
//! the line was **edited**) and its link (is `prev` the chain value of the line before it? if
//! not, the line is whole but not where it was written). A broken link is explained with the
//! rest of the log: `prev` naming a line further down or further back means lines were
//! **reordered**; naming no line at all, that lines were **removed** before it — or, when the
//! next line links over it to the line before, that it was **inserted**. A line whose chain
//! value appears earlier is **duplicated**.
//!
//! Not tampering: lines without chain fields before the chained part (written by an rkmcp
//! older than chaining, or an unreadable line) when a `restart` record follows them; a torn last
//! line; a first file that begins with a `rotated` record (older files were not kept).
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::chain::{self, GENESIS, Line};

/// What was found wrong, by the kind of change that explains it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tamper {
    Edited,
    Removed,
    Reordered,
    Inserted,
    Duplicated,
}

impl Tamper {
    pub fn as_str(self) -> &'static str {
        match self {
            Tamper::Edited => "edited",
            Tamper::Removed => "removed",
            Tamper::Reordered => "reordered",
            Tamper::Inserted => "inserted",
            Tamper::Duplicated => "duplicated",
        }
    }
}

/// The first problem: where, what kind, and what the chain says about it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Problem {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    pub kind: Tamper,
    pub detail: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            Tamper::Edited => "was edited",
            Tamper::Removed => "follows removed lines",
            Tamper::Reordered => "is out of order (reordered)",
            Tamper::Inserted => "was inserted",
            Tamper::Duplicated => "is a duplicate",
        };
        write!(
            f,
            "{} line {} {what}: {}",
            self.file.display(),
            self.line,
            self.detail
        )
    }
}

#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub files: Vec<PathBuf>,
    pub lines: usize,
    /// Lines checked against the chain.
    pub chained: usize,
    /// Lines written before chaining.
    pub unchained: usize,
    /// What is worth knowing but not tampering: chain restarts and why, unchained lines,
    /// a log that begins after rotated files were dropped, a torn last line.
    pub notes: Vec<String>,
    pub problem: Option<Problem>,
}

impl Report {
    pub fn intact(&self) -> bool {
        self.problem.is_none()
    }
}

/// A file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the audit log {}: {source}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// `path` and its rotated files (`path.N`), oldest (highest N) first; only those that exist.
pub fn files_of(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut rotated = Vec::new();
    if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => Some(entries),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(err),
        };
        for entry in entries.into_iter().flatten() {
            let entry = entry?;
            let file_name = entry.file_name();
            let Some(n) = file_name
                .to_str()
                .and_then(|f| f.strip_prefix(name))
                .and_then(|rest| rest.strip_prefix('.'))
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            rotated.push((n, super::rotate::numbered(path, n as usize)));
        }
    }
    rotated.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    if path.exists() {
        files.push(path.to_path_buf());
    }
    Ok(files)
}

/// One line as the check needs it.
struct Rec {
    file: usize,
    line: usize,
    what: What,
}

enum What {
    Chained {
        prev: [u8; 64],
        chain: [u8; 64],
        intact: bool,
        /// `event` of an `audit_chain` record, with its `reason`.
        marker: Option<(String, Option<String>)>,
    },
    Unchained,
    Damaged {
        why: &'static str,
        /// The last line of a file, without a line end.
        torn: bool,
    },
}

fn hash_bytes(hex: &str) -> [u8; 64] {
    let mut out = [0u8; 64];
    let len = hex.len().min(64);
    out[..len].copy_from_slice(&hex.as_bytes()[..len]);
    out
}

fn read_records(files: &[PathBuf]) -> Result<Vec<Rec>, ReadError> {
    let mut recs = Vec::new();
    for (f, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|source| ReadError {
            path: path.clone(),
            source,
        })?;
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        // A file ending with a newline splits into an empty last piece: not a line.
        let torn = lines.last().is_some_and(|l| !l.is_empty());
        if !torn {
            lines.pop();
        }
        let count = lines.len();
        for (i, text) in lines.into_iter().enumerate() {
            let what = match Line::parse(text) {
                Line::Chained { body, prev, chain } => What::Chained {
                    prev: hash_bytes(prev),
                    chain: hash_bytes(chain),
                    intact: chain::intact(body, prev, chain),
                    marker: marker_of(body),
                },
                Line::Unchained if !(torn && i + 1 == count) => What::Unchained,
                Line::Unchained => What::Damaged {
                    why: "it has no line end",
                    torn: true,
                },
                Line::Damaged(why) => What::Damaged {
                    why,
                    torn: torn && i + 1 == count,
                },
            };
            recs.push(Rec {
                file: f,
                line: i + 1,
                what,
            });
        }
    }
    Ok(recs)
}

/// The `event` and `reason` of an `audit_chain` record.
fn marker_of(body: &[u8]) -> Option<(String, Option<String>)> {
    let needle = format!("\"kind\":\"{}\"", chain::KIND);
    if !body.windows(needle.len()).any(|w| w == needle.as_bytes()) {
        return None;
    }
    let mut text = body.to_vec();
    text.push(b'}');
    let entry: Value = serde_json::from_slice(&text).ok()?;
    if entry.get("kind").and_then(Value::as_str) != Some(chain::KIND) {
        return None;
    }
    let event = entry.get("event").and_then(Value::as_str)?.to_string();
    let reason = entry
        .get("reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((event, reason))
}

/// Checks `files` (oldest first) as one log.
pub fn verify(files: &[PathBuf]) -> Result<Report, ReadError> {
    let recs = read_records(files)?;
    let mut report = Report {
        files: files.to_vec(),
        lines: recs.len(),
        ..Report::default()
    };
    report.problem = walk(&recs, files, &mut report);
    Ok(report)
}

fn walk(recs: &[Rec], files: &[PathBuf], report: &mut Report) -> Option<Problem> {
    let at =
        |i: usize| -> String { format!("{} line {}", files[recs[i].file].display(), recs[i].line) };
    let problem = |i: usize, kind: Tamper, detail: String| Problem {
        file: files[recs[i].file].clone(),
        line: recs[i].line,
        kind,
        detail,
    };
    // Where each chain value is first found.
    let mut index: HashMap<&[u8; 64], usize> = HashMap::new();
    for (i, rec) in recs.iter().enumerate() {
        if let What::Chained { chain, .. } = &rec.what {
            index.entry(chain).or_insert(i);
        }
    }
    let genesis = hash_bytes(GENESIS);
    // The last chained line and its chain value: the next line must link to it.
    let mut last: Option<(usize, &[u8; 64])> = None;
    // The first of a run of lines without a (readable) chain since then.
    let mut pending: Option<usize> = None;
    // How the run in `pending` is described when a new chain accounts for it.
    let unchained_note = |from: usize, to: usize, reason: Option<&str>| -> String {
        let n = to - from + 1;
        let all_unchained = recs[from..=to]
            .iter()
            .all(|r| matches!(r.what, What::Unchained));
        let what = match (all_unchained, reason) {
            (true, _) => "unchained (written before chaining)".to_string(),
            (false, Some(reason)) => format!(
                "unchained or unreadable (not checked; the chain restarts after them: {reason})"
            ),
            (false, None) => "unchained or unreadable (not checked)".to_string(),
        };
        if n == 1 {
            format!("{} is {what}", at(from))
        } else {
            format!("{n} lines from {} to {} are {what}", at(from), at(to))
        }
    };
    for (i, rec) in recs.iter().enumerate() {
        let (prev, chain, intact, marker) = match &rec.what {
            What::Damaged { torn: true, why } if i + 1 == recs.len() => {
                report.notes.push(format!(
                    "{} is incomplete ({why}): a write was interrupted; nothing follows it",
                    at(i)
                ));
                break;
            }
            What::Unchained | What::Damaged { .. } => {
                pending.get_or_insert(i);
                continue;
            }
            What::Chained {
                prev,
                chain,
                intact,
                marker,
            } => (prev, chain, *intact, marker),
        };
        if !intact {
            return Some(problem(
                i,
                Tamper::Edited,
                "its content does not match its hash (the line was changed after it was written)"
                    .into(),
            ));
        }
        if let Some(&first) = index.get(chain)
            && first != i
        {
            return Some(problem(
                i,
                Tamper::Duplicated,
                format!("it repeats {}", at(first)),
            ));
        }
        let event = marker.as_ref().map(|(e, _)| e.as_str());
        if prev == &genesis {
            // A new chain: where rkmcp started one, it wrote why.
            let reason = match marker {
                Some((e, reason)) if e == "start" || e == "restart" => reason.clone(),
                _ => {
                    return Some(problem(
                        i,
                        Tamper::Removed,
                        "it links to the start of a chain, but the record that starts a chain is \
                         not before it: lines were removed"
                            .into(),
                    ));
                }
            };
            if let Some(from) = pending.take() {
                let note = unchained_note(from, i - 1, reason.as_deref());
                report.unchained += recs[from..i]
                    .iter()
                    .filter(|r| matches!(r.what, What::Unchained))
                    .count();
                report.notes.push(note);
            } else if last.is_some() {
                report.notes.push(match &reason {
                    Some(reason) => format!("the chain restarts at {}: {reason}", at(i)),
                    None => format!("a new chain starts at {}", at(i)),
                });
            }
            report.chained += 1;
            last = Some((i, chain));
            continue;
        }
        if let Some(from) = pending
            && let Some((q, expected)) = last
        {
            // Lines without a chain inside the chain.
            if prev == expected {
                return Some(problem(
                    from,
                    Tamper::Inserted,
                    format!(
                        "it has no chain fields, and {} links over it to {}: it was inserted                          (or is an entry whose chain fields were removed)",
                        at(i),
                        at(q)
                    ),
                ));
            }
            return Some(unchained_problem(recs, from, &problem, true));
        }
        let Some((q, expected)) = last else {
            // The first chained line (perhaps after lines written before chaining, which only
            // a record starting a chain accounts for).
            if let Some(&j) = index.get(prev) {
                return Some(problem(
                    i,
                    Tamper::Reordered,
                    format!(
                        "it is the first chained line of the log, but it belongs right after {}",
                        at(j)
                    ),
                ));
            }
            if pending.is_none() && event == Some("rotated") {
                report.notes.push(format!(
                    "the log begins at {} with a rotation: the files before it were not kept, \
                     so what came before cannot be checked",
                    at(i)
                ));
                report.chained += 1;
                last = Some((i, chain));
                continue;
            }
            return Some(problem(
                i,
                Tamper::Removed,
                "it is the first line of the log but links to a line that is not there: lines \
                 were removed from the start of the log"
                    .into(),
            ));
        };
        if prev == expected {
            report.chained += 1;
            last = Some((i, chain));
            continue;
        }
        // Whole, but not linked to the line before it: where does it belong?
        return Some(match index.get(prev) {
            Some(&j) if j > i => problem(
                i,
                Tamper::Reordered,
                format!(
                    "it belongs right after {}, further down; it does not follow {}",
                    at(j),
                    at(q)
                ),
            ),
            Some(&j) => problem(
                i,
                Tamper::Reordered,
                format!(
                    "it belongs right after {}, further back, not after {}: the lines in \
                     between were moved here or inserted",
                    at(j),
                    at(q)
                ),
            ),
            None => {
                let next_links_over = recs.get(i + 1).is_some_and(
                    |r| matches!(&r.what, What::Chained { prev, .. } if prev == expected),
                );
                if next_links_over {
                    problem(
                        i,
                        Tamper::Inserted,
                        format!(
                            "it does not belong to the chain: the line after it follows {} directly",
                            at(q)
                        ),
                    )
                } else if recs[q].file != rec.file {
                    problem(
                        i,
                        Tamper::Removed,
                        format!(
                            "it links to a line that is not in the log; lines were removed from \
                             the end of {} or the start of {}, or a rotated file in between is missing",
                            files[recs[q].file].display(),
                            files[rec.file].display()
                        ),
                    )
                } else {
                    problem(
                        i,
                        Tamper::Removed,
                        format!(
                            "it links to a line that is not in the log; one or more lines between \
                             {} and it were removed (or the line before it was replaced)",
                            at(q)
                        ),
                    )
                }
            }
        });
    }
    if let Some(from) = pending {
        if last.is_some() {
            return Some(unchained_problem(recs, from, &problem, true));
        }
        let count = recs[from..]
            .iter()
            .filter(|r| matches!(r.what, What::Unchained))
            .count();
        report.unchained += count;
        report
            .notes
            .push(unchained_note(from, recs.len() - 1, None));
        // Unreadable lines with no chain at all to account for them.
        if let Some(i) = (from..recs.len()).find(|&i| matches!(recs[i].what, What::Damaged { .. }))
        {
            return Some(unchained_problem(recs, i, &problem, false));
        }
    }
    None
}

/// Lines without a chain that no `restart` record accounts for.
fn unchained_problem(
    recs: &[Rec],
    from: usize,
    problem: &dyn Fn(usize, Tamper, String) -> Problem,
    after_chain: bool,
) -> Problem {
    let detail = match &recs[from].what {
        What::Damaged { why, .. } => format!("it is not an entry as rkmcp writes it ({why})"),
        _ if after_chain => "it has no chain fields, though the lines before it are chained: it \
                             was changed, or added by something other than this rkmcp"
            .to_string(),
        _ => "it has no chain fields, and no record starting a chain follows it".to_string(),
    };
    problem(from, Tamper::Edited, detail)
}

#[cfg(test)]
mod tests {
    use super::super::rotate::{RotatingFile, numbered};
    use super::*;

    /// A log of `n` entries `{"n":i}` (after the `start` record) in one file.
    fn log(dir: &Path, n: usize) -> PathBuf {
        let path = dir.join("audit.jsonl");
        let mut f = RotatingFile::open(&path, 1 << 20, 3).unwrap();
        for i in 0..n {
            f.write_entry(format!(r#"{{"n":{i}}}"#).as_bytes()).unwrap();
        }
        path
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn rewrite(path: &Path, lines: &[String]) {
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    fn check(path: &Path) -> Report {
        verify(&files_of(path).unwrap()).unwrap()
    }

    fn problem(path: &Path) -> Problem {
        let report = check(path);
        report
            .problem
            .unwrap_or_else(|| panic!("not found: {:?}", report.notes))
    }

    #[test]
    fn an_untouched_log_is_intact_across_restarts_and_rotations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        for run in 0..3 {
            let mut f = RotatingFile::open(&path, 800, 10).unwrap();
            for i in 0..5 {
                f.write_entry(format!(r#"{{"run":{run},"n":{i}}}"#).as_bytes())
                    .unwrap();
            }
        }
        let files = files_of(&path).unwrap();
        assert!(files.len() > 2, "{files:?}");
        assert_eq!(files.last(), Some(&path));
        assert_eq!(files[0], numbered(&path, files.len() - 1), "oldest first");
        let report = verify(&files).unwrap();
        assert!(report.intact(), "{:?}", report.problem);
        assert!(report.notes.is_empty(), "{:?}", report.notes);
        assert_eq!(report.lines, report.chained);
        assert!(report.lines >= 16);
    }

    #[test]
    fn a_log_whose_oldest_files_were_dropped_is_intact_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = RotatingFile::open(&path, 600, 1).unwrap();
        for i in 0..10 {
            f.write_entry(format!(r#"{{"n":{i}}}"#).as_bytes()).unwrap();
        }
        let report = check(&path);
        assert_eq!(report.files.len(), 2);
        assert!(report.intact(), "{:?}", report.problem);
        assert!(report.notes[0].contains("not kept"), "{:?}", report.notes);
    }

    #[test]
    fn an_edited_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path(), 5);
        let mut all = lines(&path);
        all[3] = all[3].replace("\"n\":2", "\"n\":7");
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (4, Tamper::Edited), "{p}");
        assert!(
            p.to_string().contains("audit.jsonl line 4 was edited"),
            "{p}"
        );
        // Its chain value changed instead: the same.
        let mut all = lines(&log(tempfile::tempdir().unwrap().path(), 5));
        let chain = all[2][all[2].len() - 66..all[2].len() - 2].to_string();
        all[2] = all[2].replace(&chain, &"1".repeat(64));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (3, Tamper::Edited), "{p}");
    }

    #[test]
    fn a_removed_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path(), 5);
        let mut all = lines(&path);
        all.remove(2);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (3, Tamper::Removed), "{p}");
        assert!(p.detail.contains("line 2"), "{p}");
        // The first lines removed: the log starts mid-chain.
        all.drain(..2);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (1, Tamper::Removed), "{p}");
        assert!(p.detail.contains("start of the log"), "{p}");
    }

    #[test]
    fn swapped_lines_are_named_as_reordered() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path(), 5);
        let mut all = lines(&path);
        all.swap(2, 3);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (3, Tamper::Reordered), "{p}");
        assert!(p.detail.contains("right after"), "{p}");
        assert!(p.detail.contains("line 4"), "{p}");
        // A line moved back: it links to a line further back.
        let mut all = lines(&log(tempfile::tempdir().unwrap().path(), 5));
        let moved = all.remove(1);
        all.insert(4, moved);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!(p.kind, Tamper::Reordered, "{p}");
    }

    #[test]
    fn swapped_first_lines_and_lines_before_chaining_are_named_as_reordered() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path(), 3);
        let mut all = lines(&path);
        all.swap(0, 1);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (1, Tamper::Reordered), "{p}");
        assert!(
            p.detail.contains("right after") && p.detail.contains("line 2"),
            "{p}"
        );
        // After a line written before chaining: the restart record moved down.
        all.swap(0, 1);
        all.insert(0, r#"{"kind":"old"}"#.into());
        all.swap(1, 2);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (2, Tamper::Reordered), "{p}");
    }

    #[test]
    fn inserted_and_duplicated_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path(), 5);
        // A chained line of another log.
        let other = tempfile::tempdir().unwrap();
        let mut f = RotatingFile::open(&other.path().join("other.jsonl"), 1 << 20, 3).unwrap();
        f.write_entry(br#"{"other":1}"#).unwrap();
        f.write_entry(br#"{"other":2}"#).unwrap();
        let foreign = lines(&other.path().join("other.jsonl"))[2].clone();
        let mut all = lines(&path);
        all.insert(3, foreign);
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (4, Tamper::Inserted), "{p}");

        let mut all = lines(&log(tempfile::tempdir().unwrap().path(), 5));
        all.insert(4, all[2].clone());
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (5, Tamper::Duplicated), "{p}");
        // A line without chain fields in the middle of the chain.
        let mut all = lines(&log(tempfile::tempdir().unwrap().path(), 5));
        all.insert(2, r#"{"kind":"fake"}"#.into());
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (3, Tamper::Inserted), "{p}");
        assert!(p.detail.contains("no chain fields"), "{p}");
        // Instead of a chained line: edited.
        let mut all = lines(&log(tempfile::tempdir().unwrap().path(), 5));
        all[2] = r#"{"kind":"fake"}"#.into();
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (3, Tamper::Edited), "{p}");
        assert!(p.detail.contains("no chain fields"), "{p}");
    }

    #[test]
    fn lines_written_before_chaining_are_reported_as_unchained() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(
            &path,
            "{\"kind\":\"old\",\"n\":1}\n{\"kind\":\"old\",\"n\":2}\n",
        )
        .unwrap();
        let report = check(&path);
        assert!(report.intact(), "{:?}", report.problem);
        assert_eq!((report.unchained, report.chained), (2, 0));
        assert!(report.notes[0].contains("written before chaining"));
        // rkmcp continues it: a new chain, which says why, checked from there on.
        let mut f = RotatingFile::open(&path, 1 << 20, 3).unwrap();
        f.write_entry(br#"{"n":3}"#).unwrap();
        f.write_entry(br#"{"n":4}"#).unwrap();
        let all = lines(&path);
        assert!(all[2].contains("\"event\":\"restart\"") && all[2].contains("before chaining"));
        let report = check(&path);
        assert!(report.intact(), "{:?}", report.problem);
        assert_eq!((report.unchained, report.chained, report.lines), (2, 3, 5));
        assert!(
            report.notes[0].contains("2 lines from")
                && report.notes[0].contains("unchained (written before chaining)"),
            "{:?}",
            report.notes
        );
        // The chained part after them is still checked.
        let mut all = all;
        all[4] = all[4].replace("\"n\":4", "\"n\":5");
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (5, Tamper::Edited), "{p}");
    }

    #[test]
    fn a_torn_last_line_is_noted_and_the_next_run_restarts_the_chain_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path(), 3);
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(b"{\"time\":\"2026-");
        std::fs::write(&path, &text).unwrap();
        let report = check(&path);
        assert!(report.intact(), "{:?}", report.problem);
        assert!(
            report.notes[0].contains("interrupted"),
            "{:?}",
            report.notes
        );

        let mut f = RotatingFile::open(&path, 1 << 20, 3).unwrap();
        f.write_entry(br#"{"n":9}"#).unwrap();
        let all = lines(&path);
        assert_eq!(
            all[4], "{\"time\":\"2026-",
            "the torn line is left as it was"
        );
        assert!(all[5].contains("\"event\":\"restart\"") && all[5].contains("incomplete"));
        let report = check(&path);
        assert!(report.intact(), "{:?}", report.problem);
        assert!(
            report.notes[0].contains("line 5") && report.notes[0].contains("unreadable"),
            "{:?}",
            report.notes
        );
        // The same damage in the middle of the chain, with no restart after it, is tampering.
        let mut all = lines(&log(tempfile::tempdir().unwrap().path(), 4));
        all[2] = "{\"time\":\"2026-".into();
        rewrite(&path, &all);
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (3, Tamper::Edited), "{p}");
    }

    #[test]
    fn a_missing_rotated_file_is_a_removal_at_the_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = RotatingFile::open(&path, 600, 5).unwrap();
        for i in 0..10 {
            f.write_entry(format!(r#"{{"n":{i}}}"#).as_bytes()).unwrap();
        }
        std::fs::remove_file(numbered(&path, 2)).unwrap();
        let p = problem(&path);
        assert_eq!((p.line, p.kind), (1, Tamper::Removed), "{p}");
        assert!(p.file.ends_with("audit.jsonl.1"), "{p}");
        assert!(p.detail.contains("rotated file"), "{p}");
    }
}
