//! Tracing setup: `RUST_LOG` or `-v` choose the level; logs go to stderr or `--log-file`, never to
//! stdout, so `--json` output stays clean.
use std::fs::OpenOptions;

use tracing_subscriber::EnvFilter;

use crate::cli::GlobalArgs;

/// Keeps the log file open for the life of the program.
pub struct LogGuard;

pub fn init(global: &GlobalArgs) -> anyhow::Result<LogGuard> {
    let default_level = match global.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => EnvFilter::try_new(&spec)
            .map_err(|e| anyhow::anyhow!("RUST_LOG={spec:?} is not a valid filter: {e}"))?,
        _ => EnvFilter::new(default_level),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match &global.log_file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(file))
                .try_init()
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        None => {
            builder
                .with_writer(std::io::stderr)
                .try_init()
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    Ok(LogGuard)
}
