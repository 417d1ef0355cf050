//! tools/call round trips over stdio, three ways in one run: through rkmcp's session layer,
//! through rmcp used directly, and a raw floor (a JSON-RPC line written to the child's stdin and
//! its reply line read back). Against our near-zero-cost fixture `echo` (so the server's cost
//! does not hide the client's) and against server-everything's `echo`. Also 8 calls in flight on
//! one session, and the time until all tools of 3 servers are listed vs each server alone.
//! The client comparisons pin 2025-11-25 (the version the rmcp-direct and floor clients speak);
//! a separate section compares rkmcp's 2026-07-28 stateless calls (version and capabilities in
//! every request's `_meta`) with its 2025-11-25 session calls on the same fixture server.
//!
//! Crash recovery: the time from a server crashing (tests/servers/flaky.py, killed mid-call) until
//! its tools are back, against the same server's own cold start (spawn, initialize, list), as a
//! ratio (target: under 2x).
//!
//! Gateway: the same rmcp client calling `echo` directly and through `rkmcp serve` (stdio both
//! ways, the gateway in front of the same server), p50 and p99 and 8 calls in flight, as ratios
//! (target: at most 1.3x direct at p50), against the fixture (the worst case: the server costs
//! nothing) and server-everything. Also through a relay that copies bytes and reads nothing
//! (`rkmcp-fixture-server --relay`): what any stdio gateway costs, so `gateway / relay` is the
//! share of rkmcp's own work.
//!
//! Run: `cargo bench -p rkmcp-tests --bench mcp_roundtrip` (after scripts/setup).
//! Env: BENCH_CALLS (default 2000), BENCH_FLAVOR=current|multi|both (default both),
//! BENCH_ONLY=gateway (only the `rkmcp serve` section), BENCH_GATEWAY_BASELINE=PATH (another
//! rkmcp binary, measured in the same run for before/after ratios).
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rkmcp::config::{self, Config};
use rkmcp::mcp::SessionManager;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams,
    ProtocolVersion,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

#[derive(Clone)]
struct Target {
    label: &'static str,
    program: String,
    args: Vec<String>,
    tool: &'static str,
}

struct Stats {
    p50: f64,
    p99: f64,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    Stats {
        p50: at(0.5),
        p99: at(0.99),
    }
}

fn echo_args() -> serde_json::Map<String, Value> {
    json!({"message": "ping"})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

async fn floor(t: &Target, calls: usize) -> anyhow::Result<Stats> {
    let mut child = tokio::process::Command::new(&t.program)
        .args(&t.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let mut stdout = BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
    );
    let mut line = String::new();
    let send = async |msg: Value, stdin: &mut tokio::process::ChildStdin| -> anyhow::Result<()> {
        let mut text = serde_json::to_string(&msg)?;
        text.push('\n');
        stdin.write_all(text.as_bytes()).await?;
        Ok(())
    };
    send(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}), &mut stdin).await?;
    stdout.read_line(&mut line).await?;
    send(
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        &mut stdin,
    )
    .await?;
    let mut samples = Vec::with_capacity(calls);
    for id in 1..=calls + calls / 10 {
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":t.tool,"arguments":{"message":"ping"}}});
        let started = Instant::now();
        send(msg, &mut stdin).await?;
        // Skip notifications the server may interleave; stop at our response.
        loop {
            line.clear();
            if stdout.read_line(&mut line).await? == 0 {
                anyhow::bail!("server closed stdout");
            }
            if line.contains(&format!("\"id\":{id}")) {
                break;
            }
        }
        if id > calls / 10 {
            samples.push(started.elapsed());
        }
    }
    drop(stdin);
    let _ = child.kill().await;
    Ok(stats(samples))
}

fn client_info() -> InitializeRequestParams {
    InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("bench", "0"),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

async fn rmcp_direct(t: &Target, calls: usize, in_flight: usize) -> anyhow::Result<(Stats, f64)> {
    let mut cmd = tokio::process::Command::new(&t.program);
    cmd.args(&t.args);
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    let service = client_info().serve(transport).await?;
    let peer = service.peer().clone();
    let tool = t.tool;
    let call = move |peer: rmcp::Peer<RoleClient>| async move {
        let mut p = CallToolRequestParams::new(tool);
        p.arguments = Some(echo_args());
        peer.call_tool(p).await
    };
    let (s, throughput) = drive(calls, in_flight, || {
        let peer = peer.clone();
        async move { call(peer).await.map(|_| ()).map_err(anyhow::Error::from) }
    })
    .await?;
    let _ = service.cancel().await;
    Ok((s, throughput))
}

async fn rkmcp_session(t: &Target, calls: usize, in_flight: usize) -> anyhow::Result<(Stats, f64)> {
    rkmcp_session_speaking(t, calls, in_flight, "2025-11-25").await
}

/// [`rkmcp_session`] with the protocol setting `protocol` (`auto` or a version).
async fn rkmcp_session_speaking(
    t: &Target,
    calls: usize,
    in_flight: usize,
    protocol: &str,
) -> anyhow::Result<(Stats, f64)> {
    let dir = tempfile::tempdir()?;
    let config = one_server_config_speaking(dir.path(), std::slice::from_ref(t), protocol)?;
    let manager = SessionManager::start(&config, None).await;
    if let Some(f) = manager.failures().first() {
        anyhow::bail!("{}", f.error);
    }
    let session = manager
        .session(t.label)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no session"))?;
    let negotiated = session.protocol_version().map(|v| v.to_string());
    if protocol != "auto" && negotiated.as_deref() != Some(protocol) {
        anyhow::bail!("asked for {protocol}, the server settled on {negotiated:?}");
    }
    let tool = t.tool;
    let result = drive(calls, in_flight, || {
        let session = session.clone();
        async move {
            session
                .call_tool(tool, Some(echo_args()))
                .await
                .map(|_| ())
                .map_err(anyhow::Error::from)
        }
    })
    .await;
    drop(session);
    manager.shutdown().await;
    result
}

/// Runs `calls` calls (after a 10% warm-up) with `in_flight` concurrent callers; returns
/// per-call latency stats and calls per second.
async fn drive<F, Fut>(calls: usize, in_flight: usize, make: F) -> anyhow::Result<(Stats, f64)>
where
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    for _ in 0..calls / 10 {
        make().await?;
    }
    let started = Instant::now();
    let mut samples = Vec::with_capacity(calls);
    if in_flight <= 1 {
        for _ in 0..calls {
            let t = Instant::now();
            make().await?;
            samples.push(t.elapsed());
        }
    } else {
        let mut set = tokio::task::JoinSet::new();
        let mut issued = 0;
        while issued < calls.min(in_flight) {
            let f = make();
            set.spawn(async move {
                let t = Instant::now();
                f.await.map(|_| t.elapsed())
            });
            issued += 1;
        }
        while let Some(done) = set.join_next().await {
            samples.push(done??);
            if issued < calls {
                let f = make();
                set.spawn(async move {
                    let t = Instant::now();
                    f.await.map(|_| t.elapsed())
                });
                issued += 1;
            }
        }
    }
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    Ok((stats(samples), rate))
}

fn one_server_config(dir: &Path, targets: &[Target]) -> anyhow::Result<Config> {
    one_server_config_speaking(dir, targets, "auto")
}

fn one_server_config_speaking(
    dir: &Path,
    targets: &[Target],
    protocol: &str,
) -> anyhow::Result<Config> {
    let mut toml = String::new();
    for t in targets {
        let args: Vec<String> = t.args.iter().map(|a| format!("{a:?}")).collect();
        toml.push_str(&format!(
            "[[servers]]\nname = {:?}\ncommand = {:?}\nargs = [{}]\nprotocol = {protocol:?}\n",
            t.label,
            t.program,
            args.join(", ")
        ));
    }
    let path = dir.join("rkmcp.toml");
    let mut config = config::load_str(&path, &toml)?;
    config.log_dir = dir.join("logs");
    Ok(config)
}

async fn startup(targets: &[Target]) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut singles = Vec::new();
    for t in targets {
        let config = one_server_config(dir.path(), std::slice::from_ref(t))?;
        let started = Instant::now();
        let m = SessionManager::start(&config, None).await;
        let took = started.elapsed();
        if let Some(f) = m.failures().first() {
            anyhow::bail!("{}", f.error);
        }
        m.shutdown().await;
        singles.push((t.label, took));
    }
    let config = one_server_config(dir.path(), targets)?;
    let started = Instant::now();
    let m = SessionManager::start(&config, None).await;
    let all = started.elapsed();
    let tools = m.tools().0.len();
    m.shutdown().await;
    let slowest = singles.iter().map(|(_, d)| *d).max().unwrap_or_default();
    let sum: Duration = singles.iter().map(|(_, d)| *d).sum();
    println!("\n## start-up until all tools are listed ({tools} tools)");
    for (label, d) in &singles {
        println!("  {label:<12} alone: {:>8.1} ms", d.as_secs_f64() * 1e3);
    }
    println!(
        "  all {} together: {:.1} ms = {:.2}x the slowest single ({:.1} ms), {:.2}x the sum ({:.1} ms)",
        targets.len(),
        all.as_secs_f64() * 1e3,
        all.as_secs_f64() / slowest.as_secs_f64(),
        slowest.as_secs_f64() * 1e3,
        all.as_secs_f64() / sum.as_secs_f64(),
        sum.as_secs_f64() * 1e3
    );
    Ok(())
}

async fn run(calls: usize, flavor: &str) -> anyhow::Result<()> {
    let deps = rkmcp_tests::deps();
    let everything =
        deps.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut targets = vec![Target {
        label: "fixture",
        program: FIXTURE.into(),
        args: vec![],
        tool: "echo",
    }];
    if everything.exists() {
        targets.push(Target {
            label: "everything",
            program: "node".into(),
            args: vec![everything.display().to_string(), "stdio".into()],
            tool: "echo",
        });
    } else {
        println!("(server-everything not installed: run scripts/setup to include it)");
    }
    if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "gateway") {
        println!("\n# rkmcp serve only, {flavor}-thread tokio runtime (client side)");
        for t in &targets {
            let n = if t.label == "fixture" {
                calls
            } else {
                calls / 4
            };
            gateway_latency(t, n).await?;
        }
        return Ok(());
    }
    println!(
        "\n# tools/call round trips over stdio, {calls} sequential calls, {flavor}-thread tokio runtime"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>13} {:>13}",
        "server",
        "floor p50",
        "rmcp p50",
        "rkmcp p50",
        "floor p99",
        "rmcp p99",
        "rkmcp p99",
        "rkmcp/rmcp",
        "rkmcp/floor"
    );
    for t in &targets {
        let n = if t.label == "fixture" {
            calls
        } else {
            calls / 4
        };
        let f = floor(t, n).await?;
        // Interleave the two clients so drift on a loaded machine hits both alike.
        let (r1, _) = rmcp_direct(t, n / 2, 1).await?;
        let (k1, _) = rkmcp_session(t, n / 2, 1).await?;
        let (r2, _) = rmcp_direct(t, n / 2, 1).await?;
        let (k2, _) = rkmcp_session(t, n / 2, 1).await?;
        let r = Stats {
            p50: (r1.p50 + r2.p50) / 2.0,
            p99: (r1.p99 + r2.p99) / 2.0,
        };
        let k = Stats {
            p50: (k1.p50 + k2.p50) / 2.0,
            p99: (k1.p99 + k2.p99) / 2.0,
        };
        println!(
            "{:<12} {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>12.3}x {:>12.2}x",
            t.label,
            f.p50,
            r.p50,
            k.p50,
            f.p99,
            r.p99,
            k.p99,
            k.p50 / r.p50,
            k.p50 / f.p50
        );
    }
    let t = &targets[0];
    let (_, r8) = rmcp_direct(t, calls, 8).await?;
    let (_, k8) = rkmcp_session(t, calls, 8).await?;
    println!(
        "\n## 8 calls in flight on one session (fixture echo): rmcp {r8:.0} calls/s, rkmcp {k8:.0} calls/s, rkmcp/rmcp throughput {:.3}x",
        k8 / r8
    );
    protocol_versions(t, calls).await?;
    for t in &targets {
        let n = if t.label == "fixture" {
            calls
        } else {
            calls / 4
        };
        gateway_latency(t, n).await?;
    }
    Ok(())
}

/// `rkmcp serve` (the binary `bin`) in front of `t` alone, as a target an rmcp client spawns.
fn gateway_target(t: &Target, bin: &Path, dir: &Path) -> anyhow::Result<Target> {
    let args: Vec<String> = t.args.iter().map(|a| rkmcp_tests::toml_str(a)).collect();
    let toml = format!(
        "[[servers]]\nname = \"fx\"\ncommand = {}\nargs = [{}]\nprefix = \"\"\nprotocol = \"2025-11-25\"\n\n[chat.approval]\nauto_approve = [\"fx/*\"]\n",
        rkmcp_tests::toml_str(&t.program),
        args.join(", ")
    );
    let path = dir.join("rkmcp.toml");
    std::fs::write(&path, toml)?;
    let home = dir.display().to_string();
    Ok(Target {
        label: "gateway",
        program: "env".into(),
        args: vec![
            format!("XDG_CONFIG_HOME={home}/config"),
            format!("XDG_STATE_HOME={home}/state"),
            format!("XDG_CACHE_HOME={home}/cache"),
            bin.display().to_string(),
            "--config".into(),
            path.display().to_string(),
            "serve".into(),
            "--no-local-model".into(),
        ],
        tool: t.tool,
    })
}

/// tools/call through `rkmcp serve` vs the same call direct, same client, same server,
/// interleaved so machine drift hits both alike. With `BENCH_GATEWAY_BASELINE=PATH` (another
/// build of rkmcp), that binary is measured in the same run too, for before/after ratios.
async fn gateway_latency(t: &Target, calls: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut gateways = vec![(
        "gateway",
        gateway_target(t, &rkmcp_tests::rkmcp(), dir.path())?,
    )];
    let base_dir = tempfile::tempdir()?;
    if let Ok(baseline) = std::env::var("BENCH_GATEWAY_BASELINE") {
        gateways.push((
            "baseline",
            gateway_target(t, Path::new(&baseline), base_dir.path())?,
        ));
    }
    // The floor of any stdio gateway: a process that copies bytes both ways without reading
    // them (one more process, two more pipe hops). `gateway / relay` is what rkmcp's own work
    // costs; `relay / direct` what no gateway can avoid.
    let mut relay_args = vec!["--relay".to_string(), t.program.clone()];
    relay_args.extend(t.args.iter().cloned());
    let relay = Target {
        label: "relay",
        program: FIXTURE.into(),
        args: relay_args,
        tool: t.tool,
    };
    let rounds = 2;
    let n = calls / rounds;
    let mut direct = Vec::new();
    let mut relayed = Vec::new();
    let mut through: Vec<Vec<Stats>> = gateways.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        direct.push(rmcp_direct(t, n, 1).await?.0);
        relayed.push(rmcp_direct(&relay, n, 1).await?.0);
        for (i, (_, g)) in gateways.iter().enumerate() {
            through[i].push(rmcp_direct(g, n, 1).await?.0);
        }
    }
    let mean = |v: &[Stats]| Stats {
        p50: v.iter().map(|s| s.p50).sum::<f64>() / v.len() as f64,
        p99: v.iter().map(|s| s.p99).sum::<f64>() / v.len() as f64,
    };
    let d = mean(&direct);
    let (_, d8) = rmcp_direct(t, calls, 8).await?;
    let r = mean(&relayed);
    println!(
        "\n## rkmcp serve ({} echo over stdio, rmcp client): direct p50 {:.1}µs p99 {:.1}µs, 8 in flight {d8:.0} calls/s",
        t.label, d.p50, d.p99
    );
    println!(
        "  relay     p50 {:.1}µs p99 {:.1}µs; /direct p50 {:.2}x (a byte-copying process: the floor of any stdio gateway)",
        r.p50,
        r.p99,
        r.p50 / d.p50
    );
    for (i, (label, g)) in gateways.iter().enumerate() {
        let s = mean(&through[i]);
        let (_, g8) = rmcp_direct(g, calls, 8).await?;
        println!(
            "  {label:<9} p50 {:.1}µs p99 {:.1}µs; /direct p50 {:.2}x (target <= 1.3x), p99 {:.2}x; \
             /relay p50 {:.2}x; 8 in flight {g8:.0} calls/s ({:.2}x direct)",
            s.p50,
            s.p99,
            s.p50 / d.p50,
            s.p99 / d.p99,
            s.p50 / r.p50,
            g8 / d8
        );
    }
    Ok(())
}

/// rkmcp against the same fixture server in both lifecycles, interleaved so machine drift hits
/// both alike: 2026-07-28 stateless calls vs 2025-11-25 session calls.
async fn protocol_versions(t: &Target, calls: usize) -> anyhow::Result<()> {
    let (s1, _) = rkmcp_session_speaking(t, calls / 2, 1, "2025-11-25").await?;
    let (n1, _) = rkmcp_session_speaking(t, calls / 2, 1, "2026-07-28").await?;
    let (s2, _) = rkmcp_session_speaking(t, calls / 2, 1, "2025-11-25").await?;
    let (n2, _) = rkmcp_session_speaking(t, calls / 2, 1, "2026-07-28").await?;
    let session = (s1.p50 + s2.p50) / 2.0;
    let stateless = (n1.p50 + n2.p50) / 2.0;
    println!(
        "\n## protocol versions (fixture echo, rkmcp): 2026-07-28 stateless p50 {stateless:.1}µs, 2025-11-25 session p50 {session:.1}µs, stateless/session {:.3}x",
        stateless / session
    );
    Ok(())
}

/// Crash until tools are back, vs cold start of the same server, both measured here.
async fn crash_recovery(rounds: usize) -> anyhow::Result<()> {
    use rkmcp::mcp::SessionEvent;
    use rkmcp::mcp::health::Transition;
    let deps = rkmcp_tests::deps();
    let python = deps.join("venv-plugins/bin/python");
    if !python.exists() {
        println!("(venv-plugins not installed: run scripts/setup to include crash recovery)");
        return Ok(());
    }
    let script = rkmcp_tests::repo().join("tests/servers/flaky.py");
    let dir = tempfile::tempdir()?;
    // Checked often, so each recovery ends its restart streak before the next crash (the first
    // restart after a healthy period is immediate; see rkmcp::mcp::health).
    let toml = format!(
        "[[servers]]\nname = \"flaky\"\ncommand = {:?}\nargs = [{:?}]\nhealth_interval = 0.2\nmax_restarts = 1000\n",
        python.display().to_string(),
        script.display().to_string()
    );
    let mut config = config::load_str(&dir.path().join("rkmcp.toml"), &toml)?;
    config.log_dir = dir.path().join("logs");
    let mut cold = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let m = SessionManager::start(&config, None).await;
        let took = started.elapsed();
        if let Some(f) = m.failures().first() {
            anyhow::bail!("{}", f.error);
        }
        anyhow::ensure!(!m.tools().0.is_empty(), "flaky.py listed no tools");
        m.shutdown().await;
        cold.push(took);
    }
    let manager = SessionManager::start(&config, None).await;
    let session = manager
        .session("flaky")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("flaky did not start"))?;
    let mut recovery = Vec::new();
    for _ in 0..rounds {
        let mut events = session.subscribe();
        let crashed = Instant::now();
        let _ = manager.call_tool("flaky__crash", None).await;
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                if let Ok(SessionEvent::Health {
                    transition: Transition::CameBack { .. },
                    ..
                }) = events.recv().await
                {
                    return;
                }
            }
        })
        .await?;
        let back = crashed.elapsed();
        anyhow::ensure!(
            manager.tools().0.iter().any(|t| t.name == "flaky__echo"),
            "tools not back after the restart"
        );
        recovery.push(back);
        // Let a health check pass, ending the restart streak.
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    manager.shutdown().await;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (c, r) = (median(cold), median(recovery));
    println!(
        "\n## crash until tools are back (flaky.py, Python SDK, median of {rounds}): {:.1} ms vs cold start {:.1} ms = {:.2}x (target < 2x)",
        r.as_secs_f64() * 1e3,
        c.as_secs_f64() * 1e3,
        r.as_secs_f64() / c.as_secs_f64()
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; nothing else is expected.
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let flavor = std::env::var("BENCH_FLAVOR").unwrap_or_else(|_| "both".into());
    if flavor == "current" || flavor == "both" {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(run(calls, "current"))?;
    }
    if flavor == "multi" || flavor == "both" {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        rt.block_on(run(calls, "multi"))?;
        if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "gateway") {
            return Ok(());
        }
        rt.block_on(crash_recovery(5))?;
        let deps = rkmcp_tests::deps();
        let nm = deps.join("node/node_modules/@modelcontextprotocol");
        let time = deps.join("venv/bin/mcp-server-time");
        if nm.exists() && time.exists() {
            let tmp = tempfile::tempdir()?;
            let targets = vec![
                Target {
                    label: "everything",
                    program: "node".into(),
                    args: vec![
                        nm.join("server-everything/dist/index.js")
                            .display()
                            .to_string(),
                        "stdio".into(),
                    ],
                    tool: "echo",
                },
                Target {
                    label: "time",
                    program: time.display().to_string(),
                    args: vec!["--local-timezone".into(), "UTC".into()],
                    tool: "get_current_time",
                },
                Target {
                    label: "filesystem",
                    program: "node".into(),
                    args: vec![
                        nm.join("server-filesystem/dist/index.js")
                            .display()
                            .to_string(),
                        tmp.path().display().to_string(),
                    ],
                    tool: "list_allowed_directories",
                },
            ];
            rt.block_on(startup(&targets))?;
        }
    }
    Ok(())
}
