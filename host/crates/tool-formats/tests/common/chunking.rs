//! The streaming detectors' promise, checked on one input: the same normalized events whatever
//! the chunking, and tool-call arguments that are always JSON objects. Shared, through `#[path]`,
//! by the fuzz target (`fuzz/fuzz_targets/detectors.rs`) and the replay of its saved inputs on
//! stable Rust (`tests/fuzz_regressions.rs`), so both check exactly the same thing.
//!
//! Input: byte 0 picks the format, bytes 1.. are split into chunks at every 0xFF byte (which
//! never occurs in UTF-8), and the text is the chunks joined.
use rkmcp_tool_formats::{DetectorEvent, ToolFormat, detect_all, normalize};

/// Panics, naming `origin` (the input's file, or "" when fuzzing), when the promise is broken.
pub fn check_chunked_input(data: &[u8], origin: &str) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let formats = ToolFormat::all();
    let format = formats[pick as usize % formats.len()];
    let chunks: Vec<String> = rest
        .split(|&b| b == 0xff)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let whole: String = chunks.concat();

    let mut detector = format.detector();
    let mut streamed = Vec::new();
    for chunk in &chunks {
        streamed.extend(detector.feed(chunk));
    }
    streamed.extend(detector.finish());
    let streamed = normalize(streamed);
    let at_once = detect_all(format, &whole);
    assert_eq!(
        streamed, at_once,
        "{origin}{format}: chunking {chunks:?} changed the events"
    );
    for e in &streamed {
        if let DetectorEvent::ToolCall(c) = e {
            assert!(c.arguments.is_object(), "{origin}{format}: {c:?}");
        }
    }
}
