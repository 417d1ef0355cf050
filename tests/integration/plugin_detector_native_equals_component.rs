//! The detector-tool-call plugin is rkmcp-tool-formats compiled to a component. This proves the
//! component and the native detector give the very same events, chunk by chunk, on the shared
//! corpus (host/crates/tool-formats/corpus/FORMAT/*.txt) under several chunkings. The component
//! runs in the real plugin host (rkmcp-plugin-host, wasmtime); the component is built by
//! scripts/build-plugins.
use std::path::{Path, PathBuf};

use rkmcp_plugin_host::{DetectorEvent, PluginError, PluginHost};
use rkmcp_tool_formats::ToolFormat;

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const PLUGIN: &str = "detector-tool-call";

/// Generous per-call deadline: the comparison must not depend on how loaded the machine is.
const GRANT: &str = "[grants.detector-tool-call]\ncall_timeout_ms = 10000\n";

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/crates/tool-formats/corpus")
}

/// (format, case name, transcript) for every corpus file.
fn corpus() -> Vec<(ToolFormat, String, String)> {
    let dir = corpus_dir();
    let mut out = Vec::new();
    let formats = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for f in formats {
        let f = f.expect("corpus entry");
        if !f.path().is_dir() {
            continue;
        }
        let name = f.file_name().to_string_lossy().into_owned();
        let format: ToolFormat = name
            .parse()
            .unwrap_or_else(|e| panic!("corpus folder {}: {e}", f.path().display()));
        for case in std::fs::read_dir(f.path()).expect("corpus folder") {
            let path = case.expect("corpus file").path();
            if path.extension().and_then(|e| e.to_str()) != Some("txt") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let case = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            out.push((format, case.unwrap_or_default(), text));
        }
    }
    out.sort_by(|a, b| (a.0.name(), &a.1).cmp(&(b.0.name(), &b.1)));
    out
}

/// Splits at char boundaries into pieces of about `size` bytes (cycling through `sizes`).
fn chunks<'a>(text: &'a str, sizes: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while start < text.len() {
        let mut end = (start + sizes[i % sizes.len()]).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
        i += 1;
    }
    out
}

/// Chunkings: whole, one char at a time, fixed 7 bytes, and an irregular pattern that puts
/// cuts inside markers.
fn chunkings(text: &str) -> Vec<(String, Vec<&str>)> {
    let by_char: Vec<&str> = text
        .char_indices()
        .map(|(i, c)| &text[i..i + c.len_utf8()])
        .collect();
    vec![
        ("whole".into(), vec![text]),
        ("by-char".into(), by_char),
        ("7-bytes".into(), chunks(text, &[7])),
        ("irregular".into(), chunks(text, &[1, 3, 2, 11, 5, 17, 4])),
    ]
}

/// Native events per call: one list per `feed`, then the `finish` list. The plugin is built on
/// `rkmcp:plugin@0.2.0`, which carries reasoning as its own event: reasoning must match too.
fn native(format: ToolFormat, pieces: &[&str]) -> Vec<Vec<DetectorEvent>> {
    let mut d = format.detector();
    let mut calls: Vec<Vec<DetectorEvent>> = pieces.iter().map(|p| d.feed(p)).collect();
    calls.push(d.finish());
    calls
}

async fn component(
    host: &PluginHost,
    format: &str,
    pieces: &[&str],
) -> Result<Vec<Vec<DetectorEvent>>, PluginError> {
    let mut s = host.detector(PLUGIN)?.start_session(format).await?;
    let mut calls = Vec::with_capacity(pieces.len() + 1);
    for p in pieces {
        calls.push(s.feed(p).await?);
    }
    calls.push(s.finish().await?);
    Ok(calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn component_gives_the_native_events_on_the_corpus_for_every_chunking() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let host = f.host(GRANT);
    let cases = corpus();
    let seed_formats = [ToolFormat::ToolCallJson, ToolFormat::ToolCallXml];
    for want in seed_formats {
        assert!(
            cases.iter().any(|(f, _, _)| *f == want),
            "the corpus has no {want} case in {}",
            corpus_dir().display()
        );
    }
    let mut compared = 0usize;
    let mut calls_seen = 0usize;
    let mut reasoning_seen = 0usize;
    let mut failures = Vec::new();
    for (format, case, text) in &cases {
        for (how, pieces) in chunkings(text) {
            let want = native(*format, &pieces);
            let got = component(&host, format.name(), &pieces)
                .await
                .unwrap_or_else(|e| panic!("{format}/{case} ({how}): {e}"));
            calls_seen += want
                .iter()
                .flatten()
                .filter(|e| matches!(e, DetectorEvent::ToolCall(_)))
                .count();
            reasoning_seen += want
                .iter()
                .flatten()
                .filter(|e| matches!(e, DetectorEvent::Reasoning(_)))
                .count();
            if got != want {
                failures.push(format!(
                    "{format}/{case} ({how}):\nnative:    {want:?}\ncomponent: {got:?}"
                ));
            }
            compared += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} runs differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // The comparison means something only if the corpus holds calls.
    assert!(calls_seen > 0, "no tool calls in {compared} corpus runs");
    assert!(reasoning_seen > 0, "no reasoning in {compared} corpus runs");
    eprintln!(
        "{compared} corpus runs identical, {calls_seen} tool calls and {reasoning_seen} reasoning events among them"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_format_is_tool_call_json_and_unknown_formats_are_refused() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let host = f.host(GRANT);
    let text = "Let me look.[TOOL_CALL]{\"name\":\"get_time\",\"arguments\":{\"tz\":\"UTC\"}}[END_TOOL_CALL]";
    let pieces = chunks(text, &[5]);
    let got = component(&host, "", &pieces)
        .await
        .expect("default session");
    assert_eq!(got, native(ToolFormat::ToolCallJson, &pieces));
    assert!(
        got.iter()
            .flatten()
            .any(|e| matches!(e, DetectorEvent::ToolCall(c) if c.name == "get_time")),
        "{got:?}"
    );

    let xml = "<tool_call name=\"read_file\"><argument name=\"path\">/tmp/a</argument></tool_call>";
    let got = component(&host, "tool-call-xml", &[xml])
        .await
        .expect("xml session");
    assert_eq!(got, native(ToolFormat::ToolCallXml, &[xml]));

    match host
        .detector(PLUGIN)
        .expect("detector")
        .start_session("no-such-format")
        .await
    {
        Err(PluginError::Refused { message, .. }) => {
            assert!(
                message.contains("no-such-format") && message.contains("tool-call-json"),
                "{message}"
            )
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("an unknown format started a session"),
    }
}
