//! How long inference takes (printed with `-- --nocapture`): the chat pays it once at start.

mod common;

#[test]
fn timing_of_one_inference() {
    let t = common::chatml(
        r#"{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments|tojson }}}
</tool_call>{% endfor %}"#,
    );
    let start = std::time::Instant::now();
    let n = 20;
    for _ in 0..n {
        rkmcp_format_infer::infer(&t).expect("inferred");
    }
    let each = start.elapsed() / n;
    println!("infer: {each:?} per template");
    // About 1.4 ms on the 2-core CI machine; a chat pays it once at start.
    assert!(each < std::time::Duration::from_millis(200), "{each:?}");
}
