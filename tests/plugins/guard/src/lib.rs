//! Test approval guard: read-only tools run, destructive ones are refused without a human,
//! everything else is asked about. Config `allow` (comma-separated tool names) always allows.
use exports::rkmcp::plugin::approval_guard::Guest;
use rkmcp::plugin::types::{Decision, ProposedCall};

wit_bindgen::generate!({
    path: "../../../wit/rkmcp-plugin@0.1.0",
    world: "approval-guard-plugin",
});

struct Plugin;

impl Guest for Plugin {
    fn review(call: ProposedCall) -> Decision {
        let allowed = rkmcp::plugin::host::config_get("allow").unwrap_or_default();
        if allowed.split(',').any(|t| t.trim() == call.tool) {
            return Decision::Allow;
        }
        if serde_json::from_str::<serde_json::Value>(&call.arguments_json).is_err() {
            return Decision::Deny(format!("arguments of {} are not valid JSON", call.tool));
        }
        let a = &call.annotations;
        match (a.destructive, a.read_only, call.interactive) {
            (Some(true), _, true) => Decision::Ask(format!(
                "{}/{} may destroy data. Run it?",
                call.server, call.tool
            )),
            (Some(true), _, false) => Decision::Deny(format!(
                "{}/{} is destructive and nobody is there to approve it",
                call.server, call.tool
            )),
            (_, Some(true), _) => Decision::Allow,
            (_, _, true) => Decision::Ask(format!("Run {}/{}?", call.server, call.tool)),
            (_, _, false) => Decision::Deny(format!(
                "{}/{} is not marked read-only",
                call.server, call.tool
            )),
        }
    }
}

export!(Plugin);
