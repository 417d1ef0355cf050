//! An approval guard: rkmcp asks it about every tool call before the call is made. This one
//! allows tools annotated read-only, denies tools whose name says they delete, and asks the
//! user about everything else (rkmcp turns "ask" into "deny" when nobody is at the terminal).

use rkmcp_plugin_sdk::{ApprovalGuard, Decision, ProposedCall};

struct Guard;

impl ApprovalGuard for Guard {
    fn new() -> Self {
        Guard
    }

    fn review(&mut self, call: ProposedCall) -> Decision {
        if call.tool.contains("delete") {
            return Decision::Deny(format!(
                "{}/{} deletes: not allowed",
                call.server, call.tool
            ));
        }
        match call.annotations.read_only {
            Some(true) => Decision::Allow,
            _ => Decision::Ask(format!(
                "Run {}/{} with {}?",
                call.server, call.tool, call.arguments_json
            )),
        }
    }
}

rkmcp_plugin_sdk::export_approval_guard!(Guard);
