//! Every streaming detector of rkmcp-tool-formats on any model output, cut into any chunks.
//! Besides not panicking, each must keep its promise: the same normalized events whatever the
//! chunking, and tool-call arguments that are always JSON objects.
//!
//! Input: byte 0 picks the format, bytes 1.. are split into chunks at every 0xFF byte (which
//! never occurs in UTF-8), and the text is the chunks joined.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rkmcp_tool_formats::{DetectorEvent, ToolFormat, detect_all, normalize};

fuzz_target!(|data: &[u8]| {
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
        "{format}: chunking {chunks:?} changed the events"
    );
    for e in &streamed {
        if let DetectorEvent::ToolCall(c) = e {
            assert!(c.arguments.is_object(), "{format}: {c:?}");
        }
    }
});
