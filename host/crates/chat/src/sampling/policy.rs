//! Who may have the local model write for them: the `[sampling]` table and the decision for one
//! request. Pure data, so the rules are tested without a model or a terminal.
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::budget::{Admitted, SamplingBudget};

/// `[sampling]` in the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingSettings {
    /// `false` refuses every `sampling/createMessage`, even in `chat`.
    pub enabled: bool,
    /// Servers (glob patterns over server names) whose requests run without asking; their
    /// answers are sent without being shown first. The only way sampling runs in `ask`.
    pub auto_approve: Vec<String>,
    /// A cap on a request's `maxTokens` (the server's number is used when smaller).
    pub max_tokens: u32,
    /// Requests one server may make in any 60 seconds (asked or approved, run or declined).
    pub requests_per_minute: u32,
    /// Tokens one server may have generated in any 60 seconds; a request gets at most what is
    /// left.
    pub tokens_per_minute: u32,
    /// How long a request waits for the model when the user's own generation holds it, in
    /// seconds. (The user's generation never waits for a sampling one: it stops it.)
    #[serde(with = "secs")]
    pub wait: Duration,
}

impl Default for SamplingSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            auto_approve: Vec::new(),
            max_tokens: 512,
            requests_per_minute: 10,
            tokens_per_minute: 4096,
            wait: Duration::from_secs(60),
        }
    }
}

mod secs {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = f64::deserialize(d)?;
        if !s.is_finite() || s <= 0.0 {
            return Err(serde::de::Error::custom(format!(
                "must be a positive number of seconds, not {s}"
            )));
        }
        Ok(Duration::from_secs_f64(s))
    }
}

/// What to do with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it and send the answer without asking.
    Allow,
    /// Show it to the user and ask (then show the answer and ask again).
    Ask,
    /// Refuse with this message (sent to the server and shown to the user).
    Deny(String),
}

/// The settings with their globs compiled, and the servers the user allowed for this session.
/// Not `Clone`: a copy would carry its own budget, doubling every server's allowance.
#[derive(Debug)]
pub struct SamplingPolicy {
    pub settings: SamplingSettings,
    auto: GlobSet,
    allowed_for_session: BTreeSet<String>,
    budget: SamplingBudget,
}

impl SamplingPolicy {
    pub fn new(settings: SamplingSettings) -> Result<Self, String> {
        for (key, value) in [
            ("requests_per_minute", settings.requests_per_minute),
            ("tokens_per_minute", settings.tokens_per_minute),
        ] {
            if value == 0 {
                return Err(format!(
                    "[sampling] {key} must be at least 1 (to refuse every request, set \
                     `enabled = false`)"
                ));
            }
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in &settings.auto_approve {
            let glob = Glob::new(pattern).map_err(|e| {
                format!("[sampling] auto_approve: `{pattern}` is not a valid glob: {e}")
            })?;
            builder.add(glob);
        }
        let auto = builder
            .build()
            .map_err(|e| format!("[sampling] auto_approve: {e}"))?;
        Ok(Self {
            budget: SamplingBudget::new(settings.requests_per_minute, settings.tokens_per_minute),
            settings,
            auto,
            allowed_for_session: BTreeSet::new(),
        })
    }

    /// `can_ask`: somebody is at a terminal to approve (`chat` on a TTY).
    pub fn decide(&self, server: &str, can_ask: bool) -> Decision {
        if !self.settings.enabled {
            return Decision::Deny(format!(
                "sampling request from server `{server}` refused: sampling is turned off in the \
                 config (`[sampling] enabled = false`)"
            ));
        }
        if self.auto.is_match(server) || self.allowed_for_session.contains(server) {
            return Decision::Allow;
        }
        if can_ask {
            return Decision::Ask;
        }
        Decision::Deny(format!(
            "sampling request from server `{server}` refused: nobody is here to approve it. To let \
             this server use the local model without asking, add to the config:\n  [sampling]\n  \
             auto_approve = [\"{server}\"]\n(`max_tokens` caps how much it may generate; \
             `enabled = false` refuses every request)"
        ))
    }

    /// "Allow this server for the session".
    pub fn allow_for_session(&mut self, server: &str) {
        self.allowed_for_session.insert(server.to_string());
    }

    /// The server's `maxTokens` within the configured cap.
    pub fn max_tokens(&self, requested: u32) -> u32 {
        requested.clamp(1, self.settings.max_tokens.max(1))
    }

    /// Charges a request that was not refused to the server's budget: its `maxTokens` within the
    /// cap and what is left of the minute's tokens, or why it must wait.
    pub fn admit(&mut self, server: &str, requested: u32) -> Result<Admitted, String> {
        let max_tokens = self.max_tokens(requested);
        self.budget.admit(server, max_tokens, Instant::now())
    }

    /// The request is done, having generated `generated` tokens.
    pub fn settle(&mut self, admitted: &Admitted, generated: u32) {
        self.budget.settle(admitted, generated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(toml: &str) -> SamplingPolicy {
        SamplingPolicy::new(toml::from_str(toml).unwrap()).unwrap()
    }

    #[test]
    fn nobody_to_ask_means_denied_with_the_config_that_allows_it() {
        let p = policy("");
        let Decision::Deny(message) = p.decide("everything", false) else {
            panic!("expected a denial");
        };
        assert!(message.contains("server `everything`"), "{message}");
        assert!(
            message.contains("auto_approve = [\"everything\"]"),
            "{message}"
        );
        assert!(message.contains("max_tokens"), "{message}");
        assert_eq!(p.decide("everything", true), Decision::Ask);
    }

    #[test]
    fn auto_approve_globs_and_session_allowances_skip_the_question() {
        let mut p = policy("auto_approve = [\"time*\"]");
        assert_eq!(p.decide("timeserver", false), Decision::Allow);
        assert_eq!(p.decide("files", true), Decision::Ask);
        p.allow_for_session("files");
        assert_eq!(p.decide("files", true), Decision::Allow);
        assert_eq!(p.decide("other", true), Decision::Ask);
    }

    #[test]
    fn disabled_refuses_even_approved_servers() {
        let p = policy("enabled = false\nauto_approve = [\"*\"]");
        let Decision::Deny(message) = p.decide("x", true) else {
            panic!("expected a denial");
        };
        assert!(message.contains("enabled = false"), "{message}");
    }

    #[test]
    fn max_tokens_is_capped() {
        let p = policy("max_tokens = 100");
        assert_eq!(p.max_tokens(50), 50);
        assert_eq!(p.max_tokens(5000), 100);
        assert_eq!(p.max_tokens(0), 1);
    }

    #[test]
    fn bad_settings_are_named() {
        let err = SamplingPolicy::new(SamplingSettings {
            auto_approve: vec!["a[".into()],
            ..SamplingSettings::default()
        })
        .unwrap_err();
        assert!(err.contains("auto_approve: `a[`"), "{err}");
        let err = toml::from_str::<SamplingSettings>("wait = -1").unwrap_err();
        assert!(err.to_string().contains("positive"), "{err}");
        assert!(toml::from_str::<SamplingSettings>("max_token = 3").is_err());
        let err =
            SamplingPolicy::new(toml::from_str("requests_per_minute = 0").unwrap()).unwrap_err();
        assert!(
            err.contains("requests_per_minute must be at least 1"),
            "{err}"
        );
        assert!(err.contains("enabled = false"), "{err}");
    }

    #[test]
    fn admitted_requests_are_capped_and_counted_per_server() {
        let mut p = policy("max_tokens = 100\nrequests_per_minute = 1\ntokens_per_minute = 50");
        let admitted = p.admit("ev", 5000).unwrap();
        assert_eq!(admitted.max_tokens, 50);
        let err = p.admit("ev", 10).unwrap_err();
        assert!(err.contains("requests_per_minute = 1"), "{err}");
        assert_eq!(p.admit("other", 10).unwrap().max_tokens, 10);
    }
}
