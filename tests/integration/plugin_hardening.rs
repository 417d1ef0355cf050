//! Issue 17, plugin findings 1–6: what an outside attack suite did as a plugin author, each
//! contained now. Each test failed before its fix (see the note for the runs).
// The plugin handles are not `Debug`, so `expect_err` is not available.
#![allow(clippy::err_expect)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rkmcp_plugin_host::{
    CacheOutcome, DetectorEvent, FaultCause, PluginError, PluginHost, PluginStatus,
};
use tracing_subscriber::layer::SubscriberExt as _;

use rkmcp_tests::plugin_support::{Fixture, shared_cache};

// ---- helpers ------------------------------------------------------------------------------------

/// Runs one hostile `feed(arg)` in a fresh session of mode `mode`.
async fn probe(
    host: &PluginHost,
    mode: &str,
    arg: &str,
) -> Result<Vec<DetectorEvent>, PluginError> {
    let mut s = host.detector("hostile")?.start_session(mode).await?;
    s.feed(arg).await
}

fn fault_of(r: Result<Vec<DetectorEvent>, PluginError>) -> (FaultCause, String) {
    match r {
        Err(e @ PluginError::Fault { .. }) => (e.fault_cause().cloned().unwrap(), e.to_string()),
        Err(other) => panic!("expected a fault, got the error {other}"),
        Ok(events) => panic!(
            "expected a fault, got {} events: {:?}",
            events.len(),
            events.first()
        ),
    }
}

/// The healthy detector parses a call (and is not some other plugin's code).
async fn assert_healthy(host: &PluginHost) {
    let mut s = host
        .detector("healthy")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    let mut events = s
        .feed("<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call>")
        .await
        .unwrap();
    events.extend(s.finish().await.unwrap());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, DetectorEvent::ToolCall(c) if c.name == "add")),
        "{events:?}"
    );
}

/// Log lines recorded on this thread (use a current-thread runtime so plugin calls and the
/// tasks they spawn log here).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Text(String);
        impl tracing::field::Visit for Text {
            fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
                self.0.push_str(&format!(" {}={v}", f.name()));
            }
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                // `message` arrives here already formatted; keep it raw, not Debug-escaped.
                self.0.push_str(&format!(" {}={v:?}", f.name()));
            }
        }
        let mut t = Text(String::new());
        event.record(&mut t);
        if let Ok(mut lines) = self.0.lock() {
            lines.push((*event.metadata().level(), t.0));
        }
    }
}

impl Captured {
    fn start() -> (Captured, tracing::subscriber::DefaultGuard) {
        let c = Captured::default();
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(c.clone()));
        (c, guard)
    }

    fn lines(&self) -> Vec<(tracing::Level, String)> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

fn cwasm_files(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    v.sort();
    v
}

// ---- 1. the compile cache ------------------------------------------------------------------------

/// Copying another plugin's compiled code over a plugin's cache entry must not make the
/// unchanged plugin run the other's code: the entry fails its digest and is recompiled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_cache_artifact_is_recompiled_not_run() {
    let cache = tempfile::tempdir().unwrap();
    let healthy = Fixture::new(&[("testplug-detector", "healthy")]);
    let hostile = Fixture::new(&[("testplug-hostile", "hostile")]);
    let h1 = PluginHost::new(healthy.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(h1.discover()[0].cache, Some(CacheOutcome::Stored));
    let healthy_cwasm = cwasm_files(cache.path());
    let x = PluginHost::new(hostile.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(x.discover()[0].cache, Some(CacheOutcome::Stored));
    let hostile_cwasm: Vec<PathBuf> = cwasm_files(cache.path())
        .into_iter()
        .filter(|p| !healthy_cwasm.contains(p))
        .collect();
    let (target, source) = (&healthy_cwasm[0], &hostile_cwasm[0]);
    // Only the artifact, then the artifact with its digest file: both are caught.
    for with_digest in [false, true] {
        std::fs::remove_file(target).unwrap();
        std::fs::copy(source, target).unwrap();
        if with_digest {
            std::fs::copy(
                source.with_extension("digest"),
                target.with_extension("digest"),
            )
            .unwrap();
        }
        let host = PluginHost::new(healthy.config_with_cache(cache.path(), "")).unwrap();
        let info = host.discover().remove(0);
        assert_eq!(
            info.cache,
            Some(CacheOutcome::Recompiled),
            "digest copied: {with_digest}"
        );
        assert_healthy(&host).await;
    }
    // The replaced entry is trusted again.
    let host = PluginHost::new(healthy.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(host.discover()[0].cache, Some(CacheOutcome::Hit));
}

/// A crafted artifact (valid header, code bytes changed) used to crash the host; now it is
/// refused before wasmtime maps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_cache_artifact_does_not_reach_wasmtime() {
    let cache = tempfile::tempdir().unwrap();
    let f = Fixture::new(&[("testplug-detector", "healthy")]);
    PluginHost::new(f.config_with_cache(cache.path(), ""))
        .unwrap()
        .discover();
    let file = &cwasm_files(cache.path())[0];
    let mut bytes = std::fs::read(file).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 4096] {
        *b = 0xcc; // int3 over whatever code is there
    }
    std::fs::remove_file(file).unwrap();
    std::fs::write(file, &bytes).unwrap();
    let host = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(host.discover()[0].cache, Some(CacheOutcome::Recompiled));
    assert_healthy(&host).await;
}

/// A cached artifact is hashed once and then trusted by its file identity, so a load maps it
/// without reading it. Changing it in place afterwards, with its size and mtime put back, must
/// still be caught: the change moved its ctime, and the entry is hashed (and refused) again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_changed_in_place_after_its_check_is_hashed_again() {
    use std::io::{Seek, SeekFrom, Write};
    let cache = tempfile::tempdir().unwrap();
    let f = Fixture::new(&[("testplug-detector", "healthy")]);
    let first = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(first.discover()[0].cache, Some(CacheOutcome::Stored));
    let again = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(again.discover()[0].cache, Some(CacheOutcome::Hit));
    let file = &cwasm_files(cache.path())[0];
    let before = std::fs::metadata(file).unwrap();
    let mut out = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    out.seek(SeekFrom::Start(before.len() / 2)).unwrap();
    out.write_all(&[0xcc; 4096]).unwrap();
    out.set_modified(before.modified().unwrap()).unwrap();
    drop(out);
    let after = std::fs::metadata(file).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap())
    );
    let host = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(host.discover()[0].cache, Some(CacheOutcome::Recompiled));
    assert_healthy(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_and_plugin_folders_writable_by_others_are_refused() {
    let f = Fixture::new(&[("testplug-detector", "healthy")]);
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = PluginHost::new(f.config_with_cache(cache.path(), ""))
        .err()
        .expect("a world-writable cache is refused")
        .to_string();
    assert!(
        e.contains("writable by everyone") && e.contains("chmod go-w"),
        "{e}"
    );
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o700)).unwrap();

    std::fs::set_permissions(f.plugins.path(), std::fs::Permissions::from_mode(0o775)).unwrap();
    let host = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    match &host.discover()[0].status {
        PluginStatus::Error(e) => {
            assert!(
                e.contains("writable by its group") && e.contains("chmod go-w"),
                "{e}"
            )
        }
        other => panic!("a group-writable plugin folder was used: {other:?}"),
    }
    assert!(host.detector("healthy").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_grants_reaching_the_cache_or_plugin_folder_are_refused() {
    let f = Fixture::new(&[("testplug-hostile", "hostile")]);
    // A "home" folder holding the cache, as ~/.cache holds rkmcp's.
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join(".cache/rkmcp/components");
    let grant = |dir: &Path, mode: &str| {
        format!(
            "[grants.hostile]\nfiles = [{{ host = {:?}, guest = \"/home\", mode = \"{mode}\" }}]",
            dir.display().to_string()
        )
    };
    for (dir, what) in [
        (home.path(), "the plugin compile cache"),
        (f.plugins.path(), "a plugin folder"),
    ] {
        let host = PluginHost::new(f.config_with_cache(&cache, &grant(dir, "rw"))).unwrap();
        let e = host.detector("hostile").err().expect("refused").to_string();
        assert!(e.contains(&format!("overlaps {what}")), "{e}");
    }
    // Reading is harmless there; writing elsewhere is fine.
    let host = PluginHost::new(f.config_with_cache(&cache, &grant(home.path(), "ro"))).unwrap();
    assert!(host.detector("hostile").is_ok());
    let elsewhere = tempfile::tempdir().unwrap();
    let host =
        PluginHost::new(f.config_with_cache(&cache, &grant(elsewhere.path(), "rw"))).unwrap();
    assert!(host.detector("hostile").is_ok());
}

// ---- 2. a transport that floods --------------------------------------------------------------

/// A transport returning garbage in a loop used to log one WARN per message until the request
/// timed out; now a handful are reported and the connection is closed with one error.
#[tokio::test(flavor = "current_thread")]
async fn a_transport_returning_garbage_is_closed_with_one_error() {
    for flood in ["garbage", "nested"] {
        let (logs, _guard) = Captured::start();
        let f = Fixture::new(&[("testplug-transport", "flood")]);
        let toml = format!(
            "[[servers]]\nname = \"fl\"\ntransport = \"plugin:flood\"\nconnect_timeout = 120\n\n\
             [plugins]\ndirs = [{dir:?}]\ndefault_dir = false\ncache_dir = {cache:?}\n\n\
             [plugins.grants.flood]\ncall_timeout_ms = 10000\nconfig = {{ flood = \"{flood}\" }}\n",
            dir = f.plugins.path().display().to_string(),
            cache = shared_cache().display().to_string(),
        );
        let path = f.data.path().join("rkmcp.toml");
        let config = rkmcp::config::load_str(&path, &toml).unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let manager = rkmcp::mcp::SessionManager::start(&config, None).await;
        // Well before the 120 s connect timeout: the connection was closed, not waited out.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{flood}: {:?}",
            started.elapsed()
        );
        assert_eq!(manager.failures().len(), 1, "{flood}");
        manager.shutdown().await;
        let lines = logs.lines();
        let about_flood: Vec<_> = lines
            .iter()
            .filter(|(_, l)| l.contains("JSON-RPC"))
            .collect();
        assert!(
            about_flood.len() <= 4,
            "{flood}: {} lines: {:?}",
            about_flood.len(),
            &about_flood[..5.min(about_flood.len())]
        );
        let closing: Vec<_> = about_flood
            .iter()
            .filter(|(level, l)| {
                *level == tracing::Level::ERROR && l.contains("transport plugin `flood`")
            })
            .collect();
        assert_eq!(closing.len(), 1, "{flood}: {about_flood:?}");
        assert!(
            lines.iter().all(|(_, l)| !l.contains('\x1b')),
            "{flood}: raw escape logged"
        );
    }
}

// ---- 3. file descriptors ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_use_up_the_hosts_file_descriptors() {
    let f = Fixture::new(&[("testplug-hostile", "hostile")]);
    let data = f.data.path().join("granted");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("f.txt"), "x").unwrap();
    let host = f.host(&format!(
        "[grants.hostile]\ncall_timeout_ms = 20000\nfiles = [{{ host = {:?}, guest = \"/data\" }}]",
        data.display().to_string()
    ));
    let (cause, message) = fault_of(probe(&host, "open-files", "/data/f.txt").await);
    assert!(
        matches!(cause, FaultCause::TooManyHandles { .. }),
        "{message}"
    );
    assert!(
        message.contains("plugin `hostile`") && message.contains("too many files"),
        "{message}"
    );
    // The host still has descriptors to spare, and the instance's were given back.
    let open: Vec<std::fs::File> = (0..200)
        .map(|_| std::fs::File::open(data.join("f.txt")).expect("host can open files"))
        .collect();
    assert_eq!(open.len(), 200);
}

// ---- 4. terminal injection -------------------------------------------------------------------

const INJECTION: &str = "\x1b]0;pwned\x07\x1b[2J\x1b[1A\r[rkmcp: all tool calls approved]\u{202e}txt.exe\u{9b}31m\nnext";

#[tokio::test(flavor = "current_thread")]
async fn plugin_strings_reach_the_user_without_control_sequences() {
    let (logs, _guard) = Captured::start();
    let f = Fixture::new(&[("testplug-hostile", "hostile")]);
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 10000");
    let clean = |s: &str| {
        !s.chars().any(|c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
        })
    };

    // A text event (shown as the answer), stderr and the host log.
    let events = probe(&host, "say", INJECTION).await.unwrap();
    let [DetectorEvent::Text(t)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert!(clean(t), "{t:?}");
    assert!(t.contains("\\x1b]0;pwned") && t.contains("\nnext"), "{t:?}");
    let said: Vec<String> = logs
        .lines()
        .into_iter()
        .map(|(_, l)| l)
        .filter(|l| l.contains("pwned"))
        .collect();
    assert!(said.len() >= 2, "{said:?}");
    for l in &said {
        assert!(clean(l) && !l.contains('\n'), "{l:?}");
    }

    // A panic message in a fault.
    // (A Rust panic prints its location on one line and the message on the next; the host
    // quotes the last line that says "panicked".)
    let (_, message) =
        fault_of(probe(&host, "panic-with", &format!("panicked: {INJECTION}")).await);
    assert!(clean(&message) && !message.contains('\n'), "{message:?}");
    assert!(
        message.contains("[rkmcp: all tool calls approved]"),
        "{message}"
    );
}

// ---- 5. event count --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_of_empty_events_are_faults() {
    let f = Fixture::new(&[("testplug-hostile", "hostile")]);
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 20000");
    // A million: stopped while wasmtime copies them out (the copy allowance = the output limit).
    let (cause, message) = fault_of(probe(&host, "events", "1000000").await);
    assert!(matches!(cause, FaultCause::CopyLimit { .. }), "{message}");
    // Fewer, but still more than a call may return.
    let (cause, message) = fault_of(probe(&host, "events", "5000").await);
    assert_eq!(
        cause,
        FaultCause::TooManyEvents {
            count: 5000,
            limit: 4096
        },
        "{message}"
    );
    // A normal amount is fine.
    assert_eq!(probe(&host, "events", "100").await.unwrap().len(), 100);
}

// ---- 6. manifests ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_linked_out_of_the_plugin_folder_is_not_read() {
    let f = Fixture::new(&[("testplug-detector", "healthy")]);
    let secret = f.data.path().join(".env");
    std::fs::write(&secret, "OPENAI_API_KEY=sk-live-0123456789abcdef\n").unwrap();
    std::os::unix::fs::symlink(&secret, f.plugins.path().join("healthy.toml")).unwrap();
    let host = f.host("");
    let info = host.discover().remove(0);
    let shown = format!(
        "{:?} {}",
        info.status,
        serde_json::to_string(&info).unwrap()
    );
    assert!(!shown.contains("sk-live"), "{shown}");
    match &info.status {
        PluginStatus::Error(e) => assert!(
            e.contains("symbolic link that leaves the plugin folder"),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
}
