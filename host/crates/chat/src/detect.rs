//! Which detector reads one model response: the built-in one for the tool format, or a detector
//! plugin (`[chat] detector = "NAME"`, a sandboxed WebAssembly component).
//!
//! A plugin is untrusted: it may trap, run out of time or refuse the format. When it does, the
//! response is not lost: the built-in detector for the same format re-reads everything the model
//! said so far, and only what the plugin had not yet reported is passed on (the user never sees
//! text twice, no call is run twice). The switch is reported as a notice.
//!
//! Reasoning is split off before a plugin reads anything, whatever its contract version: a 0.1.0
//! plugin has no reasoning event, a 0.2.0 one is not told whether the prompt opened a reasoning
//! block, and a call written while reasoning must never run whatever the plugin does. (A 0.2.0
//! plugin may still report reasoning of its own; it is passed on as reasoning.)
use rkmcp_plugin_host::{Detector, DetectorSession};
use rkmcp_tool_formats::{
    DetectorEvent, DetectorOptions, ReasoningFilter, ToolCallDetector, ToolFormat,
};

/// The detector of one response.
pub struct ResponseDetector {
    format: ToolFormat,
    opts: DetectorOptions,
    active: Active,
    /// In front of a plugin: takes the reasoning out of what it reads.
    reasoning: Option<ReasoningFilter>,
    /// Everything fed so far, kept while a plugin reads (for the fallback's replay).
    fed: String,
    /// Bytes of text and number of calls (incl. malformed) already reported.
    text_reported: usize,
    calls_reported: usize,
}

enum Active {
    Builtin(Box<dyn ToolCallDetector>),
    Plugin {
        name: String,
        session: DetectorSession,
    },
}

impl ResponseDetector {
    /// The built-in detector for `format`.
    pub fn builtin(format: ToolFormat, opts: &DetectorOptions) -> ResponseDetector {
        ResponseDetector {
            format,
            opts: opts.clone(),
            active: Active::Builtin(format.detector_with(opts)),
            reasoning: None,
            fed: String::new(),
            text_reported: 0,
            calls_reported: 0,
        }
    }

    /// `detector` (a format read from the template) for a response in `format`'s family.
    pub fn with_detector(
        format: ToolFormat,
        opts: &DetectorOptions,
        detector: Box<dyn ToolCallDetector>,
    ) -> ResponseDetector {
        ResponseDetector {
            active: Active::Builtin(detector),
            ..ResponseDetector::builtin(format, opts)
        }
    }

    /// A session of `plugin` for the dialect `dialect`; the built-in detector for `format` (with
    /// a notice) when the plugin cannot start one.
    pub async fn start(
        format: ToolFormat,
        opts: &DetectorOptions,
        plugin: Option<&Detector>,
        dialect: &str,
    ) -> (ResponseDetector, Option<String>) {
        let mut detector = ResponseDetector::builtin(format, opts);
        let Some(plugin) = plugin else {
            return (detector, None);
        };
        match plugin.start_session(dialect).await {
            Ok(session) => {
                detector.active = Active::Plugin {
                    name: plugin.name().to_string(),
                    session,
                };
                detector.reasoning = Some(ReasoningFilter::new(format, opts.reasoning_open));
                (detector, None)
            }
            Err(err) => {
                let notice = fallback_notice(plugin.name(), &err.to_string(), format);
                (detector, Some(notice))
            }
        }
    }

    /// Whether a plugin (still) reads this response.
    pub fn plugin_name(&self) -> Option<&str> {
        match &self.active {
            Active::Plugin { name, .. } => Some(name),
            Active::Builtin(_) => None,
        }
    }

    /// Events completed by `chunk`, and a notice if the plugin failed on it.
    pub async fn feed(&mut self, chunk: &str) -> (Vec<DetectorEvent>, Option<String>) {
        let (mut events, answer) = match &mut self.reasoning {
            Some(filter) if matches!(self.active, Active::Plugin { .. }) => filter.feed(chunk),
            _ => (Vec::new(), chunk.to_string()),
        };
        let (found, notice) = self.feed_answer(&answer).await;
        events.extend(found);
        (events, notice)
    }

    async fn feed_answer(&mut self, chunk: &str) -> (Vec<DetectorEvent>, Option<String>) {
        let found = match &mut self.active {
            Active::Builtin(d) => Ok(d.feed(chunk)),
            Active::Plugin { .. } if chunk.is_empty() => Ok(Vec::new()),
            Active::Plugin { name, session } => {
                self.fed.push_str(chunk);
                session
                    .feed(chunk)
                    .await
                    .map_err(|err| fallback_notice(name, &err.to_string(), self.format))
            }
        };
        match found {
            Ok(events) => (self.count(events), None),
            Err(notice) => (self.fall_back(), Some(notice)),
        }
    }

    /// The end of the response: what was held back.
    pub async fn finish(&mut self) -> (Vec<DetectorEvent>, Option<String>) {
        let mut reasoning = Vec::new();
        let mut notice = None;
        if let Some(filter) = &mut self.reasoning
            && matches!(self.active, Active::Plugin { .. })
        {
            let (events, answer) = filter.finish();
            reasoning = events;
            let (found, n) = self.feed_answer(&answer).await;
            reasoning.extend(found);
            notice = n;
        }
        let (found, n) = self.finish_answer().await;
        reasoning.extend(found);
        (reasoning, notice.or(n))
    }

    async fn finish_answer(&mut self) -> (Vec<DetectorEvent>, Option<String>) {
        let found = match &mut self.active {
            Active::Builtin(d) => Ok(d.finish()),
            Active::Plugin { name, session } => session
                .finish()
                .await
                .map_err(|err| fallback_notice(name, &err.to_string(), self.format)),
        };
        match found {
            Ok(events) => (self.count(events), None),
            Err(notice) => {
                let mut events = self.fall_back();
                let rest = match &mut self.active {
                    Active::Builtin(d) => d.finish(),
                    Active::Plugin { .. } => Vec::new(),
                };
                events.extend(self.count(rest));
                (events, Some(notice))
            }
        }
    }

    /// Replaces the plugin with the built-in detector, which re-reads the whole response so far;
    /// returns only what the plugin had not reported.
    fn fall_back(&mut self) -> Vec<DetectorEvent> {
        // The plugin read the answer only (reasoning was split off): so does its replacement.
        let mut answer_only = self.opts.clone();
        answer_only.reasoning_open = false;
        let mut builtin = self.format.detector_with(&answer_only);
        let replayed = builtin.feed(&std::mem::take(&mut self.fed));
        self.active = Active::Builtin(builtin);
        let (mut skip_text, mut skip_calls) = (self.text_reported, self.calls_reported);
        let mut fresh = Vec::new();
        for event in replayed {
            match event {
                DetectorEvent::Text(t) if skip_text > 0 => {
                    let cut = skip_text.min(t.len());
                    skip_text -= cut;
                    // Both detectors read the same text, so the cut falls on a character
                    // boundary; if a plugin reported different text, keep the rest whole.
                    if let Some(rest) = t.get(cut..).filter(|r| !r.is_empty()) {
                        fresh.push(DetectorEvent::Text(rest.to_string()));
                    }
                }
                DetectorEvent::ToolCall(_) | DetectorEvent::Malformed { .. } if skip_calls > 0 => {
                    skip_calls -= 1;
                }
                other => fresh.push(other),
            }
        }
        self.count(fresh)
    }

    fn count(&mut self, events: Vec<DetectorEvent>) -> Vec<DetectorEvent> {
        for e in &events {
            match e {
                DetectorEvent::Text(t) => self.text_reported += t.len(),
                // Reasoning is split off before a plugin: never replayed.
                DetectorEvent::Reasoning(_) => {}
                _ => self.calls_reported += 1,
            }
        }
        events
    }
}

fn fallback_notice(plugin: &str, error: &str, format: ToolFormat) -> String {
    // The plugin host's error names the plugin too; once is enough.
    let prefix = format!("plugin `{plugin}`: ");
    let error = error.strip_prefix(&prefix).unwrap_or(error);
    format!(
        "detector plugin `{plugin}` failed ({error}); the built-in {format} detector reads this answer instead"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkmcp_tool_formats::normalize;

    #[tokio::test]
    async fn the_builtin_detector_is_used_without_a_plugin() {
        let (mut d, notice) = ResponseDetector::start(
            ToolFormat::Hermes,
            &DetectorOptions::default(),
            None,
            "hermes",
        )
        .await;
        assert!(notice.is_none() && d.plugin_name().is_none());
        let mut events = d
            .feed("Hi <tool_call>{\"name\": \"f\", \"arguments\": {}}")
            .await
            .0;
        events.extend(d.feed("</tool_call> bye").await.0);
        events.extend(d.finish().await.0);
        let events = normalize(events);
        assert!(matches!(&events[1], DetectorEvent::ToolCall(c) if c.name == "f"));
        assert_eq!(d.calls_reported, 1);
    }

    #[test]
    fn a_fallback_reports_only_what_was_not_reported() {
        let mut d = ResponseDetector::builtin(ToolFormat::Hermes, &DetectorOptions::default());
        // As if a plugin had read the first call and shown "Before ".
        d.fed = "Before <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> middle <tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>".into();
        d.text_reported = "Before ".len();
        d.calls_reported = 1;
        let mut events = d.fall_back();
        if let Active::Builtin(b) = &mut d.active {
            events.extend(b.finish());
        }
        let events = normalize(events);
        let calls: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                DetectorEvent::ToolCall(c) => Some(c.name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(calls, ["b"]);
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                DetectorEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text.trim(), "middle");
    }
}
