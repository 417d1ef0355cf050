//! `rkmcp serve` — rkmcp as an MCP server: the configured servers' tools behind rkmcp's policy,
//! and the local model as a tool. Flags only; the gateway is `crate::serve`.
use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use super::ask::{ModelArgs, model_config};
use super::{Context, UsageError};
use crate::chat::ChatSettings;
use crate::serve::{ServeOptions, ServeSettings};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Serves MCP on stdin/stdout (what Claude Desktop, VS Code and other clients start), or streamable
HTTP with --http. Every configured server's tools, resources and prompts are offered under the
names `rkmcp tools list` shows; each tool call passes [chat.approval] (deny rules, guard plugins,
auto_approve, annotations) and a call that needs a person is asked of the client through
elicitation, or denied with the reason. Logs go to stderr (or --log-file), never to stdout.

Over HTTP, [serve.auth] decides who may connect: `bearer_token_env` (one shared token), or
`issuer` (+ `scopes`, `resource`, `introspection_client_id`, `introspection_client_secret_env`)
to accept the access tokens an OAuth authorization server issued for this gateway; clients find
that server through the metadata at /.well-known/oauth-protected-resource.

`rkmcp serve --print-config claude|vscode` prints the snippet to paste into those clients.")]
pub struct ServeArgs {
    /// Serve streamable HTTP on HOST:PORT instead of stdio (loopback unless [serve.auth] sets a
    /// bearer token or an OAuth issuer). Overrides `[serve] http`.
    #[arg(long, value_name = "HOST:PORT")]
    pub http: Option<String>,
    /// Print the client configuration snippet for `claude` (Claude Desktop) or `vscode` and exit.
    #[arg(long, value_name = "CLIENT")]
    pub print_config: Option<String>,
    /// Append one JSON line per request to FILE. Overrides `[serve] instrumentation`.
    #[arg(long, value_name = "FILE")]
    pub instrumentation: Option<std::path::PathBuf>,
    /// Do not offer the local model (`local_model_generate`, sampling fallback).
    #[arg(long)]
    pub no_local_model: bool,
    /// Approve every tool call that deny rules and guard plugins allow.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub async fn run(ctx: &Context, args: ServeArgs) -> anyhow::Result<ExitCode> {
    if let Some(client) = &args.print_config {
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| p.canonicalize().ok())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "rkmcp".into());
        let config = ctx
            .global
            .config
            .as_ref()
            .map(|c| std::path::absolute(c).unwrap_or_else(|_| c.clone()))
            .map(|c| c.display().to_string());
        let snippet =
            crate::serve::client_config(client, &exe, config.as_deref()).map_err(UsageError)?;
        println!("{snippet}");
        return Ok(ExitCode::SUCCESS);
    }
    let config = ctx.load_config()?;
    let mut settings: ServeSettings = config.section("serve")?;
    if let Some(http) = args.http {
        settings.http = Some(http);
    }
    if let Some(path) = args.instrumentation {
        settings.instrumentation = Some(path);
    }
    if args.no_local_model {
        settings.local_model = false;
    }
    let token = settings.auth.bearer_token().map_err(UsageError)?;
    settings.limits.check().map_err(UsageError)?;
    let addr = match &settings.http {
        Some(spec) => Some(
            crate::serve::http::listen_address(spec, settings.auth.required())
                .map_err(|e| UsageError(e.to_string()))?,
        ),
        None => None,
    };
    let model = if settings.local_model {
        Some(model_config(ctx, &args.model)?)
    } else {
        None
    };
    let chat = config.section::<ChatSettings>("chat")?;
    let started = crate::serve::start(
        &config,
        ServeOptions {
            settings: settings.clone(),
            chat,
            model,
            yes: args.yes,
        },
    )
    .await?;
    let result = match addr {
        None => crate::serve::serve_stdio(&started).await,
        Some(addr) => {
            let cancel = CancellationToken::new();
            match crate::serve::http::bind(
                started.gateway.clone(),
                &settings,
                addr,
                token,
                cancel.clone(),
            )
            .await
            {
                Ok((bound, serving)) => {
                    eprintln!("rkmcp: serving MCP at http://{bound}/mcp (Ctrl-C stops)");
                    tokio::select! {
                        _ = serving => {}
                        _ = tokio::signal::ctrl_c() => cancel.cancel(),
                    }
                    Ok(())
                }
                Err(err) => Err(anyhow::Error::from(err)),
            }
        }
    };
    started.shutdown().await;
    result.map(|()| ExitCode::SUCCESS)
}
