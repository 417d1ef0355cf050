mod common;
#[test]
fn scratch() {
    let t = common::chatml(r#"{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments|tojson }}}
</tool_call>{% endfor %}"#);
    println!("{t}");
    let f = rkmcp_format_infer::infer(&t);
    println!("{}", serde_json::to_string_pretty(&f.as_ref().map_err(|e| e.to_string())).unwrap());
}
