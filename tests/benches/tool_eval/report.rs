//! Summaries per configuration and part, the printed tables and results.json.
use std::path::{Path, PathBuf};

use rkmcp_llm::SharedBackend;
use rkmcp_tests::eval::Part;
use rkmcp_tests::repo;
use serde::Serialize;
use serde_json::json;

use crate::configs::Mode;
use crate::scoring::QuestionResult;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub n: usize,
    pub n_tool: usize,
    pub n_none: usize,
    pub any_call: usize,
    pub right_tool: usize,
    pub right_valid: usize,
    pub right_args: usize,
    pub no_tool_ok: usize,
    pub overall: usize,
    pub mean_seconds: f64,
    pub mean_generated_tokens: f64,
    /// Generated tokens over generation time, all questions together.
    pub tokens_per_s: f64,
    /// Tokens of the first prompt (system prompt with the tool section plus the first question).
    pub first_prompt_tokens: u32,
}

pub fn summarise(results: &[QuestionResult]) -> Summary {
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
pub struct ConfigReport {
    pub name: String,
    pub part: Part,
    pub tool_format: String,
    pub prompt_style: String,
    pub mode: Mode,
    /// The grammar the first round ran with (`none` when the format has no grammar).
    pub grammar: String,
    /// Set when the settings resolved to those of an earlier configuration (not run again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    pub summary: Summary,
    pub results: Vec<QuestionResult>,
}

pub fn verdict(r: &QuestionResult) -> String {
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

pub fn pct(k: usize, n: usize) -> String {
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

fn print_cells(c: &[String]) {
    println!(
        "{:<22} {:<26} {:<15} {:>3} {:>8} {:>10} {:>11} {:>10} {:>10} {:>7} {:>10} {:>10} {:>6}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]
    );
}

fn markdown(reports: &[&ConfigReport]) -> String {
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

/// The tables of one part: aligned, then as Markdown.
pub fn print_part(part: Part, reports: &[&ConfigReport]) {
    let Some(first) = reports.first() else {
        return;
    };
    println!();
    println!(
        "== {} part: {} questions ({} expect a tool, {} none){}",
        part.name(),
        first.summary.n,
        first.summary.n_tool,
        first.summary.n_none,
        if part == Part::Heldout {
            " — held out: reported, never used to choose settings"
        } else {
            ""
        }
    );
    print_cells(&HEADER.map(str::to_string));
    for r in reports {
        print_cells(&row(r));
    }
    println!();
    print!("{}", markdown(reports));
}

pub fn output_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
        .join("tool-eval")
}

pub fn write_results(
    path: &Path,
    backend: &SharedBackend,
    max_new_tokens: u32,
    context: u32,
    reports: &[ConfigReport],
) {
    let info = backend.info();
    let doc = json!({
        "model": info.model.display().to_string(),
        "backend": info.backend,
        "chat_template": info.chat_template,
        "detail": info.detail,
        "max_new_tokens": max_new_tokens,
        "context_length": context,
        "sampling": "greedy (temperature 0, top_k 1, seed 0)",
        "configs": reports,
    });
    let text = serde_json::to_string_pretty(&doc).expect("results serialise to JSON");
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
