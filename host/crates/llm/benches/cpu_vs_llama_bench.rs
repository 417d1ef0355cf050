//! rkmcp's CPU backend against plain llama.cpp, on the same model and thread count: a C++ program
//! (`llama_baseline.cpp`, measuring what `llama-bench` measures) linked against the very static
//! llama.cpp libraries llama-cpp-sys-2 built for rkmcp — same vendored sources, same flags. (The
//! crate does not ship `tools/llama-bench`, so llama-bench itself cannot be built from it.)
//!
//!     cargo bench -p rkmcp-llm --bench cpu_vs_llama_bench
//!
//! Environment: RKMCP_BENCH_MODEL (default: the default model), RKMCP_BENCH_THREADS (default 1),
//! RKMCP_BENCH_ROUNDS (default 6). Prints prefill and generation tokens/s for both and their
//! ratio (target ≥ 0.97), rkmcp's time to first token and both peak RSS figures. Rounds
//! alternate between the two so load from other processes hits both alike; the best round of
//! each counts.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use rkmcp_llm::llama::LlamaBackend;
use rkmcp_llm::{AbortHandle, Backend, GenerateRequest, Message, ModelConfig, SamplingConfig};

const PROMPT_TOKENS: usize = 128;
const GEN_TOKENS: u32 = 64;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `<target>/<profile>/deps/<bench>` → `<target>`.
fn target_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe
        .ancestors()
        .nth(3)
        .context("bench binary lives in <target>/<profile>/deps")?
        .to_path_buf())
}

/// The llama-cpp-sys-2 build this bench links: the install dir with `include/` and `lib/`.
fn sys_out_dir(target: &Path) -> anyhow::Result<PathBuf> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for profile in ["release", "bench"] {
        let Ok(entries) = std::fs::read_dir(target.join(profile).join("build")) else {
            continue;
        };
        for e in entries.flatten() {
            let out = e.path().join("out");
            if e.file_name()
                .to_string_lossy()
                .starts_with("llama-cpp-sys-2-")
                && let Ok(meta) = std::fs::metadata(out.join("lib/libllama.a"))
                && let Ok(modified) = meta.modified()
                && newest.as_ref().is_none_or(|(t, _)| modified > *t)
            {
                newest = Some((modified, out));
            }
        }
    }
    Ok(newest
        .context("no llama-cpp-sys-2 build (out/lib/libllama.a) in the target dir")?
        .1)
}

/// Compiles `llama_baseline.cpp` against the static llama.cpp libraries rkmcp links. The crate
/// ships llama.cpp's library sources but not `tools/llama-bench`, so the baseline is a small C++
/// program that measures what llama-bench measures, on exactly the same compiled llama.cpp.
fn build_baseline(target: &Path) -> anyhow::Result<PathBuf> {
    let out = sys_out_dir(target)?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/llama_baseline.cpp");
    let bin = target.join("llama_baseline");
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args(["-O2", "-std=c++17"])
        .arg(&source)
        .arg("-I")
        .arg(out.join("include"))
        .arg("-L")
        .arg(out.join("lib"))
        .args([
            "-lllama",
            "-lggml",
            "-lggml-cpu",
            "-lggml-base",
            "-lpthread",
            "-ldl",
            "-lm",
            "-o",
        ])
        .arg(&bin)
        .status()
        .context("run the C++ compiler")?;
    if !status.success() {
        bail!("compiling {} failed", source.display());
    }
    Ok(bin)
}

struct Figures {
    prefill: f64,
    generation: f64,
}

fn baseline(bin: &Path, model: &Path, threads: u32) -> anyhow::Result<Figures> {
    let out = Command::new(bin)
        .arg(model)
        .args([
            threads.to_string(),
            PROMPT_TOKENS.to_string(),
            GEN_TOKENS.to_string(),
            "1".to_string(),
        ])
        .output()?;
    if !out.status.success() {
        bail!(
            "llama_baseline failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("llama_baseline output")?;
    Ok(Figures {
        prefill: v["pp_ts"].as_f64().unwrap_or(0.0),
        generation: v["tg_ts"].as_f64().unwrap_or(0.0),
    })
}

/// A user turn that renders to about PROMPT_TOKENS tokens.
fn prompt_of(backend: &LlamaBackend, tokens: usize) -> Message {
    let mut words = String::new();
    let filler = [
        "river", "mountain", "library", "engine", "garden", "window", "planet", "silver",
    ];
    let mut i = 0;
    loop {
        let msg = Message::user(format!("Summarize: {words}"));
        let rendered = backend
            .render(std::slice::from_ref(&msg))
            .unwrap_or_default();
        let n = backend
            .model()
            .vocab()
            .tokenize(rendered.as_bytes(), false, true)
            .len();
        if n >= tokens {
            return msg;
        }
        words.push_str(filler[i % filler.len()]);
        words.push(' ');
        i += 1;
    }
}

struct Ours {
    prefill: f64,
    generation: f64,
    ttft_ms: f64,
    generated: u32,
}

fn ours(backend: &mut LlamaBackend, prompt: &Message) -> anyhow::Result<Ours> {
    let abort = AbortHandle::new();
    // Prefill: the whole prompt, one token generated, nothing from the cache.
    let mut request = GenerateRequest::new(vec![prompt.clone()]);
    request.reuse_cache = false;
    request.max_new_tokens = Some(1);
    let pre = backend.generate(&request, &abort, &mut |_| {})?;
    // Generation: a short prompt and a long answer.
    let mut request = GenerateRequest::new(vec![Message::user(
        "Write a long story about a lighthouse keeper.",
    )]);
    request.reuse_cache = false;
    request.max_new_tokens = Some(GEN_TOKENS);
    let generation = backend.generate(&request, &abort, &mut |_| {})?;
    Ok(Ours {
        prefill: pre.stats.prefill_tokens_per_s,
        generation: generation.stats.tokens_per_s,
        ttft_ms: generation.stats.time_to_first_token_ms,
        generated: generation.stats.generated_tokens,
    })
}

fn children_peak_rss_mib() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) } != 0 {
        return 0.0;
    }
    // SAFETY: initialised by the successful call.
    unsafe { usage.assume_init() }.ru_maxrss as f64 / 1024.0
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes --bench; nothing to filter here.
    let model = std::env::var_os("RKMCP_BENCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(rkmcp_llm::store::default_model_path);
    if !model.is_file() {
        bail!(
            "{} is missing: run scripts/setup.d/50-model.sh or set RKMCP_BENCH_MODEL",
            model.display()
        );
    }
    let threads: u32 = env_or("RKMCP_BENCH_THREADS", 1);
    let rounds: u32 = env_or("RKMCP_BENCH_ROUNDS", 6);
    let target = target_dir()?;
    let baseline_bin = build_baseline(&target)?;

    let config = ModelConfig {
        sampling: SamplingConfig::greedy(),
        threads: Some(threads),
        context_length: Some(2048),
        max_new_tokens: GEN_TOKENS,
        ..Default::default()
    };
    let load_start = std::time::Instant::now();
    let mut backend = LlamaBackend::load(&model, &config)?;
    let load_ms = load_start.elapsed().as_secs_f64() * 1000.0;
    let prompt = prompt_of(&backend, PROMPT_TOKENS);
    // Warm-up: page in the weights for both.
    ours(&mut backend, &prompt)?;

    let mut best_theirs = Figures {
        prefill: 0.0,
        generation: 0.0,
    };
    let mut best_ours = Ours {
        prefill: 0.0,
        generation: 0.0,
        ttft_ms: f64::MAX,
        generated: 0,
    };
    for round in 1..=rounds {
        let t = baseline(&baseline_bin, &model, threads)?;
        let o = ours(&mut backend, &prompt)?;
        eprintln!(
            "round {round}: llama.cpp pp {:.1} tg {:.1} | rkmcp pp {:.1} tg {:.1} ({} tokens) ttft {:.1} ms",
            t.prefill, t.generation, o.prefill, o.generation, o.generated, o.ttft_ms
        );
        best_theirs.prefill = best_theirs.prefill.max(t.prefill);
        best_theirs.generation = best_theirs.generation.max(t.generation);
        best_ours.prefill = best_ours.prefill.max(o.prefill);
        best_ours.generation = best_ours.generation.max(o.generation);
        best_ours.ttft_ms = best_ours.ttft_ms.min(o.ttft_ms);
        best_ours.generated = o.generated;
    }

    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let verdict = |r: f64| {
        if r >= 0.97 {
            "ok (≥ 0.97)"
        } else {
            "BELOW 0.97"
        }
    };
    let pp = ratio(best_ours.prefill, best_theirs.prefill);
    let tg = ratio(best_ours.generation, best_theirs.generation);
    println!(
        "model {} · {threads} thread(s) · best of {rounds} rounds",
        model.display()
    );
    println!(
        "{:<28} {:>12} {:>12} {:>8}",
        "", "rkmcp", "llama.cpp", "ratio"
    );
    println!(
        "{:<28} {:>12.1} {:>12.1} {:>8.3}  {}",
        format!("prefill tok/s (pp{PROMPT_TOKENS})"),
        best_ours.prefill,
        best_theirs.prefill,
        pp,
        verdict(pp)
    );
    println!(
        "{:<28} {:>12.1} {:>12.1} {:>8.3}  {}",
        format!("generation tok/s (tg{GEN_TOKENS})"),
        best_ours.generation,
        best_theirs.generation,
        tg,
        verdict(tg)
    );
    println!(
        "{:<28} {:>12.1}",
        "time to first token ms", best_ours.ttft_ms
    );
    println!("{:<28} {:>12.1}", "model load ms", load_ms);
    println!(
        "{:<28} {:>12.1} {:>12.1}",
        "peak RSS MiB",
        rkmcp_llm::peak_rss_mib(),
        children_peak_rss_mib()
    );
    Ok(())
}
