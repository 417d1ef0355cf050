//! How a chat turn looks in a terminal: the answer on stdout, status lines like
//! `[MCP: Calling tool 'get_current_time' on time]` on stderr, so `rkmcp ask … > answer.txt`
//! keeps only the answer.
use std::io::{IsTerminal, Write};

use rkmcp_llm::Stats;

use crate::chat::ChatEngine;
use crate::chat::ChatEvent;
use crate::chat::approval::Verdict;
use crate::chat::remembered::ToolListSource;
use crate::chat::transcript::Transcript;
use crate::mcp::StartFailure;

/// Dim text on a colour terminal (`NO_COLOR` respected).
pub fn dim(text: &str) -> String {
    if colour() {
        format!("\x1b[2m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

/// One line about what was started: model, servers, tools, call format.
pub fn print_start(engine: &ChatEngine, failures: &[StartFailure]) {
    let t = engine.transcript();
    let plan = engine.plan();
    let servers = engine.sessions().sessions().len();
    // The servers' own count: an early first round has already shortlisted the plan's tools.
    let tools = engine.sessions().tools().0.len();
    eprintln!(
        "{}",
        dim(&format!(
            "rkmcp: {} · {} · template {} · {} server{} · {} tool{} · calls as {}",
            t.backend,
            t.model,
            t.chat_template,
            servers,
            if servers == 1 { "" } else { "s" },
            tools,
            if tools == 1 { "" } else { "s" },
            plan.format
        ))
    );
    let plugins = plugins_in_use(t);
    if !plugins.is_empty() {
        eprintln!(
            "{}",
            dim(&format!("rkmcp: plugins: {}", plugins.join(", ")))
        );
    }
    for f in failures {
        super::output::warn(&f.error);
    }
}

/// The plugins taking part in this chat, each with its role, for the status lines: a plugin host
/// at work should be visible, not only configured.
fn plugins_in_use(t: &Transcript) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = &t.detector {
        out.push(format!("{d} (detector: reads the answers)"));
    }
    if let Some(c) = &t.converter {
        out.push(format!("{c} (converter: describes the tools)"));
    }
    for g in &t.guards {
        out.push(format!("{g} (approval guard: reviews every call)"));
    }
    out
}

/// Renders [`ChatEvent`]s as they arrive.
pub struct Printer {
    /// Whether stdout is at the start of a line (status lines must not land mid-sentence).
    at_line_start: bool,
    /// Whitespace held back until text follows it: the blank lines a model writes around its
    /// calls must not scroll the screen.
    held: String,
    /// Nothing has been printed since the last round or status line: leading whitespace is dropped.
    block_start: bool,
    /// Every generation of the turn (a turn of several rounds reports them together).
    generations: Vec<Stats>,
    calls: usize,
    /// The approval-guard plugins that review every call: an allowed call names them.
    guards: Vec<String>,
    /// `--show-reasoning`: print reasoning dimmed; else one status line per round.
    show_reasoning: bool,
    /// Reasoning was already announced or printed in this round.
    reasoning_seen: bool,
    /// Printed reasoning ended mid-line (stderr).
    reasoning_line_open: bool,
    /// Notices already shown: a plugin that fails every round says so once.
    notices_shown: std::collections::HashSet<String>,
}

impl Default for Printer {
    fn default() -> Self {
        Self::new()
    }
}

impl Printer {
    pub fn new() -> Printer {
        Printer {
            at_line_start: true,
            held: String::new(),
            block_start: true,
            generations: Vec::new(),
            calls: 0,
            guards: Vec::new(),
            show_reasoning: false,
            reasoning_seen: false,
            reasoning_line_open: false,
            notices_shown: std::collections::HashSet::new(),
        }
    }

    /// A printer for this engine's chat: calls it allows say which guard plugins reviewed them,
    /// and reasoning is shown as `show_reasoning` says.
    pub fn for_engine(engine: &ChatEngine) -> Printer {
        Printer {
            guards: engine.transcript().guards.clone(),
            show_reasoning: engine.settings().show_reasoning,
            ..Printer::new()
        }
    }

    fn status(&mut self, line: String) {
        self.held.clear();
        self.block_start = true;
        if !self.at_line_start {
            println!();
            self.at_line_start = true;
        }
        let _ = std::io::stdout().flush();
        eprintln!("{line}");
    }

    pub fn show(&mut self, event: &ChatEvent) {
        match event {
            ChatEvent::Text { text } => {
                let body = text.trim_end();
                let trailing = &text[body.len()..];
                let body = if self.block_start {
                    body.trim_start()
                } else {
                    body
                };
                if body.is_empty() {
                    if !self.block_start {
                        self.held.push_str(trailing);
                    }
                    return;
                }
                if self.reasoning_line_open {
                    self.reasoning_line_open = false;
                    eprintln!();
                }
                let mut out = std::io::stdout();
                let _ = out.write_all(self.held.as_bytes());
                let _ = out.write_all(body.as_bytes());
                let _ = out.flush();
                self.held.clear();
                self.held.push_str(trailing);
                self.block_start = false;
                self.at_line_start = body.ends_with('\n');
            }
            ChatEvent::Reasoning { text } => {
                if !self.show_reasoning {
                    if !self.reasoning_seen {
                        self.reasoning_seen = true;
                        self.status(dim("[reasoning… --show-reasoning shows it]"));
                    }
                    return;
                }
                // The model's text: no control sequences reach the terminal.
                let text: String = text
                    .chars()
                    .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
                    .collect();
                let text = if self.reasoning_seen {
                    text
                } else {
                    text.trim_start().to_string()
                };
                if text.is_empty() {
                    return;
                }
                self.reasoning_seen = true;
                // On stderr with the status lines: `rkmcp ask … > answer.txt` keeps the answer.
                eprint!("{}", dim(&text));
                self.reasoning_line_open = !text.ends_with('\n');
                // The answer starts on a fresh block after the reasoning.
                self.block_start = true;
            }
            ChatEvent::ToolCall {
                name: _,
                server,
                tool,
                arguments,
                ..
            } => {
                self.calls += 1;
                let args = arguments.to_string();
                let args = if args.chars().count() > 120 {
                    format!("{}…", args.chars().take(120).collect::<String>())
                } else {
                    args
                };
                self.status(format!("[MCP: Calling tool '{tool}' on {server} {args}]"));
            }
            ChatEvent::Approval { verdict, .. } => match verdict {
                Verdict::Allow { by } => {
                    if !self.guards.is_empty() {
                        self.status(format!(
                            "[MCP: call reviewed by guard {} and allowed by {by}]",
                            self.guards.join(", ")
                        ))
                    }
                }
                Verdict::Deny { by, reason } => {
                    self.status(format!("[MCP: call denied by {by}: {reason}]"))
                }
            },
            ChatEvent::ToolResult {
                name,
                is_error,
                duration_ms,
                summary,
                ..
            } => {
                let what = if *is_error { "failed" } else { "done" };
                self.status(format!(
                    "[MCP: '{name}' {what} in {duration_ms:.0} ms: {summary}]"
                ));
            }
            ChatEvent::Rejected { name, error, .. } => {
                let name = name.as_deref().unwrap_or("a call");
                let error: String = error.chars().take(200).collect();
                self.status(format!(
                    "[MCP: {name} was not run, the model is asked to fix it: {error}]"
                ));
            }
            ChatEvent::Generated { stats, .. } => self.generations.push(stats.clone()),
            ChatEvent::Notice { message } => {
                if self.notices_shown.insert(message.clone()) {
                    self.status(format!("rkmcp: {message}"))
                }
            }
            ChatEvent::Round { .. } => {
                self.reasoning_seen = false;
                self.held.clear();
                self.block_start = true;
            }
        }
    }

    /// Ends the answer's line and prints the turn's figures (all its generations), dimmed.
    pub fn finish(self) {
        self.finish_with(&ToolListSource::Live);
    }

    /// Ends the output: the stats line, saying where the tools came from when they were not
    /// simply the servers' (`ask`'s early round).
    pub fn finish_with(mut self, tools: &ToolListSource) {
        if !self.at_line_start {
            println!();
            self.at_line_start = true;
        }
        if !self.generations.is_empty() {
            let s = Stats::total(&self.generations);
            let mut line = stats_line(&s, self.generations.len(), self.calls);
            match tools {
                ToolListSource::Live => {}
                ToolListSource::Remembered => {
                    line.push_str(" · first round from the remembered tool list")
                }
                ToolListSource::Discarded { why } => {
                    line.push_str(&format!(" · remembered tool list discarded ({why})"))
                }
            }
            eprintln!("{}", dim(&line));
        }
    }
}

/// The figures of a turn: prompt tokens (how many came from the KV cache), prefill speed over
/// the tokens actually processed, generation speed.
pub fn stats_line(s: &Stats, generations: usize, calls: usize) -> String {
    let rounds = if generations > 1 {
        format!(" over {generations} generations")
    } else {
        String::new()
    };
    format!(
        "rkmcp: prompt {} tok{rounds} ({} cached, {} processed at {:.0} tok/s) · {} tok at {:.1} tok/s · first token {:.0} ms · {} tool call{} · peak RSS {:.0} MiB",
        s.prompt_tokens,
        s.cached_tokens,
        s.processed_tokens(),
        s.prefill_tokens_per_s,
        s.generated_tokens,
        s.tokens_per_s,
        s.time_to_first_token_ms,
        calls,
        if calls == 1 { "" } else { "s" },
        s.peak_rss_mib
    )
}
