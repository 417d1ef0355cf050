//! Capabilities and hostile plugins: every capability granted and denied, and every kind of
//! misbehaviour contained with a clear error while a healthy plugin beside it keeps working.
//! Components come from tests/plugins/ (built by scripts/build-plugins).
// The plugin handles are not `Debug`, so `expect_err` is not available.
#![allow(clippy::err_expect)]
use std::net::TcpListener;
use std::time::{Duration, Instant};

use rkmcp_plugin_host::{DetectorEvent, FaultCause, PluginError, PluginHost};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

fn fixture() -> Fixture {
    Fixture::new(&[
        ("testplug-hostile", "hostile"),
        ("testplug-detector", "healthy"),
    ])
}

/// Runs one hostile `feed(arg)` in a fresh session of mode `mode`; returns the single text
/// event (`ok:...` / `err:...`) or the error.
async fn probe(host: &PluginHost, mode: &str, arg: &str) -> Result<String, PluginError> {
    let mut s = host.detector("hostile")?.start_session(mode).await?;
    let events = s.feed(arg).await?;
    match events.as_slice() {
        [DetectorEvent::Text(t)] => Ok(t.clone()),
        other => panic!("unexpected events from hostile/{mode}: {other:?}"),
    }
}

/// The healthy detector still parses a call split across chunks.
async fn assert_healthy(host: &PluginHost) {
    let mut s = host
        .detector("healthy")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    let mut events = Vec::new();
    for chunk in [
        "Sure. <tool_",
        "call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call> done",
    ] {
        events.extend(s.feed(chunk).await.unwrap());
    }
    events.extend(s.finish().await.unwrap());
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            DetectorEvent::ToolCall(c) => Some((c.name.clone(), c.arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![("add".to_string(), serde_json::json!({"a": 1}))],
        "{events:?}"
    );
}

fn fault(r: Result<String, PluginError>) -> (FaultCause, String) {
    match r {
        Err(e @ PluginError::Fault { .. }) => (e.fault_cause().cloned().unwrap(), e.to_string()),
        other => panic!("expected a fault, got {other:?}"),
    }
}

// ---- filesystem -------------------------------------------------------------------------------

fn fs_fixture() -> (Fixture, std::path::PathBuf, tempfile::TempDir) {
    let f = fixture();
    let granted = f.data.path().join("granted");
    std::fs::create_dir_all(&granted).unwrap();
    std::fs::write(granted.join("inside.txt"), "inside").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::fs::write(f.data.path().join("sibling.txt"), "sibling").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), granted.join("link.txt"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), granted.join("linkdir")).unwrap();
    (f, granted, outside)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_read_inside_grant_is_allowed() {
    let (f, granted, _outside) = fs_fixture();
    let host = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 10000\nfiles = [{{ host = {granted:?}, guest = \"/data\", mode = \"ro\" }}]"
    ));
    assert_eq!(
        probe(&host, "read", "/data/inside.txt").await.unwrap(),
        "ok:inside"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_escape_via_dotdot_symlink_and_absolute_path_is_refused() {
    let (f, granted, outside) = fs_fixture();
    let host = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 10000\nfiles = [{{ host = {granted:?}, guest = \"/data\", mode = \"ro\" }}]"
    ));
    let secret = outside.path().join("secret.txt");
    for path in [
        "/data/../sibling.txt",
        "/data/../../../../etc/hostname",
        "/data/link.txt",
        "/data/linkdir/secret.txt",
        secret.to_str().unwrap(),
        "/etc/hostname",
    ] {
        let r = probe(&host, "read", path).await.unwrap();
        assert!(r.starts_with("err:"), "reading {path} should fail, got {r}");
    }
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_without_grant_sees_nothing() {
    let (f, _granted, _outside) = fs_fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 10000");
    let r = probe(&host, "read", "/data/inside.txt").await.unwrap();
    assert!(r.starts_with("err:"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_write_needs_rw() {
    let (f, granted, _outside) = fs_fixture();
    let ro = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 10000\nfiles = [{{ host = {granted:?}, guest = \"/data\", mode = \"ro\" }}]"
    ));
    let r = probe(&ro, "write", "/data/new.txt").await.unwrap();
    assert!(r.starts_with("err:"), "{r}");
    assert!(!granted.join("new.txt").exists());

    let rw = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 10000\nfiles = [{{ host = {granted:?}, guest = \"/data\", mode = \"rw\" }}]"
    ));
    assert_eq!(
        probe(&rw, "write", "/data/new.txt").await.unwrap(),
        "ok:written"
    );
    assert_eq!(
        std::fs::read_to_string(granted.join("new.txt")).unwrap(),
        "written by a plugin"
    );
    // Still no way out of the grant for writes.
    let r = probe(&rw, "write", "/data/../escaped.txt").await.unwrap();
    assert!(r.starts_with("err:"), "{r}");
    assert!(!f.data.path().join("escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_grant_of_missing_directory_is_a_clear_error() {
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 10000\nfiles = [{ host = \"/no/such/dir\", guest = \"/data\" }]");
    let e = host.detector("hostile").err().expect("must fail");
    let msg = e.to_string();
    assert!(
        msg.contains("hostile") && msg.contains("/no/such/dir"),
        "{msg}"
    );
}

// ---- network ----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_connect_only_to_granted_address() {
    let f = fixture();
    let granted = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let gport = granted.local_addr().unwrap().port();
    let oport = other.local_addr().unwrap().port();
    let host = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 10000\nnetwork = [\"127.0.0.1:{gport}\"]"
    ));
    let ok = probe(&host, "connect", &format!("127.0.0.1:{gport}"))
        .await
        .unwrap();
    assert_eq!(ok, format!("ok:127.0.0.1:{gport}"));
    let denied = probe(&host, "connect", &format!("127.0.0.1:{oport}"))
        .await
        .unwrap();
    assert!(denied.starts_with("err:"), "{denied}");
    // Names are not granted by an address grant.
    let denied = probe(&host, "connect", &format!("localhost:{gport}"))
        .await
        .unwrap();
    assert!(denied.starts_with("err:"), "{denied}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_host_name_grant_allows_lookup_and_connect() {
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 10000\nnetwork = [\"localhost:{port}\"]"
    ));
    let ok = probe(&host, "connect", &format!("localhost:{port}"))
        .await
        .unwrap();
    assert!(ok.starts_with("ok:"), "{ok}");
    // Another port of the same name is not granted.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let oport = other.local_addr().unwrap().port();
    let denied = probe(&host, "connect", &format!("localhost:{oport}"))
        .await
        .unwrap();
    assert!(denied.starts_with("err:"), "{denied}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_without_grant_is_refused() {
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 10000");
    for target in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let r = probe(&host, "connect", &target).await.unwrap();
        assert!(r.starts_with("err:"), "{target}: {r}");
    }
}

#[test]
fn net_bad_grant_is_refused_at_startup() {
    let f = fixture();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let err = PluginHost::new(f.config("[grants.hostile]\nnetwork = [\"localhost\"]"))
        .err()
        .expect("must fail");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("grants.hostile") && msg.contains("localhost"),
        "{msg}"
    );
}

// ---- environment ------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_only_granted_names() {
    // PATH and HOME exist in every test environment; only PATH is granted.
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 10000\nenv = [\"PATH\"]");
    let path = std::env::var("PATH").unwrap();
    assert_eq!(
        probe(&host, "env", "PATH").await.unwrap(),
        format!("ok:{path}")
    );
    let r = probe(&host, "env", "HOME").await.unwrap();
    assert!(r.starts_with("err:"), "{r}");
    let none = f.host("[grants.hostile]\ncall_timeout_ms = 10000");
    let r = probe(&none, "env", "PATH").await.unwrap();
    assert!(r.starts_with("err:"), "{r}");
}

// ---- hostile behaviour ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_hits_the_deadline() {
    let f = fixture();
    let host = f.host("");
    let start = Instant::now();
    let (cause, msg) = fault(probe(&host, "loop", "").await);
    assert_eq!(cause, FaultCause::Deadline { ms: 50 });
    assert!(
        msg.contains("hostile") && msg.contains("feed") && msg.contains("deadline"),
        "{msg}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looping_plugin_does_not_block_a_healthy_one() {
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 1500");
    let h2 = host.clone();
    let looping = tokio::spawn(async move { probe(&h2, "loop", "").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    assert_healthy(&host).await;
    assert!(
        !looping.is_finished(),
        "the loop should still be running while the healthy plugin answers"
    );
    assert!(
        start.elapsed() < Duration::from_millis(1000),
        "healthy plugin waited {:?}",
        start.elapsed()
    );
    let (cause, _) = fault(looping.await.unwrap());
    assert_eq!(cause, FaultCause::Deadline { ms: 1500 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_hits_the_cap() {
    let f = fixture();
    let host = f.host("[grants.hostile]\nmemory_mb = 32\ncall_timeout_ms = 5000");
    let (cause, msg) = fault(probe(&host, "memory-bomb", "").await);
    assert_eq!(cause, FaultCause::Memory { limit_mb: 32 }, "{msg}");
    assert!(msg.contains("memory limit of 32 MiB"), "{msg}");
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_is_a_stack_overflow() {
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 5000");
    let (cause, msg) = fault(probe(&host, "recursion", "").await);
    assert_eq!(cause, FaultCause::StackOverflow, "{msg}");
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panic_is_reported_with_its_message() {
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 10000");
    let (cause, msg) = fault(probe(&host, "panic", "").await);
    match cause {
        FaultCause::Panic { message } => {
            assert!(message.contains("panicked on purpose"), "{message}")
        }
        other => panic!("expected a panic fault, got {other:?}"),
    }
    assert!(msg.contains("hostile") && msg.contains("feed"), "{msg}");
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_result_is_refused() {
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 5000\nmax_output_kb = 1024");
    let (cause, msg) = fault(probe(&host, "huge", "8").await);
    // wasmtime stops the copy out of the guest near the output limit, before the 8 MiB string is
    // allocated in the host (issue 17, finding 5).
    assert!(
        matches!(cause, FaultCause::CopyLimit { limit } if (1 << 20..8 << 20).contains(&limit)),
        "{cause:?}: {msg}"
    );
    // Within the limit it is delivered.
    let ok = probe(&host, "huge", "0").await.unwrap();
    assert_eq!(ok, "");
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_flood_is_rate_limited() {
    let f = fixture();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 20000");
    let r = probe(&host, "flood", "20000").await.unwrap();
    assert_eq!(r, "flooded 20000");
    let info = host
        .discover()
        .into_iter()
        .find(|i| i.name == "hostile")
        .unwrap();
    assert!(
        info.output_lines_logged <= 400,
        "logged {}",
        info.output_lines_logged
    );
    assert!(
        info.output_lines_logged >= 100,
        "logged {}",
        info.output_lines_logged
    );
    assert_eq!(info.output_lines_logged + info.output_lines_dropped, 20000);
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuel_limits_a_busy_plugin() {
    let f = fixture();
    let host = f.host("[grants.hostile]\nfuel = 1000000\ncall_timeout_ms = 10000");
    let (cause, msg) = fault(probe(&host, "loop", "").await);
    assert_eq!(cause, FaultCause::Fuel { fuel: 1_000_000 }, "{msg}");
    assert_healthy(&host).await;
}
