//! `rkmcp models …` — owned by the LLM backend work (issue 4).
use std::process::ExitCode;

use super::Context;

#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// List installed models.
    List,
}

pub async fn run(_ctx: &Context, _cmd: ModelsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("models are not supported yet")
}
