//! The first round of `ask`, generated from the tool list remembered from the last run while
//! the servers are still starting ([`crate::remembered`]).
//!
//! The round is generated with its events held back. Once the servers are up, their list
//! decides: the same list and the round stands (its events are sent as if it had just run, and
//! the turn goes on from its calls); any difference and it is discarded — the user's message
//! leaves the history, only its notices are passed on, and the turn starts again from the live
//! list. The model's KV cache keeps whatever prefix the two prompts share either way.
use std::time::Instant;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::{ChatEngine, RoundGeneration, TurnOutcome};
use crate::events::ChatEvent;
use crate::remembered::ToolListSource;
use crate::round;
use crate::transcript::TurnRecord;

/// A first round generated before the servers were up.
pub struct EarlyRound {
    input: String,
    started: Instant,
    /// The history's length before the user's message went in (for a discard).
    history_len: usize,
    record: TurnRecord,
    generation: RoundGeneration,
    /// What the round would have shown, in order.
    events: Vec<ChatEvent>,
    /// `None` until the servers' list was compared with the remembered one.
    verdict: Option<ToolListSource>,
}

impl EarlyRound {
    /// The servers' list confirmed the remembered one.
    pub fn stands(&mut self) {
        self.verdict = Some(ToolListSource::Remembered);
    }

    /// The servers' list differs (`why`): the round will be discarded.
    pub fn discard(&mut self, why: String) {
        self.verdict = Some(ToolListSource::Discarded { why });
    }

    /// How long it took (stats and `-v`).
    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }
}

impl ChatEngine {
    /// Generates the first round of a turn for `input` from the tools the engine lists now (the
    /// remembered ones), holding its events back. Call [`turn_from`](Self::turn_from) with it
    /// once the servers are attached.
    pub async fn early_round(
        &mut self,
        input: &str,
        cancel: &CancellationToken,
    ) -> anyhow::Result<EarlyRound> {
        let started = Instant::now();
        let history_len = self.history.len();
        let (tx, mut rx) = unbounded_channel();
        let record = self.begin_turn(input, &tx).await;
        let caps = self.backend.info().capabilities;
        let mut state = self.first_round_state(&record);
        state.round = 1;
        let plan = round::plan_round(&self.settings, &self.plan, caps, &state);
        let _ = tx.send(ChatEvent::Round { round: 1 });
        let generation = self.generate_round(&plan, 1, &tx, cancel).await;
        drop(tx);
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        let generation = match generation {
            Ok(g) => g,
            Err(err) => {
                // Nothing of the round stays: the turn will run as if it had not been tried.
                self.history.truncate(history_len);
                return Err(err);
            }
        };
        Ok(EarlyRound {
            input: input.to_string(),
            started,
            history_len,
            record,
            generation,
            events,
            verdict: None,
        })
    }

    /// Runs the turn of `early`'s message: from its round when the servers confirmed its tools,
    /// else afresh from theirs. The engine must have the live sessions by now.
    pub async fn turn_from(
        &mut self,
        early: EarlyRound,
        events: &UnboundedSender<ChatEvent>,
        cancel: CancellationToken,
    ) -> anyhow::Result<TurnOutcome> {
        let EarlyRound {
            input,
            started,
            history_len,
            mut record,
            generation,
            events: held,
            verdict,
        } = early;
        match verdict {
            Some(ToolListSource::Remembered) => {
                for event in held {
                    let _ = events.send(event);
                }
                record.tool_list = ToolListSource::Remembered;
                let result = self
                    .run_rounds(events, &cancel, &mut record, Some(generation))
                    .await;
                self.end_turn(record, started);
                result
            }
            other => {
                // Said once and about the chat, not the round (a format guess, a converter
                // that failed): still true, so still said.
                for event in held {
                    if matches!(event, ChatEvent::Notice { .. }) {
                        let _ = events.send(event);
                    }
                }
                self.history.truncate(history_len);
                let why = match other {
                    Some(ToolListSource::Discarded { why }) => why,
                    _ => "the servers' list was not compared with it".to_string(),
                };
                tracing::debug!("the early first round is discarded: {why}");
                let mut record = self.begin_turn(&input, events).await;
                record.tool_list = ToolListSource::Discarded { why };
                let result = self.run_rounds(events, &cancel, &mut record, None).await;
                self.end_turn(record, started);
                result
            }
        }
    }
}
