//! Plugin host bench: prints per-call overhead, instantiation, cold/cached load times and the
//! native-vs-WebAssembly throughput ratio of the same detector, in one run.
//!
//! Usage: `plugin-bench [DETECTOR.wasm] [--large COMPONENT.wasm]` (defaults:
//! `$CARGO_TARGET_DIR/plugins/testplug-detector.wasm` and `…/plugins/guard-python.wasm`, built by
//! scripts/build-plugins). The native twin is the very same scanner source compiled into this
//! binary. The large component (a Python plugin carries its interpreter: ~18 MB) measures the
//! cached load where it costs most.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rkmcp_plugin_host::{CacheOutcome, PluginHost, PluginsConfig};

#[path = "../../../../../tests/plugins/detector/src/scan.rs"]
#[allow(dead_code)]
mod scan;

/// Figures from FACTS.md (same kind of machine), and the targets.
const BASE_CALL_US: (f64, f64) = (1.0, 1.5);
const BASE_INSTANTIATE_US: (f64, f64) = (14.0, 21.0);
const BASE_CACHED_LOAD_MS: f64 = 0.2;
const TARGET_CALL_US: f64 = 1.5;
const TARGET_INSTANTIATE_US: f64 = 50.0;
const TARGET_CACHED_LOAD_MS: f64 = 5.0;
const TARGET_RATIO: f64 = 0.5;

fn default_wasm() -> PathBuf {
    target_dir().join("plugins").join("testplug-detector.wasm")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().and_then(Path::parent).map(Path::to_path_buf))
        })
        .unwrap_or_else(|| PathBuf::from("target"))
}

fn config(plugins: &Path, cache: Option<&Path>) -> PluginsConfig {
    PluginsConfig {
        dirs: vec![plugins.to_path_buf()],
        default_dir: false,
        cache_dir: cache.map(Path::to_path_buf),
        no_cache: cache.is_none(),
        ..PluginsConfig::default()
    }
}

/// Median over `runs` samples of the mean time of `inner` runs of `body`, in microseconds.
macro_rules! median_us {
    ($runs:expr, $inner:expr, $body:expr) => {{
        let mut samples = Vec::with_capacity($runs);
        for _ in 0..$runs {
            let start = Instant::now();
            for _ in 0..$inner {
                $body;
            }
            samples.push(start.elapsed().as_secs_f64() * 1e6 / $inner as f64);
        }
        samples.sort_by(|a: &f64, b: &f64| a.total_cmp(b));
        samples[samples.len() / 2]
    }};
}

fn transcript(bytes: usize) -> String {
    let prose =
        "The model thinks about the question and writes a fairly ordinary sentence of output. ";
    let call = "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"rockchip npu\", \"limit\": 5}}</tool_call>";
    let mut s = String::with_capacity(bytes + 256);
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(prose);
        if i % 8 == 7 {
            s.push_str(call);
        }
        i += 1;
    }
    s
}

fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// Loads a plugin of any kind by name (what the chat does when it first needs it).
fn load(host: &PluginHost, name: &str) -> anyhow::Result<()> {
    use rkmcp_plugin_host::PluginKind;
    let kind = host
        .discover()
        .into_iter()
        .find(|i| i.name == name)
        .and_then(|i| i.kind)
        .ok_or_else(|| anyhow::anyhow!("{name} is not a loadable plugin"))?;
    match kind {
        PluginKind::Detector => host.detector(name).map(drop),
        PluginKind::SchemaConverter => host.schema_converter(name).map(drop),
        PluginKind::ApprovalGuard => host.approval_guard(name).map(drop),
        PluginKind::Transport => host.transport(name).map(drop),
    }?;
    Ok(())
}

/// Cached load of a large component: after the first check (the artifact is hashed, as every
/// load did before), against the verified fast path (the artifact is mapped, not read).
fn large_component_load(wasm: &Path, small_cached_ms: f64) -> anyhow::Result<()> {
    let plugins = tempfile::tempdir()?;
    std::fs::copy(wasm, plugins.path().join("large.wasm"))?;
    let cache = tempfile::tempdir()?;
    let start = Instant::now();
    load(
        &PluginHost::new(config(plugins.path(), Some(cache.path())))?,
        "large",
    )?;
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let artifact = std::fs::read_dir(cache.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .ok_or_else(|| anyhow::anyhow!("no compiled artifact in the cache"))?;
    let verified = artifact.with_extension("verified");
    let mut hashed = Vec::new();
    let mut mapped = Vec::new();
    for _ in 0..7 {
        // Without the record the artifact is read and hashed: the cost of every load before.
        std::fs::remove_file(&verified)?;
        let host = PluginHost::new(config(plugins.path(), Some(cache.path())))?;
        let start = Instant::now();
        load(&host, "large")?;
        hashed.push(start.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(verified.is_file(), "the check was not recorded");
        let host = PluginHost::new(config(plugins.path(), Some(cache.path())))?;
        let start = Instant::now();
        load(&host, "large")?;
        mapped.push(start.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(host.discover()[0].cache == Some(CacheOutcome::Hit));
    }
    hashed.sort_by(|a, b| a.total_cmp(b));
    mapped.sort_by(|a, b| a.total_cmp(b));
    let (hashed_ms, mapped_ms) = (hashed[3], mapped[3]);
    println!(
        "\n== large component: {} ({:.1} MB, compiled {:.1} MB), median of 7",
        wasm.display(),
        std::fs::metadata(wasm)?.len() as f64 / 1e6,
        std::fs::metadata(&artifact)?.len() as f64 / 1e6
    );
    println!("cold, compile + store    {compile_ms:9.2} ms");
    println!(
        "cached, hashed each load {hashed_ms:9.3} ms   (read + SHA-256 + copy: the first load after a change)"
    );
    println!(
        "cached, verified mapped  {mapped_ms:9.3} ms   target <= {TARGET_CACHED_LOAD_MS} ms: {}; {:.1}x faster than hashed, {:.1}x the small detector's cached load",
        verdict(mapped_ms <= TARGET_CACHED_LOAD_MS),
        hashed_ms / mapped_ms,
        mapped_ms / small_cached_ms
    );
    Ok(())
}

fn verdict(ok: bool) -> &'static str {
    if ok { "meets target" } else { "MISSES target" }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let mut wasm = None;
    let mut large = None;
    while let Some(arg) = args.next() {
        if arg == "--large" {
            large =
                Some(PathBuf::from(args.next().ok_or_else(|| {
                    anyhow::anyhow!("--large needs a component path")
                })?));
        } else {
            wasm = Some(PathBuf::from(arg));
        }
    }
    let wasm = wasm.unwrap_or_else(default_wasm);
    anyhow::ensure!(
        wasm.is_file(),
        "{} not found; run scripts/build-plugins first",
        wasm.display()
    );
    let plugins = tempfile::tempdir()?;
    std::fs::copy(&wasm, plugins.path().join("bench.wasm"))?;
    let cache = tempfile::tempdir()?;
    println!(
        "plugin-bench: {} ({} KiB)",
        wasm.display(),
        std::fs::metadata(&wasm)?.len() / 1024
    );

    // Cold load: compile (no cache), compile + store in cache, then load from the cache.
    let start = Instant::now();
    let host = PluginHost::new(config(plugins.path(), None))?;
    host.detector("bench")?;
    let no_cache_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let host = PluginHost::new(config(plugins.path(), Some(cache.path())))?;
    host.detector("bench")?;
    let first_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut startup = Vec::new();
    let mut cached = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let h = PluginHost::new(config(plugins.path(), Some(cache.path())))?;
        startup.push(start.elapsed().as_secs_f64() * 1e3);
        let start = Instant::now();
        h.detector("bench")?;
        cached.push(start.elapsed().as_secs_f64() * 1e3);
        let info = h.discover().remove(0);
        anyhow::ensure!(
            info.cache == Some(CacheOutcome::Hit),
            "expected a cache hit, got {:?}",
            info.cache
        );
    }
    startup.sort_by(|a, b| a.total_cmp(b));
    cached.sort_by(|a, b| a.total_cmp(b));
    let startup_ms = startup[startup.len() / 2];
    let cached_ms = cached[cached.len() / 2];
    println!("\n== load (median of 7 for the cached figures)");
    println!("cold, no disk cache      {no_cache_ms:9.2} ms   (host start-up + compile)");
    println!(
        "cold, compile + store    {first_ms:9.2} ms   (host start-up + compile + write cache)"
    );
    println!(
        "host start-up            {startup_ms:9.3} ms   (Engine + WASI linker + epoch thread, once per process)"
    );
    println!(
        "cached component load    {cached_ms:9.3} ms   baseline ~{BASE_CACHED_LOAD_MS} ms, target <= {TARGET_CACHED_LOAD_MS} ms: {} ({:.1}x baseline); {:.0}x faster than a cold load",
        verdict(cached_ms <= TARGET_CACHED_LOAD_MS),
        cached_ms / BASE_CACHED_LOAD_MS,
        no_cache_ms / cached_ms
    );

    match large.or_else(|| {
        Some(target_dir().join("plugins").join("guard-python.wasm")).filter(|p| p.is_file())
    }) {
        Some(large) => large_component_load(&large, cached_ms)?,
        None => println!(
            "\n== large component: skipped (no guard-python.wasm; scripts/build-plugins builds it)"
        ),
    }

    // Instantiation from the pre-linked component.
    let detector = host.detector("bench")?;
    for _ in 0..50 {
        detector.instantiate_only().await?;
    }
    let inst_us = median_us!(15, 100, detector.instantiate_only().await?);
    let session_us = median_us!(15, 100, detector.start_session("").await?);
    println!("\n== instantiate (fresh Store + InstancePre::instantiate_async)");
    println!(
        "instantiate              {inst_us:9.2} us   baseline {}-{} us, target <= {TARGET_INSTANTIATE_US} us: {} ({:.2}x baseline high)",
        BASE_INSTANTIATE_US.0,
        BASE_INSTANTIATE_US.1,
        verdict(inst_us <= TARGET_INSTANTIATE_US),
        inst_us / BASE_INSTANTIATE_US.1
    );
    println!("instantiate + session    {session_us:9.2} us   (what each model response pays)");
    let pooled_host = PluginHost::new(PluginsConfig {
        pooling: true,
        ..config(plugins.path(), Some(cache.path()))
    })?;
    let pooled = pooled_host.detector("bench")?;
    for _ in 0..50 {
        pooled.instantiate_only().await?;
    }
    let pooled_us = median_us!(15, 100, pooled.instantiate_only().await?);
    println!(
        "instantiate, pooling     {pooled_us:9.2} us   ([plugins] pooling = true): {}",
        verdict(pooled_us <= TARGET_INSTANTIATE_US)
    );

    // Per-call overhead of feed with a 100-byte chunk of plain text.
    let chunk = "x".repeat(100);
    let mut session = detector.start_session("").await?;
    for _ in 0..2000 {
        session.feed_raw(&chunk).await?;
    }
    let mut session = detector.start_session("").await?;
    let raw_us = median_us!(15, 2000, session.feed_raw(&chunk).await?);
    let mut session = detector.start_session("").await?;
    let full_us = median_us!(15, 2000, session.feed(&chunk).await?);
    let mut native = scan::Scanner::default();
    let mut out = Vec::new();
    let native_us = median_us!(15, 20000, {
        out.clear();
        native.feed(std::hint::black_box(&chunk), &mut out);
    });
    println!("\n== feed(100-byte chunk), per call");
    println!(
        "component, bare call     {raw_us:9.3} us   baseline {}-{} us, target <= {TARGET_CALL_US} us: {} ({:.2}x baseline high)",
        BASE_CALL_US.0,
        BASE_CALL_US.1,
        verdict(raw_us <= TARGET_CALL_US),
        raw_us / BASE_CALL_US.1
    );
    println!(
        "component, native events {full_us:9.3} us   (incl. conversion to rkmcp_tool_formats events)"
    );
    println!("native twin              {native_us:9.3} us   (the same scanner compiled natively)");

    // Throughput over a 1 MB transcript, streamed in 16-byte chunks (token-sized) and 100-byte chunks.
    let text = transcript(1 << 20);
    println!("\n== 1 MiB transcript, native twin vs component (best of 5)");
    for size in [16usize, 100] {
        let parts = chunks(&text, size);
        let mut best_native = Duration::MAX;
        let mut native_calls = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let mut s = scan::Scanner::default();
            let mut out = Vec::new();
            for p in &parts {
                s.feed(p, &mut out);
            }
            s.finish(&mut out);
            best_native = best_native.min(start.elapsed());
            native_calls = out
                .iter()
                .filter(|f| matches!(f, scan::Found::Call { .. }))
                .count();
        }
        let mut best_wasm = Duration::MAX;
        let mut wasm_calls = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let mut s = detector.start_session("").await?;
            let mut events = Vec::new();
            for p in &parts {
                events.extend(s.feed(p).await?);
            }
            events.extend(s.finish().await?);
            best_wasm = best_wasm.min(start.elapsed());
            wasm_calls = events
                .iter()
                .filter(|e| matches!(e, rkmcp_plugin_host::DetectorEvent::ToolCall(_)))
                .count();
        }
        anyhow::ensure!(
            native_calls == wasm_calls,
            "native found {native_calls} calls, component {wasm_calls}"
        );
        let mb = text.len() as f64 / 1e6;
        let nat = mb / best_native.as_secs_f64();
        let wasm = mb / best_wasm.as_secs_f64();
        let ratio = wasm / nat;
        println!(
            "{size:>3}-byte chunks: native {nat:8.1} MB/s, component {wasm:8.1} MB/s, ratio {ratio:.2}x (target >= {TARGET_RATIO}x: {}), {wasm_calls} calls found by both",
            verdict(ratio >= TARGET_RATIO)
        );
    }
    Ok(())
}
