//! The choice between a known module, an inferred format and the fallback.

mod common;

use rkmcp_format_infer::{FormatChoice, choose_format};
use rkmcp_tool_formats::ToolFormat;

#[test]
fn a_template_marker_or_model_name_keeps_the_module() {
    let hermes = common::chatml(
        r#"{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments|tojson }}}
</tool_call>{% endfor %}"#,
    );
    let by_marker = choose_format(Some((&hermes, "", "<|im_end|>")), Some("my-model-7b"));
    assert_eq!(by_marker, FormatChoice::Known(ToolFormat::Hermes));
    // A syntax no module has, but the model's name names a family: the module wins.
    let brackets = common::chatml(
        "{% for tc in m.tool_calls %}[CALL]{{ tc.function.name }}[ARGS]{{ tc.function.arguments|tojson }}[/CALL]{% endfor %}",
    );
    let by_name = choose_format(Some((&brackets, "", "")), Some("Qwen2.5-1.5B-Instruct"));
    assert_eq!(by_name, FormatChoice::Known(ToolFormat::Hermes));
}

#[test]
fn an_unknown_syntax_is_inferred() {
    let t = common::chatml(
        "{% for tc in m.tool_calls %}[CALL]{{ tc.function.name }}[ARGS]{{ tc.function.arguments|tojson }}[/CALL]{% endfor %}",
    );
    match choose_format(Some((&t, "", "")), Some("my-model-7b")) {
        FormatChoice::Inferred(f) => assert_eq!(f.call_open, "[CALL]"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreadable_template_falls_back_with_a_notice() {
    let t = common::chatml("");
    let choice = choose_format(Some((&t, "", "")), Some("my-model-7b"));
    let notice = choice.notice().unwrap_or_default();
    match choice {
        FormatChoice::Fallback { format, .. } => {
            // ChatML is the Hermes family's frame.
            assert_eq!(format, ToolFormat::Hermes);
            assert!(
                notice.contains("rendered no tool call") && notice.contains("`hermes`"),
                "{notice}"
            );
        }
        other => panic!("{other:?}"),
    }
    let choice = choose_format(None, Some("my-model-7b"));
    let notice = choice.notice().unwrap_or_default();
    match choice {
        FormatChoice::Fallback { format, .. } => {
            assert_eq!(format, ToolFormat::ToolCallJson);
            assert!(notice.contains("no chat template"), "{notice}");
        }
        other => panic!("{other:?}"),
    }
}
