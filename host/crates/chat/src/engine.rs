//! One user turn: plan the round ([`round`](super::round)), generate ([`generation`](super::generation)),
//! sort the calls ([`triage`](super::triage)), approve, run ([`execute`](super::execute)), feed the
//! results back, and repeat until the triage says stop.
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use rkmcp_llm::{GenerateRequest, Message, SharedBackend, Stats};
use rkmcp_plugin_host::{Detector, SchemaConverter};
use rkmcp_tool_formats::convert::{Grounding, ToolDef};
use rkmcp_tool_formats::{ToolCall, strip_reasoning};

use super::approval::{ApprovalRequest, Approver, Verdict};
use super::budget::{self, Budget, Fitted, Shed, Usage};
use super::convert::ConverterPlugin;
use super::execute::error_result;
use super::generation::{self, Generated, Reading};
use super::named::{self, ToolName};
use super::prompt::{self, ToolPlan};
use super::round::{self, RoundPlan, RoundState};
use super::settings::{ChatSettings, SpanEscape, ValueNumbers, ValueSpans};
use super::transcript::{CallOutcome, CallRecord, Rejection, RoundRecord, Transcript, TurnRecord};
use super::triage::{self, Disposition, Earlier, Proposal, Stop};
use super::validate::{ArgumentValidator, Coercion};
use rkmcp_sessions::manager::{ExposedTool, SessionManager};

mod calls;
mod early;
mod steps;
use crate::events::{ChatEvent, notify};
use calls::{Checked, not_run};
pub use early::EarlyRound;

/// How a turn ended.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnOutcome {
    /// The visible text of the last round.
    pub answer: String,
    pub cancelled: bool,
    pub rounds: u32,
    /// Calls that ran (successfully or not).
    pub tool_calls: usize,
    /// Why the turn ended (`None` only if it failed).
    pub stop: Option<Stop>,
    /// The turn's generations together ([`Stats::total`]): prompt and cached tokens, prefill
    /// speed over the tokens processed, generation speed.
    pub stats: Stats,
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
    /// `after_result` resolved against the model file's size: tools that answered are left
    /// out of the grammar of the turn's later rounds.
    exclude_answered: bool,
    /// `copy_bias` resolved against the model file's size.
    copy_bias: f32,
    /// The tools to list instead of the sessions' until the servers are up: the list remembered
    /// from the last run, for an early first round ([`EarlyRound`]).
    tools_override: Option<Vec<ExposedTool>>,
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
        let exclude_answered = settings.after_result.excludes_answered(model_bytes);
        let copy_bias = settings.copy_bias.resolve(model_bytes);
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
            exclude_answered,
            copy_bias,
            tools_override: None,
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

    /// Hot reload, between turns: a new version of the detector plugin reads the next answer.
    pub fn replace_detector_plugin(&mut self, detector: Detector) {
        self.transcript.detector = Some(detector.name().to_string());
        self.detector_plugin = Some(detector);
    }

    /// Hot reload, between turns: a new version of the converter plugin describes the tools
    /// from the next round on (its conversion is made afresh, not reused from the old one).
    pub fn replace_converter_plugin(&mut self, converter: SchemaConverter) {
        self.transcript.converter = Some(converter.name().to_string());
        self.converter = Some(ConverterPlugin::new(converter));
    }

    /// Hot reload, between turns: a new version of an approval guard reviews the next call;
    /// false when no guard of that name is configured.
    pub fn replace_guard(&mut self, guard: rkmcp_plugin_host::ApprovalGuard) -> bool {
        self.approver.replace_guard(guard)
    }

    /// Re-reads the tools of every live server (they change on `list_changed`).
    pub fn refresh_tools(&mut self) {
        let exposed = match &self.tools_override {
            Some(tools) => tools.clone(),
            None => self.sessions.tools().0,
        };
        self.plan.tools = exposed.iter().map(tool_def).collect();
        self.exposed = exposed;
    }

    /// Lists `tools` instead of the sessions' until [`attach_sessions`](Self::attach_sessions):
    /// the list remembered from the last run, while the servers start.
    pub fn list_remembered(&mut self, tools: Vec<ExposedTool>) {
        self.tools_override = Some(tools);
        self.refresh_tools();
    }

    /// The servers are up: their sessions replace the ones the engine was made with (none, for
    /// an early start), and their tools the remembered list from the next turn on (the turn an
    /// early round began keeps the tools it was planned with: they are the same, or the round
    /// is discarded and the turn begins again).
    pub fn attach_sessions(&mut self, sessions: Arc<SessionManager>) {
        self.sessions = sessions;
        self.tools_override = None;
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
        let mut record = self.begin_turn(input, events).await;
        let result = self.run_rounds(events, &cancel, &mut record, None).await;
        self.end_turn(record, started);
        result
    }

    /// The turn's start, before any round: the user's message in the history, the tools it
    /// names, the shortlist, the converter's tool section.
    async fn begin_turn(&mut self, input: &str, events: &UnboundedSender<ChatEvent>) -> TurnRecord {
        self.refresh_tools();
        if !input.is_empty() {
            self.history.push(Message::user(input));
        }
        let mut record = TurnRecord {
            user: input.to_string(),
            ..TurnRecord::default()
        };
        let query = self.last_user_message().unwrap_or_default().to_string();
        if self.settings.named_tools {
            let names: Vec<ToolName<'_>> = self
                .exposed
                .iter()
                .map(|t| ToolName {
                    exposed: &t.name,
                    tool: &t.tool.name,
                })
                .collect();
            record.named_tools = named::named_tools(&query, &names);
        }
        self.plan.tools_match = !record.named_tools.is_empty()
            || super::shortlist::scores(&query, &self.plan.tools)
                .iter()
                .any(|s| *s > 0.0);
        record.tools_match = self.plan.tools_match;
        let max = self.shortlist_max;
        if max > 0 && self.plan.tools.len() > max {
            let ties = self.settings.tool_shortlist.keeps_ties();
            let listed = super::shortlist::shortlist(&query, &self.plan.tools, max, ties);
            self.plan.tools = named::with_named(listed, &self.plan.tools, &record.named_tools);
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
        record
    }

    /// Records a finished turn in the transcript.
    fn end_turn(&mut self, mut record: TurnRecord, started: Instant) {
        record.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.transcript.messages = self.messages();
        self.transcript.turns.push(record);
    }

    /// What this turn's call values are tied to (`value_spans`, `span_escape`,
    /// `value_numbers`), `None` when nothing is.
    fn grounding(&self) -> Option<Grounding> {
        let g = Grounding {
            message: self.last_user_message().unwrap_or_default().to_string(),
            results: Vec::new(),
            spans: self.settings.value_spans != ValueSpans::Off,
            escape: self.settings.span_escape == SpanEscape::Examples,
            numbers: self.settings.value_numbers == ValueNumbers::Message,
        };
        g.active().then_some(g)
    }

    /// The state the turn's first round is planned from.
    fn first_round_state(&self, record: &TurnRecord) -> RoundState {
        RoundState {
            string_bound: (self.copy_bias != 0.0)
                .then(|| round::string_bound_for(self.last_user_message().unwrap_or_default())),
            named: record.named_tools.iter().map(|n| n.tool.clone()).collect(),
            grounding: self.grounding(),
            fill_from: self
                .settings
                .fill_named_optional
                .then(|| self.last_user_message().unwrap_or_default().to_string()),
            ..RoundState::default()
        }
    }

    /// The rounds of a turn: plan → generate → triage → approve and run → feed back, until the
    /// triage (or a cancellation) says stop. `first`: the first round's generation, already made
    /// (an early round whose tools the servers confirmed; its events were already sent).
    async fn run_rounds(
        &mut self,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
        record: &mut TurnRecord,
        mut first: Option<RoundGeneration>,
    ) -> anyhow::Result<TurnOutcome> {
        let caps = self.backend.info().capabilities;
        let max_rounds = self.settings.max_rounds.max(1);
        let mut outcome = TurnOutcome::default();
        let mut fix_attempts = 0u32;
        // Calls that ran this turn (id, name, arguments), to catch a model repeating itself.
        let mut ran: Vec<(String, String, Value)> = Vec::new();
        let mut state = self.first_round_state(record);
        let mut generations: Vec<Stats> = Vec::new();
        let stop = loop {
            state.round += 1;
            let round = state.round;
            outcome.rounds = round;
            let plan = round::plan_round(&self.settings, &self.plan, caps, &state);
            let generated = match first.take() {
                Some(generated) => generated,
                None => {
                    let _ = events.send(ChatEvent::Round { round });
                    self.generate_round(&plan, round, events, cancel).await?
                }
            };
            generations.extend(generated.stats.iter().cloned());
            let RoundGeneration {
                generated:
                    Generated {
                        raw,
                        finished,
                        detected,
                    },
                decision,
                grammar_name,
                ..
            } = generated;
            let mut round_record = RoundRecord {
                round,
                decision,
                raw: raw.clone(),
                text: detected.text.clone(),
                reasoning: detected.reasoning.clone(),
                finish: finished.as_ref().map(|g| g.0),
                stats: finished.as_ref().map(|g| g.1.clone()),
                grammar: grammar_name,
                greedy: plan.temperature == Some(0.0),
                excluded: plan.excluded.clone(),
                calls: Vec::new(),
                rejected: Vec::new(),
            };
            // The model's own words, markers included, so it sees its calls next round; its
            // reasoning is left out, as chat templates drop it from earlier turns.
            let said = strip_reasoning(self.plan.format, detected.reasoning_open, &raw);
            let spoke = !said.trim().is_empty();
            if spoke {
                self.history.push(Message::assistant(said));
            }
            outcome.answer = detected.text.trim().to_string();
            if cancel.is_cancelled() {
                record.rounds.push(round_record);
                break Stop::Cancelled;
            }

            let checked = self.check_calls(detected.calls);
            let proposals: Vec<Proposal<'_>> = checked
                .iter()
                .map(|c| Proposal {
                    name: &c.call.name,
                    arguments: &c.call.arguments,
                    valid: c.found.is_ok(),
                })
                .collect();
            let earlier: Vec<Earlier<'_>> = ran
                .iter()
                .map(|(id, name, arguments)| Earlier {
                    id,
                    name,
                    arguments,
                })
                .collect();
            let t = triage::triage(
                &proposals,
                detected.malformed.len(),
                &earlier,
                round,
                max_rounds,
            );
            drop(proposals);
            drop(earlier);
            if t.stop == Some(Stop::Answered) {
                record.rounds.push(round_record);
                break Stop::Answered;
            }
            fix_attempts += u32::from(t.fix_attempt);
            state.answer_only |= t.answer_only_next;

            // Unreadable attempts, unknown tools and invalid arguments go back to the model.
            let mut feedback: Vec<Message> = Vec::new();
            for (raw_call, error) in detected.malformed {
                let message = format!(
                    "Your tool call could not be read: {error}. Write it exactly like this example: {}",
                    self.example()
                );
                let rejection = Rejection {
                    id: None,
                    name: None,
                    raw: Some(raw_call),
                    error: message,
                };
                round_record.rejected.push(rejection.clone());
                feedback.push(self.reject(events, rejection).await);
            }
            // Calls in the model's order; fresh ones are filled in after they ran.
            let mut slots: Vec<Option<CallRecord>> = Vec::with_capacity(checked.len());
            let mut repeats: Vec<(ToolCall, String)> = Vec::new();
            let mut fresh: Vec<(usize, Pending)> = Vec::new();
            let ids: Vec<String> = checked.iter().map(|c| c.call.id.clone()).collect();
            for (i, (c, disposition)) in checked.into_iter().zip(&t.calls).enumerate() {
                let Checked { call, found } = c;
                let (exposed, coercions) = match found {
                    Ok(found) => found,
                    Err(error) => {
                        let rejection = Rejection {
                            id: Some(call.id.clone()),
                            name: Some(call.name.clone()),
                            raw: None,
                            error,
                        };
                        round_record.rejected.push(rejection.clone());
                        feedback.push(self.reject(events, rejection).await);
                        slots.push(None);
                        continue;
                    }
                };
                let pending = Pending {
                    call,
                    exposed,
                    coercions,
                };
                let not_run =
                    |outcome: CallOutcome, note: String| Some(not_run(&pending, outcome, note));
                let slot = match disposition {
                    Disposition::Fresh => {
                        fresh.push((i, pending));
                        None
                    }
                    Disposition::Rejected => None,
                    Disposition::Duplicate { of } => {
                        let _ = events.send(ChatEvent::Notice {
                            message: format!(
                                "'{}' was asked for twice with the same arguments; it runs once",
                                pending.call.name
                            ),
                        });
                        not_run(
                            CallOutcome::Duplicate,
                            format!(
                                "the same call as {} in this answer, which runs once",
                                ids[*of]
                            ),
                        )
                    }
                    Disposition::Repeat { of } => {
                        let _ = events.send(ChatEvent::Notice {
                            message: format!("'{}' was asked for again with the same arguments; the model answers with the result it has", pending.call.name),
                        });
                        repeats.push((
                            pending.call.clone(),
                            format!(
                                "You already called {} with these arguments ({of}); its result is above. Answer the user's question with it now.",
                                pending.call.name
                            ),
                        ));
                        not_run(
                            CallOutcome::Repeat,
                            format!("a repeat of {of}, whose result the model already has"),
                        )
                    }
                    Disposition::OverLimit => {
                        not_run(CallOutcome::NotRun, "the round limit was reached".into())
                    }
                };
                slots.push(slot);
            }
            if let Some(stop) = t.stop {
                round_record.calls = slots.into_iter().flatten().collect();
                record.rounds.push(round_record);
                break stop;
            }
            if t.take_back {
                // Nothing new was asked: the round is taken back (it stays in the transcript)
                // and the next one answers from the results already in the conversation.
                if spoke {
                    self.history.pop();
                }
            } else {
                for (call, message) in repeats {
                    let text = self.feed_back(&call, &error_result(&message), events).await;
                    feedback.push(Message::tool(text));
                }
            }

            let (positions, pending): (Vec<usize>, Vec<Pending>) = fresh.into_iter().unzip();
            let verdicts = self.approve(&pending, events, cancel).await;
            let results = self.execute(pending, verdicts, events, cancel).await;
            let mut any_ran = false;
            for (i, (call_record, message)) in positions.into_iter().zip(results) {
                if call_record.duration_ms.is_some() {
                    any_ran = true;
                    outcome.tool_calls += 1;
                    ran.push((
                        call_record.id.clone(),
                        call_record.name.clone(),
                        call_record.arguments.clone(),
                    ));
                    if call_record.outcome == CallOutcome::Ok
                        && self.exclude_answered
                        && !state.excluded.contains(&call_record.name)
                    {
                        state.excluded.push(call_record.name.clone());
                    }
                }
                // `value_spans = "message+results"`: later rounds may copy from what answered.
                if call_record.outcome == CallOutcome::Ok
                    && let Some(g) = state.grounding.as_mut()
                    && self.settings.value_spans == ValueSpans::MessageResults
                {
                    g.results.push(message.content.clone());
                }
                slots[i] = Some(call_record);
                feedback.push(message);
            }
            round_record.calls = slots.into_iter().flatten().collect();
            // Results in the order the model asked, after any rejections.
            self.history.extend(feedback);
            record.rounds.push(round_record);

            if cancel.is_cancelled() {
                break Stop::Cancelled;
            }
            if let Some(stop) =
                triage::after_calls(fix_attempts, self.settings.max_fix_attempts, any_ran)
            {
                break stop;
            }
        };
        if let Some(message) = stop.notice(max_rounds, self.settings.max_fix_attempts) {
            let _ = events.send(ChatEvent::Notice {
                message: message.clone(),
            });
            if stop != Stop::Cancelled {
                record.stopped = Some(message);
            }
        }
        if stop == Stop::Cancelled {
            outcome.cancelled = true;
            record.cancelled = true;
        }
        outcome.stop = Some(stop);
        outcome.stats = Stats::total(&generations);
        record.stats = (!generations.is_empty()).then(|| outcome.stats.clone());
        record.answer = outcome.answer.clone();
        Ok(outcome)
    }

    /// The budget of the model's context window.
    pub fn budget(&self) -> Budget {
        Budget {
            window: self.backend.info().context_length,
            reserve: self.settings.answer_reserve,
        }
    }

    /// Sheds the oldest tool results, then the oldest turns, until the prompt fits the context
    /// window with room for the answer; tells the user what went. Counting needs the backend's
    /// tokenizer; when it fails the prompt goes as it is (the backend refuses an oversized one).
    async fn fit_context(&mut self, events: &UnboundedSender<ChatEvent>) {
        let budget = self.budget();
        let mut count = match self.backend.count_tokens(self.messages()).await {
            Ok(n) => n,
            Err(err) => {
                tracing::debug!("counting the prompt's tokens: {err}");
                return;
            }
        };
        let mut fitted = Fitted {
            before: count,
            after: count,
            ..Fitted::default()
        };
        while count > budget.limit() {
            match budget::shed_one(&mut self.history) {
                Some(Shed::Result) => fitted.shortened_results += 1,
                Some(Shed::Turn) => fitted.dropped_turns += 1,
                None => break,
            }
            count = match self.backend.count_tokens(self.messages()).await {
                Ok(n) => n,
                Err(_) => break,
            };
        }
        fitted.after = count;
        notify(events, fitted.notice(budget));
    }

    /// Where the prompt's tokens go now (`/context`).
    pub async fn context_usage(&self) -> anyhow::Result<Usage> {
        let count = |m: Vec<Message>| self.backend.count_tokens(m);
        let system = Message::system(self.system_prompt());
        let base = prompt::system_prompt(
            &ChatSettings {
                tool_choice: super::settings::ToolChoice::None,
                ..self.settings.clone()
            },
            &self.plan,
            false,
            false,
        );
        let with_tools = count(vec![system.clone()]).await?;
        let without = count(vec![Message::system(base)]).await?;
        let total = count(self.messages()).await?;
        let no_results: Vec<Message> = self
            .messages()
            .into_iter()
            .filter(|m| m.role != rkmcp_llm::Role::Tool)
            .collect();
        let without_results = count(no_results).await?;
        let budget = self.budget();
        Ok(Usage {
            window: budget.window,
            reserve: budget.reserve,
            system: with_tools,
            tools: with_tools.saturating_sub(without),
            history: total.saturating_sub(with_tools),
            results: total.saturating_sub(without_results),
            total,
        })
    }

    /// One round's generation as `plan` says. When the model chose `answer_directly` (and
    /// nothing else), it then writes its answer in a second, answer-only generation; the choice
    /// is kept in the record, not in the conversation.
    async fn generate_round(
        &mut self,
        plan: &RoundPlan,
        round: u32,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<RoundGeneration> {
        self.fit_context(events).await;
        let mut request = self.request(plan.grammar.clone());
        request.guide = plan.guide.clone();
        request.temperature = plan.temperature;
        // Rounds that may call lean towards the words of the user's message (`copy_bias`).
        if self.copy_bias != 0.0 && plan.grammar_name != "answer-only" {
            request.prefer = self
                .last_user_message()
                .map(|m| vec![m.to_string()])
                .unwrap_or_default();
            request.prefer_bias = self.copy_bias;
        }
        let in_steps = match &plan.steps {
            Some(steps) => {
                self.generate_in_steps(steps, &request, events, cancel)
                    .await?
            }
            None => None,
        };
        let wrote_in_steps = in_steps.is_some();
        let mut generated = match in_steps {
            Some(generated) => generated,
            None => self.generate(request, events, cancel).await?,
        };
        let mut stats: Vec<Stats> = generated.finished.iter().map(|f| f.1.clone()).collect();
        let calls = &mut generated.detected.calls;
        let chose_answer = calls.iter().any(|c| c.name == prompt::ANSWER_DIRECTLY);
        calls.retain(|c| c.name != prompt::ANSWER_DIRECTLY);
        let mut decision = None;
        let mut grammar_name = if wrote_in_steps {
            format!("{}, in steps", plan.grammar_name)
        } else {
            plan.grammar_name.clone()
        };
        if chose_answer
            && generated.detected.calls.is_empty()
            && generated.detected.malformed.is_empty()
            && !cancel.is_cancelled()
        {
            decision = Some(std::mem::take(&mut generated.raw));
            let caps = self.backend.info().capabilities;
            let then = round::plan_answer_after_decision(&self.settings, &self.plan, caps, round);
            grammar_name = format!("{grammar_name}, then {}", then.grammar_name);
            let mut request = self.request(then.grammar);
            request.guide = then.guide;
            request.temperature = then.temperature;
            generated = self.generate(request, events, cancel).await?;
            stats.extend(generated.finished.iter().map(|f| f.1.clone()));
        }
        Ok(RoundGeneration {
            generated,
            decision,
            grammar_name,
            stats,
        })
    }

    /// What the user said last: what the shortlist matches and the words grounding
    /// (`copy_bias`) prefers.
    fn last_user_message(&self) -> Option<&str> {
        self.history
            .iter()
            .rev()
            .find(|m| m.role == rkmcp_llm::Role::User)
            .map(|m| m.content.as_str())
    }

    /// Streams one generation through the detector of this chat's format.
    async fn generate(
        &mut self,
        request: GenerateRequest,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Generated> {
        let dialect = self
            .settings
            .detector_format
            .clone()
            .unwrap_or_else(|| self.plan.format.name().to_string());
        // Said once: why the format is only a guess.
        notify(events, self.plan.format_notice.take());
        let reading = Reading {
            format: self.plan.format,
            inferred: self.plan.inferred.as_deref(),
            tools: &self.plan.tools,
            detector: self
                .plan
                .offers_tools(&self.settings)
                .then_some((dialect.as_str(), self.detector_plugin.as_ref())),
        };
        generation::stream(&self.backend, request, reading, events, cancel).await
    }

    /// Approves each call in order (a person may be asked). The verdicts are in `pending`'s
    /// order; a cancelled turn denies what is left.
    async fn approve(
        &mut self,
        pending: &[Pending],
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> Vec<Verdict> {
        let mut verdicts = Vec::with_capacity(pending.len());
        for p in pending {
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
        verdicts
    }
}

/// A round's generation(s).
struct RoundGeneration {
    generated: Generated,
    /// The `answer_directly` choice, when the model answered after it.
    decision: Option<String>,
    grammar_name: String,
    /// One per generation (two after `answer_directly`).
    stats: Vec<Stats>,
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
