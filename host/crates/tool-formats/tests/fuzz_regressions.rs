//! The detector inputs fuzzing once broke (`fuzz/regressions/detectors/`), replayed on stable
//! Rust in every test run with the fuzz target's own check (`common/chunking.rs`: the same
//! normalized events whatever the chunking, and call arguments that are JSON objects).
//! (`scripts/check.d/70-fuzz.sh` replays them too, but only where the nightly fuzz toolchain is
//! installed.)
use std::path::PathBuf;

#[path = "common/chunking.rs"]
mod chunking;

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
        chunking::check_chunked_input(&data, &format!("{}: ", file.display()));
    }
}
