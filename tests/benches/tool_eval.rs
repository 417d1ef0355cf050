//! Tool-calling accuracy of the embedded model (SmolLM2-135M-Instruct Q4_1, llama.cpp on CPU)
//! on `tests/eval/questions.toml`, per configuration: call format, prompt style, and whether a
//! grammar constrains the output (none / call-or-answer / call-only).
//!
//! Every question is one user turn through the real chat engine with `max_rounds = 1`: the first
//! round's calls are detected, looked up and validated, then recorded as not run (nothing is
//! executed). All four servers are running for every question (17 tools): mcp-server-time,
//! server-everything (echo, get-sum), server-filesystem on a temporary directory (read_text_file,
//! list_directory, search_files) and tests/servers/eval_tools.py (ten tools).
//!
//! Scores, over the questions that expect a tool:
//!   any call      the model attempted a call (valid, rejected or unparseable)
//!   right tool    a call named the expected tool (or one of `also_ok`)
//!   right+valid   ... and the engine accepted it (found, arguments valid for its validator) and
//!                 the arguments pass a minimal schema check here (required keys, types, enums,
//!                 no unknown keys when `additionalProperties` is false)
//!   right+args    ... and the arguments contain `expect_args` (normalised comparison)
//! and over the "none" questions: no-tool ok = the model made no call attempt. `overall` counts a
//! question right when it is right+valid (tool questions) or no-tool ok ("none" questions).
//!
//! Run: `cargo bench --bench tool_eval -- [--limit N] [--tags a,b] [--configs a,b] [--list]
//!       [--threads N] [--max-new-tokens N] [--context N]` (after scripts/setup).
//! A configuration is `FORMAT[/STYLE][:MODE]`: FORMAT `auto` (the engine's guess from the chat
//! template) or a tool-format name, STYLE a prompt style (default: the format's own), MODE
//! `plain` (no grammar), `answer` (grammar: call or answer, `tool_decision = "open"`; the
//! default), `explicit` (grammar: name a tool or `answer_directly` first, `tool_decision =
//! "explicit"`) or `required` (grammar: call only); a suffix `@N` shows only the N tools that best
//! match the question (`tool_shortlist = N`; `@auto`: rkmcp's default); a suffix `+gbnf` holds
//! the rounds with llama.cpp's GBNF sampler instead of llguidance, `+copyN` sets `copy_bias = N`
//! (the user's words get N added to their logits in rounds that may call; without it, rkmcp's
//! default `auto`: 2 for a model file under 300 MiB, so `+copy0` turns grounding off), `+unnamed`
//! turns off `named_tools` (a tool the message names is not forced); `+spans`, `+spans-results`,
//! `+escape`, `+nums` and `+fill` set `value_spans = "message"` / `"message+results"`,
//! `span_escape = "examples"`, `value_numbers = "message"` and `fill_named_optional = true`. `--limit N` takes N
//! questions spread evenly over the set; `--tags a,b` only the questions with one of those tags; `--scores` prints each question's best tool-match score
//! (what the explicit decision's gate and the shortlist see) and stops. Greedy decoding. Every configuration prints its
//! generation speed (tok/s), so constrained and free generation compare within one run.
//! Raw per-question results: target/tool-eval/results.json (rewritten after each configuration).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rkmcp::chat::ChatEngine;
use rkmcp::chat::approval::{ApprovalConfig, Approver};
use rkmcp::chat::settings::{
    Auto, ChatSettings, CopyBias, GrammarEngine, Shortlist, SpanEscape, ToolChoice, ToolDecision,
    ValueNumbers, ValueSpans,
};
use rkmcp::mcp::SessionManager;
use rkmcp_llm::{ModelConfig, SamplingConfig, SharedBackend};
use rkmcp_tests::{
    deps, everything_cmd, filesystem_cmd, load_config, repo, stdio_entry, time_server,
};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{PromptStyle, ToolDef};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const DEFAULT_CONFIGS: &[&str] = &[
    // Free generation (no grammar): the speed baseline.
    "auto:plain@auto",
    // Hermes for SmolLM2's ChatML template, explicit decision, `auto` shortlist, no grounding;
    // held by llguidance, then by llama.cpp's GBNF sampler.
    "auto:explicit@auto+copy0",
    "auto:explicit@auto+copy0+gbnf",
    // The defaults (grounding: `copy_bias = "auto"`, 2 for this model), and a stronger bias.
    "auto:explicit@auto",
    "auto:explicit@auto+copy4",
    // The quick start's format, without and with grounding.
    "tool-call-json:explicit@auto+copy0",
    "tool-call-json:explicit@auto",
];

// ------------------------------------------------------------------------------------------------
// The question set

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionFile {
    questions: Vec<Question>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Question {
    question: String,
    expect_tool: String,
    #[serde(default)]
    also_ok: Vec<String>,
    #[serde(default)]
    expect_args: Map<String, Value>,
    #[serde(default)]
    tags: Vec<String>,
}

impl Question {
    fn expects_none(&self) -> bool {
        self.expect_tool == "none"
    }

    /// `{dir}` replaced by the files server's directory, in the question and expected values.
    fn with_dir(&self, dir: &str) -> Question {
        let mut q = self.clone();
        q.question = q.question.replace("{dir}", dir);
        for v in q.expect_args.values_mut() {
            replace_in(v, dir);
        }
        q
    }
}

fn replace_in(v: &mut Value, dir: &str) {
    match v {
        Value::String(s) => *s = s.replace("{dir}", dir),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_in(x, dir)),
        Value::Object(m) => m.values_mut().for_each(|x| replace_in(x, dir)),
        _ => {}
    }
}

fn load_questions() -> Vec<Question> {
    let path = repo().join("tests/eval/questions.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let file: QuestionFile =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.questions
}

/// `n` questions spread evenly over the set (all of them when `n` is at least the set's size).
fn spread(questions: &[Question], n: usize) -> Vec<(usize, Question)> {
    let len = questions.len();
    if n >= len {
        return questions.iter().cloned().enumerate().collect();
    }
    (0..n)
        .map(|i| {
            let at = i * len / n;
            (at, questions[at].clone())
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Configurations

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Plain,
    Answer,
    Explicit,
    Required,
}

/// What makes two configurations the same run: format, style, mode, shortlist, engine, bias.
type SpecKey = (
    String,
    String,
    Mode,
    Shortlist,
    GrammarEngine,
    String,
    bool,
    String,
);

#[derive(Debug, Clone)]
struct Spec {
    name: String,
    format: Auto<ToolFormat>,
    style: Auto<PromptStyle>,
    mode: Mode,
    /// `@N`: `tool_shortlist = N`; `@auto`: the default (`auto`); none: all tools.
    shortlist: Shortlist,
    /// `+gbnf`: llama.cpp's GBNF sampler instead of llguidance (the default).
    engine: GrammarEngine,
    /// `+copyN`: `copy_bias = N`; none: the default (`auto`).
    copy_bias: CopyBias,
    /// `+unnamed`: `named_tools = false`.
    named_tools: bool,
    /// `+spans` (`value_spans = "message"`), `+spans-results` (`"message+results"`), `+escape`
    /// (`span_escape = "examples"`), `+nums` (`value_numbers = "message"`), `+fill`
    /// (`fill_named_optional = true`).
    values: (ValueSpans, SpanEscape, ValueNumbers, bool),
}

fn parse_spec(full: &str) -> Result<Spec, String> {
    let mut s = full;
    let mut engine = GrammarEngine::Llguidance;
    let mut copy_bias = CopyBias::Auto;
    let mut named_tools = true;
    let mut values = (ValueSpans::Off, SpanEscape::None, ValueNumbers::Any, false);
    while let Some((head, suffix)) = s.rsplit_once('+') {
        if suffix == "gbnf" {
            engine = GrammarEngine::Gbnf;
        } else if suffix == "unnamed" {
            named_tools = false;
        } else if suffix == "spans" {
            values.0 = ValueSpans::Message;
        } else if suffix == "spans-results" {
            values.0 = ValueSpans::MessageResults;
        } else if suffix == "escape" {
            values.1 = SpanEscape::Examples;
        } else if suffix == "nums" {
            values.2 = ValueNumbers::Message;
        } else if suffix == "fill" {
            values.3 = true;
        } else if let Some(n) = suffix.strip_prefix("copy") {
            copy_bias = n
                .parse::<f32>()
                .map(CopyBias::Fixed)
                .map_err(|_| format!("`+{suffix}`: expected +copyN with a number N"))?;
        } else {
            return Err(format!(
                "unknown suffix `+{suffix}` (+gbnf, +copyN, +unnamed, +spans, +spans-results, +escape, +nums, +fill)"
            ));
        }
        s = head;
    }
    let (spec, shortlist) = match s.split_once('@') {
        Some((spec, n)) => (
            spec,
            n.parse::<Shortlist>().map_err(|e| format!("`@{n}`: {e}"))?,
        ),
        None => (s, Shortlist::Max(0)),
    };
    let (head, mode) = match spec.split_once(':') {
        Some((h, m)) => (h, m),
        None => (s, "answer"),
    };
    let mode = match mode {
        "plain" => Mode::Plain,
        "answer" => Mode::Answer,
        "explicit" => Mode::Explicit,
        "required" => Mode::Required,
        other => {
            return Err(format!(
                "unknown mode `{other}` (plain, answer, explicit, required)"
            ));
        }
    };
    let (format, style) = match head.split_once('/') {
        Some((f, st)) => (f, Some(st)),
        None => (head, None),
    };
    let format = if format == "auto" {
        Auto::Auto
    } else {
        Auto::Set(format.parse::<ToolFormat>().map_err(|e| e.to_string())?)
    };
    let style = match style {
        Some(st) => Auto::Set(st.parse::<PromptStyle>()?),
        None => Auto::Auto,
    };
    Ok(Spec {
        name: full.to_string(),
        format,
        style,
        mode,
        shortlist,
        engine,
        copy_bias,
        named_tools,
        values,
    })
}

fn settings_for(spec: &Spec) -> ChatSettings {
    ChatSettings {
        tool_format: spec.format,
        prompt_style: spec.style,
        tool_choice: if spec.mode == Mode::Required {
            ToolChoice::Required
        } else {
            ToolChoice::Auto
        },
        tool_decision: if spec.mode == Mode::Explicit {
            ToolDecision::Explicit
        } else {
            ToolDecision::Open
        },
        constrained_decoding: spec.mode != Mode::Plain,
        tool_shortlist: spec.shortlist,
        grammar_engine: spec.engine,
        copy_bias: spec.copy_bias,
        named_tools: spec.named_tools,
        value_spans: spec.values.0,
        span_escape: spec.values.1,
        value_numbers: spec.values.2,
        fill_named_optional: spec.values.3,
        // Detect and validate the first round's calls, run none of them.
        max_rounds: 1,
        ..ChatSettings::default()
    }
}

// ------------------------------------------------------------------------------------------------
// Results

#[derive(Debug, Clone, Serialize)]
struct CallSeen {
    name: String,
    arguments: Value,
    /// The minimal schema check here (the engine's validator already accepted it).
    schema_ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
struct RejectedSeen {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    error: String,
}

#[derive(Debug, Clone, Serialize)]
struct QuestionResult {
    index: usize,
    question: String,
    expect_tool: String,
    #[serde(skip_serializing_if = "Map::is_empty")]
    expect_args: Map<String, Value>,
    tags: Vec<String>,
    raw: String,
    grammar: String,
    finish: Option<String>,
    calls: Vec<CallSeen>,
    rejected: Vec<RejectedSeen>,
    any_call: bool,
    right_tool: bool,
    right_valid: bool,
    right_args: bool,
    /// For "none" questions: no call attempt.
    no_tool_ok: bool,
    seconds: f64,
    prompt_tokens: u32,
    cached_tokens: u32,
    generated_tokens: u32,
    /// Generation time of the round (all its generations), for tok/s.
    generation_ms: f64,
    /// What held the output (`gbnf`, `llguidance`; empty: nothing).
    constraint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl QuestionResult {
    fn correct(&self) -> bool {
        if self.expect_tool == "none" {
            self.no_tool_ok
        } else {
            self.right_valid
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
struct Summary {
    n: usize,
    n_tool: usize,
    n_none: usize,
    any_call: usize,
    right_tool: usize,
    right_valid: usize,
    right_args: usize,
    no_tool_ok: usize,
    overall: usize,
    mean_seconds: f64,
    mean_generated_tokens: f64,
    /// Generated tokens over generation time, all questions together.
    tokens_per_s: f64,
    /// Tokens of the first prompt (system prompt with the tool section plus the first question).
    first_prompt_tokens: u32,
}

fn summarise(results: &[QuestionResult]) -> Summary {
    let mut s = Summary {
        n: results.len(),
        ..Summary::default()
    };
    for r in results {
        if r.expect_tool == "none" {
            s.n_none += 1;
            s.no_tool_ok += usize::from(r.no_tool_ok);
        } else {
            s.n_tool += 1;
            s.any_call += usize::from(r.any_call);
            s.right_tool += usize::from(r.right_tool);
            s.right_valid += usize::from(r.right_valid);
            s.right_args += usize::from(r.right_args);
        }
        s.overall += usize::from(r.correct());
    }
    if !results.is_empty() {
        let n = results.len() as f64;
        s.mean_seconds = results.iter().map(|r| r.seconds).sum::<f64>() / n;
        s.mean_generated_tokens = results
            .iter()
            .map(|r| f64::from(r.generated_tokens))
            .sum::<f64>()
            / n;
    }
    let generated: u32 = results.iter().map(|r| r.generated_tokens).sum();
    let ms: f64 = results.iter().map(|r| r.generation_ms).sum();
    if ms > 0.0 {
        s.tokens_per_s = f64::from(generated) * 1000.0 / ms;
    }
    s.first_prompt_tokens = results.first().map(|r| r.prompt_tokens).unwrap_or(0);
    s
}

#[derive(Debug, Clone, Serialize)]
struct ConfigReport {
    name: String,
    tool_format: String,
    prompt_style: String,
    mode: Mode,
    /// The grammar the first round ran with (`none` when the format has no grammar).
    grammar: String,
    /// Set when the settings resolved to those of an earlier configuration (not run again).
    #[serde(skip_serializing_if = "Option::is_none")]
    same_as: Option<String>,
    summary: Summary,
    results: Vec<QuestionResult>,
}

// ------------------------------------------------------------------------------------------------
// Scoring

/// A minimal JSON-Schema check of one call's arguments: required keys, property types, enums,
/// no unknown keys when `additionalProperties` is false.
fn schema_check(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(args) = args.as_object() else {
        return Err("arguments are not an object".into());
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(key) {
                return Err(format!("missing required `{key}`"));
            }
        }
    }
    for (key, value) in args {
        match props.and_then(|p| p.get(key)) {
            Some(prop) => check_value(prop, value).map_err(|e| format!("`{key}`: {e}"))?,
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(format!("unknown key `{key}`"));
            }
            None => {}
        }
    }
    Ok(())
}

fn check_value(schema: &Value, value: &Value) -> Result<(), String> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
        return Err(format!("expected {}, got {value}", types.join(" or ")));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(format!(
            "{value} is not one of {}",
            Value::Array(options.clone())
        ));
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for v in array {
            check_value(items, v)?;
        }
    }
    if value.is_object() && schema.get("properties").is_some() {
        schema_check(schema, value)?;
    }
    Ok(())
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// Lowercase, no whitespace, no trailing `/` (paths), no trailing `.`.
fn norm(s: &str) -> String {
    let squashed: String = s
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let trimmed = squashed.trim_end_matches('.');
    let trimmed = if trimmed.len() > 1 {
        trimmed.trim_end_matches('/')
    } else {
        trimmed
    };
    trimmed.to_string()
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn value_matches(expected: &Value, actual: &Value) -> bool {
    if let Some(any) = expected.get("any").and_then(Value::as_array) {
        return any.iter().any(|e| value_matches(e, actual));
    }
    match expected {
        Value::Number(_) => match (as_number(expected), as_number(actual)) {
            (Some(e), Some(a)) => (e - a).abs() < 1e-9,
            _ => false,
        },
        Value::String(e) => {
            let a = match actual {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return false,
            };
            norm(e) == norm(&a)
        }
        other => other == actual,
    }
}

fn args_match(expected: &Map<String, Value>, actual: &Value) -> bool {
    expected
        .iter()
        .all(|(k, e)| actual.get(k).is_some_and(|a| value_matches(e, a)))
}

// ------------------------------------------------------------------------------------------------
// Running

struct Options {
    limit: Option<usize>,
    /// `--tags a,b`: only the questions with one of these tags.
    tags: Vec<String>,
    configs: Vec<String>,
    threads: Option<u32>,
    max_new_tokens: u32,
    context: u32,
    list: bool,
    /// Print each question's best tool-match score (the `tools_match` gate) and stop.
    scores: bool,
}

fn parse_options() -> Options {
    let mut o = Options {
        limit: None,
        tags: Vec::new(),
        configs: DEFAULT_CONFIGS.iter().map(|s| s.to_string()).collect(),
        threads: None,
        max_new_tokens: 96,
        context: 4096,
        list: false,
        scores: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |what: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{arg} needs a value ({what})"))
        };
        match arg.as_str() {
            "--limit" => o.limit = Some(value("a number").parse().expect("--limit: a number")),
            "--tags" => {
                o.tags = value("a,b,…")
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "--configs" => {
                o.configs = value("a,b,…")
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "--threads" => {
                o.threads = Some(value("a number").parse().expect("--threads: a number"))
            }
            "--max-new-tokens" => {
                o.max_new_tokens = value("a number")
                    .parse()
                    .expect("--max-new-tokens: a number")
            }
            "--context" => o.context = value("a number").parse().expect("--context: a number"),
            "--list" => o.list = true,
            "--scores" => o.scores = true,
            // `cargo bench` passes --bench to harness-less benches.
            "--bench" => {}
            other => panic!(
                "unknown argument `{other}` (expected --limit N, --tags a,b, --configs a,b, --threads N, \
                 --max-new-tokens N, --context N, --list)"
            ),
        }
    }
    o
}

/// The files server's directory: a few small files to read, list and search.
fn fill_files(dir: &Path) {
    let files = [
        (
            "notes.txt",
            "Meeting notes, Monday:\n- ship the tool evaluation\n- buy more coffee\n",
        ),
        (
            "todo.md",
            "# TODO\n\n- [ ] write the report\n- [x] set up the servers\n",
        ),
        (
            "config.json",
            "{\n  \"theme\": \"dark\",\n  \"language\": \"en\",\n  \"autosave\": true\n}\n",
        ),
        (
            "data/report.csv",
            "month,sales\nJanuary,120\nFebruary,135\nMarch,160\n",
        ),
        (
            "data/readme.md",
            "Quarterly sales figures, one row per month.\n",
        ),
    ];
    for (name, text) in files {
        rkmcp_tests::write(dir, name, text);
    }
}

async fn start_servers(config_dir: &Path, files_dir: &Path) -> SessionManager {
    let mut toml = stdio_entry("time", &time_server().display().to_string(), &[], "");
    let (cmd, args) = everything_cmd();
    toml.push_str(&stdio_entry(
        "everything",
        &cmd,
        &args,
        "allow = [\"echo\", \"get-sum\"]",
    ));
    let (cmd, mut args) = filesystem_cmd();
    args.push(files_dir.display().to_string());
    toml.push_str(&stdio_entry(
        "files",
        &cmd,
        &args,
        "allow = [\"read_text_file\", \"list_directory\", \"search_files\"]",
    ));
    let python = deps().join("venv/bin/python");
    let server = repo().join("tests/servers/eval_tools.py");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup first",
        python.display()
    );
    toml.push_str(&stdio_entry(
        "tools",
        &python.display().to_string(),
        &[server.display().to_string()],
        "",
    ));
    let config = load_config(config_dir, &toml);
    let sessions = SessionManager::start(&config, None).await;
    assert!(
        sessions.failures().is_empty(),
        "servers failed to start: {:?}",
        sessions.failures()
    );
    sessions
}

/// Asks one question in a fresh conversation and scores the first round.
async fn ask(
    engine: &mut ChatEngine,
    tools: &BTreeMap<String, Value>,
    index: usize,
    q: &Question,
) -> QuestionResult {
    engine.clear();
    let (tx, rx) = mpsc::unbounded_channel();
    drop(rx);
    let started = Instant::now();
    let outcome = engine
        .turn(&q.question, &tx, CancellationToken::new())
        .await;
    let seconds = started.elapsed().as_secs_f64();
    let mut result = QuestionResult {
        index,
        question: q.question.clone(),
        expect_tool: q.expect_tool.clone(),
        expect_args: q.expect_args.clone(),
        tags: q.tags.clone(),
        raw: String::new(),
        grammar: String::new(),
        finish: None,
        calls: Vec::new(),
        rejected: Vec::new(),
        any_call: false,
        right_tool: false,
        right_valid: false,
        right_args: false,
        no_tool_ok: false,
        seconds,
        prompt_tokens: 0,
        cached_tokens: 0,
        generated_tokens: 0,
        generation_ms: 0.0,
        constraint: String::new(),
        error: outcome.as_ref().err().map(|e| format!("{e:#}")),
    };
    let round = engine
        .transcript()
        .turns
        .last()
        .and_then(|t| t.rounds.first())
        .cloned();
    let Some(round) = round else {
        return result;
    };
    result.raw = round.raw.clone();
    result.grammar = round.grammar.clone();
    result.finish = round
        .finish
        .map(|f| {
            serde_json::to_value(f)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
        })
        .unwrap_or_default();
    // The whole turn's generations (two after `answer_directly`).
    if let Ok(outcome) = &outcome {
        let stats = &outcome.stats;
        result.prompt_tokens = stats.prompt_tokens;
        result.cached_tokens = stats.cached_tokens;
        result.generated_tokens = stats.generated_tokens;
        result.generation_ms = stats.generation_ms;
        result.constraint = stats.constraint.clone().unwrap_or_default();
    }
    result.calls = round
        .calls
        .iter()
        .map(|c| {
            let check = match tools.get(&c.name) {
                Some(schema) => schema_check(schema, &c.arguments),
                None => Err("no schema for this tool".into()),
            };
            CallSeen {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
                schema_ok: check.is_ok(),
                schema_error: check.err(),
            }
        })
        .collect();
    result.rejected = round
        .rejected
        .iter()
        .map(|r| RejectedSeen {
            name: r.name.clone(),
            error: r.error.clone(),
        })
        .collect();

    let acceptable = |name: &str| name == q.expect_tool || q.also_ok.iter().any(|n| n == name);
    result.any_call = !result.calls.is_empty() || !result.rejected.is_empty();
    result.no_tool_ok = q.expects_none() && !result.any_call;
    if !q.expects_none() {
        result.right_tool = result.calls.iter().any(|c| acceptable(&c.name))
            || result
                .rejected
                .iter()
                .any(|r| r.name.as_deref().is_some_and(acceptable));
        result.right_valid = result
            .calls
            .iter()
            .any(|c| acceptable(&c.name) && c.schema_ok);
        result.right_args = result.calls.iter().any(|c| {
            c.schema_ok
                && if c.name == q.expect_tool {
                    args_match(&q.expect_args, &c.arguments)
                } else {
                    acceptable(&c.name)
                }
        });
    }
    result
}

fn verdict(r: &QuestionResult) -> String {
    let got: Vec<String> = r
        .calls
        .iter()
        .map(|c| format!("{} {}", c.name, c.arguments))
        .chain(r.rejected.iter().map(|x| {
            format!(
                "REJECTED {}: {}",
                x.name.as_deref().unwrap_or("?"),
                x.error.chars().take(80).collect::<String>()
            )
        }))
        .collect();
    let mark = if r.expect_tool == "none" {
        if r.no_tool_ok { "ok  " } else { "MISS" }
    } else if r.right_args {
        "ok  "
    } else if r.right_valid {
        "args"
    } else {
        "MISS"
    };
    let got = if got.is_empty() {
        format!("(no call) {:?}", r.raw.chars().take(70).collect::<String>())
    } else {
        got.join(" ; ")
    };
    format!("{mark} want {} | got {got}", r.expect_tool)
}

fn pct(k: usize, n: usize) -> String {
    if n == 0 {
        "—".into()
    } else {
        format!("{:.0}%", 100.0 * k as f64 / n as f64)
    }
}

fn row(r: &ConfigReport) -> Vec<String> {
    let s = &r.summary;
    vec![
        r.name.clone(),
        format!("{}/{}", r.tool_format, r.prompt_style),
        r.grammar.clone(),
        s.n.to_string(),
        pct(s.any_call, s.n_tool),
        pct(s.right_tool, s.n_tool),
        pct(s.right_valid, s.n_tool),
        pct(s.right_args, s.n_tool),
        pct(s.no_tool_ok, s.n_none),
        pct(s.overall, s.n),
        format!("{:.2}", s.mean_seconds),
        s.first_prompt_tokens.to_string(),
        format!("{:.0}", s.tokens_per_s),
    ]
}

const HEADER: [&str; 13] = [
    "config",
    "format/style",
    "grammar",
    "n",
    "any call",
    "right tool",
    "right+valid",
    "right+args",
    "no-tool ok",
    "overall",
    "s/question",
    "prompt tok",
    "tok/s",
];

fn print_row(r: &ConfigReport) {
    let cells = row(r);
    println!(
        "{:<22} {:<26} {:<15} {:>3} {:>8} {:>10} {:>11} {:>10} {:>10} {:>7} {:>10} {:>10} {:>6}",
        cells[0],
        cells[1],
        cells[2],
        cells[3],
        cells[4],
        cells[5],
        cells[6],
        cells[7],
        cells[8],
        cells[9],
        cells[10],
        cells[11],
        cells[12]
    );
}

fn markdown(reports: &[ConfigReport]) -> String {
    let mut out = format!("| {} |\n", HEADER.join(" | "));
    out.push_str(&format!(
        "|{}\n",
        HEADER.iter().map(|_| "---|").collect::<String>()
    ));
    for r in reports {
        out.push_str(&format!("| {} |\n", row(r).join(" | ")));
    }
    out
}

fn output_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
        .join("tool-eval")
}

fn write_results(
    path: &Path,
    backend: &SharedBackend,
    options: &Options,
    reports: &[ConfigReport],
) {
    let info = backend.info();
    let doc = json!({
        "model": info.model.display().to_string(),
        "backend": info.backend,
        "chat_template": info.chat_template,
        "detail": info.detail,
        "max_new_tokens": options.max_new_tokens,
        "context_length": options.context,
        "sampling": "greedy (temperature 0, top_k 1, seed 0)",
        "configs": reports,
    });
    let text = serde_json::to_string_pretty(&doc).expect("results serialise to JSON");
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let options = parse_options();
    if options.list {
        println!("default configurations: {}", DEFAULT_CONFIGS.join(","));
        println!("spec: FORMAT[/STYLE][:MODE], FORMAT auto or one of:");
        for f in ToolFormat::all() {
            println!("  {f}");
        }
        println!(
            "STYLE: hermes, llama3, markdown, compact; MODE: plain, answer (default), required"
        );
        return;
    }
    let specs: Vec<Spec> = options
        .configs
        .iter()
        .map(|c| parse_spec(c).unwrap_or_else(|e| panic!("--configs `{c}`: {e}")))
        .collect();
    let mut all = load_questions();
    if !options.tags.is_empty() {
        all.retain(|q| q.tags.iter().any(|t| options.tags.contains(t)));
    }
    let picked = spread(&all, options.limit.unwrap_or(usize::MAX));

    let config_dir = tempfile::tempdir().expect("a temporary directory");
    let files_dir = tempfile::Builder::new()
        .prefix("evalfiles")
        .tempdir()
        .expect("a temporary directory");
    fill_files(files_dir.path());
    let dir = files_dir.path().display().to_string();
    let picked: Vec<(usize, Question)> = picked
        .into_iter()
        .map(|(i, q)| (i, q.with_dir(&dir)))
        .collect();

    eprintln!("starting the servers and loading the model…");
    let model = ModelConfig {
        max_new_tokens: options.max_new_tokens,
        context_length: Some(options.context),
        threads: options.threads,
        sampling: SamplingConfig {
            seed: Some(0),
            ..SamplingConfig::greedy()
        },
        ..ModelConfig::default()
    };
    let (sessions, backend) = tokio::join!(
        start_servers(config_dir.path(), files_dir.path()),
        SharedBackend::open(model)
    );
    let backend = backend.expect("the default model loads (scripts/setup installs it)");
    let sessions = Arc::new(sessions);
    let (exposed, _) = sessions.tools();
    eprintln!(
        "{} tools: {}",
        exposed.len(),
        exposed
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    eprintln!(
        "model: {} ({}, template {}); {} questions × {} configurations",
        backend.info().model.display(),
        backend.info().detail,
        backend.info().chat_template,
        picked.len(),
        specs.len()
    );
    for (_, q) in &picked {
        let known = q.expects_none() || exposed.iter().any(|t| t.name == q.expect_tool);
        assert!(known, "question {:?} expects an unknown tool", q.question);
    }

    let out_dir = output_dir();
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("mkdir {}: {e}", out_dir.display()));
    let results_path = out_dir.join("results.json");

    let mut reports: Vec<ConfigReport> = Vec::new();
    let mut seen: Vec<(SpecKey, String)> = Vec::new();
    for spec in &specs {
        let approver = Approver::new(&ApprovalConfig::default(), Vec::new(), None, true)
            .expect("the default approval config is valid");
        let mut engine = ChatEngine::new(
            backend.clone(),
            Arc::clone(&sessions),
            settings_for(spec),
            approver,
        );
        let plan = engine.plan().clone();
        if options.scores {
            for (index, q) in &picked {
                let scores = rkmcp::chat::shortlist::scores(&q.question, &plan.tools);
                let (best, score) = scores
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .map(|(i, s)| (plan.tools[i].name.as_str(), *s))
                    .unwrap_or(("", 0.0));
                println!("q{index:03} {score:6.2} {best:<28} want {}", q.expect_tool);
            }
            return;
        }
        let tools: BTreeMap<String, Value> = plan
            .tools
            .iter()
            .map(|t: &ToolDef| (t.name.clone(), t.input_schema.clone()))
            .collect();
        let key = (
            plan.format.to_string(),
            plan.style.to_string(),
            spec.mode,
            spec.shortlist,
            spec.engine,
            format!("{:?}", spec.copy_bias),
            spec.named_tools,
            format!("{:?}", spec.values),
        );
        if let Some((_, earlier)) = seen.iter().find(|(k, _)| *k == key) {
            eprintln!("[{}] same settings as {earlier}: not run again", spec.name);
            if let Some(prev) = reports.iter().find(|r| &r.name == earlier).cloned() {
                reports.push(ConfigReport {
                    name: spec.name.clone(),
                    same_as: Some(earlier.clone()),
                    ..prev
                });
            }
            continue;
        }
        seen.push((key, spec.name.clone()));
        eprintln!(
            "[{}] format {}, prompt style {}, mode {:?}",
            spec.name, plan.format, plan.style, spec.mode
        );
        let started = Instant::now();
        let mut results = Vec::with_capacity(picked.len());
        for (n, (index, q)) in picked.iter().enumerate() {
            let r = ask(&mut engine, &tools, *index, q).await;
            eprintln!(
                "[{}] {:>2}/{} {:5.1}s q{:02} {}{}",
                spec.name,
                n + 1,
                picked.len(),
                r.seconds,
                index,
                verdict(&r),
                r.error
                    .as_deref()
                    .map(|e| format!(" ERROR {e}"))
                    .unwrap_or_default()
            );
            results.push(r);
        }
        let grammar = results
            .first()
            .map(|r| r.grammar.clone())
            .unwrap_or_default();
        let report = ConfigReport {
            name: spec.name.clone(),
            tool_format: plan.format.to_string(),
            prompt_style: plan.style.to_string(),
            mode: spec.mode,
            grammar,
            same_as: None,
            summary: summarise(&results),
            results,
        };
        eprintln!(
            "[{}] done in {:.0}s: right+valid {}, overall {}",
            spec.name,
            started.elapsed().as_secs_f64(),
            pct(report.summary.right_valid, report.summary.n_tool),
            pct(report.summary.overall, report.summary.n)
        );
        reports.push(report);
        write_results(&results_path, &backend, &options, &reports);
        drop(engine);
    }

    println!();
    println!(
        "{:<22} {:<26} {:<15} {:>3} {:>8} {:>10} {:>11} {:>10} {:>10} {:>7} {:>10} {:>10} {:>6}",
        HEADER[0],
        HEADER[1],
        HEADER[2],
        HEADER[3],
        HEADER[4],
        HEADER[5],
        HEADER[6],
        HEADER[7],
        HEADER[8],
        HEADER[9],
        HEADER[10],
        HEADER[11],
        HEADER[12]
    );
    for r in &reports {
        print_row(r);
    }
    println!();
    print!("{}", markdown(&reports));
    println!();
    println!(
        "any call / right tool / right+valid / right+args: over the {} questions that expect a tool; \
         no-tool ok: over the {} that expect none; overall: right+valid or no-tool ok, over all.",
        reports.first().map(|r| r.summary.n_tool).unwrap_or(0),
        reports.first().map(|r| r.summary.n_none).unwrap_or(0)
    );
    println!("raw results: {}", results_path.display());
    write_results(&results_path, &backend, &options, &reports);

    match Arc::try_unwrap(sessions) {
        Ok(s) => s.shutdown().await,
        Err(_) => eprintln!("sessions still shared at the end; servers are left to exit with us"),
    }
}
