//! The context budget: the prompt (system prompt with the tool section, earlier turns, tool
//! results) must leave room for the answer in the model's context window. When it does not, the
//! oldest tool results are shortened first, then the oldest turns are dropped — never the turn
//! being answered — and the user is told what went.
use rkmcp_llm::{Message, Role};

/// What a shortened tool result keeps of its text.
pub const SHORTENED_CHARS: usize = 160;
/// Marks a shortened tool result (and keeps it from being shortened twice).
pub const SHORTENED_MARK: &str = "… [shortened: the context window was full]";

/// The window and what must stay free in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's context window, in tokens.
    pub window: u32,
    /// Tokens kept free for the answer.
    pub reserve: u32,
}

impl Budget {
    /// The most the prompt may take.
    pub fn limit(&self) -> usize {
        self.window.saturating_sub(self.reserve) as usize
    }
}

/// What [`fit`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fitted {
    /// Prompt tokens before and after.
    pub before: usize,
    pub after: usize,
    pub shortened_results: usize,
    pub dropped_turns: usize,
}

impl Fitted {
    /// The notice for the user, `None` when nothing had to go.
    pub fn notice(&self, budget: Budget) -> Option<String> {
        if self.shortened_results == 0 && self.dropped_turns == 0 {
            return None;
        }
        let mut what = Vec::new();
        if self.shortened_results > 0 {
            what.push(format!(
                "shortened the {} oldest tool result{}",
                self.shortened_results,
                plural(self.shortened_results)
            ));
        }
        if self.dropped_turns > 0 {
            what.push(format!(
                "dropped the {} oldest turn{}",
                self.dropped_turns,
                plural(self.dropped_turns)
            ));
        }
        let still = if self.after > budget.limit() {
            " — still too long: the answer may be cut short"
        } else {
            ""
        };
        Some(format!(
            "the conversation outgrew the context window ({} tokens, {} kept for the answer): {} ({} → {} prompt tokens){still}",
            budget.window,
            budget.reserve,
            what.join(", "),
            self.before,
            self.after
        ))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// One thing [`shed_one`] took out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// The oldest tool result of an earlier turn was shortened.
    Result,
    /// The oldest turn was dropped.
    Turn,
}

/// Makes `history` (the conversation without the system prompt) one step shorter: shortens the
/// oldest tool result of an earlier turn, else drops the oldest turn. The last user message and
/// everything after it (the turn being answered) are kept whole: `None` when only they are left.
pub fn shed_one(history: &mut Vec<Message>) -> Option<Shed> {
    let current = history
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    let oldest_result = history[..current].iter().position(|m| {
        m.role == Role::Tool
            && !m.content.ends_with(SHORTENED_MARK)
            && m.content.chars().count() > SHORTENED_CHARS
    });
    if let Some(i) = oldest_result {
        let kept: String = history[i].content.chars().take(SHORTENED_CHARS).collect();
        history[i].content = format!("{kept}{SHORTENED_MARK}");
        return Some(Shed::Result);
    }
    if current == 0 {
        return None;
    }
    // The oldest turn: from the start to the next user message.
    let end = history[1..]
        .iter()
        .position(|m| m.role == Role::User)
        .map_or(current, |p| p + 1)
        .min(current);
    history.drain(..end.max(1));
    Some(Shed::Turn)
}

/// Sheds from `history` until `count(history)` (the whole prompt's tokens) fits `budget`.
pub fn fit(
    history: &mut Vec<Message>,
    budget: Budget,
    mut count: impl FnMut(&[Message]) -> usize,
) -> Fitted {
    let before = count(history);
    let mut fitted = Fitted {
        before,
        after: before,
        ..Fitted::default()
    };
    while fitted.after > budget.limit() {
        match shed_one(history) {
            Some(Shed::Result) => fitted.shortened_results += 1,
            Some(Shed::Turn) => fitted.dropped_turns += 1,
            None => break,
        }
        fitted.after = count(history);
    }
    fitted
}

/// Where the prompt's tokens go, for `/context`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub window: u32,
    pub reserve: u32,
    /// The system prompt (the configured prompt and the tool section).
    pub system: usize,
    /// Of which the tool section.
    pub tools: usize,
    pub history: usize,
    /// Of which tool results.
    pub results: usize,
    pub total: usize,
}

impl Usage {
    pub fn render(&self) -> String {
        let free = (self.window as usize).saturating_sub(self.total);
        format!(
            "context window {} tokens: prompt {} (system prompt {}, of which tools {}; conversation {}, of which tool results {}), {} free, {} kept for the answer",
            self.window,
            self.total,
            self.system,
            self.tools,
            self.history,
            self.results,
            free,
            self.reserve
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per 4 characters, and 2 per message for the template.
    fn count(history: &[Message]) -> usize {
        history.iter().map(|m| 2 + m.content.len() / 4).sum()
    }

    fn turn(n: usize, result_chars: usize) -> Vec<Message> {
        vec![
            Message::user(format!("question {n}")),
            Message::assistant(format!("[TOOL_CALL]call {n}[END_TOOL_CALL]")),
            Message::tool("r".repeat(result_chars)),
            Message::assistant(format!("answer {n}")),
        ]
    }

    #[test]
    fn a_conversation_that_fits_is_left_alone() {
        let mut h = turn(1, 100);
        let before = h.clone();
        let f = fit(
            &mut h,
            Budget {
                window: 2048,
                reserve: 256,
            },
            count,
        );
        assert_eq!(h, before);
        assert_eq!(
            f.notice(Budget {
                window: 2048,
                reserve: 256
            }),
            None
        );
    }

    #[test]
    fn the_oldest_tool_results_are_shortened_first() {
        let mut h = [turn(1, 4000), turn(2, 4000), turn(3, 400)].concat();
        h.push(Message::user("now this"));
        let budget = Budget {
            window: 1400,
            reserve: 256,
        };
        let f = fit(&mut h, budget, count);
        assert!(f.after <= budget.limit(), "{f:?}");
        assert_eq!((f.shortened_results, f.dropped_turns), (2, 0), "{f:?}");
        assert!(h[2].content.ends_with(SHORTENED_MARK));
        assert!(h[6].content.ends_with(SHORTENED_MARK));
        // The newest result was not needed.
        assert_eq!(h[10].content.len(), 400);
        assert_eq!(h.last().unwrap().content, "now this");
        let notice = f.notice(budget).unwrap();
        assert!(
            notice.contains("shortened the 2 oldest tool results"),
            "{notice}"
        );
    }

    #[test]
    fn then_the_oldest_turns_go_but_never_the_current_one() {
        let mut h: Vec<Message> = (0..20)
            .flat_map(|n| {
                vec![
                    Message::user(format!("{n} {}", "q".repeat(200))),
                    Message::assistant("a".repeat(200)),
                ]
            })
            .collect();
        h.push(Message::user("the question being answered"));
        h.push(Message::assistant("[TOOL_CALL]…[END_TOOL_CALL]"));
        h.push(Message::tool("x".repeat(300)));
        let budget = Budget {
            window: 800,
            reserve: 200,
        };
        let f = fit(&mut h, budget, count);
        assert!(f.after <= budget.limit(), "{f:?}");
        assert!(f.dropped_turns > 0);
        // Whole turns go: the conversation still starts with a user message.
        assert_eq!(h[0].role, Role::User);
        let n = h.len();
        assert_eq!(h[n - 3].content, "the question being answered");
        // The current turn's result is whole.
        assert_eq!(h[n - 1].content.len(), 300);
        assert!(f.notice(budget).unwrap().contains("oldest turn"));
    }

    #[test]
    fn a_current_turn_too_long_by_itself_is_reported_not_cut() {
        let mut h = vec![Message::user("x".repeat(8000))];
        let budget = Budget {
            window: 512,
            reserve: 128,
        };
        let f = fit(&mut h, budget, count);
        assert_eq!(h[0].content.len(), 8000);
        assert_eq!((f.shortened_results, f.dropped_turns), (0, 0));
        assert!(f.after > budget.limit());
        assert_eq!(f.notice(budget), None);
    }

    #[test]
    fn usage_renders_every_part() {
        let u = Usage {
            window: 2048,
            reserve: 256,
            system: 400,
            tools: 300,
            history: 100,
            results: 40,
            total: 500,
        };
        let text = u.render();
        assert!(
            text.contains("2048") && text.contains("1548 free"),
            "{text}"
        );
    }
}
