//! `rkmcp plugins list|inspect FILE|check FILE` — the WebAssembly plugins in the plugin folders.
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
}

fn host(ctx: &Context) -> anyhow::Result<PluginHost> {
    let config = crate::config::load(&ctx.global)?;
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
    let mut parts = Vec::new();
    if !g.files.is_empty() {
        parts.push(format!("files: {}", g.files.join(", ")));
    }
    if !g.network.is_empty() {
        parts.push(format!("network: {}", g.network.join(", ")));
    }
    if !g.env.is_empty() {
        parts.push(format!("env: {}", g.env.join(", ")));
    }
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
    let host = host(ctx)?;
    match cmd {
        PluginsCommand::List => {
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
                let dirs: Vec<String> = host
                    .config()
                    .plugin_dirs()
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect();
                eprintln!("no plugins (*.wasm) in {}", dirs.join(", "));
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
            let info = host.inspect(&file)?;
            if ctx.global.json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                print_info(&info);
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Check { file } => {
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
