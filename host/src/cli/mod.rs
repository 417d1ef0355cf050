//! Command-line interface: argument parsing, dispatch, exit codes.
//!
//! Every command lives in its own module and gets a [`Context`] with the global flags. Commands
//! return `anyhow::Result`; [`exit_code_for`] maps a [`UsageError`] or a config error to exit
//! code 2 and anything else to 1.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod approve_prompt;
mod ask;
mod audit;
mod auth;
mod chat;
mod conformance;
mod doctor;
pub mod elicit_form;
mod formats;
mod models;
mod plugins;
mod roots_command;
pub mod sampling_prompt;
mod serve;
mod sign_in_prompt;
mod skills;
mod tasks;
pub mod turn_view;

/// A mistake in how rkmcp was invoked (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[derive(Debug, Parser)]
#[command(
    name = "rkmcp",
    version,
    about = "Chat with local LLMs (RKLLM on Rockchip NPUs, llama.cpp on CPU) that use MCP tools",
    long_about = None,
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted by every command.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Config file (TOML, or JSON with `mcpServers`/`servers`). Default: ./rkmcp.toml or
    /// ./.rkmcp/config.toml, merged over $XDG_CONFIG_HOME/rkmcp/config.toml.
    #[arg(
        long,
        short = 'c',
        global = true,
        env = "RKMCP_CONFIG",
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,
    /// Print machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Show the log on stderr: -v info lines of rkmcp and its libraries, -vv debug, -vvv trace
    /// (RUST_LOG overrides). Without it only rkmcp's notices appear there.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Write the log to this file instead of stderr (warnings and errors, more with -v);
    /// notices still appear on stderr.
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Record every MCP message, tool call and approval in this audit log (JSON lines, secrets
    /// redacted); overrides `[audit] path`.
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// When nobody is at a terminal, accept a server's elicitation form with its defaults (if
    /// every required field has one) instead of declining it.
    #[arg(long, global = true)]
    pub accept_defaults: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate and show the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Show and check the configured MCP servers.
    #[command(subcommand)]
    Servers(ServersCommand),
    /// List and call MCP tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// List and read MCP resources.
    #[command(subcommand)]
    Resources(ResourcesCommand),
    /// List and render MCP prompts.
    #[command(subcommand)]
    Prompts(PromptsCommand),
    /// List MCP servers' skills and load one, verified (SEP-2640 skills extension).
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// List, inspect and check WebAssembly plugins; start, install and grant them.
    #[command(subcommand)]
    Plugins(plugins::PluginsCommand),
    /// Chat with the model in the terminal; it may call the MCP servers' tools.
    Chat(chat::ChatCmdArgs),
    /// Ask the model one question (argument or stdin) and stream its answer; for scripts.
    Ask(ask::AskArgs),
    /// Show the installed models.
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Check backends, the RKLLM runtime, NPU devices, models, plugins and servers.
    Doctor(doctor::DoctorArgs),
    /// Read the audit log and check that it was not tampered with.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// The tasks servers run for tool calls: list, show, cancel.
    #[command(subcommand)]
    Tasks(tasks::TasksCommand),
    /// Sign in to remote MCP servers (OAuth), show sign-ins, sign out.
    ///
    /// Tokens are kept in the OS keyring (Secret Service: GNOME Keyring, KWallet, KeePassXC) where
    /// one answers on the session bus, else in `$XDG_STATE_HOME/rkmcp/auth/credentials.json`
    /// (mode 0600). RKMCP_TOKEN_STORE=keyring|file|auto (default auto) picks one; sign-ins in
    /// the file move into the keyring the first time it is used.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Serve MCP: the configured servers' tools behind rkmcp's policy, and the local model as a
    /// tool (stdio, or streamable HTTP with --http).
    Serve(serve::ServeArgs),
    /// Tool-call formats: infer one from a chat template, parse model output with one.
    #[command(subcommand)]
    Formats(formats::FormatsCommand),
    /// The client the official MCP conformance suite drives (for CI; see
    /// scripts/check.d/70-conformance.sh).
    #[command(hide = true, name = "conformance-client")]
    ConformanceClient(conformance::ConformanceArgs),
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate the configuration and print it resolved, with secrets masked.
    Check,
}

#[derive(Debug, Subcommand)]
pub enum ServersCommand {
    /// List configured servers (does not start them).
    List,
    /// Start every enabled server and report whether it is up, with its version and counts.
    Status,
    /// Start the servers and ping each one, reporting round-trip times.
    Ping {
        /// Only this server.
        server: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List tools under the names the model sees.
    List {
        /// Only tools of this server.
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Call a tool: `rkmcp tools call everything__echo message=hi` or `--args '{"message":"hi"}'`.
    Call {
        /// Tool name as listed by `rkmcp tools list` (or `server/tool`).
        name: String,
        /// Arguments as one JSON object.
        #[arg(long, value_name = "JSON", conflicts_with = "pairs")]
        args: Option<String>,
        /// Arguments as key=value pairs; values that parse as JSON (numbers, true, {…}) are used as
        /// JSON, anything else as a string.
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResourcesCommand {
    /// List resources and resource templates of every server.
    List {
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Read a resource by URI.
    Read {
        uri: String,
        /// The server to ask (default: the one that lists the URI).
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Subscribe to a resource and print one JSON line per update until Ctrl-C.
    Watch {
        uri: String,
        /// The server to ask (default: the one that lists the URI).
        #[arg(long, short = 's')]
        server: Option<String>,
        /// Also read the resource on each update and include its contents.
        #[arg(long)]
        read: bool,
        /// Stop after this many updates.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum PromptsCommand {
    /// List prompts of every server.
    List {
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Render a prompt with arguments: `rkmcp prompts get everything__args-prompt city=Paris`.
    Get {
        name: String,
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
    },
}

/// What every command receives.
pub struct Context {
    pub global: GlobalArgs,
}

impl Context {
    /// The config the global flags point at (`--config`, `--audit`).
    pub fn load_config(&self) -> Result<crate::config::Config, crate::config::ConfigError> {
        crate::config::load(self.global.config.clone(), self.global.audit.as_deref())
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // A guard keeps the non-blocking log writer alive until exit.
    let _log_guard = match crate::logging::init(cli.global.verbose, cli.global.log_file.as_deref())
    {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("rkmcp: {err:#}");
            return ExitCode::from(2);
        }
    };
    // `serve` relays small messages between pipes and sockets: on one thread, a request and
    // its answer never wake another worker (cross-thread wake-ups were most of the gateway's
    // added latency). Generation and blocking prompts run on tokio's blocking pool either way.
    let mut builder = if matches!(cli.command, Command::Serve(_)) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("rkmcp: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let ctx = Context { global: cli.global };
    let result = runtime.block_on(dispatch(ctx, cli.command));
    // Give child servers their shutdown sequence before the runtime goes away.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("rkmcp: error: {err:#}");
            ExitCode::from(exit_code_for(&err))
        }
    }
}

/// 2 for usage and configuration mistakes, 1 for everything that went wrong at run time.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    let mistake = |e: &(dyn std::error::Error + 'static)| {
        e.is::<UsageError>()
            || e.is::<crate::config::ConfigError>()
            || matches!(
                e.downcast_ref::<rkmcp_llm::LlmError>(),
                Some(rkmcp_llm::LlmError::Config(_))
            )
    };
    if err.chain().any(mistake) { 2 } else { 1 }
}

async fn dispatch(ctx: Context, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Config(cmd) => crate::cli::inspect::config(&ctx, cmd).await,
        Command::Servers(cmd) => crate::cli::inspect::servers(&ctx, cmd).await,
        Command::Tools(cmd) => crate::cli::inspect::tools(&ctx, cmd).await,
        Command::Resources(cmd) => crate::cli::inspect::resources(&ctx, cmd).await,
        Command::Prompts(cmd) => crate::cli::inspect::prompts(&ctx, cmd).await,
        Command::Skills(cmd) => skills::run(&ctx, cmd).await,
        Command::Plugins(cmd) => plugins::run(&ctx, cmd).await,
        Command::Chat(args) => chat::run(&ctx, args).await,
        Command::Ask(args) => ask::run(&ctx, args).await,
        Command::Models(cmd) => models::run(&ctx, cmd).await,
        Command::Doctor(args) => doctor::run(&ctx, args).await,
        Command::Audit(cmd) => audit::run(&ctx, cmd).await,
        Command::Auth(cmd) => auth::run(&ctx, cmd).await,
        Command::Tasks(cmd) => tasks::run(&ctx, cmd).await,
        Command::ConformanceClient(args) => conformance::run(&ctx, args).await,
        Command::Serve(args) => serve::run(&ctx, args).await,
        Command::Formats(cmd) => formats::run(&ctx, cmd).await,
    }
}

mod inspect;
pub mod output;
mod watch;
