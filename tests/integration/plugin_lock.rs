//! The plugin lock with real components: an installed plugin whose file changes is not run until
//! the user approves the new digest — including a file swapped back and forth while it is being
//! reloaded (every load that succeeds ran the approved component, never the other one) — and the
//! CLI's `install` → changed file → `approve` round trip.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rkmcp_plugin_host::{PluginKind, PluginStatus};
use rkmcp_tests::plugin_support::{Fixture, built};
use rkmcp_tests::*;

use super::plugin_scaffold::{failed, ok, rkmcp_in};

/// Replaces `dest` with `bytes` the way an installer or an attacker would: a new file renamed
/// over it (readers see the old file or the new one, never half of one).
fn swap_in(dest: &std::path::Path, bytes: &[u8], n: usize) {
    let tmp = dest.with_file_name(format!(".swap-{n}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dest).unwrap();
}

fn status_of(host: &rkmcp_plugin_host::PluginHost, name: &str) -> rkmcp_plugin_host::PluginInfo {
    host.discover()
        .into_iter()
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("no plugin {name}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_swapped_plugin_file_never_runs_until_its_digest_is_approved() {
    let fixture = Fixture::new(&[("testplug-guard", "g")]);
    let lock = fixture.data.path().join("plugins.lock");
    let host = fixture.host(&format!("lock_file = {:?}", lock));
    let file = fixture.plugins.path().join("g.wasm");
    let guard = std::fs::read(built("testplug-guard")).unwrap();
    let detector = std::fs::read(built("testplug-detector")).unwrap();

    // Approved as it is.
    let pending = host.pending_approval("g").unwrap();
    assert!(pending.previous.is_none());
    host.record_approval(&pending).unwrap();
    let approved = pending.sha256.clone();
    let info = status_of(&host, "g");
    assert_eq!(info.status, PluginStatus::Ready, "{info:?}");
    assert_eq!(info.sha256.as_deref(), Some(approved.as_str()));

    // Another file over it: refused, saying what to do.
    swap_in(&file, &detector, 0);
    let info = status_of(&host, "g");
    let PluginStatus::Error(why) = &info.status else {
        panic!("a changed file loaded: {info:?}");
    };
    assert!(why.contains("changed since it was approved"), "{why}");
    assert!(why.contains("rkmcp plugins approve g"), "{why}");
    assert!(host.detector("g").is_err(), "the changed file must not run");

    // Swapped back and forth while it is reloaded: whatever loads is the approved guard.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, file, guard, detector) =
            (stop.clone(), file.clone(), guard.clone(), detector.clone());
        std::thread::spawn(move || {
            let mut n = 1;
            while !stop.load(Ordering::Relaxed) {
                swap_in(&file, if n % 2 == 0 { &guard } else { &detector }, n);
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            n
        })
    };
    let (mut ready, mut refused) = (0, 0);
    for _ in 0..400 {
        let info = status_of(&host, "g");
        match &info.status {
            PluginStatus::Ready => {
                assert_eq!(info.kind, Some(PluginKind::ApprovalGuard), "{info:?}");
                assert_eq!(info.sha256.as_deref(), Some(approved.as_str()), "{info:?}");
                ready += 1;
            }
            PluginStatus::Error(why) if why.contains("changed since it was approved") => {
                refused += 1
            }
            // The file can be between two renames for a moment (a load that found no file).
            PluginStatus::Error(_) => {}
            other => panic!("unexpected status {other:?}"),
        }
        if ready >= 5 && refused >= 5 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        ready > 0 && refused > 0,
        "ready {ready}, refused {refused}, {swaps} swaps"
    );

    // Approving the new file lets it run.
    swap_in(&file, &detector, 0);
    let pending = host.pending_approval("g").unwrap();
    assert_eq!(
        pending.previous.as_ref().map(|e| e.sha256.as_str()),
        Some(approved.as_str())
    );
    assert_ne!(pending.sha256, approved);
    host.record_approval(&pending).unwrap();
    let info = status_of(&host, "g");
    assert_eq!(info.status, PluginStatus::Ready, "{info:?}");
    assert_eq!(info.kind, Some(PluginKind::Detector));
}

#[tokio::test(flavor = "multi_thread")]
async fn more_grants_than_approved_and_unrecorded_plugins_under_require_approval_are_refused() {
    let fixture = Fixture::new(&[("testplug-guard", "g"), ("testplug-detector", "d")]);
    let lock = fixture.data.path().join("plugins.lock");
    let host = fixture.host(&format!("lock_file = {:?}", lock));
    host.record_approval(&host.pending_approval("g").unwrap())
        .unwrap();
    let wider = fixture.host(&format!(
        "lock_file = {:?}\nrequire_approval = true\n[grants.g]\nenv = [\"LANG\"]",
        lock
    ));
    let PluginStatus::Error(why) = status_of(&wider, "g").status else {
        panic!("more grants than approved loaded");
    };
    assert!(
        why.contains("grants it more than was approved (env: LANG)"),
        "{why}"
    );
    let PluginStatus::Error(why) = status_of(&wider, "d").status else {
        panic!("an unrecorded plugin loaded under require_approval");
    };
    assert!(why.contains("require_approval = true"), "{why}");
    // Without require_approval the unrecorded one loads as before.
    assert_eq!(status_of(&host, "d").status, PluginStatus::Ready);
}

#[test]
fn install_records_the_digest_a_changed_file_waits_for_approve() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let src = write(h, "download/keep.wasm", "");
    std::fs::copy(built("testplug-guard"), &src).unwrap();
    let out = ok(
        &rkmcp_in(h, &["plugins", "install", &src.display().to_string()]),
        "install",
    );
    assert!(out.contains("approved:  sha256 "), "{out}");
    assert!(h.join("config/rkmcp/plugins.lock").is_file());

    let installed = h.join("data/rkmcp/plugins/keep.wasm");
    std::fs::copy(built("testplug-detector"), &installed).unwrap();
    let list = ok(&rkmcp_in(h, &["plugins", "list"]), "list");
    assert!(list.contains("changed since it was approved"), "{list}");

    let err = failed(&rkmcp_in(h, &["plugins", "approve", "keep"]), "approve");
    assert!(err.contains("pass --yes"), "{err}");
    let out = ok(
        &rkmcp_in(h, &["plugins", "approve", "keep", "--yes"]),
        "approve --yes",
    );
    assert!(out.contains("CHANGED"), "{out}");
    assert!(out.contains("approved: recorded in"), "{out}");
    let list = ok(&rkmcp_in(h, &["plugins", "list"]), "list");
    assert!(list.contains("ready"), "{list}");
    assert!(!list.contains("changed since"), "{list}");
}
