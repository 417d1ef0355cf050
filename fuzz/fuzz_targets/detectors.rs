//! Every streaming detector of rkmcp-tool-formats on any model output, cut into any chunks.
//! Besides not panicking, each must keep its promise: the same normalized events whatever the
//! chunking, and tool-call arguments that are always JSON objects. The check itself is shared
//! with the replay of saved inputs in tool-formats' tests (`tests/common/chunking.rs`).
//!
//! Input: byte 0 picks the format, bytes 1.. are split into chunks at every 0xFF byte (which
//! never occurs in UTF-8), and the text is the chunks joined.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../host/crates/tool-formats/tests/common/chunking.rs"]
mod chunking;

fuzz_target!(|data: &[u8]| {
    chunking::check_chunked_input(data, "");
});
