//! Generation speed held to a grammar against free generation, in one process on the default
//! model (SmolLM2-135M-Instruct Q4_1, llama.cpp on CPU): the per-token cost of constrained
//! decoding with llama.cpp's GBNF sampler and with llguidance.
//!
//!     cargo bench --bench constrained_speed -- [--threads N] [--reps N] [--max-new-tokens N]
//!
//! Each question is the system prompt with the tool section (the chat's own, `tool-call-json`
//! and Hermes formats) and one user message; every configuration generates from the same prompt,
//! greedily, with a fresh KV cache. The configurations take turns question by question, so load
//! from other processes hits all of them alike. Printed per configuration: generated tokens,
//! generation tok/s (generated tokens over generation time only, prefill excluded), the ratio
//! to free generation (target ≥ 0.9 for llguidance), tokens whose first choice the grammar
//! rejected, and what the output was.
use std::time::Instant;

use rkmcp::chat::prompt::{self, ToolPlan};
use rkmcp::chat::settings::{Auto, ChatSettings, Shortlist};
use rkmcp_llm::{GenerateRequest, Message, ModelConfig, SamplingConfig, SharedBackend, Stats};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{GrammarMode, ToolDef, gbnf_grammar_with, lark_grammar_with};
use serde_json::json;

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "time__get_current_time".into(),
            description: Some("Get current time in a specific timezones".into()),
            input_schema: json!({
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'UTC' as local timezone if no timezone provided by the user."}},
                "required": ["timezone"]
            }),
            annotations: None,
        },
        ToolDef {
            name: "tools__book_table".into(),
            description: Some("Book a restaurant table.".into()),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "restaurant": {"type": "string"},
                    "people": {"type": "integer", "minimum": 1},
                    "date": {"type": "string", "description": "YYYY-MM-DD"},
                    "seating": {"type": "string", "enum": ["indoor", "outdoor"]}
                },
                "required": ["restaurant", "people", "date"]
            }),
            annotations: None,
        },
    ]
}

const QUESTIONS: &[&str] = &[
    "What is the current time in the Asia/Tokyo timezone?",
    "Book a table for 4 at Luigi's on 2026-12-24, outdoor please.",
    "What time is it in Europe/Paris right now?",
    "Reserve Chez Marie for 2 people on 2026-11-30.",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Config {
    Free,
    Gbnf,
    Llguidance,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Free => "free",
            Config::Gbnf => "gbnf call-only",
            Config::Llguidance => "llguidance call-only",
        }
    }
}

#[derive(Default)]
struct Tally {
    generations: Vec<Stats>,
    sample: String,
}

fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let threads: u32 = arg("--threads", 2);
    let reps: usize = arg("--reps", 3);
    let max_new: u32 = arg("--max-new-tokens", 48);
    let model = ModelConfig {
        max_new_tokens: max_new,
        threads: Some(threads),
        context_length: Some(2048),
        sampling: SamplingConfig {
            seed: Some(0),
            ..SamplingConfig::greedy()
        },
        ..ModelConfig::default()
    };
    let backend = SharedBackend::open(model)
        .await
        .expect("the default model loads (scripts/setup installs it)");
    let info = backend.info().clone();
    println!(
        "model {} ({}), {reps} reps × {} questions, ≤ {max_new} new tokens, greedy",
        info.model.display(),
        info.detail,
        QUESTIONS.len()
    );
    let configs = [Config::Free, Config::Gbnf, Config::Llguidance];
    for format in [ToolFormat::ToolCallJson, ToolFormat::Hermes] {
        let settings = ChatSettings {
            tool_format: Auto::Set(format),
            tool_shortlist: Shortlist::Max(0),
            ..ChatSettings::default()
        };
        let plan = ToolPlan::new(&settings, &info, tools());
        let system = prompt::system_prompt(&settings, &plan, false, false);
        let gbnf = gbnf_grammar_with(format, &plan.tools, GrammarMode::CallOnly);
        let lark = lark_grammar_with(format, &plan.tools, GrammarMode::CallOnly);
        let mut tallies: Vec<Tally> = configs.iter().map(|_| Tally::default()).collect();
        let started = Instant::now();
        for rep in 0..reps {
            for q in QUESTIONS {
                for (c, tally) in configs.iter().zip(tallies.iter_mut()) {
                    let mut request = GenerateRequest::new(vec![
                        Message::system(system.clone()),
                        Message::user(*q),
                    ]);
                    request.reuse_cache = false;
                    request.temperature = Some(0.0);
                    match c {
                        Config::Free => {}
                        Config::Gbnf => request.grammar = gbnf.clone(),
                        Config::Llguidance => request.guide = lark.clone(),
                    }
                    let g = backend
                        .generate(request)
                        .finish()
                        .await
                        .unwrap_or_else(|e| panic!("{} failed: {e}", c.name()));
                    if *c != Config::Free {
                        let want = match c {
                            Config::Gbnf => "gbnf",
                            _ => "llguidance",
                        };
                        assert_eq!(
                            g.stats.constraint.as_deref(),
                            Some(want),
                            "{} ran with {:?}",
                            c.name(),
                            g.stats.constraint
                        );
                    }
                    if rep == 0 && tally.sample.is_empty() {
                        tally.sample = g.text.chars().take(90).collect();
                    }
                    tally.generations.push(g.stats);
                }
            }
        }
        println!(
            "\n{format} ({:.0} s)\n{:<22} {:>7} {:>9} {:>9} {:>10} {:>8}  first answer",
            started.elapsed().as_secs_f64(),
            "configuration",
            "tokens",
            "tok/s",
            "× free",
            "ms/token",
            "masked"
        );
        let free = Stats::total(&tallies[0].generations).tokens_per_s;
        for (c, tally) in configs.iter().zip(&tallies) {
            let t = Stats::total(&tally.generations);
            println!(
                "{:<22} {:>7} {:>9.1} {:>9.2} {:>10.2} {:>8}  {:?}",
                c.name(),
                t.generated_tokens,
                t.tokens_per_s,
                t.tokens_per_s / free,
                1000.0 / t.tokens_per_s,
                t.masked_tokens,
                tally.sample
            );
        }
    }
}
