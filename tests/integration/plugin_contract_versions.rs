//! Contract versions in the real plugin host: a component built against `rkmcp:plugin@0.1.0`
//! (testplug-detector, pinned to wit/rkmcp-plugin@0.1.0) still loads and detects through the
//! host's 0.1.0 adapter, and a 0.2.0 component (the bundled detector-tool-call) reports
//! reasoning as its own event. Components come from scripts/build-plugins.
use rkmcp_plugin_host::{DetectorEvent, PluginHost};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

/// A Hermes response that reasons (with a call written inside the reasoning) and then calls.
const REASONING_THEN_CALL: &str = "<think>I could call <tool_call>{\"name\":\"rm\",\"arguments\":{}}</tool_call> but no.</think>Checking.<tool_call>{\"name\":\"get_time\",\"arguments\":{\"tz\":\"UTC\"}}</tool_call>";

fn fixture() -> Fixture {
    Fixture::new(&[
        ("testplug-detector", "old-detector"),
        ("detector-tool-call", "new-detector"),
    ])
}

async fn run(host: &PluginHost, name: &str, format: &str, text: &str) -> Vec<DetectorEvent> {
    let mut s = host
        .detector(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .start_session(format)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut events = Vec::new();
    // Small pieces so markers are split across calls.
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + 5).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        events.extend(s.feed(&text[start..end]).await.expect("feed"));
        start = end;
    }
    events.extend(s.finish().await.expect("finish"));
    rkmcp_tool_formats::normalize(events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_component_is_run_by_the_version_it_exports() {
    let f = fixture();
    let host = f.host("");
    let infos = host.discover();
    let version = |n: &str| {
        infos
            .iter()
            .find(|i| i.name == n)
            .and_then(|i| i.contract_version.clone())
    };
    assert_eq!(
        version("old-detector").as_deref(),
        Some("0.1.0"),
        "{infos:?}"
    );
    assert_eq!(
        version("new-detector").as_deref(),
        Some("0.2.0"),
        "{infos:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_0_detector_still_detects_through_the_adapter() {
    let f = fixture();
    let host = f.host("");
    let text =
        "Checking.<tool_call>{\"name\":\"get_time\",\"arguments\":{\"tz\":\"UTC\"}}</tool_call>";
    let events = run(&host, "old-detector", "", text).await;
    assert!(
        matches!(events.first(), Some(DetectorEvent::Text(t)) if t == "Checking."),
        "{events:?}"
    );
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            DetectorEvent::ToolCall(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0].name, "get_time");
    assert_eq!(calls[0].arguments, serde_json::json!({"tz": "UTC"}));
    // 0.1.0 has no reasoning event: whatever such a plugin reads, it never reports reasoning.
    let events = run(&host, "old-detector", "", REASONING_THEN_CALL).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, DetectorEvent::Reasoning(_))),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_2_0_detector_reports_reasoning_apart_and_no_call_inside_it() {
    let f = fixture();
    let host = f.host("");
    let events = run(&host, "new-detector", "hermes", REASONING_THEN_CALL).await;
    let reasoning: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            DetectorEvent::Reasoning(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning.len(), 1, "{events:?}");
    assert!(reasoning[0].contains("I could call"), "{events:?}");
    let calls: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            DetectorEvent::ToolCall(c) => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["get_time"], "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, DetectorEvent::Text(t) if t == "Checking.")),
        "{events:?}"
    );
}
