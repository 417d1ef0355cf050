//! The default approval guard and schema converter plugins, run by the real plugin host.
//! The converter is rkmcp-tool-formats compiled to a component, so its output must equal the
//! native converter's byte for byte.
use rkmcp_plugin_host::{
    ApprovalGuard, Decision, PluginError, ProposedCall, ToolAnnotations, ToolCall,
};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{
    PromptStyle, ResultOptions, convert_tools, format_tool_result_with, parse_tool_result_json,
    parse_tools_json,
};
use serde_json::{Value, json};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const GUARD: &str = "approval-guard-default";
const CONVERTER: &str = "schema-converter-default";

fn proposed(
    tool: &str,
    arguments: Value,
    read_only: Option<bool>,
    destructive: Option<bool>,
) -> ProposedCall {
    ProposedCall {
        server: "fs".into(),
        tool: tool.into(),
        arguments,
        annotations: ToolAnnotations {
            read_only,
            destructive,
            ..ToolAnnotations::default()
        },
        interactive: true,
    }
}

async fn review(g: &ApprovalGuard, c: &ProposedCall) -> Decision {
    g.review(c)
        .await
        .unwrap_or_else(|e| panic!("review {}: {e}", c.tool))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_guard_allows_read_only_asks_destructive_and_keeps_writes_in_roots() {
    let f = Fixture::new(&[(GUARD, GUARD)]);
    let h = f.host(&format!(
        "[grants.{GUARD}]\ncall_timeout_ms = 10000\nconfig = {{ allowed_roots = [\"/srv/data\", \"/tmp/out\"] }}\n"
    ));
    let g = h.approval_guard(GUARD).expect("guard");

    let read = proposed(
        "read_file",
        json!({"path": "/etc/passwd"}),
        Some(true),
        None,
    );
    assert_eq!(review(&g, &read).await, Decision::Allow);

    let rm = proposed(
        "drop_table",
        json!({"table": "users"}),
        Some(false),
        Some(true),
    );
    match review(&g, &rm).await {
        Decision::Ask(q) => assert!(q.contains("drop_table") && q.contains("destructive"), "{q}"),
        d => panic!("destructive call: {d:?}"),
    }
    let additive = proposed("add_note", json!({"text": "hi"}), Some(false), Some(false));
    assert_eq!(review(&g, &additive).await, Decision::Allow);

    // A write inside a root goes on to the annotation rules; outside one it is denied, even
    // when the server claims the tool is read-only.
    let inside = proposed(
        "write_file",
        json!({"path": "/srv/data/notes/a.txt", "content": "x"}),
        None,
        Some(false),
    );
    assert_eq!(review(&g, &inside).await, Decision::Allow);
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "/etc/cron.d/x", "content": "x"}),
        ),
        ("write_file", json!({"path": "/srv/data/../../etc/x"})),
        ("createDirectory", json!({"path": "/srv/database"})),
        (
            "move_file",
            json!({"source": "/srv/data/a", "destination": "/home/u/a"}),
        ),
        ("edit_file", json!({"path": "relative/a.txt"})),
    ] {
        let c = proposed(tool, args.clone(), Some(true), Some(false));
        match review(&g, &c).await {
            Decision::Deny(reason) => assert!(reason.contains(tool), "{tool} {args}: {reason}"),
            d => panic!("{tool} {args}: {d:?}"),
        }
    }

    // Non-interactive: the question becomes a deny (the host's rule).
    let mut unattended = rm.clone();
    unattended.interactive = false;
    assert!(matches!(review(&g, &unattended).await, Decision::Deny(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_guard_without_roots_denies_every_file_write() {
    let f = Fixture::new(&[(GUARD, GUARD)]);
    let h = f.host(&format!("[grants.{GUARD}]\ncall_timeout_ms = 10000\n"));
    let g = h.approval_guard(GUARD).expect("guard");
    let w = proposed("write_file", json!({"path": "/tmp/a"}), None, Some(false));
    match review(&g, &w).await {
        Decision::Deny(reason) => assert!(reason.contains("allowed_roots"), "{reason}"),
        d => panic!("{d:?}"),
    }
    // Tools that do not write files are unaffected.
    let r = proposed("read_file", json!({"path": "/tmp/a"}), Some(true), None);
    assert_eq!(review(&g, &r).await, Decision::Allow);
}

fn tools_json() -> String {
    json!([
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "units": {"type": "string", "enum": ["metric", "imperial"]}
                },
                "required": ["city"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
    ])
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_converter_equals_the_native_converter() {
    let f = Fixture::new(&[(CONVERTER, CONVERTER)]);
    let h = f.host(&format!("[grants.{CONVERTER}]\ncall_timeout_ms = 10000\n"));
    let c = h.schema_converter(CONVERTER).expect("converter");
    let tools = tools_json();

    let got = c.convert(&tools).await.expect("convert");
    let want = convert_tools(
        ToolFormat::ToolCallJson,
        None,
        &parse_tools_json(&tools).expect("tools"),
    );
    assert_eq!(got.system_prompt, want.system_prompt);
    assert_eq!(got.grammar, want.grammar);
    assert_eq!(got.json_schema, want.json_schema);
    assert!(got.system_prompt.contains("[TOOL_CALL]") && got.system_prompt.contains("get_weather"));
    assert!(got.grammar.is_some(), "tool-call-json has a GBNF grammar");

    let call = ToolCall {
        id: "call_1".into(),
        name: "get_weather".into(),
        arguments: json!({"city": "Oslo"}),
    };
    let result = json!({"content": [{"type": "text", "text": "Sunny, 21 °C"}], "isError": false})
        .to_string();
    let got = c
        .format_result(&call, &result)
        .await
        .expect("format-result");
    let want = format_tool_result_with(
        ToolFormat::ToolCallJson,
        &call,
        &parse_tool_result_json(&result).expect("result"),
        &ResultOptions::default(),
    );
    assert_eq!(got, want);
    assert!(
        got.contains("Sunny, 21 °C") && got.contains("[TOOL_RESULT"),
        "{got}"
    );

    match c.convert("{\"tools\": 3}").await {
        Err(PluginError::Refused { message, .. }) => {
            assert!(message.contains("tools"), "{message}")
        }
        other => panic!("bad tools JSON: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converter_config_picks_format_style_and_result_limit() {
    let f = Fixture::new(&[(CONVERTER, CONVERTER)]);
    let h = f.host(&format!(
        "[grants.{CONVERTER}]\ncall_timeout_ms = 10000\nconfig = {{ format = \"hermes\", style = \"compact\", max_result_chars = 10 }}\n"
    ));
    let c = h.schema_converter(CONVERTER).expect("converter");
    let tools = tools_json();
    let got = c.convert(&tools).await.expect("convert");
    let want = convert_tools(
        ToolFormat::Hermes,
        Some(PromptStyle::Compact),
        &parse_tools_json(&tools).expect("tools"),
    );
    assert_eq!(got.system_prompt, want.system_prompt);
    assert!(
        got.system_prompt.contains("<tool_call>"),
        "{}",
        got.system_prompt
    );

    let call = ToolCall {
        id: "c".into(),
        name: "echo".into(),
        arguments: json!({}),
    };
    let result = json!({"content": [{"type": "text", "text": "0123456789abcdef"}]}).to_string();
    let got = c
        .format_result(&call, &result)
        .await
        .expect("format-result");
    assert!(
        got.contains("0123456789") && !got.contains("abcdef") && got.contains("truncated"),
        "{got}"
    );

    let h = f.host(&format!(
        "[grants.{CONVERTER}]\ncall_timeout_ms = 10000\nconfig = {{ format = \"nope\" }}\n"
    ));
    let c = h.schema_converter(CONVERTER).expect("converter");
    match c.convert(&tools).await {
        Err(PluginError::Refused { message, .. }) => assert!(
            message.contains("format") && message.contains("nope"),
            "{message}"
        ),
        other => panic!("bad format config: {other:?}"),
    }
}

/// `(name, text)` of every JSON file in the shared converter corpus folder `kind`.
fn converter_corpus(kind: &str) -> Vec<(String, String)> {
    let dir = rkmcp_tests::repo()
        .join("host/crates/tool-formats/converter-corpus")
        .join(kind);
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("corpus file");
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{} is empty", dir.display());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_converter_component_equals_the_native_converter_on_the_whole_corpus() {
    let f = Fixture::new(&[(CONVERTER, CONVERTER)]);
    let tool_sets = converter_corpus("tools");
    let results = converter_corpus("results");
    let call = ToolCall {
        id: "call00042".into(),
        name: "files__read_text_file".into(),
        arguments: json!({"path": "/data/report.csv", "head": 3}),
    };
    let mut compared = 0;
    for &format in ToolFormat::all() {
        let styles = std::iter::once(None).chain(PromptStyle::ALL.iter().copied().map(Some));
        for style in styles {
            let style_cfg = style
                .map(|s| format!(", style = \"{s}\""))
                .unwrap_or_default();
            let h = f.host(&format!(
                "[grants.{CONVERTER}]\ncall_timeout_ms = 10000\nconfig = {{ format = \"{format}\"{style_cfg}, max_result_chars = 3000 }}\n"
            ));
            let c = h.schema_converter(CONVERTER).expect("converter");
            for (name, tools) in &tool_sets {
                let got = c
                    .convert(tools)
                    .await
                    .unwrap_or_else(|e| panic!("{format}/{style:?}/{name}: {e}"));
                let want = convert_tools(format, style, &parse_tools_json(tools).expect("tools"));
                assert_eq!(
                    got.system_prompt, want.system_prompt,
                    "{format}/{style:?}/{name}"
                );
                assert_eq!(got.grammar, want.grammar, "{format}/{style:?}/{name}");
                assert_eq!(
                    got.json_schema, want.json_schema,
                    "{format}/{style:?}/{name}"
                );
                compared += 1;
            }
            if style.is_some() {
                continue; // results depend on the format only
            }
            for (name, result) in &results {
                let got = c
                    .format_result(&call, result)
                    .await
                    .unwrap_or_else(|e| panic!("{format}/{name}: {e}"));
                let want = format_tool_result_with(
                    format,
                    &call,
                    &parse_tool_result_json(result).expect("result"),
                    &ResultOptions { max_chars: 3000 },
                );
                assert_eq!(got, want, "{format}/{name}");
                compared += 1;
            }
        }
    }
    assert!(compared > 100, "only {compared} comparisons");
}
