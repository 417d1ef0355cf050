//! Tool-calling accuracy of the embedded model (SmolLM2-135M-Instruct Q4_1, llama.cpp on CPU)
//! on the evaluation set in tests/eval, per configuration: call format, prompt style, and
//! whether a grammar constrains the output (none / call-or-answer / call-only).
//!
//! The set (tests/eval/toolsets.toml, loaded and validated by `rkmcp_tests::eval`): 418
//! questions over 174 tools in 20 servers, split once, by domain, into two parts:
//!   tuning   the original 178 questions (four real servers: mcp-server-time, server-everything's
//!            echo and get-sum, server-filesystem on a temporary directory, tests/servers/
//!            eval_tools.py) plus the household, cooking and sports domains: 223 questions.
//!            **Settings are chosen on this part only.**
//!   heldout  thirteen other domains (travel, transport, weather, calendar, office, …): 195
//!            questions whose tools never appear in the tuning part. **It is reported, never used
//!            for choosing**: it predicts how a setting does on servers nobody tuned on.
//! The domains are JSON schemas (tests/eval/tools/DOMAIN.json) served by
//! tests/servers/schema_tools.py, which lists them and echoes any call. Questions run per
//! toolset: their domain plus a fixed set of other domains of the same part (~30–35 tools
//! visible per question); a toolset's servers start once for all its questions.
//!
//! Every question is one user turn through the real chat engine with `max_rounds = 1`: the first
//! round's calls are detected, looked up and validated, then recorded as not run (nothing is
//! executed).
//!
//! Scores, over the questions that expect a tool:
//!   any call      the model attempted a call (valid, rejected or unparseable)
//!   right tool    a call named the expected tool (or one of `also_ok`)
//!   right+valid   ... and the engine accepted it (found, arguments valid for its validator) and
//!                 the arguments pass a minimal schema check here (required keys, types, enums,
//!                 no unknown keys when `additionalProperties` is false)
//!   right+args    ... and the arguments contain `expect_args` (normalised comparison, lists
//!                 element by element, objects by the expected keys)
//! and over the "none" questions: no-tool ok = the model made no call attempt. `overall` counts a
//! question right when it is right+valid (tool questions) or no-tool ok ("none" questions).
//! Reports are printed per part.
//!
//! Run: `cargo bench --bench tool_eval -- [--part tuning|heldout|all] [--limit N] [--tags a,b]
//!       [--configs a,b] [--list] [--check] [--threads N] [--max-new-tokens N] [--context N]`
//! (after scripts/setup). `--part` defaults to `tuning`. `--check` loads and validates the whole
//! set without a model (every expected tool exists in its toolset, expected values have the
//! schema's types and enums, no duplicate questions, every tool of a part is expected by a
//! question or listed as distractor-only, no server in both parts), prints the problems and
//! exits 1 if there are any; the integration test `eval_data::` runs the same check.
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
//! `span_escape = "examples"`, `value_numbers = "message"` and `fill_named_optional = true`;
//! `+steps` sets `argument_steps = true` (the tool, then each argument, in generations of their
//! own); suffixes are parsed in
//! `configs::parse_suffixes`. `--limit N` takes N questions spread evenly over each selected
//! part; `--tags a,b` only the questions with one of those tags; `--scores` prints each
//! question's best tool-match score (what the explicit decision's gate and the shortlist see) and
//! stops. Greedy decoding. Every configuration prints its generation speed (tok/s), so
//! constrained and free generation compare within one run.
//! Raw per-question results: target/tool-eval/results.json (rewritten after each toolset).
mod configs;
mod report;
mod scoring;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use rkmcp::chat::ChatEngine;
use rkmcp::chat::approval::{ApprovalConfig, Approver};
use rkmcp_llm::{ModelConfig, SamplingConfig, SharedBackend};
use rkmcp_tests::eval::{self, EvalQuestion, EvalSet, Part};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::ToolDef;
use serde_json::Value;

use configs::{DEFAULT_CONFIGS, Spec, SpecKey, parse_spec, settings_for};
use report::{ConfigReport, output_dir, pct, print_part, summarise, verdict, write_results};
use scoring::{Asked, QuestionResult, ask};

struct Options {
    /// `--part`: which parts to run (default: tuning).
    parts: Vec<Part>,
    limit: Option<usize>,
    /// `--tags a,b`: only the questions with one of these tags.
    tags: Vec<String>,
    configs: Vec<String>,
    threads: Option<u32>,
    max_new_tokens: u32,
    context: u32,
    list: bool,
    /// Validate the data without a model and stop.
    check: bool,
    /// Print each question's best tool-match score (the `tools_match` gate) and stop.
    scores: bool,
}

fn parse_options() -> Options {
    let mut o = Options {
        parts: vec![Part::Tuning],
        limit: None,
        tags: Vec::new(),
        configs: DEFAULT_CONFIGS.iter().map(|s| s.to_string()).collect(),
        threads: None,
        max_new_tokens: 96,
        context: 4096,
        list: false,
        check: false,
        scores: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |what: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{arg} needs a value ({what})"))
        };
        let list = |v: String| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        match arg.as_str() {
            "--part" => {
                o.parts = Part::parse_selection(&value("tuning, heldout or all"))
                    .unwrap_or_else(|e| panic!("--part: {e}"))
            }
            "--limit" => o.limit = Some(value("a number").parse().expect("--limit: a number")),
            "--tags" => o.tags = list(value("a,b,…")),
            "--configs" => o.configs = list(value("a,b,…")),
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
            "--check" => o.check = true,
            "--scores" => o.scores = true,
            // `cargo bench` passes --bench to harness-less benches.
            "--bench" => {}
            other => panic!(
                "unknown argument `{other}` (expected --part tuning|heldout|all, --limit N, \
                 --tags a,b, --configs a,b, --threads N, --max-new-tokens N, --context N, --list, \
                 --check, --scores)"
            ),
        }
    }
    o
}

/// `n` items spread evenly over `items` (all of them when `n` is at least their number), with
/// their index.
fn spread<T: Clone>(items: &[T], n: usize) -> Vec<(usize, T)> {
    let len = items.len();
    if n >= len {
        return items.iter().cloned().enumerate().collect();
    }
    (0..n)
        .map(|i| {
            let at = i * len / n;
            (at, items[at].clone())
        })
        .collect()
}

/// `--check`: the data's problems against the live servers' tools; exit status 1 if any.
async fn run_check(set: &EvalSet) -> bool {
    eprintln!("starting every server of the set once to list its tools…");
    let catalog = eval::live_catalog(set).await;
    let problems = eval::check(set, &catalog);
    for (part, (n, n_tool, n_none, tools)) in eval::counts(set, &catalog) {
        println!(
            "{:<8} {n} questions ({n_tool} expect a tool, {n_none} none), {tools} tools, {} toolsets",
            part.name(),
            set.toolsets
                .iter()
                .filter(|t| t.part() == Some(part))
                .count()
        );
    }
    for p in &problems {
        println!("PROBLEM {p}");
    }
    println!(
        "{}",
        if problems.is_empty() {
            "check: ok".to_string()
        } else {
            format!("check: {} problems", problems.len())
        }
    );
    problems.is_empty()
}

/// What one configuration resolved to (from the first toolset it ran on).
#[derive(Clone, Default)]
struct Resolved {
    format: String,
    style: String,
    grammar: String,
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
            "STYLE: hermes, llama3, markdown, compact; MODE: plain, answer (default), explicit, required"
        );
        println!("parts (--part): tuning (default), heldout, all");
        return;
    }
    let set = eval::load();
    if options.check {
        let ok = run_check(&set).await;
        std::process::exit(if ok { 0 } else { 1 });
    }
    if !set.load_problems.is_empty() {
        panic!(
            "the evaluation data does not load (run --check): {:?}",
            set.load_problems
        );
    }
    let specs: Vec<Spec> = options
        .configs
        .iter()
        .map(|c| parse_spec(c).unwrap_or_else(|e| panic!("--configs `{c}`: {e}")))
        .collect();

    // The questions of each selected part, `--tags` then `--limit` applied.
    let mut picked: Vec<(Part, Vec<(usize, EvalQuestion)>)> = Vec::new();
    for &part in &options.parts {
        let mut all: Vec<EvalQuestion> = set.part_questions(part).into_iter().cloned().collect();
        if !options.tags.is_empty() {
            all.retain(|q| q.question.tags.iter().any(|t| options.tags.contains(t)));
        }
        picked.push((part, spread(&all, options.limit.unwrap_or(usize::MAX))));
    }

    eprintln!("loading the model…");
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
    let backend = SharedBackend::open(model)
        .await
        .expect("the default model loads (scripts/setup installs it)");
    eprintln!(
        "model: {} ({}, template {}); {} configurations; {}",
        backend.info().model.display(),
        backend.info().detail,
        backend.info().chat_template,
        specs.len(),
        picked
            .iter()
            .map(|(p, qs)| format!("{} questions of the {} part", qs.len(), p.name()))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let out_dir = output_dir();
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("mkdir {}: {e}", out_dir.display()));
    let results_path = out_dir.join("results.json");

    let mut reports: Vec<ConfigReport> = Vec::new();
    // Which configuration resolved to the settings of an earlier one (not run again).
    let mut same_as: BTreeMap<usize, usize> = BTreeMap::new();
    let mut seen: Vec<(SpecKey, usize)> = Vec::new();
    for (part, questions) in &picked {
        let part = *part;
        let mut results: Vec<Vec<QuestionResult>> = vec![Vec::new(); specs.len()];
        let mut resolved: Vec<Option<Resolved>> = vec![None; specs.len()];
        let mut spent = vec![0.0f64; specs.len()];
        // Toolsets in file order, each with its picked questions.
        for toolset in set.toolsets.iter().filter(|t| t.part() == Some(part)) {
            let mine: Vec<&(usize, EvalQuestion)> = questions
                .iter()
                .filter(|(_, q)| q.toolset == toolset.name)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let config_dir = tempfile::tempdir().expect("a temporary directory");
            let files_dir = tempfile::Builder::new()
                .prefix("evalfiles")
                .tempdir()
                .expect("a temporary directory");
            eval::fill_files(files_dir.path());
            let dir = files_dir.path().display().to_string();
            let sessions =
                eval::start_servers(config_dir.path(), files_dir.path(), &toolset.servers).await;
            let sessions = Arc::new(sessions);
            let (exposed, _) = sessions.tools();
            eprintln!(
                "== {} part, toolset {}: {} questions, {} tools ({})",
                part.name(),
                toolset.name,
                mine.len(),
                exposed.len(),
                toolset.servers.join(", ")
            );
            for (_, q) in &mine {
                let q = &q.question;
                let known = q.expects_none() || exposed.iter().any(|t| t.name == q.expect_tool);
                assert!(
                    known,
                    "question {:?} expects an unknown tool (run --check)",
                    q.question
                );
            }

            for (si, spec) in specs.iter().enumerate() {
                if same_as.contains_key(&si) {
                    continue;
                }
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
                    for (index, q) in &mine {
                        let q = &q.question;
                        let scores = rkmcp::chat::shortlist::scores(&q.question, &plan.tools);
                        let (best, score) = scores
                            .iter()
                            .enumerate()
                            .max_by(|a, b| a.1.total_cmp(b.1))
                            .map(|(i, s)| (plan.tools[i].name.as_str(), *s))
                            .unwrap_or(("", 0.0));
                        println!(
                            "{} q{index:03} {score:6.2} {best:<34} want {}",
                            part.name(),
                            q.expect_tool
                        );
                    }
                    break;
                }
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
                if let Some((_, earlier)) = seen.iter().find(|(k, i)| *k == key && *i != si) {
                    eprintln!(
                        "[{}] same settings as {}: not run again",
                        spec.name, specs[*earlier].name
                    );
                    same_as.insert(si, *earlier);
                    continue;
                }
                if !seen.iter().any(|(_, i)| *i == si) {
                    seen.push((key, si));
                    eprintln!(
                        "[{}] format {}, prompt style {}, mode {:?}",
                        spec.name, plan.format, plan.style, spec.mode
                    );
                }
                let tools: BTreeMap<String, Value> = plan
                    .tools
                    .iter()
                    .map(|t: &ToolDef| (t.name.clone(), t.input_schema.clone()))
                    .collect();
                let started = Instant::now();
                for (index, q) in &mine {
                    let question = q.question.with_dir(&dir);
                    let r = ask(
                        &mut engine,
                        &tools,
                        Asked {
                            index: *index,
                            part,
                            toolset: &toolset.name,
                            question: &question,
                        },
                    )
                    .await;
                    let done = results[si].len() + 1;
                    eprintln!(
                        "[{}] {} {:>3}/{} {:5.1}s q{:03} {}{}",
                        spec.name,
                        part.name(),
                        done,
                        questions.len(),
                        r.seconds,
                        index,
                        verdict(&r),
                        r.error
                            .as_deref()
                            .map(|e| format!(" ERROR {e}"))
                            .unwrap_or_default()
                    );
                    results[si].push(r);
                }
                spent[si] += started.elapsed().as_secs_f64();
                if resolved[si].is_none() {
                    resolved[si] = Some(Resolved {
                        format: plan.format.to_string(),
                        style: plan.style.to_string(),
                        grammar: results[si]
                            .first()
                            .map(|r| r.grammar.clone())
                            .unwrap_or_default(),
                    });
                }
                drop(engine);
            }
            match Arc::try_unwrap(sessions) {
                Ok(s) => s.shutdown().await,
                Err(_) => eprintln!("sessions still shared; servers are left to exit with us"),
            }
            if options.scores {
                continue;
            }
            // Partial results after each toolset.
            let mut partial = reports.clone();
            partial.extend(part_reports(part, &specs, &results, &resolved, &same_as));
            write_results(
                &results_path,
                &backend,
                options.max_new_tokens,
                options.context,
                &partial,
            );
        }
        if options.scores {
            continue;
        }
        for (si, spec) in specs.iter().enumerate() {
            if !same_as.contains_key(&si) {
                let n_tool = results[si]
                    .iter()
                    .filter(|r| r.expect_tool != "none")
                    .count();
                let right_valid = results[si].iter().filter(|r| r.right_valid).count();
                let overall = results[si].iter().filter(|r| r.correct()).count();
                eprintln!(
                    "[{}] {} part done in {:.0}s: right+valid {}, overall {}",
                    spec.name,
                    part.name(),
                    spent[si],
                    pct(right_valid, n_tool),
                    pct(overall, results[si].len())
                );
            }
        }
        reports.extend(part_reports(part, &specs, &results, &resolved, &same_as));
    }
    if options.scores {
        return;
    }

    for (part, _) in &picked {
        let mine: Vec<&ConfigReport> = reports.iter().filter(|r| r.part == *part).collect();
        print_part(*part, &mine);
    }
    println!();
    println!(
        "any call / right tool / right+valid / right+args: over the questions that expect a tool; \
         no-tool ok: over those that expect none; overall: right+valid or no-tool ok, over all."
    );
    println!("raw results: {}", results_path.display());
    write_results(
        &results_path,
        &backend,
        options.max_new_tokens,
        options.context,
        &reports,
    );
}

/// The reports of one part, one per configuration (a configuration with the settings of an
/// earlier one repeats its results with `same_as`).
fn part_reports(
    part: Part,
    specs: &[Spec],
    results: &[Vec<QuestionResult>],
    resolved: &[Option<Resolved>],
    same_as: &BTreeMap<usize, usize>,
) -> Vec<ConfigReport> {
    specs
        .iter()
        .enumerate()
        .map(|(si, spec)| {
            let from = same_as.get(&si).copied().unwrap_or(si);
            let r = resolved[from].clone().unwrap_or_default();
            ConfigReport {
                name: spec.name.clone(),
                part,
                tool_format: r.format,
                prompt_style: r.style,
                mode: specs[from].mode,
                grammar: r.grammar,
                same_as: same_as.get(&si).map(|e| specs[*e].name.clone()),
                summary: summarise(&results[from]),
                results: results[from].clone(),
            }
        })
        .collect()
}
