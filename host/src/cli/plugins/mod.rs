//! `rkmcp plugins list|inspect|check|new|install|grant|approve` — the WebAssembly plugins in the
//! plugin folders, and making, installing, granting and approving them.
mod approve;
mod install;
mod new;

use std::path::PathBuf;
use std::process::ExitCode;

use rkmcp_plugin_host::{PluginHost, PluginInfo, PluginStatus, PluginsConfig};
use serde::Deserialize;

use super::{Context, UsageError};

#[derive(Debug, clap::Subcommand)]
pub enum PluginsCommand {
    /// List plugins in the plugin folders with their kind, status and grants.
    List,
    /// Show a plugin file: kind, contract version, manifest, grants, imports and exports.
    Inspect {
        /// A `.wasm` component (its plugin name is the file name without `.wasm`).
        file: PathBuf,
    },
    /// Load, instantiate and smoke-call a plugin file with the grant its name has in the config.
    Check {
        /// A `.wasm` component (its plugin name is the file name without `.wasm`).
        file: PathBuf,
    },
    /// Start a plugin project that builds with one command and passes `rkmcp plugins check`.
    ///
    /// Creates the folder NAME (or --dir) with the plugin's source, its manifest NAME.toml
    /// (what it requests) and a README, then prints the build command. A Rust project uses the
    /// plugin SDK of rkmcp's sources (a path dependency) and builds for wasm32-wasip2; a
    /// Python project (every kind) builds with componentize-py; a JavaScript project (detector,
    /// converter, guard) with componentize-js. Never writes into an existing folder.
    #[command(after_help = "Examples:\n  \
        rkmcp plugins new guard my-guard\n  \
        rkmcp plugins new detector my-format --dir ~/src/my-format\n  \
        rkmcp plugins new guard py-rules --lang python\n  \
        rkmcp plugins new transport py-tcp --lang python\n  \
        rkmcp plugins new detector js-lines --lang js")]
    New {
        /// What the plugin does.
        kind: new::Kind,
        /// Plugin name: lowercase letters, digits and '-' (also its file, crate and config
        /// key: NAME.wasm, [plugins.grants.NAME]).
        name: String,
        /// Language of the project. Python (componentize-py) has a template for every kind;
        /// JavaScript (componentize-js) has detector, converter and guard templates.
        #[arg(long, value_enum, default_value = "rust")]
        lang: new::Lang,
        /// Folder to create (default: ./NAME). It must not exist.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The Rust plugin SDK (the plugins/sdk folder of rkmcp's sources); default: beside
        /// the sources this rkmcp was built from.
        #[arg(long, value_name = "PATH")]
        sdk: Option<PathBuf>,
    },
    /// Copy a plugin into your plugin folder; it is granted nothing.
    ///
    /// Copies NAME.wasm (and its manifest NAME.toml, if beside it) into the first plugin folder
    /// rkmcp searches ($XDG_DATA_HOME/rkmcp/plugins unless [plugins] says otherwise), after
    /// checking that it is an rkmcp plugin. Then shows what it requests (files, network,
    /// environment), what it is granted (nothing until you grant it) and the
    /// [plugins.grants.NAME] that grants its requests. Refuses to replace an installed plugin of
    /// the same name without --replace.
    #[command(after_help = "Example:\n  \
        rkmcp plugins install ./my-guard.wasm")]
    Install {
        /// The `.wasm` component; its name is the file name without `.wasm`.
        path: PathBuf,
        /// Overwrite a plugin of the same name that is already installed.
        #[arg(long)]
        replace: bool,
    },
    /// Grant a plugin folders, network or environment variables, in your config.
    ///
    /// Adds to [plugins.grants.NAME] in your config ($XDG_CONFIG_HOME/rkmcp/config.toml, or
    /// --config FILE), keeping its comments and layout, after showing the result and asking.
    /// Without a terminal it writes nothing unless --yes is given. Values already granted are not
    /// added twice. The grant applies the next time rkmcp loads the plugin.
    #[command(after_help = "Examples:\n  \
        rkmcp plugins grant my-transport --network 127.0.0.1:8765\n  \
        rkmcp plugins grant my-indexer --read ~/notes:/notes --env LANG --yes")]
    Grant {
        /// The plugin's name (its file name without `.wasm`).
        name: String,
        /// `host:port` it may connect to: `127.0.0.1:8765`, `[::1]:80`, `example.com:443`,
        /// `*.example.com:443`, `host:*` (repeatable). A host name also allows looking it up.
        #[arg(long, value_name = "HOST:PORT")]
        network: Vec<String>,
        /// A folder it may read, `HOST[:GUEST]`: the folder on this machine, and the absolute
        /// path the plugin sees it at (default: the same path). Repeatable.
        #[arg(long, value_name = "FOLDER[:GUEST]")]
        read: Vec<String>,
        /// A folder it may read and write, `HOST[:GUEST]` (as --read). Repeatable.
        #[arg(long, value_name = "FOLDER[:GUEST]")]
        write: Vec<String>,
        /// An environment variable it may read (repeatable).
        #[arg(long, value_name = "VAR")]
        env: Vec<String>,
        /// Write without asking (for scripts; required without a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Approve a plugin's current file and grants after it changed.
    ///
    /// rkmcp records each installed plugin's SHA-256 and the grants approved with it in the
    /// plugin lock ($XDG_CONFIG_HOME/rkmcp/plugins.lock, or [plugins] lock_file). A plugin whose
    /// file changed since (a new version copied over it, or anything else writing there), or
    /// whose config grants it more than was approved, is not run until you approve it here.
    /// Shows the old and new digest and the grant differences, then asks. `install` and `grant`
    /// record their own changes; with [plugins] require_approval = true, plugins without an
    /// entry must be approved too.
    #[command(after_help = "Example:\n  \
        rkmcp plugins approve my-guard")]
    Approve {
        /// The plugin's name (its file name without `.wasm`).
        name: String,
        /// Approve without asking (for scripts; required without a terminal).
        #[arg(long)]
        yes: bool,
    },
}

fn host(ctx: &Context) -> anyhow::Result<PluginHost> {
    let config = ctx.load_config()?;
    let plugins = PluginsConfig::deserialize(toml::Value::Table(config.plugins.clone()))
        .map_err(|e| UsageError(format!("[plugins]: {e}")))?;
    PluginHost::new(plugins)
}

/// Reasons can quote a plugin's own words (faults, load errors): shown without control sequences.
fn status(s: &PluginStatus) -> String {
    let text = match s {
        PluginStatus::Ready => "ready".into(),
        PluginStatus::Disabled => "disabled".into(),
        PluginStatus::Quarantined(r) => format!("quarantined: {r}"),
        PluginStatus::Error(e) => format!("error: {e}"),
    };
    rkmcp_term_safe::sanitized_inline(text)
}

use rkmcp_term_safe::sanitize_inline as clean;

fn grants(info: &PluginInfo) -> String {
    let g = &info.grants;
    let mut parts: Vec<String> = g
        .capabilities
        .iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(key, items)| format!("{key}: {}", items.join(", ")))
        .collect();
    parts.push(format!("memory: {} MiB", g.memory_mb));
    parts.join("; ")
}

fn print_info(info: &PluginInfo) {
    println!("name:      {}", clean(&info.name));
    println!("path:      {}", info.path.display());
    println!(
        "kind:      {}",
        info.kind.map_or("-".to_string(), |k| k.to_string())
    );
    println!(
        "contract:  rkmcp:plugin@{}",
        info.contract_version.as_deref().unwrap_or("-")
    );
    println!("status:    {}", status(&info.status));
    println!("granted:   {}", grants(info));
    if let Some(m) = &info.manifest {
        if let Some(d) = &m.description {
            println!("about:     {d}");
        }
        let r = &m.requests;
        if !r.files.is_empty() || !r.network.is_empty() || !r.env.is_empty() {
            let files: Vec<String> = r.files.iter().map(|f| f.guest.clone()).collect();
            println!(
                "requests:  files: [{}] network: [{}] env: [{}] (granted only via [plugins.grants.{}])",
                files.join(", "),
                r.network.join(", "),
                r.env.join(", "),
                info.name
            );
        }
    }
    if info.faults > 0 {
        println!(
            "faults:    {} (last: {})",
            info.faults,
            clean(info.last_fault.as_deref().unwrap_or("-"))
        );
    }
    for i in &info.imports {
        println!("import:    {i}");
    }
    for e in &info.exports {
        println!("export:    {e}");
    }
}

pub async fn run(ctx: &Context, cmd: PluginsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        // `new` and `grant` need no plugin host (`grant` must work while a plugin fails to load).
        PluginsCommand::New {
            kind,
            name,
            lang,
            dir,
            sdk,
        } => {
            let p = new::scaffold(kind, &name, lang, dir, sdk)?;
            println!("created {}", p.dir.display());
            println!("build it with (in {}):\n    {}", p.dir.display(), p.build);
            println!("which needs {}", p.needs);
            println!("then: rkmcp plugins check {name}.wasm && rkmcp plugins install {name}.wasm");
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Grant {
            name,
            network,
            read,
            write,
            env,
            yes,
        } => {
            let config = install::user_config_file(ctx.global.config.as_deref())?;
            let req = install::GrantRequest {
                name,
                network,
                read,
                write,
                env,
                yes,
            };
            let name = req.name.clone();
            install::grant(&config, &req)?;
            // The config may not load (that is no reason to fail a grant that was written).
            if let Ok(host) = host(ctx) {
                approve::record_granted(&host, &name)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Approve { name, yes } => {
            approve::approve(&host(ctx)?, &name, yes)?;
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Install { path, replace } => {
            install::install(&host(ctx)?, &path, replace)?;
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::List => {
            let host = host(ctx)?;
            let infos = host.discover();
            if ctx.global.json {
                let dirs = host.config().plugin_dirs();
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({ "dirs": dirs, "plugins": infos })
                    )?
                );
            } else if infos.is_empty() {
                eprintln!("no plugins (*.wasm) in {}", searched_dirs(&host));
            } else {
                println!("{:<24} {:<17} {:<9} STATUS", "NAME", "KIND", "CONTRACT");
                for i in &infos {
                    println!(
                        "{:<24} {:<17} {:<9} {}",
                        clean(&i.name),
                        i.kind.map_or("-".to_string(), |k| k.to_string()),
                        i.contract_version.as_deref().unwrap_or("-"),
                        status(&i.status)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Inspect { file } => {
            let host = host(ctx)?;
            let info = host.inspect(&file)?;
            if ctx.global.json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                print_info(&info);
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Check { file } => {
            let host = host(ctx)?;
            let report = host.check(&file).await?;
            if ctx.global.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print_info(&report.info);
                println!("load:      {:.2} ms", report.load_ms);
                println!("instance:  {:.3} ms", report.instantiate_ms);
                println!("smoke:     {}", clean(&report.smoke));
                println!("ok");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The folders the host looks for plugins in, for "no plugins in …".
pub(crate) fn searched_dirs(host: &rkmcp_plugin_host::PluginHost) -> String {
    let dirs: Vec<String> = host
        .config()
        .plugin_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    dirs.join(", ")
}
