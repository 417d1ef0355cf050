//! What becomes of the calls one generation asked for, and whether the turn goes on: pure
//! decisions over the model's proposals, the calls that already ran this turn and the limits.
//!
//! Each call gets one [`Disposition`]; the round gets at most one [`Stop`]. Nothing here talks
//! to the model, a server or a person: the engine executes what this decides.
use serde::Serialize;
use serde_json::Value;

/// One call as the model proposed it, after lookup and schema validation.
#[derive(Debug, Clone, Copy)]
pub struct Proposal<'a> {
    /// The exposed name (after lookup), or the model's name when the lookup failed.
    pub name: &'a str,
    pub arguments: &'a Value,
    /// Found and valid for its schema; an invalid call goes back to the model for a fix.
    pub valid: bool,
}

/// A call that ran earlier in this turn.
#[derive(Debug, Clone, Copy)]
pub struct Earlier<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub arguments: &'a Value,
}

/// What happens to one proposed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Unknown tool or invalid arguments: the error goes back to the model, nothing runs.
    Rejected,
    /// The same call (name and arguments) as an earlier one in this answer (its index): it runs
    /// once.
    Duplicate { of: usize },
    /// The same call as one that already ran this turn (its id): not run again; the model
    /// answers from the result it has.
    Repeat { of: String },
    /// Goes to approval and, if allowed, runs.
    Fresh,
    /// Would have gone to approval, but the round limit was reached.
    OverLimit,
}

/// Why a turn ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The model answered without asking for a call.
    Answered,
    /// The user interrupted the turn (a generation or a tool call).
    Cancelled,
    /// `max_rounds` generations, and the last one still asked for calls.
    RoundLimit,
    /// The model's calls were still invalid after `max_fix_attempts` corrections.
    StillInvalid,
}

impl Stop {
    /// The notice for the user, `None` for an ordinary answer.
    pub fn notice(self, max_rounds: u32, max_fix_attempts: u32) -> Option<String> {
        match self {
            Stop::Answered => None,
            Stop::Cancelled => Some("interrupted".into()),
            Stop::RoundLimit => Some(format!(
                "stopped after {max_rounds} rounds (chat.max_rounds); the model's last calls were not run"
            )),
            Stop::StillInvalid => Some(format!(
                "stopped: the model's calls were still invalid after {max_fix_attempts} attempts (chat.max_fix_attempts)"
            )),
        }
    }
}

/// The decisions for one generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triage {
    /// One per proposal, in the model's order.
    pub calls: Vec<Disposition>,
    /// The turn ends after this round (before anything runs).
    pub stop: Option<Stop>,
    /// Something went back to the model to fix (a rejected or unreadable call).
    pub fix_attempt: bool,
    /// A call was repeated: the next round may only answer.
    pub answer_only_next: bool,
    /// Only repeats were asked for: the round is taken back (it stays in the transcript, not in
    /// the conversation) and the next one answers from the results already there — small models
    /// parrot a notice about the repeat instead of answering.
    pub take_back: bool,
}

impl Triage {
    /// The proposals that go to approval.
    pub fn fresh(&self) -> impl Iterator<Item = usize> + '_ {
        self.calls
            .iter()
            .enumerate()
            .filter(|(_, d)| **d == Disposition::Fresh)
            .map(|(i, _)| i)
    }
}

/// Sorts the calls of round `round` (1-based) of at most `max_rounds`. `malformed` counts the
/// attempts that could not even be read.
pub fn triage(
    proposals: &[Proposal<'_>],
    malformed: usize,
    ran: &[Earlier<'_>],
    round: u32,
    max_rounds: u32,
) -> Triage {
    if proposals.is_empty() && malformed == 0 {
        return Triage {
            calls: Vec::new(),
            stop: Some(Stop::Answered),
            fix_attempt: false,
            answer_only_next: false,
            take_back: false,
        };
    }
    let last_round = round >= max_rounds;
    let same = |a: &Proposal<'_>, name: &str, args: &Value| a.name == name && a.arguments == args;
    let mut calls = Vec::with_capacity(proposals.len());
    for (i, p) in proposals.iter().enumerate() {
        let d = if !p.valid {
            Disposition::Rejected
        } else if let Some(first) = proposals[..i]
            .iter()
            .zip(&calls)
            .position(|(q, d)| *d == Disposition::Fresh && same(p, q.name, q.arguments))
        {
            Disposition::Duplicate { of: first }
        } else if let Some(e) = ran.iter().find(|e| same(p, e.name, e.arguments)) {
            Disposition::Repeat {
                of: e.id.to_string(),
            }
        } else {
            Disposition::Fresh
        };
        calls.push(d);
    }
    let rejected = malformed > 0 || calls.contains(&Disposition::Rejected);
    let repeated = calls
        .iter()
        .any(|d| matches!(d, Disposition::Repeat { .. }));
    let fresh = calls.contains(&Disposition::Fresh);
    if last_round {
        for d in &mut calls {
            if *d == Disposition::Fresh {
                *d = Disposition::OverLimit;
            }
        }
    }
    Triage {
        stop: last_round.then_some(Stop::RoundLimit),
        fix_attempt: rejected,
        answer_only_next: repeated,
        take_back: repeated && !fresh && !rejected,
        calls,
    }
}

/// After the round's calls were executed: whether the turn ends because the model keeps
/// writing invalid calls (`fix_attempts` so far, more than `max_fix_attempts`, and nothing ran
/// this round).
pub fn after_calls(fix_attempts: u32, max_fix_attempts: u32, any_ran: bool) -> Option<Stop> {
    (fix_attempts > max_fix_attempts && !any_ran).then_some(Stop::StillInvalid)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p<'a>(name: &'a str, arguments: &'a Value) -> Proposal<'a> {
        Proposal {
            name,
            arguments,
            valid: true,
        }
    }

    #[test]
    fn no_calls_is_an_answer() {
        let t = triage(&[], 0, &[], 1, 5);
        assert_eq!(t.stop, Some(Stop::Answered));
        assert!(t.calls.is_empty() && !t.fix_attempt && !t.take_back);
    }

    #[test]
    fn an_unreadable_call_is_a_fix_attempt_not_an_answer() {
        let t = triage(&[], 1, &[], 1, 5);
        assert_eq!(t.stop, None);
        assert!(t.fix_attempt);
        assert!(!t.answer_only_next);
    }

    #[test]
    fn new_calls_are_fresh_and_invalid_ones_rejected_in_the_models_order() {
        let a = json!({"message": "hi"});
        let b = json!({"a": "two"});
        let props = [
            p("fx__echo", &a),
            Proposal {
                name: "ev__get-sum",
                arguments: &b,
                valid: false,
            },
        ];
        let t = triage(&props, 0, &[], 1, 5);
        assert_eq!(t.calls, [Disposition::Fresh, Disposition::Rejected]);
        assert_eq!(t.stop, None);
        assert!(t.fix_attempt && !t.take_back && !t.answer_only_next);
        assert_eq!(t.fresh().collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn the_same_call_twice_in_one_answer_runs_once() {
        let a = json!({"message": "once"});
        let other = json!({"message": "other"});
        let props = [p("fx__echo", &a), p("fx__echo", &other), p("fx__echo", &a)];
        let t = triage(&props, 0, &[], 1, 5);
        assert_eq!(
            t.calls,
            [
                Disposition::Fresh,
                Disposition::Fresh,
                Disposition::Duplicate { of: 0 }
            ]
        );
        assert!(!t.take_back && !t.answer_only_next);
    }

    #[test]
    fn an_invalid_call_is_not_the_original_of_a_duplicate() {
        let a = json!({"x": 1});
        let props = [
            Proposal {
                name: "t",
                arguments: &a,
                valid: false,
            },
            p("t", &a),
        ];
        let t = triage(&props, 0, &[], 1, 5);
        assert_eq!(t.calls, [Disposition::Rejected, Disposition::Fresh]);
    }

    #[test]
    fn a_call_that_already_ran_is_a_repeat_and_alone_takes_the_round_back() {
        let a = json!({"timezone": "Asia/Tokyo"});
        let ran = [Earlier {
            id: "call00001",
            name: "time__get_current_time",
            arguments: &a,
        }];
        let same = json!({"timezone": "Asia/Tokyo"});
        let t = triage(&[p("time__get_current_time", &same)], 0, &ran, 2, 5);
        assert_eq!(
            t.calls,
            [Disposition::Repeat {
                of: "call00001".into()
            }]
        );
        assert_eq!(t.stop, None);
        assert!(t.take_back && t.answer_only_next && !t.fix_attempt);
    }

    #[test]
    fn a_repeat_next_to_a_new_call_keeps_the_round() {
        let a = json!({"timezone": "Asia/Tokyo"});
        let b = json!({"timezone": "Europe/Paris"});
        let ran = [Earlier {
            id: "call00001",
            name: "time__get_current_time",
            arguments: &a,
        }];
        let props = [
            p("time__get_current_time", &a),
            p("time__get_current_time", &b),
        ];
        let t = triage(&props, 0, &ran, 2, 5);
        assert_eq!(
            t.calls,
            [
                Disposition::Repeat {
                    of: "call00001".into()
                },
                Disposition::Fresh
            ]
        );
        assert!(!t.take_back && t.answer_only_next);
    }

    #[test]
    fn different_arguments_are_not_a_repeat() {
        let a = json!({"timezone": "Asia/Tokyo"});
        let b = json!({"timezone": "UTC"});
        let ran = [Earlier {
            id: "call00001",
            name: "time__get_current_time",
            arguments: &a,
        }];
        let t = triage(&[p("time__get_current_time", &b)], 0, &ran, 2, 5);
        assert_eq!(t.calls, [Disposition::Fresh]);
        assert!(!t.answer_only_next);
    }

    #[test]
    fn calls_in_the_last_round_are_over_the_limit_and_the_turn_stops() {
        let a = json!({"message": "again"});
        let ran_args = json!({"message": "before"});
        let ran = [Earlier {
            id: "call00004",
            name: "fx__echo",
            arguments: &ran_args,
        }];
        let props = [p("fx__echo", &a), p("fx__echo", &ran_args)];
        let t = triage(&props, 0, &ran, 5, 5);
        assert_eq!(
            t.calls,
            [
                Disposition::OverLimit,
                Disposition::Repeat {
                    of: "call00004".into()
                }
            ]
        );
        assert_eq!(t.stop, Some(Stop::RoundLimit));
        // An answer in the last round is still an answer.
        assert_eq!(triage(&[], 0, &[], 5, 5).stop, Some(Stop::Answered));
    }

    #[test]
    fn invalid_calls_stop_the_turn_only_past_the_fix_budget_and_when_nothing_ran() {
        assert_eq!(after_calls(2, 2, false), None);
        assert_eq!(after_calls(3, 2, false), Some(Stop::StillInvalid));
        assert_eq!(after_calls(3, 2, true), None);
        assert_eq!(after_calls(0, 0, false), None);
    }

    #[test]
    fn stops_explain_themselves_except_an_answer() {
        assert_eq!(Stop::Answered.notice(5, 2), None);
        assert!(Stop::RoundLimit.notice(5, 2).unwrap().contains("5 rounds"));
        assert!(
            Stop::StillInvalid
                .notice(5, 2)
                .unwrap()
                .contains("max_fix_attempts")
        );
        assert_eq!(Stop::Cancelled.notice(5, 2).as_deref(), Some("interrupted"));
    }
}
