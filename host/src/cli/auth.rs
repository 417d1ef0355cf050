//! `rkmcp auth login|status|logout`: sign in to remote MCP servers, see the sign-ins (never a
//! token), sign out.
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::{Context, UsageError, output};
use crate::config::{Config, Grant, ServerConfig, TransportKind};
use crate::mcp::auth::login::{LoginOptions, LoginUi, SignedIn, login, logout};
use crate::mcp::auth::store::TokenStore;

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Sign in to a server (opens the browser where there is one, else prints the URL).
    Login {
        /// The server's name in the config.
        server: String,
        /// A scope to ask for (repeatable); default: what the server asks for.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// Do not open a browser; print the URL only.
        #[arg(long)]
        no_browser: bool,
        /// Sign in on another device with a short code (RFC 8628), for machines without a browser.
        #[arg(long, conflicts_with = "no_browser")]
        device: bool,
        /// How long to wait for the sign-in to finish.
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
    /// Show the stored sign-ins: server, issuer, scopes, expiry. Never a token.
    Status {
        /// Only this server.
        server: Option<String>,
    },
    /// Revoke (where the server supports it) and delete a server's stored sign-in.
    Logout { server: String },
}

struct Stderr;

impl LoginUi for Stderr {
    fn say(&mut self, line: &str) {
        eprintln!("{line}");
    }
}

fn remote_server<'a>(config: &'a Config, name: &str) -> anyhow::Result<&'a ServerConfig> {
    let server = config.server(name).ok_or_else(|| {
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        let hint = crate::config::nearest(name, &names)
            .map(|n| format!(" — did you mean `{n}`?"))
            .unwrap_or_default();
        UsageError(format!("no server named `{name}` in the config{hint}"))
    })?;
    if matches!(
        server.transport,
        TransportKind::Stdio | TransportKind::Plugin(_)
    ) {
        return Err(UsageError(format!(
            "server `{name}` is a {} server; only remote (`url`) servers sign in",
            server.transport
        ))
        .into());
    }
    Ok(server)
}

pub async fn run(ctx: &Context, cmd: AuthCommand) -> anyhow::Result<ExitCode> {
    let config = ctx.load_config()?;
    match cmd {
        AuthCommand::Login {
            server,
            scopes,
            no_browser,
            device,
            timeout,
        } => {
            let server = remote_server(&config, &server)?;
            if let Some(auth) = &server.auth {
                if auth.bearer_token_env.is_some() {
                    return Err(UsageError(format!(
                        "server `{}` uses a static token (auth.bearer_token_env); there is nothing to sign in to",
                        server.name
                    ))
                    .into());
                }
                let by_itself = match auth.grant {
                    Grant::ClientCredentials => Some("client_credentials"),
                    Grant::JwtBearer => Some("jwt_bearer"),
                    Grant::EnterpriseManaged => Some("enterprise_managed"),
                    Grant::AuthorizationCode => None,
                };
                if let Some(grant) = by_itself {
                    return Err(UsageError(format!(
                        "server `{}` signs in by itself (auth.grant = \"{grant}\"); no login needed",
                        server.name
                    ))
                    .into());
                }
            }
            let options = LoginOptions {
                scopes,
                open_browser: !no_browser,
                accept_paste: std::io::stdin().is_terminal(),
                timeout,
            };
            let signed_in = if device {
                crate::mcp::auth::device::device_login(server, &options, &mut Stderr).await?
            } else {
                login(server, &options, &mut Stderr).await?
            };
            if ctx.global.json {
                output::json(&signed_in)?;
            } else {
                eprintln!(
                    "Signed in to `{}`{}{}.",
                    signed_in.server,
                    signed_in
                        .issuer
                        .as_deref()
                        .map(|i| format!(" via {i}"))
                        .unwrap_or_default(),
                    if signed_in.scopes.is_empty() {
                        String::new()
                    } else {
                        format!(" (scopes: {})", signed_in.scopes.join(" "))
                    }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Status { server } => {
            if let Some(name) = &server {
                remote_server(&config, name)?;
            }
            let store = TokenStore::open_default().await?;
            let entries: Vec<SignedIn> = store
                .entries()
                .await?
                .iter()
                .filter(|e| server.as_deref().is_none_or(|s| s == e.server))
                .map(SignedIn::from_entry)
                .collect();
            if ctx.global.json {
                output::json(&entries)?;
                return Ok(ExitCode::SUCCESS);
            }
            if entries.is_empty() {
                println!("No stored sign-ins (in {}).", store.describe());
                return Ok(ExitCode::SUCCESS);
            }
            let mut table =
                output::table(&["SERVER", "ISSUER", "CLIENT", "SCOPES", "EXPIRES", "REFRESH"]);
            for e in &entries {
                table.add_row(vec![
                    e.server.clone(),
                    e.issuer.clone().unwrap_or_else(|| "-".into()),
                    output::short(Some(&e.client_id), 40),
                    e.scopes.join(" "),
                    match e.expires_in_secs {
                        Some(0) => "expired".into(),
                        Some(s) => {
                            format!("in {}", humantime::format_duration(Duration::from_secs(s)))
                        }
                        None => "-".into(),
                    },
                    if e.refreshable { "yes" } else { "no" }.into(),
                ]);
            }
            output::print_table(&table)?;
            println!("Stored in {}.", store.describe());
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Logout { server } => {
            let server = remote_server(&config, &server)?;
            let (removed, problem) = logout(server).await?;
            if let Some(problem) = &problem {
                output::warn(problem);
            }
            if ctx.global.json {
                output::json(&serde_json::json!({
                    "server": server.name,
                    "removed": removed.len(),
                    "revoked": problem.is_none() && !removed.is_empty(),
                }))?;
            } else if removed.is_empty() {
                eprintln!("`{}` had no stored sign-in.", server.name);
            } else {
                eprintln!("Signed out of `{}`.", server.name);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
