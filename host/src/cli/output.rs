//! Printing results: tables for people, JSON for scripts. Both go to stdout; everything else
//! (progress, warnings, logs) goes to stderr.
use std::io::Write;

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

/// Prints `value` as pretty JSON on stdout.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// A table with a header row, sized to the terminal when there is one.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    t
}

pub fn print_table(t: &Table) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{t}")?;
    Ok(())
}

/// First line of a description, cut to `max` characters.
pub fn short(text: Option<&str>, max: usize) -> String {
    let line = text.unwrap_or("").lines().next().unwrap_or("").trim();
    if line.chars().count() <= max {
        line.to_string()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Prints a warning line on stderr (`rkmcp: warning: …`, once per run) and puts it in the log
/// file: a notice, shown at every verbosity (see [`crate::logging`]).
pub fn warn(message: impl std::fmt::Display) {
    tracing::warn!(target: crate::logging::NOTICE_TARGET, "{message}");
}
