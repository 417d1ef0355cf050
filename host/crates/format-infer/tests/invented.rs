//! Syntaxes no format module implements, each in a template written here: the template gives a
//! description, and model output in that syntax gives the expected events in every chunking.

mod common;

use common::{chatml, events_any_chunking, options};
use rkmcp_format_infer::{InferredFormat, infer};
use rkmcp_tool_formats::inferred::{Arguments, CallSyntax, Values};
use rkmcp_tool_formats::{DetectorEvent, ToolCall};
use serde_json::{Value, json};

const ARGS_TEXT: &str = "{% for k, v in tc.function.arguments.items() %}";

fn call(n: usize, name: &str, args: Value) -> DetectorEvent {
    DetectorEvent::ToolCall(ToolCall {
        id: format!("call_{n}"),
        name: name.into(),
        arguments: args,
    })
}

fn text(s: &str) -> DetectorEvent {
    DetectorEvent::Text(s.into())
}

fn weather(n: usize) -> DetectorEvent {
    call(n, "get_weather", json!({"city": "Paris"}))
}

fn timer(n: usize) -> DetectorEvent {
    call(n, "set_timer", json!({"minutes": 15, "label": "tea"}))
}

/// Infers `calls` (Jinja for `m.tool_calls`) in the ChatML frame, checks the transcript's events
/// in every chunking, and that a transcript cut inside its last call reports a malformed call.
fn check(calls: &str, transcript: &str, want: Vec<DetectorEvent>) -> InferredFormat {
    let template = chatml(calls);
    let f = infer(&template).unwrap_or_else(|e| panic!("{e}\ntemplate:\n{template}"));
    common::lark::check_grammar(&f).unwrap_or_else(|e| panic!("grammar: {e}"));
    let got = events_any_chunking(&f, &options(), transcript);
    assert_eq!(got, want, "format: {f:#?}");
    // With reasoning before and the end-of-turn token after.
    let framed = format!("<think>\nplan\n</think>\n\n{transcript}<|im_end|>");
    let mut with_reasoning = vec![DetectorEvent::Reasoning("plan".into())];
    with_reasoning.extend(want.clone());
    assert_eq!(events_any_chunking(&f, &options(), &framed), with_reasoning);
    // Cut off inside the last call: reported, never lost.
    let last = transcript
        .rfind("tea")
        .or_else(|| transcript.rfind("Paris"))
        .unwrap_or(1);
    let cut = &transcript[..last + 2];
    let events = events_any_chunking(&f, &options(), cut);
    match events.last() {
        Some(DetectorEvent::Malformed { raw, .. }) => {
            assert!(cut.ends_with(raw.as_str()), "{raw:?}")
        }
        other => panic!("cut transcript {cut:?}: last event {other:?}"),
    }
    f
}

#[test]
fn json_object_with_its_own_keys_in_invoke_tags() {
    let f = check(
        r#"{% for tc in m.tool_calls %}<invoke>{"tool": "{{ tc.function.name }}", "input": {{ tc.function.arguments|tojson }}}</invoke>{% endfor %}"#,
        "Checking.<invoke>{\"tool\": \"get_weather\", \"input\": {\"city\": \"Paris\"}}</invoke>\n<invoke>{\"tool\": \"set_timer\", \"input\": {\"minutes\": 15, \"label\": \"tea\"}}</invoke>",
        vec![text("Checking."), weather(1), text("\n"), timer(2)],
    );
    assert_eq!(
        f.call,
        CallSyntax::JsonObject {
            name_key: "tool".into(),
            arguments_key: "input".into()
        }
    );
    assert_eq!(
        (f.call_open.as_str(), f.call_close.as_str()),
        ("<invoke>", "</invoke>")
    );
}

#[test]
fn bracket_tokens_with_name_then_json_arguments() {
    let f = check(
        r#"{% for tc in m.tool_calls %}[CALL]{{ tc.function.name }}[ARGS]{{ tc.function.arguments|tojson }}[/CALL]{% endfor %}"#,
        "[CALL]get_weather[ARGS]{\"city\": \"Paris\"}[/CALL][CALL]set_timer[ARGS]{\"minutes\": 15, \"label\": \"tea\"}[/CALL] Done.",
        vec![weather(1), timer(2), text(" Done.")],
    );
    assert!(
        matches!(&f.call, CallSyntax::Named { name_suffix, arguments: Arguments::Json, .. } if name_suffix == "[ARGS]")
    );
}

#[test]
fn key_value_tags() {
    let calls = format!(
        "{{% for tc in m.tool_calls %}}<fn {{{{ tc.function.name }}}}>{ARGS_TEXT}<k>{{{{ k }}}}</k><v>{{{{ v if v is string else v|tojson }}}}</v>{{% endfor %}}</fn>{{% endfor %}}"
    );
    let f = check(
        &calls,
        "Sure: <fn get_weather><k>city</k><v>Paris</v></fn><fn set_timer><k>minutes</k><v>15</v><k>label</k><v>tea</v></fn>",
        vec![text("Sure: "), weather(1), timer(2)],
    );
    assert!(matches!(
        &f.call,
        CallSyntax::Named { arguments: Arguments::Pairs { key_prefix, values: Values::Text, .. }, .. } if key_prefix == "<k>"
    ));
}

#[test]
fn attribute_named_arguments() {
    let calls = format!(
        "{{% for tc in m.tool_calls %}}<call name=\"{{{{ tc.function.name }}}}\">{ARGS_TEXT}<arg key=\"{{{{ k }}}}\">{{{{ v if v is string else v|tojson }}}}</arg>{{% endfor %}}</call>{{% endfor %}}"
    );
    let f = check(
        &calls,
        "<call name=\"get_weather\"><arg key=\"city\">Paris</arg></call>\n<call name=\"set_timer\"><arg key=\"minutes\">15</arg><arg key=\"label\">tea</arg></call>\nok",
        vec![weather(1), text("\n"), timer(2), text("\nok")],
    );
    assert_eq!(f.call_open, "<call name=\"");
}

#[test]
fn pythonic_calls_in_their_own_markers() {
    let calls = format!(
        "<<py>>[{{% for tc in m.tool_calls %}}{{{{ tc.function.name }}}}({ARGS_TEXT}{{{{ k }}}}={{{{ v|tojson }}}}{{% if not loop.last %}}, {{% endif %}}{{% endfor %}}){{% if not loop.last %}}, {{% endif %}}{{% endfor %}}]<</py>>"
    );
    let f = check(
        &calls,
        "Let me check. <<py>>[get_weather(city=\"Paris\"), set_timer(minutes=15, label='tea')]<</py>>",
        vec![text("Let me check. "), weather(1), timer(2)],
    );
    assert_eq!(
        (f.section_open.as_str(), f.section_close.as_str()),
        ("<<py>>[", "]<</py>>")
    );
    assert!(matches!(
        &f.call,
        CallSyntax::Named {
            arguments: Arguments::Pairs {
                values: Values::Literal,
                ..
            },
            ..
        }
    ));
}

#[test]
fn section_with_separator_tokens() {
    let f = check(
        r#"<|calls|>{% for tc in m.tool_calls %}{{ tc.function.name }}<|args|>{{ tc.function.arguments|tojson }}{% if not loop.last %}<|sep|>{% endif %}{% endfor %}<|/calls|>"#,
        "<|calls|>get_weather<|args|>{\"city\": \"Paris\"}<|sep|>set_timer<|args|>{\"minutes\": 15, \"label\": \"tea\"}<|/calls|>",
        vec![weather(1), timer(2)],
    );
    assert_eq!(
        (
            f.section_open.as_str(),
            f.call_separator.as_str(),
            f.section_close.as_str()
        ),
        ("<|calls|>", "<|sep|>", "<|/calls|>")
    );
}

#[test]
fn strings_between_quote_tags() {
    let calls = format!(
        "{{% for tc in m.tool_calls %}}<call>{{{{ tc.function.name }}}}({ARGS_TEXT}{{{{ k }}}}={{% if v is string %}}<str>{{{{ v }}}}</str>{{% else %}}{{{{ v|tojson }}}}{{% endif %}}{{% if not loop.last %}}, {{% endif %}}{{% endfor %}})</call>{{% endfor %}}"
    );
    let f = check(
        &calls,
        "<call>get_weather(city=<str>Paris</str>)</call><call>set_timer(minutes=15, label=<str>tea</str>)</call>",
        vec![weather(1), timer(2)],
    );
    assert!(matches!(
        &f.call,
        CallSyntax::Named { arguments: Arguments::Pairs { values: Values::Quoted { open, close }, .. }, .. }
            if open == "<str>" && close == "</str>"
    ));
}

#[test]
fn indexed_calls_in_a_section() {
    let f = check(
        r#"<<calls>>{% for tc in m.tool_calls %}<<call>>{{ tc.function.name }}#{{ loop.index0 }}<<in>>{{ tc.function.arguments|tojson }}<<end>>{% endfor %}<</calls>>"#,
        "<<calls>><<call>>get_weather#0<<in>>{\"city\": \"Paris\"}<<end>><<call>>set_timer#1<<in>>{\"minutes\": 15, \"label\": \"tea\"}<<end>><</calls>>",
        vec![weather(1), timer(2)],
    );
    assert!(
        matches!(&f.call, CallSyntax::Named { name_suffix, .. } if name_suffix == "#{*}<<in>>")
    );
}

#[test]
fn react_action_lines() {
    let f = check(
        "{% for tc in m.tool_calls %}Action: {{ tc.function.name }}\nAction Input: {{ tc.function.arguments|tojson }}\n{% endfor %}",
        "I need the weather.\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}\nAction: set_timer\nAction Input: {\"minutes\": 15, \"label\": \"tea\"}",
        vec![
            text("I need the weather.\n"),
            weather(1),
            text("\n"),
            timer(2),
        ],
    );
    assert_eq!(f.call_open, "Action:");
}

#[test]
fn whole_message_json_with_other_keys() {
    let calls = r#"{% if m.tool_calls|length > 1 %}{{ raise_exception("one call per message") }}{% endif %}{% for tc in m.tool_calls %}{"function": "{{ tc.function.name }}", "params": {{ tc.function.arguments|tojson }}}{% endfor %}"#;
    let f = check(
        calls,
        "{\"function\": \"get_weather\", \"params\": {\"city\": \"Paris\"}}",
        vec![weather(1)],
    );
    assert!(f.anchored && !f.parallel);
    // JSON that is not a call stays the answer.
    let answer = "{\"city\": \"Paris\"} is what you asked for.";
    assert_eq!(
        events_any_chunking(&f, &options(), answer),
        vec![text(answer)]
    );
}

#[test]
fn unreadable_templates_say_why() {
    let no_calls = chatml("");
    let e = infer(&no_calls).unwrap_err().to_string();
    assert!(e.contains("rendered no tool call"), "{e}");
    let broken = "{% for m in messages %}{{ m.content ";
    let e = infer(broken).unwrap_err().to_string();
    assert!(e.contains("does not compile"), "{e}");
    let raises = "{{ raise_exception('no tools here') }}";
    let e = infer(raises).unwrap_err().to_string();
    assert!(e.contains("no tools here"), "{e}");
}

/// `<a k="…" t="str|json">`: the attribute after the key declares each value's kind, so a value
/// declared as text stays text where no schema says otherwise, and JSON is read as JSON.
#[test]
fn value_kinds_declared_by_an_attribute() {
    let calls = format!(
        "{{% for tc in m.tool_calls %}}<call fn=\"{{{{ tc.function.name }}}}\" n=\"{{{{ loop.index }}}}\">{ARGS_TEXT}<a k=\"{{{{ k }}}}\" t=\"{{{{ 'str' if v is string else 'json' }}}}\">{{{{ v if v is string else v|tojson }}}}</a>{{% endfor %}}</call>{{% endfor %}}"
    );
    let f = infer(&chatml(&calls)).unwrap_or_else(|e| panic!("{e}"));
    common::lark::check_grammar(&f).unwrap_or_else(|e| panic!("grammar: {e}"));
    let CallSyntax::Named {
        name_suffix,
        arguments: Arguments::Pairs {
            key_suffix, kinds, ..
        },
        ..
    } = &f.call
    else {
        panic!("{f:#?}")
    };
    assert_eq!(
        (name_suffix.as_str(), key_suffix.as_str()),
        ("\" n=\"{*}\">", "\" t=\"{*}\">")
    );
    assert_eq!(kinds.get("string").map(String::as_str), Some("str"));
    assert_eq!(kinds.get("boolean").map(String::as_str), Some("json"));
    // `note` has no schema: the declaration decides.
    let got = events_any_chunking(
        &f,
        &options(),
        "<call fn=\"note\" n=\"1\"><a k=\"id\" t=\"str\">42</a><a k=\"n\" t=\"json\">42</a></call><call fn=\"set_timer\" n=\"2\"><a k=\"minutes\" t=\"json\">15</a><a k=\"label\" t=\"str\">tea</a></call>",
    );
    assert_eq!(
        got,
        vec![call(1, "note", json!({"id": "42", "n": 42})), timer(2)]
    );
    let mut args = serde_json::Map::new();
    args.insert("id".into(), json!("42"));
    args.insert("n".into(), json!(42));
    assert_eq!(
        f.example("note", &args),
        "<call fn=\"note\" n=\"0\"><a k=\"id\" t=\"str\">42</a><a k=\"n\" t=\"json\">42</a></call>"
    );
}

/// An attribute after the key that counts the arguments is not a declared kind: the second
/// argument of one call and the first of another are both strings.
#[test]
fn an_argument_index_is_not_a_declared_kind() {
    let calls = format!(
        "{{% for tc in m.tool_calls %}}<call fn=\"{{{{ tc.function.name }}}}\">{ARGS_TEXT}<a k=\"{{{{ k }}}}\" i=\"{{{{ loop.index }}}}\">{{{{ v if v is string else v|tojson }}}}</a>{{% endfor %}}</call>{{% endfor %}}"
    );
    let f = infer(&chatml(&calls)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(&f.call, CallSyntax::Named { arguments: Arguments::Pairs { kinds, .. }, .. } if kinds.is_empty()),
        "{f:#?}"
    );
    let got = events_any_chunking(
        &f,
        &options(),
        "<call fn=\"set_timer\"><a k=\"minutes\" i=\"1\">15</a><a k=\"label\" i=\"2\">tea</a></call>",
    );
    assert_eq!(got, vec![timer(1)]);
}
