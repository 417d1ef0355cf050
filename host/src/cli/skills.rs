//! `rkmcp skills list|show` and the chat's `/skills` and `/skill NAME [FILE]`: the skills MCP
//! servers offer (SEP-2640, see `mcp::skills`). Listing reads no skill file; `show` and `/skill`
//! read and verify the `SKILL.md` (or one listed file) and use it only when it checks out.
use std::process::ExitCode;

use anyhow::Context as _;
use rkmcp_llm::Message;
use serde_json::json;

use super::inspect::{load, start};
use super::output::{self, short};
use super::turn_view::dim;
use super::{Context, UsageError};
use crate::chat::ChatEngine;
use crate::mcp::client_requests::terminal_safe;
use crate::mcp::skills::{self, ListedSkill, Verification};

#[derive(Debug, clap::Subcommand)]
pub enum SkillsCommand {
    /// List the skills of every server (name, description, server, URI); reads no skill file.
    List {
        /// Only skills of this server.
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Load a skill: read its SKILL.md, verify it against the listing (size, sha256 digest,
    /// frontmatter) and print it; or print one of its listed files with --file.
    Show {
        /// The skill's name as listed (or SERVER/NAME when several servers have it).
        name: String,
        /// Only skills of this server.
        #[arg(long, short = 's')]
        server: Option<String>,
        /// A file of the skill, relative to its directory (references/FORMS.md) or as a URI.
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
    },
}

pub async fn run(ctx: &Context, cmd: SkillsCommand) -> anyhow::Result<ExitCode> {
    let config = load(ctx)?;
    match cmd {
        SkillsCommand::List { server } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let (listed, failures) = skills::list_all(&manager, server.as_deref()).await;
            manager.shutdown().await;
            if ctx.global.json {
                let failures: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
                let skills: Vec<_> = listed.iter().map(ListedSkill::to_json).collect();
                output::json(&json!({"skills": skills, "failures": failures}))?;
            } else {
                for failure in &failures {
                    output::warn(failure);
                }
                let mut table = output::table(&["name", "description", "server", "uri"]);
                for s in &listed {
                    table.add_row(vec![
                        terminal_safe(s.name()),
                        terminal_safe(&short(Some(s.description()), 80)),
                        s.server.clone(),
                        terminal_safe(s.uri()),
                    ]);
                }
                if listed.is_empty() {
                    eprintln!(
                        "no skills (no server declares the skills extension, or none lists any)"
                    );
                } else {
                    output::print_table(&table)?;
                }
            }
            Ok(if failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        SkillsCommand::Show { name, server, file } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let result = show(&manager, server.as_deref(), &name, file.as_deref()).await;
            manager.shutdown().await;
            let shown = result?;
            if ctx.global.json {
                output::json(&shown)?;
            } else {
                let text = shown["text"].as_str().unwrap_or_default();
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Lists, finds `name`, and loads it (or its `file`), as JSON with `text` and `verification`.
async fn show(
    manager: &crate::mcp::SessionManager,
    only: Option<&str>,
    name: &str,
    file: Option<&str>,
) -> anyhow::Result<serde_json::Value> {
    let (listed, failures) = skills::list_all(manager, only).await;
    for failure in &failures {
        output::warn(failure);
    }
    let skill = skills::find(&listed, name)?;
    let session = manager
        .session(&skill.server)
        .with_context(|| format!("server `{}` is not running", skill.server))?;
    Ok(match file {
        None => serde_json::to_value(skills::load(session, skill).await?)?,
        Some(path) => serde_json::to_value(skills::read_file(session, skill, path).await?)?,
    })
}

/// `/skills`: the skills of the chat's servers.
pub async fn chat_list(engine: &ChatEngine) -> anyhow::Result<()> {
    let (listed, failures) = skills::list_all(engine.sessions(), None).await;
    for failure in &failures {
        eprintln!("rkmcp: {failure}");
    }
    if listed.is_empty() {
        println!("no skills");
    }
    for s in &listed {
        println!(
            "{:<24} {:<12} {}\n{:<24} {}",
            terminal_safe(s.name()),
            s.server,
            terminal_safe(&short(Some(s.description()), 80)),
            "",
            dim(&terminal_safe(s.uri()))
        );
    }
    Ok(())
}

/// `/skill NAME [FILE]`: loads a skill (or one of its files) into the conversation, verified.
pub async fn chat_load(engine: &mut ChatEngine, args: &[&str]) -> anyhow::Result<()> {
    let (name, file) = match args {
        [name] => (*name, None),
        [name, file] => (*name, Some(*file)),
        _ => {
            return Err(UsageError("usage: /skill NAME [FILE] (see /skills)".into()).into());
        }
    };
    let sessions = engine.sessions().clone();
    let (listed, failures) = skills::list_all(&sessions, None).await;
    for failure in &failures {
        eprintln!("rkmcp: {failure}");
    }
    let skill = skills::find(&listed, name)?;
    let session = sessions
        .session(&skill.server)
        .with_context(|| format!("server `{}` is not running", skill.server))?;
    let (uri, text, verification) = match file {
        None => {
            let loaded = skills::load(session, skill).await?;
            (loaded.uri, loaded.text, loaded.verification)
        }
        Some(path) => {
            let file = skills::read_file(session, skill, path).await?;
            (file.uri, file.text, file.verification)
        }
    };
    let checked = match &verification {
        Verification::Manifest { .. } => "verified",
        Verification::Dynamic => "not verifiable: the server lists its files as dynamic",
    };
    println!(
        "{}",
        dim(&format!(
            "(added skill `{}` from {} to the conversation: {uri}, {} characters, {checked})",
            skill.name(),
            skill.server,
            text.chars().count()
        ))
    );
    engine.push_context(Message::user(format!(
        "Skill `{}` ({uri}):\n{text}",
        skill.name()
    )));
    Ok(())
}
