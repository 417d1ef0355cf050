//! `rkmcp doctor` — owned by the LLM backend work (issue 4).
use std::process::ExitCode;

use super::Context;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}

pub async fn run(_ctx: &Context, _args: DoctorArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("doctor is not supported yet")
}
