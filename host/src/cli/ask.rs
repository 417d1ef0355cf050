//! `rkmcp ask` — owned by the LLM backend work (issue 4).
use std::process::ExitCode;

use super::Context;

#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// The question.
    pub prompt: Option<String>,
}

pub async fn run(_ctx: &Context, _args: AskArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`ask` is not supported yet")
}
