//! Corpus loading shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rkmcp_tool_formats::convert::ToolDef;
use rkmcp_tool_formats::{DetectorEvent, DetectorOptions, ToolCallDetector, ToolFormat, normalize};

pub struct Case {
    pub format: ToolFormat,
    pub name: String,
    pub input: String,
    pub expected_path: PathBuf,
    /// The folder's `tools.json` schemas; `reasoning_open` for cases named `prompt_opened_*`
    /// (the rendered prompt ended inside `<think>`).
    pub opts: DetectorOptions,
}

/// The tools a corpus folder's transcripts were written against (`tools.json`), if any.
fn folder_tools(dir: &Path) -> Vec<ToolDef> {
    let p = dir.join("tools.json");
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        Err(_) => Vec::new(),
    }
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Every `corpus/FORMAT/NAME.txt` transcript (its expectation is `NAME.events.json`).
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("corpus dir")
        .flatten()
        .collect();
    dirs.sort_by_key(|d| d.file_name());
    for dir in dirs {
        if !dir.path().is_dir() {
            continue;
        }
        let fname = dir.file_name().to_string_lossy().to_string();
        let format: ToolFormat = fname
            .parse()
            .unwrap_or_else(|e| panic!("corpus dir {fname}: {e}"));
        let tools = folder_tools(&dir.path());
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .expect("format dir")
            .flatten()
            .collect();
        files.sort_by_key(|d| d.file_name());
        for f in files {
            let p = f.path();
            if p.extension().and_then(|e| e.to_str()) != Some("txt") {
                continue;
            }
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let input =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let mut opts = DetectorOptions::for_tools(&tools);
            opts.reasoning_open = name.starts_with("prompt_opened_");
            out.push(Case {
                format,
                name: name.clone(),
                input,
                expected_path: p.with_file_name(format!("{name}.events.json")),
                opts,
            });
        }
    }
    out
}

/// Feeds `chunks` to a fresh detector and returns the normalized events.
pub fn run_chunks<'a>(
    format: ToolFormat,
    chunks: impl IntoIterator<Item = &'a str>,
) -> Vec<DetectorEvent> {
    run_chunks_with(format, &DetectorOptions::default(), chunks)
}

/// [`run_chunks`] for a detector with options.
pub fn run_chunks_with<'a>(
    format: ToolFormat,
    opts: &DetectorOptions,
    chunks: impl IntoIterator<Item = &'a str>,
) -> Vec<DetectorEvent> {
    let mut d: Box<dyn ToolCallDetector> = format.detector_with(opts);
    let mut ev = Vec::new();
    for c in chunks {
        ev.extend(d.feed(c));
    }
    ev.extend(d.finish());
    normalize(ev)
}

/// Splits `s` at the given byte positions (rounded down to char boundaries).
pub fn split_at<'a>(s: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c.min(s.len());
            while !s.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut prev = 0;
    for c in cuts {
        out.push(&s[prev..c]);
        prev = c;
    }
    out.push(&s[prev..]);
    out
}
