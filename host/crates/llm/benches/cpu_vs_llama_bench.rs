//! rkmcp's CPU backend against llama.cpp's own `llama-bench`, built from the same vendored
//! llama.cpp sources with the same CMake options, on the same model and thread count.
//!
//!     cargo bench -p rkmcp-llm --bench cpu_vs_llama_bench
//!
//! Environment: RKMCP_BENCH_MODEL (default: the default model), RKMCP_BENCH_THREADS (default 1),
//! RKMCP_BENCH_ROUNDS (default 3). Prints prefill and generation tokens/s for both and their
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

/// The llama-cpp-sys-2 build this bench links: its CMake cache and its llama.cpp sources.
fn sys_build(target: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for profile in ["release", "bench"] {
        let Ok(entries) = std::fs::read_dir(target.join(profile).join("build")) else {
            continue;
        };
        for e in entries.flatten() {
            let cache = e.path().join("out/build/CMakeCache.txt");
            if e.file_name()
                .to_string_lossy()
                .starts_with("llama-cpp-sys-2-")
                && let Ok(meta) = std::fs::metadata(&cache)
                && let Ok(modified) = meta.modified()
                && newest.as_ref().is_none_or(|(t, _)| modified > *t)
            {
                newest = Some((modified, cache));
            }
        }
    }
    let (_, cache) = newest.context("no llama-cpp-sys-2 CMake build found in the target dir")?;
    let text = std::fs::read_to_string(&cache)?;
    let source = text
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .context("CMAKE_HOME_DIRECTORY missing from the CMake cache")?;
    Ok((cache, PathBuf::from(source)))
}

/// Builds `llama-bench` from the same sources with the same GGML options as the crate build.
fn build_llama_bench(target: &Path) -> anyhow::Result<PathBuf> {
    let (cache, source) = sys_build(target)?;
    let text = std::fs::read_to_string(&cache)?;
    let mut defines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with("//") && !l.starts_with('#'))
        .filter_map(|l| {
            let (key, value) = l.split_once('=')?;
            let (name, ty) = key.split_once(':')?;
            let keep = (name.starts_with("GGML_") && ty != "INTERNAL" && ty != "STATIC")
                || matches!(
                    name,
                    "CMAKE_BUILD_TYPE" | "CMAKE_C_FLAGS" | "CMAKE_CXX_FLAGS" | "BUILD_SHARED_LIBS"
                );
            keep.then(|| format!("-D{name}:{ty}={value}"))
        })
        .collect();
    defines.extend(
        [
            "LLAMA_BUILD_TOOLS=ON",
            "LLAMA_BUILD_COMMON=ON",
            "LLAMA_BUILD_TESTS=OFF",
            "LLAMA_BUILD_EXAMPLES=OFF",
            "LLAMA_BUILD_SERVER=OFF",
            "LLAMA_CURL=OFF",
            "LLAMA_OPENSSL=OFF",
        ]
        .iter()
        .map(|d| format!("-D{d}")),
    );
    let build = target.join("llama-bench-build");
    let bin = build.join("bin/llama-bench");
    let stamp = build.join("rkmcp-defines.txt");
    let wanted = format!("{}\n{}", source.display(), defines.join("\n"));
    if bin.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(bin);
    }
    eprintln!(
        "building llama-bench from {} into {}",
        source.display(),
        build.display()
    );
    let status = Command::new("cmake")
        .arg("-S")
        .arg(&source)
        .arg("-B")
        .arg(&build)
        .args(&defines)
        .status()?;
    if !status.success() {
        bail!("cmake configure failed");
    }
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .to_string();
    let status = Command::new("cmake")
        .args(["--build"])
        .arg(&build)
        .args([
            "--config",
            "Release",
            "--target",
            "llama-bench",
            "-j",
            &jobs,
        ])
        .status()?;
    if !status.success() {
        bail!("building llama-bench failed");
    }
    std::fs::write(&stamp, wanted)?;
    Ok(bin)
}

struct Figures {
    prefill: f64,
    generation: f64,
}

fn llama_bench(bin: &Path, model: &Path, threads: u32) -> anyhow::Result<Figures> {
    let out = Command::new(bin)
        .arg("-m")
        .arg(model)
        .args([
            "-t",
            &threads.to_string(),
            "-p",
            &PROMPT_TOKENS.to_string(),
            "-n",
            &GEN_TOKENS.to_string(),
        ])
        .args(["-r", "2", "-o", "json"])
        .output()?;
    if !out.status.success() {
        bail!(
            "llama-bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let rows: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("llama-bench JSON")?;
    let mut figures = Figures {
        prefill: 0.0,
        generation: 0.0,
    };
    for row in rows.as_array().context("llama-bench JSON is an array")? {
        let ts = row["avg_ts"].as_f64().unwrap_or(0.0);
        if row["n_prompt"].as_u64().unwrap_or(0) > 0 {
            figures.prefill = ts;
        } else {
            figures.generation = ts;
        }
    }
    Ok(figures)
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
    let rounds: u32 = env_or("RKMCP_BENCH_ROUNDS", 3);
    let target = target_dir()?;
    let bench_bin = build_llama_bench(&target)?;

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
        let t = llama_bench(&bench_bin, &model, threads)?;
        let o = ours(&mut backend, &prompt)?;
        eprintln!(
            "round {round}: llama-bench pp {:.1} tg {:.1} | rkmcp pp {:.1} tg {:.1} ({} tokens) ttft {:.1} ms",
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
        "", "rkmcp", "llama-bench", "ratio"
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
