//! Plugin outputs at the WIT boundary: what the host makes of any strings a guest returns as
//! events, reasons and errors (`host/crates/plugin-host/src/boundary.rs`, compiled in by path).
//! Whatever the plugin sends, nothing that reaches the user may carry a control sequence, a
//! reason is one bounded line, and a tool call always has object arguments.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rkmcp_term_safe::is_clean;
use rkmcp_tool_formats::DetectorEvent;

#[path = "../../host/crates/plugin-host/src/boundary.rs"]
mod boundary;

fuzz_target!(|input: (Vec<(u8, String, String, String)>, String)| {
    let (events, reason) = input;
    let r = boundary::reason(reason);
    assert!(is_clean(&r) && !r.contains('\n'), "{r:?}");
    assert!(
        r.len() <= boundary::MAX_REASON + " [cut]".len(),
        "{}",
        r.len()
    );
    for (kind, a, b, c) in events {
        let e = match kind % 3 {
            0 => boundary::text(a),
            1 => boundary::tool_call(a, b, c),
            _ => boundary::malformed(a, b),
        };
        match e {
            DetectorEvent::Text(t) | DetectorEvent::Reasoning(t) => {
                assert!(is_clean(&t), "{t:?}")
            }
            DetectorEvent::ToolCall(call) => {
                assert!(call.arguments.is_object());
                assert!(is_clean(&call.name) && !call.name.contains('\n'));
                assert!(is_clean(&call.id) && !call.id.contains('\n'));
            }
            DetectorEvent::Malformed { raw, error } => {
                assert!(is_clean(&raw) && is_clean(&error) && !error.contains('\n'));
            }
        }
    }
});
