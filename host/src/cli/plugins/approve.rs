//! `rkmcp plugins approve NAME`: records the plugin's current file and grants in the plugin lock
//! (see `rkmcp_plugin_host::lock`), after showing what changed since the last approval.
use std::io::{BufRead, IsTerminal, Write};

use rkmcp_plugin_host::lock::short;
use rkmcp_plugin_host::{PendingApproval, PluginHost};
use rkmcp_term_safe::sanitize_inline as clean;

use super::UsageError;

/// What changed since the last approval, as lines for a person.
pub fn describe(p: &PendingApproval) -> Vec<String> {
    let mut lines = vec![format!(
        "plugin:    {} ({})",
        clean(&p.name),
        p.path.display()
    )];
    let file = match &p.previous {
        None => format!("sha256 {} (never approved before)", p.sha256),
        Some(old) if old.sha256.eq_ignore_ascii_case(&p.sha256) => {
            format!("sha256 {} (the file approved before)", p.sha256)
        }
        Some(old) => format!(
            "sha256 {} (CHANGED: {} was approved)",
            p.sha256,
            short(&old.sha256)
        ),
    };
    lines.push(format!("file:      {file}"));
    let before: &[String] = p.previous.as_ref().map_or(&[], |e| &e.grants);
    let added: Vec<&String> = p.grants.iter().filter(|g| !before.contains(g)).collect();
    let removed: Vec<&String> = before.iter().filter(|g| !p.grants.contains(g)).collect();
    if p.grants.is_empty() && before.is_empty() {
        lines.push("grants:    nothing (no files, no network, no environment)".into());
    } else if added.is_empty() && removed.is_empty() {
        lines.push(format!(
            "grants:    as approved before: {}",
            clean(&p.grants.join("; "))
        ));
    } else {
        lines.push("grants:".into());
        lines.extend(added.iter().map(|g| format!("  + {}", clean(g))));
        lines.extend(removed.iter().map(|g| format!("  - {}", clean(g))));
        lines.extend(
            p.grants
                .iter()
                .filter(|g| before.contains(g))
                .map(|g| format!("    {}", clean(g))),
        );
    }
    lines
}

pub fn approve(host: &PluginHost, name: &str, yes: bool) -> anyhow::Result<()> {
    let pending = host
        .pending_approval(name)
        .map_err(|e| UsageError(format!("cannot approve {}: {e}", clean(name))))?;
    for line in describe(&pending) {
        println!("{line}");
    }
    let unchanged = pending.previous.as_ref().is_some_and(|old| {
        old.sha256.eq_ignore_ascii_case(&pending.sha256)
            && pending.grants.iter().all(|g| old.grants.contains(g))
            && old.grants.len() == pending.grants.len()
    });
    if unchanged {
        println!(
            "already approved; {} is unchanged",
            pending.lock_file.display()
        );
        return Ok(());
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(UsageError(format!(
                "not approved: no terminal to confirm at; pass --yes to record it in {}",
                pending.lock_file.display()
            ))
            .into());
        }
        eprint!("Approve this file with these grants? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("not approved");
            return Ok(());
        }
    }
    host.record_approval(&pending)?;
    println!(
        "approved: recorded in {}; it loads from the next start or reload",
        pending.lock_file.display()
    );
    Ok(())
}

/// After `plugins grant`: a plugin the lock has an entry for gets its new grants recorded (the
/// user just granted them), its file digest unchanged.
pub fn record_granted(host: &PluginHost, name: &str) -> anyhow::Result<()> {
    let Ok(pending) = host.pending_approval(name) else {
        return Ok(());
    };
    let Some(previous) = &pending.previous else {
        return Ok(());
    };
    let approval = PendingApproval {
        sha256: previous.sha256.clone(),
        ..pending.clone()
    };
    host.record_approval(&approval)?;
    println!(
        "the plugin lock records the new grants of {} ({})",
        clean(name),
        pending.lock_file.display()
    );
    Ok(())
}
