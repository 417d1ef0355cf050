//! Detector throughput per format on the corpus transcripts, fed in small token-sized chunks,
//! as a ratio against a baseline that only copies the same chunks into a String (the least any
//! streaming consumer does):
//! `cargo run --release -p rkmcp-tool-formats --example bench_detect`.
//!
//! The last column puts the detector's cost per chunk (one token) against a token time of
//! 10 ms (100 tokens/s, faster than any model this project runs on a CPU or NPU): the target is
//! below 1 %.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use rkmcp_tool_formats::convert::ToolDef;
use rkmcp_tool_formats::{DetectorOptions, ToolFormat};

/// An optimistic token time: real ones are longer, so the share printed is an upper bound.
const TOKEN_NS: f64 = 10_000_000.0;

/// ~4-byte chunks at char boundaries: roughly one token each.
fn chunks(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    for (p, c) in s.char_indices() {
        i = p + c.len_utf8();
        if i - start >= 4 {
            out.push(&s[start..i]);
            start = i;
        }
    }
    if start < i {
        out.push(&s[start..]);
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    println!(
        "{:<16} {:>9} {:>12} {:>12} {:>8} {:>9} {:>9}",
        "format", "bytes", "detector", "baseline", "ratio", "ns/token", "% token"
    );
    for format in ToolFormat::all() {
        let dir = corpus.join(format.name());
        let mut transcripts = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let p = entry?.path();
            if p.extension().and_then(|e| e.to_str()) == Some("txt") {
                transcripts.push(std::fs::read_to_string(&p)?);
            }
        }
        let tools: Vec<ToolDef> = match std::fs::read_to_string(dir.join("tools.json")) {
            Ok(t) => serde_json::from_str(&t)?,
            Err(_) => Vec::new(),
        };
        let opts = DetectorOptions::for_tools(&tools);
        let chunked: Vec<Vec<&str>> = transcripts.iter().map(|t| chunks(t)).collect();
        let tokens: usize = chunked.iter().map(Vec::len).sum();
        let bytes: usize = transcripts.iter().map(String::len).sum();
        let rounds = (2_000_000 / bytes.max(1)).max(1);

        let t = Instant::now();
        for _ in 0..rounds {
            for cs in &chunked {
                let mut d = format.detector_with(&opts);
                let mut n = 0;
                for c in cs {
                    n += d.feed(c).len();
                }
                n += d.finish().len();
                black_box(n);
            }
        }
        let detector = t.elapsed();

        let t = Instant::now();
        for _ in 0..rounds {
            for cs in &chunked {
                let mut s = String::new();
                for c in cs {
                    s.push_str(black_box(c));
                }
                black_box(&s);
            }
        }
        let baseline = t.elapsed();

        let mb = (bytes * rounds) as f64 / 1e6;
        let per_token = detector.as_nanos() as f64 / (tokens * rounds) as f64;
        println!(
            "{:<16} {:>9} {:>8.1} MB/s {:>8.1} MB/s {:>7.1}x {:>9.0} {:>8.4}%",
            format.name(),
            bytes * rounds,
            mb / detector.as_secs_f64(),
            mb / baseline.as_secs_f64(),
            detector.as_secs_f64() / baseline.as_secs_f64(),
            per_token,
            100.0 * per_token / TOKEN_NS
        );
    }
    Ok(())
}
