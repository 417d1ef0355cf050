//! What reaches stderr, and what goes to the log.
//!
//! At the default verbosity stderr carries only rkmcp's notices: one line each, printed once,
//! `rkmcp: warning: server `web`: …`, for what the person must know and act on (events with the
//! target [`NOTICE_TARGET`]). Everything else — rkmcp's own tracing and the libraries' log lines
//! (rmcp, wasmtime, reqwest, hyper) — goes to `--log-file`, or shows on stderr with `-v`.
//!
//! `-v` shows info lines in the same one-line form (`rkmcp: info: [rmcp] Service initialized as
//! client`): the message only, no module paths and no Debug-formatted fields of libraries.
//! `-vv`/`-vvv` and `RUST_LOG` show tracing's full format, for debugging rkmcp itself. Logs never
//! go to stdout, so `--json` output stays clean.
use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

pub use rkmcp_term_safe::NOTICE_TARGET;

/// Keeps the log file open for the life of the program.
pub struct LogGuard;

/// rmcp logs its failures with their Debug form (`worker quit with fatal: … AuthRequired(…)`);
/// rkmcp reports the same failures itself in words, so those lines show only from `-vv` on.
fn rkmcp_words_it(meta: &tracing::Metadata<'_>) -> bool {
    meta.target().starts_with("rmcp") && matches!(*meta.level(), Level::WARN | Level::ERROR)
}

/// Sets up stderr and the log file: `verbose` is the count of `-v`, `log_file` is `--log-file`.
pub fn init(verbose: u8, log_file: Option<&Path>) -> anyhow::Result<LogGuard> {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let rust_log = std::env::var("RUST_LOG").ok().filter(|s| !s.is_empty());
    // Notices print themselves (below); the log layers show them only in the log file.
    let log_filter = |with_notices: bool| -> anyhow::Result<EnvFilter> {
        let mut spec = match &rust_log {
            Some(spec) => {
                EnvFilter::try_new(spec)
                    .map_err(|e| anyhow::anyhow!("RUST_LOG={spec:?} is not a valid filter: {e}"))?;
                spec.clone()
            }
            None => level.to_string(),
        };
        if !with_notices {
            spec.push_str(&format!(",{NOTICE_TARGET}=off"));
        }
        EnvFilter::try_new(&spec).map_err(|e| anyhow::anyhow!("log filter {spec:?}: {e}"))
    };
    let notices = NoticeLayer::default().with_filter(filter_fn(|m| m.target() == NOTICE_TARGET));
    let registry = tracing_subscriber::registry().with(notices);
    let result = match log_file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))?;
            let layer = fmt::layer()
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .with_filter(log_filter(true)?);
            registry.with(layer).try_init()
        }
        // A person asked for more: the brief one-line form.
        None if rust_log.is_none() && verbose == 1 => {
            let layer = fmt::layer()
                .event_format(Brief)
                .with_writer(std::io::stderr)
                .with_filter(log_filter(false)?)
                .with_filter(filter_fn(|m| !rkmcp_words_it(m)));
            registry.with(layer).try_init()
        }
        // Debugging rkmcp: tracing's own format with targets and fields.
        None if rust_log.is_some() || verbose >= 2 => {
            let layer = fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(log_filter(false)?);
            registry.with(layer).try_init()
        }
        None => registry.try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(LogGuard)
}

/// The parts of an event a one-line message is made of.
#[derive(Default)]
struct Parts {
    message: String,
    server: Option<String>,
    plugin: Option<String>,
    /// Other fields as ` key=value`.
    rest: String,
}

impl Visit for Parts {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            "server" => self.server = Some(value.to_string()),
            "plugin" => self.plugin = Some(value.to_string()),
            name => {
                let _ = write!(self.rest, " {name}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields arrive here too, formatted with Display.
        self.record_str(field, &format!("{value:?}"))
    }
}

impl Parts {
    fn of(event: &Event<'_>) -> Parts {
        let mut parts = Parts::default();
        event.record(&mut parts);
        parts
    }

    /// `server `x`: ` / `plugin `y`: `, unless the message already starts by naming it.
    fn subject(&self) -> String {
        let named = |kind: &str, name: &Option<String>| {
            name.as_ref()
                .map(|n| format!("{kind} `{n}`"))
                .filter(|s| !self.message.starts_with(s.as_str()))
                .map(|s| format!("{s}: "))
                .unwrap_or_default()
        };
        let server = named("server", &self.server);
        if server.is_empty() {
            named("plugin", &self.plugin)
        } else {
            server
        }
    }
}

fn level_word(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// The line a notice prints: `rkmcp: warning: server `web`: …` (an info notice has no level word).
fn notice_line(event: &Event<'_>) -> String {
    let parts = Parts::of(event);
    let level = match *event.metadata().level() {
        Level::ERROR | Level::WARN => format!("{}: ", level_word(event.metadata().level())),
        _ => String::new(),
    };
    let text = format!("{}{}", parts.subject(), parts.message);
    format!("rkmcp: {level}{}", rkmcp_term_safe::sanitize_inline(&text))
}

/// Prints notices on stderr, each distinct line once per run (a server that fails every
/// restart, a plugin that faults on every call, say so once).
#[derive(Default)]
struct NoticeLayer {
    printed: Mutex<HashSet<String>>,
}

impl<S: Subscriber> Layer<S> for NoticeLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) {
        let line = notice_line(event);
        let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        if printed.insert(line.clone()) {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }
}

/// `-v`: `rkmcp: info: server `time`: started in 1.2s` for rkmcp's own lines,
/// `rkmcp: info: [rmcp] Service initialized as client` for a library's (its message only: the
/// fields of library events are Debug dumps of protocol structures).
struct Brief;

impl<S, N> FormatEvent<S, N> for Brief
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let parts = Parts::of(event);
        let krate = meta.target().split("::").next().unwrap_or_default();
        let text = if krate.starts_with("rkmcp") {
            format!("{}{}{}", parts.subject(), parts.message, parts.rest)
        } else {
            format!("[{krate}] {}", parts.message)
        };
        writeln!(
            writer,
            "rkmcp: {}: {}",
            level_word(meta.level()),
            rkmcp_term_safe::sanitize_inline(&text)
        )
    }
}
