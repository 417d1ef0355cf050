//! The detector inputs fuzzing once broke (`fuzz/regressions/detectors/`), replayed on stable
//! Rust in every test run, with the fuzz target's own promise: the same normalized events
//! whatever the chunking, and call arguments that are JSON objects. (`scripts/check.d/70-fuzz.sh`
//! replays them too, but only where the nightly fuzz toolchain is installed.)
//!
//! Input layout, as in `fuzz/fuzz_targets/detectors.rs`: byte 0 picks the format, the rest is
//! split into chunks at every 0xFF byte.
use std::path::PathBuf;

use rkmcp_tool_formats::{DetectorEvent, ToolFormat, detect_all, normalize};

fn regressions() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../fuzz/regressions/detectors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "md"))
        .collect();
    files.sort();
    files
}

#[test]
fn saved_fuzz_inputs_give_the_same_events_streamed_and_at_once() {
    let files = regressions();
    assert!(!files.is_empty(), "no saved inputs found");
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let Some((&pick, rest)) = data.split_first() else {
            continue;
        };
        let formats = ToolFormat::all();
        let format = formats[pick as usize % formats.len()];
        let chunks: Vec<String> = rest
            .split(|&b| b == 0xff)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        let mut detector = format.detector();
        let mut streamed = Vec::new();
        for chunk in &chunks {
            streamed.extend(detector.feed(chunk));
        }
        streamed.extend(detector.finish());
        let streamed = normalize(streamed);
        let at_once = detect_all(format, &chunks.concat());
        assert_eq!(streamed, at_once, "{}: {format}", file.display());
        for e in &streamed {
            if let DetectorEvent::ToolCall(c) = e {
                assert!(
                    c.arguments.is_object(),
                    "{}: {format}: {c:?}",
                    file.display()
                );
            }
        }
    }
}
