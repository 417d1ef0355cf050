//! Errors of plugin calls. Every message names the plugin, the call and the cause.
use std::fmt;

/// Why a call was stopped. Any of these discards the instance (a trapped store cannot be
/// re-entered) and counts towards quarantine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultCause {
    /// The call ran past its deadline (epoch interruption, or stuck in a host call).
    Deadline {
        ms: u64,
    },
    /// The plugin tried to grow its memory past the cap.
    Memory {
        limit_mb: u64,
    },
    /// The per-call fuel ran out.
    Fuel {
        fuel: u64,
    },
    StackOverflow,
    /// The plugin panicked; `message` is what it printed on stderr.
    Panic {
        message: String,
    },
    /// Any other trap (or a host-side error while serving the plugin).
    Trap {
        message: String,
    },
    /// The result was larger than the grant's `max_output_kb`.
    OutputTooLarge {
        bytes: usize,
        limit: usize,
    },
    /// The result held more events than one call may return.
    TooManyEvents {
        count: usize,
        limit: usize,
    },
    /// Copying the result (or a host call's arguments) out of the plugin would have taken more
    /// than the grant's output limit; wasmtime stopped the copy before allocating it.
    CopyLimit {
        limit: usize,
    },
    /// The plugin held more open files, sockets and streams than one instance may.
    TooManyHandles {
        limit: usize,
    },
}

impl fmt::Display for FaultCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultCause::Deadline { ms } => write!(f, "deadline of {ms} ms exceeded"),
            FaultCause::Memory { limit_mb } => write!(f, "memory limit of {limit_mb} MiB reached"),
            FaultCause::Fuel { fuel } => write!(f, "fuel budget of {fuel} exhausted"),
            FaultCause::StackOverflow => write!(f, "stack overflow (recursion too deep)"),
            FaultCause::Panic { message } => write!(f, "plugin panicked: {message}"),
            FaultCause::Trap { message } => write!(f, "trap: {message}"),
            FaultCause::OutputTooLarge { bytes, limit } => {
                write!(
                    f,
                    "result of {bytes} bytes exceeds the limit of {limit} bytes"
                )
            }
            FaultCause::TooManyEvents { count, limit } => write!(
                f,
                "returned {count} events; one call may return at most {limit}"
            ),
            FaultCause::CopyLimit { limit } => write!(
                f,
                "tried to pass the host more than {limit} bytes in one call (the output limit, max_output_kb)"
            ),
            FaultCause::TooManyHandles { limit } => write!(
                f,
                "opened too many files, sockets and streams (at most {limit} per instance)"
            ),
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum PluginError {
    #[error(
        "plugin `{plugin}` is quarantined after repeated faults (last: {reason}); it stays disabled until rkmcp restarts"
    )]
    Quarantined { plugin: String, reason: String },
    #[error("plugin `{plugin}`: {call}: {cause}; the instance was discarded{}", if *.quarantined { " and the plugin is now quarantined" } else { "" })]
    Fault {
        plugin: String,
        call: String,
        cause: FaultCause,
        quarantined: bool,
    },
    /// The plugin ran fine and returned an error of its own.
    #[error("plugin `{plugin}`: {call} returned an error: {message}")]
    Refused {
        plugin: String,
        call: String,
        message: String,
    },
    /// The plugin cannot be used as asked (not found, wrong kind, failed to load, session over).
    #[error("plugin `{plugin}`: {message}")]
    Unusable { plugin: String, message: String },
}

impl PluginError {
    pub fn fault_cause(&self) -> Option<&FaultCause> {
        match self {
            PluginError::Fault { cause, .. } => Some(cause),
            _ => None,
        }
    }

    pub fn unusable(plugin: &str, message: impl Into<String>) -> Self {
        PluginError::Unusable {
            plugin: plugin.to_string(),
            message: message.into(),
        }
    }
}
