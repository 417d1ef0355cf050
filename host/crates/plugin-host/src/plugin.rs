//! One loaded plugin: its compiled component, pre-linked instance, resolved grant and health.
//! Every call goes through [`guarded!`]: arm the deadline (and fuel), run, and turn traps,
//! deadlines and limit hits into a [`PluginError::Fault`] that also counts towards quarantine.
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi::{ResourceTable, WasiCtxBuilder};

use crate::caps::net::StoreNet;
use crate::caps::stdio::{LogStream, OutputLimiter, Stream};
use crate::caps::{Granted, StoreSetup};
use crate::engine::{CacheOutcome, Runtime};
use crate::error::{FaultCause, PluginError};
use crate::kind::PluginKind;
use crate::state::{Limiter, PluginState};
use crate::wit::{
    ApprovalGuardBindings, ApprovalGuardPre, DetectorBindings, DetectorPre,
    SchemaConverterBindings, SchemaConverterPre, TransportBindings, TransportPre, per_version,
};

/// Extra time the host waits beyond a call's deadline before it drops the call from outside;
/// the epoch interrupt normally stops a running guest first, this catches a guest stuck in an
/// (async) host call such as a socket read.
pub const HOST_MARGIN: Duration = Duration::from_millis(250);

/// The least time a fresh instance's start-up gets: its instantiation and, for a detector, the
/// session's start (`start-session`), the first call into the new instance. Those touch the
/// component's code and memory image for the first time (mapped from the compile cache; tens of
/// MB for a JavaScript or Python engine). A JavaScript detector starts in ~0.5 ms warm, ~5 ms
/// beside two busy processes, but on a loaded CI machine its `start-session` went past a
/// detector's 50 ms per-call deadline, and a fault there sends the turn to the built-in detector
/// and counts towards quarantine. Start-up happens once per turn, off the per-token path, so the
/// longer bound costs nothing while generating; a plugin that loops in start-up is still
/// stopped after it.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(1);

/// The deadline of a fresh instance's start-up, for a plugin whose calls have `timeout`.
pub fn startup_deadline(timeout: Duration) -> Duration {
    timeout.max(STARTUP_DEADLINE)
}

/// Open files, sockets, streams and pollables one instance may hold at once. Each open file or
/// socket is a host file descriptor; without a cap, a plugin with any file grant could use up
/// the host's descriptors (then saving, history, logs and starting servers fail). Real plugins
/// hold a handful.
pub const MAX_HANDLES: usize = 256;

/// Events one detector call may return. A model chunk holds a few; a million empty events cost
/// the host hundreds of MB although they hold no bytes.
pub const MAX_EVENTS_PER_CALL: usize = 4096;

/// What wasmtime may copy out of the plugin in one call beyond the output limit: room for the
/// result's own structure and for WASI host calls (a 4 KiB write, a path) of a plugin whose
/// output limit is tiny.
const COPY_HEADROOM: usize = 64 * 1024;

/// A grant turned into what the host enforces: the capabilities it gives, and the limits every
/// plugin has.
pub struct Settings {
    pub granted: Granted,
    pub memory: usize,
    pub timeout: Duration,
    pub fuel: Option<u64>,
    pub max_output: usize,
    pub config: Arc<BTreeMap<String, String>>,
}

pub enum KindPre {
    Detector(DetectorPre),
    SchemaConverter(SchemaConverterPre),
    ApprovalGuard(ApprovalGuardPre),
    Transport(TransportPre),
}

/// One kind's pre-linked component, whatever its contract version: where it sits in
/// [`KindPre`] and what its instances are. [`Loaded::instantiate`] builds them alike for every
/// kind.
pub(crate) trait Pre: Sync {
    const KIND: PluginKind;
    type Bindings: Send;

    fn of(pre: &KindPre) -> Option<&Self>;

    fn instantiate(
        &self,
        store: &mut Store<PluginState>,
    ) -> impl Future<Output = wasmtime::Result<Self::Bindings>> + Send;
}

macro_rules! pre_kinds {
    ($($variant:ident: $pre:ty => $bindings:ty;)*) => {$(
        impl Pre for $pre {
            const KIND: PluginKind = PluginKind::$variant;
            type Bindings = $bindings;

            fn of(pre: &KindPre) -> Option<&Self> {
                match pre {
                    KindPre::$variant(p) => Some(p),
                    _ => None,
                }
            }

            async fn instantiate(
                &self,
                store: &mut Store<PluginState>,
            ) -> wasmtime::Result<$bindings> {
                per_version!(map self, p => p.instantiate_async(&mut *store).await)
            }
        }
    )*};
}

pre_kinds! {
    Detector: DetectorPre => DetectorBindings;
    SchemaConverter: SchemaConverterPre => SchemaConverterBindings;
    ApprovalGuard: ApprovalGuardPre => ApprovalGuardBindings;
    Transport: TransportPre => TransportBindings;
}

/// One instance of a plugin: its store and bindings.
pub(crate) struct Instance<B> {
    pub store: Store<PluginState>,
    pub bindings: B,
}

/// Fault history of one plugin (by name), shared by all its instances and handles.
pub struct Health {
    after: u32,
    window: Duration,
    inner: Mutex<HealthInner>,
}

#[derive(Default)]
struct HealthInner {
    recent: VecDeque<Instant>,
    total: u64,
    quarantined: Option<String>,
    last_fault: Option<String>,
}

impl Health {
    pub fn new(after: u32, window: Duration) -> Self {
        Health {
            after: after.max(1),
            window,
            inner: Mutex::default(),
        }
    }

    /// Records a fault; returns true if this fault put the plugin in quarantine.
    pub fn record(&self, description: &str) -> bool {
        let Ok(mut h) = self.inner.lock() else {
            return true;
        };
        let now = Instant::now();
        h.total += 1;
        h.last_fault = Some(description.to_string());
        h.recent.push_back(now);
        while h
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.window)
        {
            h.recent.pop_front();
        }
        if h.quarantined.is_none() && h.recent.len() >= self.after as usize {
            h.quarantined = Some(description.to_string());
            return true;
        }
        false
    }

    pub fn quarantined(&self) -> Option<String> {
        self.inner.lock().ok().and_then(|h| h.quarantined.clone())
    }

    pub fn faults(&self) -> (u64, Option<String>) {
        self.inner
            .lock()
            .map(|h| (h.total, h.last_fault.clone()))
            .unwrap_or((0, None))
    }
}

pub struct Loaded {
    pub name: Arc<str>,
    pub path: PathBuf,
    pub kind: PluginKind,
    pub version: String,
    pub component: Component,
    pub cache: CacheOutcome,
    /// SHA-256 (hex) of the content `component` was compiled from.
    pub sha256: String,
    pub pre: KindPre,
    pub settings: Settings,
    pub output: Arc<OutputLimiter>,
    pub health: Arc<Health>,
    pub rt: Arc<Runtime>,
}

impl Loaded {
    pub fn check_health(&self) -> Result<(), PluginError> {
        match self.health.quarantined() {
            Some(reason) => Err(PluginError::Quarantined {
                plugin: self.name.to_string(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Its pre-linked component of kind `P`, or why it is not of that kind.
    pub(crate) fn pre<P: Pre>(&self) -> Result<&P, PluginError> {
        P::of(&self.pre).ok_or_else(|| {
            PluginError::unusable(
                &self.name,
                format!("is a {} plugin, not a {}", self.kind, P::KIND),
            )
        })
    }

    /// A fresh instance of kind `P` in a fresh store, instantiated under the start-up deadline
    /// ([`startup_deadline`]; its start-up code runs then).
    pub(crate) async fn instantiate<P: Pre>(&self) -> Result<Instance<P::Bindings>, PluginError> {
        let pre = self.pre::<P>()?;
        let mut store = self.new_store()?;
        let bindings = guarded!(
            self,
            &mut store,
            "instantiate",
            startup_deadline(self.settings.timeout),
            pre.instantiate(&mut store)
        )?;
        Ok(Instance { store, bindings })
    }

    /// A fresh store with the plugin's capabilities and limits.
    pub fn new_store(&self) -> Result<Store<PluginState>, PluginError> {
        let s = &self.settings;
        let mut b = WasiCtxBuilder::new();
        let mut net = StoreNet::default();
        s.granted
            .apply(&mut StoreSetup {
                plugin: &self.name,
                wasi: &mut b,
                net: &mut net,
            })
            .map_err(|e| PluginError::unusable(&self.name, format!("{e:#}")))?;
        let stderr = LogStream::new(self.name.clone(), Stream::Stderr, self.output.clone());
        b.stdout(LogStream::new(
            self.name.clone(),
            Stream::Stdout,
            self.output.clone(),
        ));
        b.stderr(stderr.clone());
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HANDLES);
        let state = PluginState {
            wasi: b.build(),
            table,
            limiter: Limiter::new(s.memory),
            plugin: self.name.clone(),
            config: s.config.clone(),
            deadline: Instant::now(),
            stderr,
            log_limiter: self.output.clone(),
            net,
        };
        let mut store = Store::new(&self.rt.engine, state);
        store.limiter(|st| &mut st.limiter);
        // wasmtime copies a result out of the plugin before we can look at its size; this caps
        // that copy (128 MiB by default) at about the output limit.
        store.set_hostcall_fuel(s.max_output.saturating_add(COPY_HEADROOM));
        store.epoch_deadline_callback(|cx| {
            if Instant::now() >= cx.data().deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                // Yield so a busy plugin never holds a tokio worker for more than a tick.
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Ok(store)
    }

    /// Sets the deadline (and fuel) for the next call.
    pub fn arm(&self, store: &mut Store<PluginState>, timeout: Duration) {
        store.data_mut().deadline = Instant::now() + timeout;
        store.set_epoch_deadline(1);
        if self.rt.fuel {
            // Fuel only fails here if fuel is off in the engine, which `rt.fuel` rules out.
            let _ = store.set_fuel(self.settings.fuel.unwrap_or(u64::MAX));
        }
    }

    /// Turns the outcome of a call into the call's result or a fault (recorded for quarantine).
    pub fn settle<R>(
        &self,
        store: &Store<PluginState>,
        call: &str,
        timeout: Duration,
        outcome: Result<wasmtime::Result<R>, tokio::time::error::Elapsed>,
    ) -> Result<R, PluginError> {
        let err = match outcome {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => e,
            Err(_) => {
                return Err(self.fault(
                    call,
                    FaultCause::Deadline {
                        ms: timeout.as_millis() as u64,
                    },
                ));
            }
        };
        let state = store.data();
        let memory = || FaultCause::Memory {
            limit_mb: (state.limiter.memory_cap >> 20) as u64,
        };
        let stderr = state.stderr.last_lines();
        let panic_message = || {
            stderr
                .iter()
                .rev()
                .find(|l| l.contains("panicked"))
                .cloned()
        };
        let chain = format!("{err:#}");
        let cause = match err.downcast_ref::<Trap>() {
            _ if chain.contains("fuel allocated for hostcalls has been exhausted") => {
                FaultCause::CopyLimit {
                    limit: self.settings.max_output.saturating_add(COPY_HEADROOM),
                }
            }
            _ if err
                .downcast_ref::<wasmtime::component::ResourceTableError>()
                .is_some_and(|e| matches!(e, wasmtime::component::ResourceTableError::Full))
                || chain.contains("resource table has no free keys") =>
            {
                FaultCause::TooManyHandles { limit: MAX_HANDLES }
            }
            Some(Trap::Interrupt) => FaultCause::Deadline {
                ms: timeout.as_millis() as u64,
            },
            Some(Trap::OutOfFuel) => FaultCause::Fuel {
                fuel: self.settings.fuel.unwrap_or(u64::MAX),
            },
            Some(Trap::StackOverflow) => FaultCause::StackOverflow,
            _ if state.limiter.refused_grow.is_some() => memory(),
            Some(Trap::UnreachableCodeReached) => match panic_message() {
                Some(message) => FaultCause::Panic { message },
                None => FaultCause::Trap {
                    message: format!("unreachable code reached (plugin aborted){}", tail(&stderr)),
                },
            },
            Some(trap) => FaultCause::Trap {
                message: format!("{trap}{}", tail(&stderr)),
            },
            None => FaultCause::Trap { message: chain },
        };
        // Trap texts carry the plugin's own words (stderr lines, function names of the
        // backtrace): one line, no control sequences.
        let cause = match cause {
            FaultCause::Trap { message } => FaultCause::Trap {
                message: rkmcp_term_safe::sanitized_inline(message),
            },
            FaultCause::Panic { message } => FaultCause::Panic {
                message: rkmcp_term_safe::sanitized_inline(message),
            },
            other => other,
        };
        Err(self.fault(call, cause))
    }

    pub fn fault(&self, call: &str, cause: FaultCause) -> PluginError {
        let description = format!("{call}: {cause}");
        let quarantined = self.health.record(&description);
        let err = PluginError::Fault {
            plugin: self.name.to_string(),
            call: call.to_string(),
            cause,
            quarantined,
        };
        tracing::warn!(plugin = %self.name, "{err}");
        err
    }

    /// Checks the number of events of a detector call.
    pub fn check_events(&self, call: &str, count: usize) -> Result<(), PluginError> {
        if count > MAX_EVENTS_PER_CALL {
            return Err(self.fault(
                call,
                FaultCause::TooManyEvents {
                    count,
                    limit: MAX_EVENTS_PER_CALL,
                },
            ));
        }
        Ok(())
    }

    /// Checks the size of a call's result against the grant.
    pub fn check_output(&self, call: &str, bytes: usize) -> Result<(), PluginError> {
        if bytes > self.settings.max_output {
            return Err(self.fault(
                call,
                FaultCause::OutputTooLarge {
                    bytes,
                    limit: self.settings.max_output,
                },
            ));
        }
        Ok(())
    }
}

fn tail(stderr: &[String]) -> String {
    match stderr.last() {
        Some(l) => format!(" (stderr: {l})"),
        None => String::new(),
    }
}

/// Runs one guest call under the plugin's deadline and turns the outcome into
/// `Result<_, PluginError>`: `guarded!(loaded, store, "feed", timeout, future)`.
macro_rules! guarded {
    ($loaded:expr, $store:expr, $call:expr, $timeout:expr, $fut:expr) => {{
        let timeout: std::time::Duration = $timeout;
        $loaded.arm($store, timeout);
        let outcome = tokio::time::timeout(timeout + $crate::plugin::HOST_MARGIN, $fut).await;
        $loaded.settle($store, $call, timeout, outcome)
    }};
}
pub(crate) use guarded;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_gets_at_least_the_start_up_deadline_and_never_less_than_a_call() {
        let ms = Duration::from_millis;
        // A detector's 50 ms calls: start-up gets the floor.
        assert_eq!(startup_deadline(ms(50)), STARTUP_DEADLINE);
        // A transport's 5 s calls: start-up keeps them.
        assert_eq!(startup_deadline(ms(5000)), ms(5000));
        assert_eq!(startup_deadline(STARTUP_DEADLINE), STARTUP_DEADLINE);
    }
}
