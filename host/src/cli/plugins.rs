//! `rkmcp plugins …` — owned by the plugin host work (issue 3).
use std::process::ExitCode;

use super::Context;

#[derive(Debug, clap::Subcommand)]
pub enum PluginsCommand {
    /// List plugins in the plugin folders.
    List,
}

pub async fn run(_ctx: &Context, _cmd: PluginsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("plugins are not supported yet")
}
