//! `rkmcp serve --http` under load, with and without hostile clients (issue 35's load test).
//!
//! Legitimate clients: `LOAD_CLIENTS` (default 200) rmcp streamable-HTTP clients, each from its
//! own loopback address (`127.1.x.y`: the gateway's per-client limits count by address, so they
//! are 200 clients to it, not one), each calling the fixture server's `echo` through the
//! gateway in a loop. Two phases in one run, the same clients throughout:
//! 1. **baseline**: the clients alone for `LOAD_SECONDS / 3`;
//! 2. **under attack**: the clients for `LOAD_SECONDS` (default 60) beside hostile clients,
//!    each from addresses of its own: session flooders (initialize in a loop), slow-loris
//!    connections (headers trickled a byte a second), clients that send calls with 256 KiB
//!    arguments and never read an answer, garbage and 5,000-deep JSON, and wrong-token guessers.
//!
//! Printed: calls made and failed (the target is no failed legitimate call), p50/p99 and
//! calls/s per phase with the attack/baseline ratios, what the hostile clients got (statuses),
//! and the gateway's resident memory (VmRSS, sampled every 250 ms): after start, peak per phase
//! and at the end. Not a test: nothing here is timed against a threshold.
//!
//! Run: `cargo bench -p rkmcp-tests --bench gateway_load` (after scripts/setup).
//! Env: LOAD_CLIENTS, LOAD_SECONDS, LOAD_AUTH=0 (no `[serve.auth]`: then the token guessers
//! are left out).
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");
const TOKEN: &str = "load-test-token-0123456789";

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `n`th address of a group: `127.<group>.<n / 250>.<n % 250 + 1>`.
fn address(group: u8, n: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        127,
        group,
        (n / 250) as u8,
        (n % 250 + 1) as u8,
    ))
}

/// The gateway's resident set, in MiB.
fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// What the legitimate clients did in one phase.
#[derive(Default)]
struct Tally {
    latencies: Mutex<Vec<Duration>>,
    failures: AtomicU64,
    failure_examples: Mutex<Vec<String>>,
}

impl Tally {
    fn failed(&self, what: String) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut examples = self.failure_examples.lock().unwrap();
        if examples.len() < 5 {
            examples.push(what);
        }
    }
}

/// One legitimate client: connects, then calls `echo` until `stop`, into the phase's tally.
async fn legitimate_client(
    url: String,
    from: IpAddr,
    auth: bool,
    phase: Arc<Mutex<Arc<Tally>>>,
    stop: Arc<AtomicBool>,
) {
    let tally = || phase.lock().unwrap().clone();
    let http = match reqwest::Client::builder().local_address(from).build() {
        Ok(http) => http,
        Err(e) => return tally().failed(format!("http client from {from}: {e}")),
    };
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if auth {
        config = config.auth_header(TOKEN);
    }
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let info = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("load", "0"),
    );
    let client = match info.serve(transport).await {
        Ok(client) => client,
        Err(e) => return tally().failed(format!("initialize from {from}: {e}")),
    };
    let arguments = json!({"message": "ping"}).as_object().cloned();
    while !stop.load(Ordering::Relaxed) {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = arguments.clone();
        let started = Instant::now();
        let result = client.call_tool(params).await;
        let took = started.elapsed();
        let tally = tally();
        match result {
            Ok(r) if r.is_error != Some(true) => tally.latencies.lock().unwrap().push(took),
            Ok(r) => tally.failed(format!(
                "echo from {from} was a tool error: {:?}",
                r.content
            )),
            Err(e) => tally.failed(format!("echo from {from}: {e}")),
        }
    }
    let _ = client.cancel().await;
}

/// Statuses the hostile clients got, by kind.
type Outcomes = Arc<Mutex<BTreeMap<String, u64>>>;

fn count(outcomes: &Outcomes, what: String) {
    *outcomes.lock().unwrap().entry(what).or_default() += 1;
}

async fn connect_from(from: IpAddr, port: u16) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    socket
        .connect(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
        .await
}

/// Sends one request and reads the status line (or notes that none came within 15 s).
async fn raw_request(from: IpAddr, port: u16, token: Option<&str>, body: &str) -> String {
    let Ok(mut stream) = connect_from(from, port).await else {
        return "connect failed".into();
    };
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return "write failed".into();
    }
    let mut head = [0u8; 64];
    match tokio::time::timeout(Duration::from_secs(15), stream.read(&mut head)).await {
        Err(_) => "no answer in 15 s".into(),
        Ok(Ok(0)) | Ok(Err(_)) => "closed".into(),
        Ok(Ok(n)) => String::from_utf8_lossy(&head[..n])
            .split_whitespace()
            .nth(1)
            .unwrap_or("?")
            .to_string(),
    }
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"}}})
    .to_string()
}

/// Every hostile client, until `stop`.
fn attack(
    port: u16,
    auth: bool,
    stop: Arc<AtomicBool>,
    outcomes: Outcomes,
) -> Vec<tokio::task::JoinHandle<()>> {
    let token = auth.then_some(TOKEN);
    let mut tasks = Vec::new();
    // Session flooders: 10 addresses, initialize as fast as answered (sessions never closed).
    for n in 0..10 {
        let (stop, outcomes) = (stop.clone(), outcomes.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let status = raw_request(address(2, n), port, token, &initialize_body()).await;
                count(&outcomes, format!("session flood: {status}"));
            }
        }));
    }
    // Slow loris: 100 connections trickling header bytes, reconnecting when cut off.
    for n in 0..100 {
        let (stop, outcomes) = (stop.clone(), outcomes.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut stream) = connect_from(address(3, n), port).await else {
                    count(&outcomes, "slow loris: connect failed".into());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                };
                let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\nX-Slow: ").await;
                let started = Instant::now();
                while !stop.load(Ordering::Relaxed) && stream.write_all(b"a").await.is_ok() {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    // Anything back (a refusal, or the end of the connection) means cut off.
                    let mut buf = [0u8; 64];
                    let read = stream.read(&mut buf);
                    if tokio::time::timeout(Duration::from_millis(1), read)
                        .await
                        .is_ok()
                    {
                        break;
                    }
                }
                if !stop.load(Ordering::Relaxed) {
                    count(
                        &outcomes,
                        format!(
                            "slow loris: cut off after {} s",
                            started.elapsed().as_secs()
                        ),
                    );
                }
            }
        }));
    }
    // Non-readers: calls with 256 KiB arguments, answers never read, connections kept.
    for n in 0..5 {
        let (stop, outcomes) = (stop.clone(), outcomes.clone());
        tasks.push(tokio::spawn(async move {
            let message = "x".repeat(256 * 1024);
            let mut held = Vec::new();
            // A session to call in.
            let status = raw_request(address(4, n), port, token, &initialize_body()).await;
            count(&outcomes, format!("non-reader initialize: {status}"));
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut stream) = connect_from(address(4, n), port).await else {
                    count(&outcomes, "non-reader: connect failed".into());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": message}}})
                .to_string();
                let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
                let request = format!(
                    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(request.as_bytes()).await;
                count(&outcomes, "non-reader: call sent, answer never read".into());
                held.push(stream);
                if held.len() > 40 {
                    held.remove(0);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
    }
    // Garbage: broken JSON, 5,000-deep JSON, oversized bodies.
    {
        let (stop, outcomes) = (stop.clone(), outcomes.clone());
        tasks.push(tokio::spawn(async move {
            let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
            let huge = format!("{{\"x\":\"{}\"}}", "y".repeat(8 * 1024 * 1024));
            let bodies = [
                ("broken", "{\"jsonrpc\": ".to_string()),
                ("deep", deep),
                ("huge", huge),
            ];
            while !stop.load(Ordering::Relaxed) {
                for (kind, body) in &bodies {
                    let status = raw_request(address(5, 0), port, token, body).await;
                    count(&outcomes, format!("garbage {kind}: {status}"));
                }
            }
        }));
    }
    // Token guessers: 5 addresses.
    if auth {
        for n in 0..5 {
            let (stop, outcomes) = (stop.clone(), outcomes.clone());
            tasks.push(tokio::spawn(async move {
                let mut guess = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    guess += 1;
                    let status = raw_request(
                        address(6, n),
                        port,
                        Some(&format!("guess-{guess}")),
                        &initialize_body(),
                    )
                    .await;
                    count(&outcomes, format!("wrong token: {status}"));
                }
            }));
        }
    }
    tasks
}

struct PhaseReport {
    calls: usize,
    failures: u64,
    p50_us: f64,
    p99_us: f64,
    per_second: f64,
    peak_rss: f64,
}

fn report(name: &str, tally: &Tally, seconds: f64, peak_rss: f64) -> PhaseReport {
    let mut latencies = tally.latencies.lock().unwrap().clone();
    latencies.sort();
    let at = |q: f64| {
        if latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies[i].as_secs_f64() * 1e6
    };
    let r = PhaseReport {
        calls: latencies.len(),
        failures: tally.failures.load(Ordering::Relaxed),
        p50_us: at(0.5),
        p99_us: at(0.99),
        per_second: latencies.len() as f64 / seconds,
        peak_rss,
    };
    println!(
        "{name:>13}: {} calls ok, {} failed, p50 {:.0} µs, p99 {:.0} µs, {:.0} calls/s, gateway RSS peak {:.1} MiB",
        r.calls, r.failures, r.p50_us, r.p99_us, r.per_second, r.peak_rss
    );
    for example in tally.failure_examples.lock().unwrap().iter() {
        println!("               failure: {example}");
    }
    r
}

async fn run() -> anyhow::Result<()> {
    let clients = env_number("LOAD_CLIENTS", 200) as usize;
    let seconds = env_number("LOAD_SECONDS", 60);
    let auth = std::env::var("LOAD_AUTH").map_or(true, |v| v != "0");
    let dir = tempfile::tempdir()?;
    let port = rkmcp_tests::free_port();
    let auth_toml = if auth {
        "\n[serve.auth]\nbearer_token_env = \"RKMCP_LOAD_TOKEN\"\n"
    } else {
        ""
    };
    let toml = format!(
        "[[servers]]\nname = \"fx\"\ncommand = {}\nprefix = \"\"\n\n[chat.approval]\nauto_approve = [\"fx/*\"]\n{auth_toml}",
        rkmcp_tests::toml_str(FIXTURE)
    );
    let config = dir.path().join("rkmcp.toml");
    std::fs::write(&config, toml)?;
    let home = dir.path().display().to_string();
    let mut gateway = tokio::process::Command::new(rkmcp_tests::rkmcp())
        .args([
            "--config",
            &config.display().to_string(),
            "serve",
            "--no-local-model",
            "--http",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .env("XDG_CONFIG_HOME", format!("{home}/config"))
        .env("XDG_STATE_HOME", format!("{home}/state"))
        .env("XDG_CACHE_HOME", format!("{home}/cache"))
        .env("RKMCP_LOAD_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = gateway
        .id()
        .ok_or_else(|| anyhow::anyhow!("the gateway exited at once"))?;
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if started.elapsed() > Duration::from_secs(60) {
            anyhow::bail!("rkmcp serve --http did not listen on {port} within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rss_started = rss_mib(pid);
    println!(
        "gateway_load: {clients} clients, {} s baseline then {seconds} s beside hostile clients, {}",
        seconds / 3,
        if auth {
            "[serve.auth] bearer token"
        } else {
            "no [serve.auth]"
        }
    );
    println!("gateway RSS after start: {rss_started:.1} MiB");

    // RSS sampler.
    let peak = Arc::new(Mutex::new(0.0f64));
    let sampler_stop = Arc::new(AtomicBool::new(false));
    {
        let (peak, sampler_stop) = (peak.clone(), sampler_stop.clone());
        tokio::spawn(async move {
            while !sampler_stop.load(Ordering::Relaxed) {
                let now = rss_mib(pid);
                {
                    let mut p = peak.lock().unwrap();
                    *p = p.max(now);
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
    }

    // rmcp's reqwest client needs a TLS provider installed, even for http.
    rkmcp::mcp::http::install_tls_provider();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let baseline = Arc::new(Tally::default());
    let phase = Arc::new(Mutex::new(baseline.clone()));
    let stop = Arc::new(AtomicBool::new(false));
    let legit: Vec<_> = (0..clients)
        .map(|n| {
            tokio::spawn(legitimate_client(
                url.clone(),
                address(1, n),
                auth,
                phase.clone(),
                stop.clone(),
            ))
        })
        .collect();

    let base_seconds = (seconds / 3).max(1);
    tokio::time::sleep(Duration::from_secs(base_seconds)).await;
    let base_peak = std::mem::take(&mut *peak.lock().unwrap());
    let attacked = Arc::new(Tally::default());
    *phase.lock().unwrap() = attacked.clone();
    let baseline_report = report("baseline", &baseline, base_seconds as f64, base_peak);

    let stop_attack = Arc::new(AtomicBool::new(false));
    let outcomes: Outcomes = Arc::default();
    let hostile = attack(port, auth, stop_attack.clone(), outcomes.clone());
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    stop_attack.store(true, Ordering::Relaxed);
    let attack_peak = *peak.lock().unwrap();
    let attacked_report = report("under attack", &attacked, seconds as f64, attack_peak);
    // One deadline for all: a client whose session close hangs is counted, not waited on 200 times.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut unclosed = 0;
    for mut task in legit {
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            task.abort();
            unclosed += 1;
        }
    }
    if unclosed > 0 {
        println!("{unclosed} legitimate clients had not closed their session 20 s after the stop");
    }
    for task in hostile {
        task.abort();
    }
    sampler_stop.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("gateway RSS at the end: {:.1} MiB", rss_mib(pid));
    println!("hostile clients got:");
    for (what, n) in outcomes.lock().unwrap().iter() {
        println!("  {n:>7} × {what}");
    }
    println!(
        "ratios under attack / baseline: p50 {:.2}x, p99 {:.2}x, calls/s {:.2}x, RSS peak {:.2}x; legitimate calls failed: {}",
        attacked_report.p50_us / baseline_report.p50_us,
        attacked_report.p99_us / baseline_report.p99_us,
        attacked_report.per_second / baseline_report.per_second,
        attacked_report.peak_rss / baseline_report.peak_rss.max(f64::MIN_POSITIVE),
        baseline_report.failures + attacked_report.failures
    );
    let _ = gateway.kill().await;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}
