//! A detector plugin that is a thin adapter over `rkmcp-tool-formats`: the same detector source
//! the host compiles natively, so the plugin and the built-in detector cannot drift apart
//! (`tests/integration/plugin_detector_native_equals_component.rs` checks it on the shared corpus).
//!
//! `start-session("")` detects `[TOOL_CALL]{"name":…,"arguments":{…}}[END_TOOL_CALL]`;
//! `"tool-call-xml"` detects `<tool_call name="…"><argument name="…">v</argument></tool_call>`.
//! Any other format name of `rkmcp-tool-formats` works too, since it is the same crate.

use rkmcp_plugin_sdk::{Detector, DetectorSession, Event};
use rkmcp_tool_formats::{DetectorEvent, ToolCallDetector, ToolFormat};

struct ToolCallFormats;

struct Session(Box<dyn ToolCallDetector>);

impl Detector for ToolCallFormats {
    type Session = Session;

    fn new() -> Self {
        ToolCallFormats
    }

    fn start_session(&mut self, format: &str) -> Result<Session, String> {
        let format = if format.trim().is_empty() {
            ToolFormat::ToolCallJson
        } else {
            format.parse::<ToolFormat>().map_err(|e| e.to_string())?
        };
        Ok(Session(format.detector()))
    }
}

impl DetectorSession for Session {
    fn feed(&mut self, chunk: &str) -> Vec<Event> {
        convert(self.0.feed(chunk))
    }

    fn finish(&mut self) -> Vec<Event> {
        convert(self.0.finish())
    }
}

fn convert(events: Vec<DetectorEvent>) -> Vec<Event> {
    events
        .into_iter()
        .map(|e| match e {
            DetectorEvent::Text(t) => Event::Text(t),
            // Contract 0.2.0 carries reasoning apart from the answer, exactly as the native
            // detector reports it.
            DetectorEvent::Reasoning(t) => Event::Reasoning(t),
            DetectorEvent::ToolCall(c) => Event::tool_call(c.id, c.name, &c.arguments),
            DetectorEvent::Malformed { raw, error } => Event::malformed(raw, error),
        })
        .collect()
}

rkmcp_plugin_sdk::export_detector!(ToolCallFormats);
