//! The chat's `/roots` command: show the roots, `/roots add PATH`, `/roots remove PATH`. A change
//! is announced to every server with `notifications/roots/list_changed` (where its protocol
//! version has it), and servers ask for the new list with `roots/list`.
use crate::mcp::SessionManager;
use crate::mcp::client_requests::terminal_safe;

pub async fn run(sessions: &SessionManager, args: &[&str]) -> anyhow::Result<()> {
    let handle = sessions.requests().roots_handle();
    match args {
        [] | ["list"] => {
            let roots = sessions.requests().roots();
            if roots.is_empty() {
                println!("no roots (servers see no directories)");
            }
            for root in roots {
                println!("{}", terminal_safe(&root.uri));
            }
            Ok(())
        }
        ["add", path] | ["remove", path] => {
            let Some(roots) = handle else {
                anyhow::bail!("the roots cannot be changed in this session");
            };
            let path = std::path::Path::new(path);
            let changed = if args[0] == "add" {
                roots.add(path)?
            } else {
                roots.remove(path)
            };
            if !changed {
                println!(
                    "{} {} a root; nothing changed",
                    path.display(),
                    if args[0] == "add" {
                        "is already"
                    } else {
                        "is not"
                    }
                );
                return Ok(());
            }
            for err in sessions.notify_roots_changed().await {
                eprintln!("rkmcp: {err}");
            }
            println!(
                "roots: {}",
                roots
                    .paths()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(())
        }
        _ => Err(
            super::UsageError("usage: /roots, /roots add PATH, /roots remove PATH".into()).into(),
        ),
    }
}
