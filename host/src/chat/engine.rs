//! One user turn: generate, detect calls, validate, approve, call (concurrently), feed the
//! results back, and repeat until the model answers or a limit is reached.
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use rkmcp_llm::{FinishReason, GenerateRequest, Message, SharedBackend, Stats};
use rkmcp_plugin_host::{Detector, SchemaConverter};
use rkmcp_tool_formats::convert::{
    CallToolResultLike, ContentItem, ResultOptions, ToolDef, example_call, format_tool_result_with,
    result_body,
};
use rkmcp_tool_formats::{
    DetectorEvent, DetectorOptions, ReasoningFilter, ToolCall, reasoning_open_in_prompt,
    strip_reasoning,
};

use super::approval::{ApprovalRequest, Approver, Verdict};
use super::convert::ConverterPlugin;
use super::detect::ResponseDetector;
use super::prompt::{self, ToolPlan};
use super::settings::ChatSettings;
use super::transcript::{CallOutcome, CallRecord, Rejection, RoundRecord, Transcript, TurnRecord};
use super::validate::{ArgumentValidator, Coercion};
use crate::mcp::manager::{ExposedTool, SessionManager};

/// What happens during a turn, as it happens (for the terminal, or a script).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum ChatEvent {
    /// A generation starts.
    Round {
        round: u32,
    },
    /// Answer text for the user, streamed (call markers removed).
    Text {
        text: String,
    },
    /// The model's reasoning, streamed apart from the answer (never scanned for calls, not fed
    /// back in later turns).
    Reasoning {
        text: String,
    },
    /// The model asked for a valid call; approval comes next.
    ToolCall {
        id: String,
        name: String,
        server: String,
        tool: String,
        arguments: Value,
    },
    Approval {
        id: String,
        verdict: Verdict,
    },
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        duration_ms: f64,
        /// The first line of what the model is given back.
        summary: String,
    },
    /// A call that was not run (unparseable, unknown tool, invalid arguments); the error goes
    /// back to the model so it can fix it.
    Rejected {
        id: Option<String>,
        name: Option<String>,
        error: String,
    },
    /// A generation ended.
    Generated {
        stats: Stats,
        finish: FinishReason,
    },
    /// Something the user should know (limits reached, cancellation).
    Notice {
        message: String,
    },
}

/// How a turn ended.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnOutcome {
    /// The visible text of the last round.
    pub answer: String,
    pub cancelled: bool,
    pub rounds: u32,
    /// Calls that ran (successfully or not).
    pub tool_calls: usize,
}

/// A call the model proposed that passed detection, lookup and validation.
struct Pending {
    call: ToolCall,
    exposed: ExposedTool,
    coercions: Vec<Coercion>,
}

/// The chat loop shared by `rkmcp chat` and `rkmcp ask`.
pub struct ChatEngine {
    backend: SharedBackend,
    sessions: Arc<SessionManager>,
    settings: ChatSettings,
    approver: Approver,
    validator: ArgumentValidator,
    plan: ToolPlan,
    exposed: Vec<ExposedTool>,
    /// The conversation without the system prompt (rebuilt each round from the current tools).
    history: Vec<Message>,
    transcript: Transcript,
    /// Counts calls across the whole conversation, so ids stay unique.
    calls_made: u64,
    /// `[chat] detector`: a detector plugin used instead of the built-in detector.
    detector_plugin: Option<Detector>,
    /// `[chat] converter`: a schema-converter plugin used instead of the built-in converter.
    converter: Option<ConverterPlugin>,
    /// How many tools each message shows (0: all): `tool_shortlist` resolved against the model
    /// file's size once, when the chat starts.
    shortlist_max: usize,
}

impl ChatEngine {
    pub fn new(
        backend: SharedBackend,
        sessions: Arc<SessionManager>,
        settings: ChatSettings,
        approver: Approver,
    ) -> ChatEngine {
        let info = backend.info().clone();
        let plan = ToolPlan::new(&settings, &info, Vec::new());
        let model_bytes = std::fs::metadata(&info.model).ok().map(|m| m.len());
        let shortlist_max = settings.tool_shortlist.resolve(model_bytes);
        let transcript = Transcript {
            model: info.model.display().to_string(),
            backend: info.backend.to_string(),
            chat_template: info.chat_template.clone(),
            tool_format: plan.format.to_string(),
            prompt_style: plan.style.to_string(),
            guards: settings.approval.guards.clone(),
            ..Transcript::default()
        };
        let mut engine = ChatEngine {
            backend,
            sessions,
            settings,
            approver,
            validator: ArgumentValidator::new(),
            plan,
            exposed: Vec::new(),
            history: Vec::new(),
            transcript,
            calls_made: 0,
            detector_plugin: None,
            converter: None,
            shortlist_max,
        };
        engine.refresh_tools();
        engine
    }

    /// Reads the model's answers with a detector plugin (the built-in detector takes over for
    /// an answer the plugin fails on).
    pub fn with_detector_plugin(mut self, detector: Detector) -> ChatEngine {
        self.transcript.detector = Some(detector.name().to_string());
        self.detector_plugin = Some(detector);
        self
    }

    /// Describes the tools to the model and formats their results with a schema-converter
    /// plugin (the built-in converter takes over for whatever the plugin fails on).
    pub fn with_converter_plugin(mut self, converter: SchemaConverter) -> ChatEngine {
        self.transcript.converter = Some(converter.name().to_string());
        self.converter = Some(ConverterPlugin::new(converter));
        self
    }

    /// Re-reads the tools of every live server (they change on `list_changed`).
    pub fn refresh_tools(&mut self) {
        let (exposed, _) = self.sessions.tools();
        self.plan.tools = exposed.iter().map(tool_def).collect();
        self.exposed = exposed;
    }

    pub fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    pub fn settings(&self) -> &ChatSettings {
        &self.settings
    }

    pub fn sessions(&self) -> &Arc<SessionManager> {
        &self.sessions
    }

    /// Ends the chat: closes every server session (children get their shutdown sequence).
    pub async fn into_sessions_shutdown(self) {
        let sessions = self.sessions;
        drop(self.approver);
        match Arc::try_unwrap(sessions) {
            Ok(s) => s.shutdown().await,
            Err(_) => tracing::debug!("sessions still shared at the end of the chat"),
        }
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The conversation so far, without the system prompt.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Adds a message (a resource's text, a prompt template's messages) to the conversation.
    pub fn push_context(&mut self, message: Message) {
        self.history.push(message);
        self.transcript.messages = self.messages();
    }

    /// Forgets the conversation (the transcript keeps the earlier turns).
    pub fn clear(&mut self) {
        self.history.clear();
        self.transcript.messages = self.messages();
    }

    /// The system prompt for the current tools.
    pub fn system_prompt(&self) -> String {
        let info = self.backend.info();
        prompt::system_prompt(
            &self.settings,
            &self.plan,
            info.capabilities.native_tools,
            self.plan
                .explicit_decision(&self.settings, info.capabilities.grammar),
        )
    }

    /// A request for the conversation so far with `grammar`.
    fn request(&self, grammar: Option<String>) -> GenerateRequest {
        let mut request = GenerateRequest::new(self.messages());
        request.grammar = grammar;
        request.stop = self.settings.stop.clone();
        if self.backend.info().capabilities.native_tools {
            request.tools_json = prompt::native_tools_json(&self.settings, &self.plan);
        }
        request
    }

    fn messages(&self) -> Vec<Message> {
        let mut m = Vec::with_capacity(self.history.len() + 1);
        m.push(Message::system(self.system_prompt()));
        m.extend(self.history.iter().cloned());
        m
    }

    /// Runs one user turn to its end: an answer, a limit, or `cancel`. An empty `input` continues
    /// the conversation as it is (after [`push_context`](Self::push_context) of a prompt).
    pub async fn turn(
        &mut self,
        input: &str,
        events: &UnboundedSender<ChatEvent>,
        cancel: CancellationToken,
    ) -> anyhow::Result<TurnOutcome> {
        let started = Instant::now();
        self.refresh_tools();
        if !input.is_empty() {
            self.history.push(Message::user(input));
        }
        let mut record = TurnRecord {
            user: input.to_string(),
            ..TurnRecord::default()
        };
        let query = self
            .history
            .iter()
            .rev()
            .find(|m| m.role == rkmcp_llm::Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        self.plan.tools_match = super::shortlist::scores(&query, &self.plan.tools)
            .iter()
            .any(|s| *s > 0.0);
        record.tools_match = self.plan.tools_match;
        let max = self.shortlist_max;
        if max > 0 && self.plan.tools.len() > max {
            let ties = self.settings.tool_shortlist.keeps_ties();
            self.plan.tools = super::shortlist::shortlist(&query, &self.plan.tools, max, ties);
            record.tools_listed = Some(self.plan.tools.iter().map(|t| t.name.clone()).collect());
        }
        self.plan.converted = None;
        if let Some(converter) = &mut self.converter
            && self.plan.offers_tools(&self.settings)
        {
            // The tools as the section lists them: `answer_directly` included when the decision
            // is explicit.
            let explicit = self
                .plan
                .explicit_decision(&self.settings, self.backend.info().capabilities.grammar);
            let (converted, notice) = converter.convert(&self.plan.listed_tools(explicit)).await;
            notify(events, notice);
            self.plan.converted = converted;
        }
        let result = self.run_rounds(events, &cancel, &mut record).await;
        record.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.transcript.messages = self.messages();
        self.transcript.turns.push(record.clone());
        let outcome = result?;
        Ok(outcome)
    }

    async fn run_rounds(
        &mut self,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
        record: &mut TurnRecord,
    ) -> anyhow::Result<TurnOutcome> {
        let info = self.backend.info().clone();
        let offers_tools = self.plan.offers_tools(&self.settings);
        let max_rounds = self.settings.max_rounds.max(1);
        let mut outcome = TurnOutcome::default();
        let mut fix_attempts = 0u32;
        // Calls that ran this turn (id, name, arguments), to catch a model repeating itself.
        let mut ran: Vec<(String, String, Value)> = Vec::new();
        let mut answer_only = false;
        for round in 1..=max_rounds {
            outcome.rounds = round;
            let _ = events.send(ChatEvent::Round { round });
            let (grammar, grammar_name) = prompt::grammar_for_round(
                &self.settings,
                &self.plan,
                info.capabilities.grammar,
                round,
                answer_only,
            );
            let mut request = self.request(grammar);
            // A round that must call, or that follows calls (results, rejections), is decoded
            // greedily (`greedy_tool_rounds`).
            let greedy = self.settings.greedy_tool_rounds
                && (round > 1 || matches!(grammar_name, "call-only" | "tool-or-answer_directly"));
            if greedy {
                request.temperature = Some(0.0);
            }
            let (mut raw, mut generation, mut detected) =
                self.generate(request, offers_tools, events, cancel).await?;
            // `answer_directly` is the model's choice to answer without a tool: it is not a call.
            // If it is all the model asked for, it now answers (the choice stays in the record).
            let chose_answer = detected
                .calls
                .iter()
                .any(|c| c.name == prompt::ANSWER_DIRECTLY);
            detected.calls.retain(|c| c.name != prompt::ANSWER_DIRECTLY);
            let mut decision = None;
            let mut grammar_name = grammar_name.to_string();
            if chose_answer
                && detected.calls.is_empty()
                && detected.malformed.is_empty()
                && !cancel.is_cancelled()
            {
                decision = Some(std::mem::take(&mut raw));
                let (grammar, name) = prompt::grammar_for_round(
                    &self.settings,
                    &self.plan,
                    info.capabilities.grammar,
                    round,
                    true,
                );
                grammar_name = format!("{grammar_name}, then {name}");
                (raw, generation, detected) = self
                    .generate(self.request(grammar), offers_tools, events, cancel)
                    .await?;
            }
            let mut round_record = RoundRecord {
                round,
                decision,
                raw: raw.clone(),
                text: detected.text.clone(),
                reasoning: detected.reasoning.clone(),
                finish: generation.as_ref().map(|g| g.0),
                stats: generation.as_ref().map(|g| g.1.clone()),
                grammar: grammar_name,
                greedy,
                calls: Vec::new(),
                rejected: Vec::new(),
            };
            // The model's own words, markers included, so it sees its calls next round; its
            // reasoning is left out, as chat templates drop it from earlier turns.
            let said = strip_reasoning(self.plan.format, detected.reasoning_open, &raw);
            if !said.trim().is_empty() {
                self.history.push(Message::assistant(said));
            }
            outcome.answer = detected.text.trim().to_string();
            if cancel.is_cancelled() {
                outcome.cancelled = true;
                record.cancelled = true;
                let _ = events.send(ChatEvent::Notice {
                    message: "interrupted".into(),
                });
                record.rounds.push(round_record);
                break;
            }
            if detected.calls.is_empty() && detected.malformed.is_empty() {
                record.rounds.push(round_record);
                break;
            }

            // Malformed attempts, unknown tools and invalid arguments go back to the model.
            let mut feedback: Vec<Message> = Vec::new();
            let mut pending: Vec<Pending> = Vec::new();
            for (raw_call, error) in detected.malformed {
                let message = format!(
                    "Your tool call could not be read: {error}. Write it exactly like this example: {}",
                    self.example()
                );
                self.reject(
                    events,
                    &mut round_record,
                    &mut feedback,
                    None,
                    None,
                    Some(raw_call),
                    message,
                )
                .await;
            }
            for mut call in detected.calls {
                self.calls_made += 1;
                // Nine alphanumerics: Mistral's templates insist on that shape.
                call.id = format!("call{:05}", self.calls_made % 100_000);
                match self.check_call(&mut call) {
                    Ok((exposed, coercions)) => pending.push(Pending {
                        call,
                        exposed,
                        coercions,
                    }),
                    Err(message) => {
                        let (id, name) = (Some(call.id.clone()), Some(call.name.clone()));
                        self.reject(
                            events,
                            &mut round_record,
                            &mut feedback,
                            id,
                            name,
                            None,
                            message,
                        )
                        .await;
                    }
                }
            }
            if !round_record.rejected.is_empty() {
                fix_attempts += 1;
            }

            // The same call twice in one answer runs once. A call that already ran this turn is
            // not run again, and the next round may only answer (small models otherwise repeat a
            // call until the round limit).
            let mut fresh: Vec<Pending> = Vec::new();
            let mut repeats: Vec<(ToolCall, String)> = Vec::new();
            for p in pending {
                let same =
                    |name: &str, args: &Value| name == p.call.name && *args == p.call.arguments;
                if let Some(first) = fresh.iter().find(|q| same(&q.call.name, &q.call.arguments)) {
                    let why = format!(
                        "the same call as {} in this answer, which runs once",
                        first.call.id
                    );
                    let _ = events.send(ChatEvent::Notice {
                        message: format!(
                            "'{}' was asked for twice with the same arguments; it runs once",
                            p.call.name
                        ),
                    });
                    round_record.calls.push(not_run(&p, "engine", &why));
                } else if let Some((earlier, _, _)) = ran.iter().find(|(_, n, a)| same(n, a)) {
                    let _ = events.send(ChatEvent::Notice {
                        message: format!("'{}' was asked for again with the same arguments; the model answers with the result it has", p.call.name),
                    });
                    let message = format!(
                        "You already called {} with these arguments ({earlier}); its result is above. Answer the user's question with it now.",
                        p.call.name
                    );
                    repeats.push((p.call.clone(), message));
                    round_record.calls.push(not_run(
                        &p,
                        "engine",
                        &format!("a repeat of {earlier}, whose result the model already has"),
                    ));
                    answer_only = true;
                } else {
                    fresh.push(p);
                }
            }
            let pending = fresh;
            if pending.is_empty() && feedback.is_empty() && !repeats.is_empty() {
                // Nothing new was asked: the round is taken back (it stays in the transcript) and
                // the next one answers from the results already in the conversation — small
                // models parrot a notice instead of answering.
                if !raw.is_empty() {
                    self.history.pop();
                }
            } else {
                for (call, message) in repeats {
                    let text = self.feed_back(&call, &error_result(&message), events).await;
                    feedback.push(Message::tool(text));
                }
            }

            if round == max_rounds {
                for p in &pending {
                    round_record
                        .calls
                        .push(not_run(p, "limit", "the round limit was reached"));
                }
                let message = format!(
                    "stopped after {max_rounds} rounds (chat.max_rounds); the model's last calls were not run"
                );
                let _ = events.send(ChatEvent::Notice {
                    message: message.clone(),
                });
                record.stopped = Some(message);
                record.rounds.push(round_record);
                break;
            }

            let results = self.approve_and_call(pending, events, cancel).await;
            for (call_record, message) in results {
                outcome.tool_calls += usize::from(call_record.duration_ms.is_some());
                if call_record.duration_ms.is_some() {
                    ran.push((
                        call_record.id.clone(),
                        call_record.name.clone(),
                        call_record.arguments.clone(),
                    ));
                }
                round_record.calls.push(call_record);
                feedback.push(message);
            }
            // Results in the order the model asked, after any rejections.
            self.history.extend(feedback);
            record.rounds.push(round_record);

            if cancel.is_cancelled() {
                outcome.cancelled = true;
                record.cancelled = true;
                let _ = events.send(ChatEvent::Notice {
                    message: "interrupted".into(),
                });
                break;
            }
            if fix_attempts > self.settings.max_fix_attempts
                && record
                    .rounds
                    .last()
                    .is_some_and(|r| r.calls.iter().all(|c| c.duration_ms.is_none()))
            {
                let message = format!(
                    "stopped: the model's calls were still invalid after {} attempts (chat.max_fix_attempts)",
                    self.settings.max_fix_attempts
                );
                let _ = events.send(ChatEvent::Notice {
                    message: message.clone(),
                });
                record.stopped = Some(message);
                break;
            }
        }
        record.answer = outcome.answer.clone();
        Ok(outcome)
    }

    /// Streams one generation through the detector. Returns the raw text, (finish, stats) when
    /// the backend finished, and what the detector found.
    async fn generate(
        &mut self,
        request: GenerateRequest,
        offers_tools: bool,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<(String, Option<(FinishReason, Stats)>, Detected)> {
        // Whether the rendered prompt already opened a reasoning block (`<think>` at its end).
        let reasoning_open = match self.backend.render(request.messages.clone()).await {
            Ok(prompt) => reasoning_open_in_prompt(&prompt),
            Err(err) => {
                tracing::debug!("rendering the prompt to look for an open reasoning block: {err}");
                false
            }
        };
        let mut opts = DetectorOptions::for_tools(&self.plan.tools);
        opts.reasoning_open = reasoning_open;
        let mut stream = self.backend.generate(request);
        let mut detector = if offers_tools {
            let dialect = self
                .settings
                .detector_format
                .clone()
                .unwrap_or_else(|| self.plan.format.name().to_string());
            let (d, notice) = ResponseDetector::start(
                self.plan.format,
                &opts,
                self.detector_plugin.as_ref(),
                &dialect,
            )
            .await;
            notify(events, notice);
            Some(d)
        } else {
            None
        };
        // Without tools there is no detector, but reasoning is still kept apart.
        let mut reasoning_only = ReasoningFilter::new(self.plan.format, reasoning_open);
        let mut detected = Detected {
            reasoning_open,
            ..Detected::default()
        };
        let mut raw = String::new();
        let mut aborted = false;
        loop {
            let chunk = if aborted {
                // Drain what was generated before the abort took effect.
                stream.chunks.recv().await
            } else {
                tokio::select! {
                    chunk = stream.chunks.recv() => chunk,
                    _ = cancel.cancelled() => {
                        stream.abort.abort();
                        aborted = true;
                        continue;
                    }
                }
            };
            let Some(chunk) = chunk else { break };
            raw.push_str(&chunk);
            match detector.as_mut() {
                Some(d) => {
                    let (found, notice) = d.feed(&chunk).await;
                    notify(events, notice);
                    detected.take(found, events);
                }
                None => {
                    let (mut found, answer) = reasoning_only.feed(&chunk);
                    found.push(DetectorEvent::Text(answer));
                    detected.take(found, events);
                }
            }
        }
        if let Some(d) = detector.as_mut() {
            let (found, notice) = d.finish().await;
            notify(events, notice);
            detected.take(found, events);
        } else {
            let (mut found, answer) = reasoning_only.finish();
            found.push(DetectorEvent::Text(answer));
            detected.take(found, events);
        }
        let generation = match stream.finish().await {
            Ok(g) => {
                let _ = events.send(ChatEvent::Generated {
                    stats: g.stats.clone(),
                    finish: g.finish,
                });
                // The backend's text is authoritative (chunks are exactly it, minus stop strings).
                if g.text.len() > raw.len() {
                    raw = g.text;
                }
                Some((g.finish, g.stats))
            }
            Err(err) if cancel.is_cancelled() => {
                tracing::debug!("generation ended by cancellation: {err}");
                None
            }
            Err(err) => return Err(anyhow::anyhow!("the model failed: {err}")),
        };
        Ok((raw, generation, detected))
    }

    /// Finds the tool and validates the arguments (with safe coercions).
    fn check_call(&mut self, call: &mut ToolCall) -> Result<(ExposedTool, Vec<Coercion>), String> {
        let exposed = match self.find_tool(&call.name) {
            Some(t) => t.clone(),
            None => {
                let names: Vec<&str> = self.exposed.iter().map(|t| t.name.as_str()).collect();
                let hint = match crate::config::nearest(&call.name, &names) {
                    Some(n) => format!(" Did you mean `{n}`?"),
                    None => String::new(),
                };
                return Err(format!(
                    "There is no tool named `{}`.{hint} Available tools: {}.",
                    call.name,
                    names.join(", ")
                ));
            }
        };
        // The exposed name is what the model must use from now on.
        call.name = exposed.name.clone();
        let schema = Value::Object((*exposed.tool.input_schema).clone());
        match self
            .validator
            .check(&exposed.name, &schema, &mut call.arguments)
        {
            Ok(coercions) => Ok((exposed, coercions)),
            Err(invalid) => Err(invalid.to_string()),
        }
    }

    /// The exposed name, else a server's own tool name that is unique (small models drop the
    /// `server__` prefix).
    fn find_tool(&self, name: &str) -> Option<&ExposedTool> {
        if let Some(t) = self.exposed.iter().find(|t| t.name == name) {
            return Some(t);
        }
        let mut bare = self.exposed.iter().filter(|t| t.tool.name == name);
        match (bare.next(), bare.next()) {
            (Some(t), None) => Some(t),
            _ => None,
        }
    }

    fn example(&self) -> String {
        match self.plan.tools.first() {
            Some(t) => example_call(self.plan.format, &t.name, &serde_json::json!({})),
            None => String::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn reject(
        &self,
        events: &UnboundedSender<ChatEvent>,
        round: &mut RoundRecord,
        feedback: &mut Vec<Message>,
        id: Option<String>,
        name: Option<String>,
        raw: Option<String>,
        error: String,
    ) {
        let _ = events.send(ChatEvent::Rejected {
            id: id.clone(),
            name: name.clone(),
            error: error.clone(),
        });
        let call = ToolCall {
            id: id.clone().unwrap_or_else(|| "call_invalid".into()),
            name: name.clone().unwrap_or_else(|| "unknown".into()),
            arguments: Value::Object(Default::default()),
        };
        let text = self.feed_back(&call, &error_result(&error), events).await;
        feedback.push(Message::tool(text));
        round.rejected.push(Rejection {
            id,
            name,
            raw,
            error,
        });
    }

    /// Approves each call in order (a person may be asked), then runs the approved ones —
    /// concurrently unless `parallel_calls = false`. Returns a record and a tool message per call,
    /// in the model's order.
    async fn approve_and_call(
        &mut self,
        pending: Vec<Pending>,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> Vec<(CallRecord, Message)> {
        let mut verdicts = Vec::with_capacity(pending.len());
        for p in &pending {
            let _ = events.send(ChatEvent::ToolCall {
                id: p.call.id.clone(),
                name: p.call.name.clone(),
                server: p.exposed.server.clone(),
                tool: p.exposed.tool.name.to_string(),
                arguments: p.call.arguments.clone(),
            });
            let request = ApprovalRequest {
                server: p.exposed.server.clone(),
                tool: p.exposed.tool.name.to_string(),
                exposed_name: p.exposed.name.clone(),
                arguments: p.call.arguments.clone(),
                annotations: p.exposed.tool.annotations.clone(),
            };
            let verdict = tokio::select! {
                v = self.approver.review(&request) => v,
                _ = cancel.cancelled() => Verdict::Deny {
                    by: "user".into(),
                    reason: "the turn was interrupted".into(),
                },
            };
            if let Some(audit) = self.sessions.audit() {
                let (decision, by, reason) = match &verdict {
                    Verdict::Allow { by } => ("allow", by, None),
                    Verdict::Deny { by, reason } => ("deny", by, Some(reason.as_str())),
                };
                audit.tool_call(
                    &request.server,
                    &request.tool,
                    &request.arguments,
                    decision,
                    by,
                    reason,
                );
            }
            let _ = events.send(ChatEvent::Approval {
                id: p.call.id.clone(),
                verdict: verdict.clone(),
            });
            verdicts.push(verdict);
        }

        let runs = pending.iter().zip(&verdicts).map(|(p, verdict)| {
            let sessions = Arc::clone(&self.sessions);
            let allowed = matches!(verdict, Verdict::Allow { .. });
            async move {
                if !allowed {
                    return None;
                }
                let started = Instant::now();
                let args = match &p.call.arguments {
                    Value::Object(m) => Some(m.clone()),
                    _ => None,
                };
                let result = match sessions.session(&p.exposed.server) {
                    Some(session) => session
                        .call_tool(&p.exposed.tool.name, args)
                        .await
                        .map_err(anyhow::Error::from),
                    None => Err(anyhow::anyhow!(
                        "server `{}` is not running",
                        p.exposed.server
                    )),
                };
                Some((started.elapsed().as_secs_f64() * 1000.0, result))
            }
        });
        let finished: Vec<_> = tokio::select! {
            done = async {
                if self.settings.parallel_calls {
                    futures::future::join_all(runs).await
                } else {
                    let mut out = Vec::new();
                    for run in runs {
                        out.push(run.await);
                    }
                    out
                }
            } => done.into_iter().map(Some).collect(),
            // Dropping the calls makes rmcp send notifications/cancelled to the servers.
            _ = cancel.cancelled() => pending.iter().map(|_| None).collect(),
        };

        let mut out = Vec::with_capacity(pending.len());
        for ((p, verdict), ran) in pending.into_iter().zip(verdicts).zip(finished) {
            let mut record = CallRecord {
                id: p.call.id.clone(),
                name: p.call.name.clone(),
                server: p.exposed.server.clone(),
                tool: p.exposed.tool.name.to_string(),
                arguments: p.call.arguments.clone(),
                coercions: p.coercions,
                approval: verdict.clone(),
                duration_ms: None,
                outcome: CallOutcome::Denied,
                result: None,
                fed_back: String::new(),
            };
            let result_like = match (&verdict, ran) {
                (Verdict::Deny { by, reason }, _) => error_result(&format!(
                    "The call was not allowed ({by}: {reason}). Do not call it again; answer without it."
                )),
                (_, None) => {
                    record.outcome = CallOutcome::Cancelled;
                    error_result("The call was cancelled by the user.")
                }
                (_, Some(None)) => error_result("The call did not run."),
                (_, Some(Some((ms, Ok(result))))) => {
                    record.duration_ms = Some(ms);
                    let json = serde_json::to_value(&result).unwrap_or(Value::Null);
                    let like: CallToolResultLike = serde_json::from_value(json.clone())
                        .unwrap_or_else(|err| {
                            error_result(&format!("the server's result could not be read: {err}"))
                        });
                    record.outcome = if like.is_error {
                        CallOutcome::ToolError
                    } else {
                        CallOutcome::Ok
                    };
                    record.result = Some(json);
                    like
                }
                (_, Some(Some((ms, Err(err))))) => {
                    record.duration_ms = Some(ms);
                    record.outcome = CallOutcome::Failed;
                    error_result(&format!("The call failed: {err:#}"))
                }
            };
            let text = self.feed_back(&p.call, &result_like, events).await;
            record.fed_back = text.clone();
            if record.duration_ms.is_some() || record.outcome == CallOutcome::Cancelled {
                let _ = events.send(ChatEvent::ToolResult {
                    id: record.id.clone(),
                    name: record.name.clone(),
                    is_error: record.outcome != CallOutcome::Ok,
                    duration_ms: record.duration_ms.unwrap_or(0.0),
                    summary: summary(&result_body(&result_like, &ResultOptions::default())),
                });
            }
            out.push((record, Message::tool(text)));
        }
        out
    }

    /// A tool result as the converter plugin or the model's format expects it. Templates that
    /// wrap tool turns themselves (Qwen) get the bare body.
    async fn feed_back(
        &self,
        call: &ToolCall,
        result: &CallToolResultLike,
        events: &UnboundedSender<ChatEvent>,
    ) -> String {
        let opts = ResultOptions {
            max_chars: self.settings.result_max_chars,
        };
        if let Some(converter) = &self.converter {
            match converter.format_result(call, result, opts.max_chars).await {
                Ok(text) => return text,
                Err(notice) => notify(events, Some(notice)),
            }
        }
        if self.backend.info().chat_template == "qwen" {
            result_body(result, &opts)
        } else {
            format_tool_result_with(self.plan.format, call, result, &opts)
        }
    }
}

/// What one generation contained.
#[derive(Default)]
struct Detected {
    text: String,
    /// The model's reasoning, kept apart from `text`.
    reasoning: String,
    /// The rendered prompt had opened a reasoning block.
    reasoning_open: bool,
    calls: Vec<ToolCall>,
    /// (raw, error)
    malformed: Vec<(String, String)>,
}

impl Detected {
    fn take(&mut self, found: Vec<DetectorEvent>, events: &UnboundedSender<ChatEvent>) {
        for ev in found {
            match ev {
                DetectorEvent::Text(t) | DetectorEvent::Reasoning(t) if t.is_empty() => {}
                DetectorEvent::Text(t) => {
                    self.text.push_str(&t);
                    let _ = events.send(ChatEvent::Text { text: t });
                }
                DetectorEvent::Reasoning(t) => {
                    self.reasoning.push_str(&t);
                    let _ = events.send(ChatEvent::Reasoning { text: t });
                }
                DetectorEvent::ToolCall(c) => self.calls.push(c),
                DetectorEvent::Malformed { raw, error } => self.malformed.push((raw, error)),
            }
        }
    }
}

fn notify(events: &UnboundedSender<ChatEvent>, notice: Option<String>) {
    if let Some(message) = notice {
        tracing::warn!("{message}");
        let _ = events.send(ChatEvent::Notice { message });
    }
}

fn tool_def(t: &ExposedTool) -> ToolDef {
    ToolDef {
        name: t.name.clone(),
        description: t.tool.description.as_ref().map(|d| d.to_string()),
        input_schema: Value::Object((*t.tool.input_schema).clone()),
        annotations: t
            .tool
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok()),
    }
}

fn error_result(message: &str) -> CallToolResultLike {
    CallToolResultLike {
        content: vec![ContentItem::Text {
            text: message.to_string(),
        }],
        is_error: true,
        structured_content: None,
    }
}

fn not_run(p: &Pending, by: &str, why: &str) -> CallRecord {
    CallRecord {
        id: p.call.id.clone(),
        name: p.call.name.clone(),
        server: p.exposed.server.clone(),
        tool: p.exposed.tool.name.to_string(),
        arguments: p.call.arguments.clone(),
        coercions: p.coercions.clone(),
        approval: Verdict::Deny {
            by: by.into(),
            reason: why.to_string(),
        },
        duration_ms: None,
        outcome: CallOutcome::NotRun,
        result: None,
        fed_back: String::new(),
    }
}

/// The text on one line (whitespace collapsed), cut to a status-line length.
fn summary(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 100 {
        format!("{}…", flat.chars().take(100).collect::<String>())
    } else {
        flat
    }
}
