//! The Rust SDK for rkmcp plugins.
//!
//! An rkmcp plugin is a WebAssembly component (`wasm32-wasip2`) that exports one interface of the
//! WIT package `rkmcp:plugin@0.2.0` (`wit/rkmcp-plugin@0.2.0/`). With this crate a Rust plugin is
//! one trait impl and one macro; the generated bindings stay inside the SDK:
//!
//! ```ignore
//! use rkmcp_plugin_sdk::{ApprovalGuard, Decision, ProposedCall};
//!
//! struct ReadOnly;
//!
//! impl ApprovalGuard for ReadOnly {
//!     fn new() -> Self {
//!         ReadOnly
//!     }
//!     fn review(&mut self, call: ProposedCall) -> Decision {
//!         match call.annotations.read_only {
//!             Some(true) => Decision::Allow,
//!             _ => Decision::Deny(format!("{} is not read-only", call.tool)),
//!         }
//!     }
//! }
//!
//! rkmcp_plugin_sdk::export_approval_guard!(ReadOnly);
//! ```
//!
//! The crate must be a `cdylib` built with `cargo build --release --target wasm32-wasip2`; the
//! result is already a component. One component exports exactly one plugin kind.
//!
//! Instances: the host creates a fresh instance per detector session and per transport
//! connection, and keeps one instance for a converter or guard (rebuilt after a fault). The
//! plugin value made by `new()` lives as long as its instance.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::time::Duration;

#[doc(hidden)]
pub mod __private {
    //! Generated bindings, one module per world. Only the exporting macros use these.
    //! The later worlds reuse the first world's `types` and `host` modules, so a type such as
    //! [`crate::ToolCall`] is one Rust type whichever kind a plugin is.
    //!
    //! A plugin links all four modules, but the component it becomes exports only the world
    //! its macro exported: wit-component keeps just the exports the core module defines.

    pub mod detector {
        wit_bindgen::generate!({
            world: "detector-plugin",
            path: "../../wit/rkmcp-plugin@0.2.0",
            pub_export_macro: true,
            additional_derives: [PartialEq, Eq],
            export_macro_name: "__export_detector_world",
            default_bindings_module: "rkmcp_plugin_sdk::__private::detector",
        });
    }

    pub mod schema_converter {
        wit_bindgen::generate!({
            world: "schema-converter-plugin",
            path: "../../wit/rkmcp-plugin@0.2.0",
            pub_export_macro: true,
            additional_derives: [PartialEq, Eq],
            export_macro_name: "__export_schema_converter_world",
            default_bindings_module: "rkmcp_plugin_sdk::__private::schema_converter",
            with: {
                "rkmcp:plugin/types@0.2.0": crate::__private::detector::rkmcp::plugin::types,
                "rkmcp:plugin/host@0.2.0": crate::__private::detector::rkmcp::plugin::host,
            },
        });
    }

    pub mod approval_guard {
        wit_bindgen::generate!({
            world: "approval-guard-plugin",
            path: "../../wit/rkmcp-plugin@0.2.0",
            pub_export_macro: true,
            additional_derives: [PartialEq, Eq],
            export_macro_name: "__export_approval_guard_world",
            default_bindings_module: "rkmcp_plugin_sdk::__private::approval_guard",
            with: {
                "rkmcp:plugin/types@0.2.0": crate::__private::detector::rkmcp::plugin::types,
                "rkmcp:plugin/host@0.2.0": crate::__private::detector::rkmcp::plugin::host,
            },
        });
    }

    pub mod transport {
        wit_bindgen::generate!({
            world: "transport-plugin",
            path: "../../wit/rkmcp-plugin@0.2.0",
            pub_export_macro: true,
            additional_derives: [PartialEq, Eq],
            export_macro_name: "__export_transport_world",
            default_bindings_module: "rkmcp_plugin_sdk::__private::transport",
            with: {
                "rkmcp:plugin/types@0.2.0": crate::__private::detector::rkmcp::plugin::types,
                "rkmcp:plugin/host@0.2.0": crate::__private::detector::rkmcp::plugin::host,
            },
        });
    }

    pub use crate::adapters::*;
}

use __private::detector::rkmcp::plugin::host as wit_host;
use __private::detector::rkmcp::plugin::types as wit_types;

pub use __private::schema_converter::exports::rkmcp::plugin::schema_converter::Conversion;
pub use __private::transport::exports::rkmcp::plugin::transport::TransportError;
pub use wit_types::{
    Decision, Event, LogLevel, MalformedCall, ProposedCall, ToolAnnotations, ToolCall,
};

/// The WIT package version this SDK builds against.
pub const WIT_VERSION: &str = "0.2.0";

// ------------------------------------------------------------------------------------------
// The plugin traits

/// A streaming tool-call detector (world `detector-plugin`).
pub trait Detector: 'static {
    type Session: DetectorSession;
    fn new() -> Self
    where
        Self: Sized;
    /// Starts one model response. `format` selects a dialect ("" = the default); return an
    /// error naming the formats you know for one you do not.
    fn start_session(&mut self, format: &str) -> Result<Self::Session, String>;
}

/// One model response being scanned.
pub trait DetectorSession: 'static {
    /// Events completed by this chunk. Hold back text that may still become a marker.
    fn feed(&mut self, chunk: &str) -> Vec<Event>;
    /// End of the response: flush everything held back.
    fn finish(&mut self) -> Vec<Event>;
}

/// A tool-schema converter (world `schema-converter-plugin`).
pub trait SchemaConverter: 'static {
    fn new() -> Self
    where
        Self: Sized;
    /// `tools_json`: the JSON text of an MCP `tools/list` result's `tools` array.
    fn convert(&mut self, tools_json: &str) -> Result<Conversion, String>;
    /// A tool result (JSON text of an MCP `CallToolResult`) as the model should see it.
    fn format_result(&mut self, call: ToolCall, result_json: &str) -> Result<String, String>;
}

/// An approval guard (world `approval-guard-plugin`).
pub trait ApprovalGuard: 'static {
    fn new() -> Self
    where
        Self: Sized;
    /// `Ask` only makes sense when `call.interactive`; the host turns it into a deny otherwise.
    fn review(&mut self, call: ProposedCall) -> Decision;
}

/// A custom MCP transport (world `transport-plugin`). Network access is what the user granted
/// the plugin (`[plugins.grants.NAME] network = ["host:port"]`), through `std::net`.
pub trait Transport: 'static {
    type Connection: Connection;
    fn new() -> Self
    where
        Self: Sized;
    fn connect(&mut self, config: &Config) -> Result<Self::Connection, TransportError>;
}

/// One open transport connection. After `close` (or after any method returned
/// [`TransportError::Closed`]) the SDK answers `Closed` itself without calling it again.
pub trait Connection: 'static {
    /// Sends one JSON-RPC message (one complete JSON text).
    fn send(&mut self, message: &str) -> Result<(), TransportError>;
    /// The next message, or `None` when `timeout` passed without one.
    fn receive(&mut self, timeout: Duration) -> Result<Option<String>, TransportError>;
    fn close(&mut self) -> Result<(), TransportError>;
}

// ------------------------------------------------------------------------------------------
// What the host offers

/// Writes a log line through the host's `tracing`, tagged with the plugin's name.
pub fn log(level: LogLevel, message: &str) {
    wit_host::log(level, message, &[]);
}

/// Like [`log`] with structured fields.
pub fn log_fields(level: LogLevel, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    wit_host::log(level, message, &fields);
}

/// One of this plugin's config values: the manifest's default overlaid by the user's
/// `[plugins.grants.NAME.config]`. Non-string TOML values arrive as TOML text (`3`, `["a","b"]`).
pub fn config_get(key: &str) -> Option<String> {
    wit_host::config_get(key)
}

/// The config a transport's `connect` receives (the same values [`config_get`] returns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pairs: Vec<(String, String)>,
}

impl Config {
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Config { pairs }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or a [`TransportError::Config`] that names the missing key.
    pub fn require(&self, key: &str) -> Result<&str, TransportError> {
        self.get(key).ok_or_else(|| {
            TransportError::Config(format!(
                "missing config value `{key}` (set it in [plugins.grants.NAME.config])"
            ))
        })
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }
}

// ------------------------------------------------------------------------------------------
// Helpers on the contract types

impl Event {
    pub fn text(text: impl Into<String>) -> Event {
        Event::Text(text.into())
    }

    /// The model's reasoning, apart from the answer (contract 0.2.0).
    pub fn reasoning(text: impl Into<String>) -> Event {
        Event::Reasoning(text.into())
    }

    /// A call whose arguments are serialised from a JSON value (the host requires an object).
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &serde_json::Value,
    ) -> Event {
        Event::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments_json: arguments.to_string(),
        })
    }

    pub fn malformed(raw: impl Into<String>, error: impl Into<String>) -> Event {
        Event::Malformed(MalformedCall {
            raw: raw.into(),
            error: error.into(),
        })
    }
}

impl ToolCall {
    /// The arguments as JSON.
    pub fn arguments(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.arguments_json)
    }
}

impl ProposedCall {
    /// The arguments as JSON.
    pub fn arguments(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.arguments_json)
    }
}

// ------------------------------------------------------------------------------------------
// Adapters from the traits to the generated `Guest` traits (used by the export macros)

thread_local! {
    /// The plugin value of this instance, made on first use. Components are single-threaded
    /// and the host never re-enters an instance, so one slot and a RefCell suffice.
    static INSTANCE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

fn with_instance<P: 'static, R>(new: fn() -> P, f: impl FnOnce(&mut P) -> R) -> R {
    INSTANCE.with(|slot| {
        let mut slot = slot.borrow_mut();
        let any = slot.get_or_insert_with(|| Box::new(new()));
        match any.downcast_mut::<P>() {
            Some(p) => f(p),
            // Only possible if one component exported two plugin kinds, which the macros
            // prevent (each defines the same item name).
            None => panic!("rkmcp-plugin-sdk: one component can export only one plugin kind"),
        }
    })
}

mod adapters {
    use super::*;
    use crate::__private::approval_guard::exports::rkmcp::plugin::approval_guard as g;
    use crate::__private::detector::exports::rkmcp::plugin::detector as d;
    use crate::__private::schema_converter::exports::rkmcp::plugin::schema_converter as s;
    use crate::__private::transport::exports::rkmcp::plugin::transport as t;

    pub struct DetectorExport<D>(PhantomData<D>);
    pub struct SessionExport<S>(RefCell<S>);

    impl<D: Detector> d::Guest for DetectorExport<D> {
        type Session = SessionExport<D::Session>;

        fn start_session(format: String) -> Result<d::Session, String> {
            with_instance(D::new, |p: &mut D| p.start_session(&format))
                .map(|s| d::Session::new(SessionExport(RefCell::new(s))))
        }
    }

    impl<S: DetectorSession> d::GuestSession for SessionExport<S> {
        fn feed(&self, chunk: String) -> Vec<Event> {
            self.0.borrow_mut().feed(&chunk)
        }

        fn finish(&self) -> Vec<Event> {
            self.0.borrow_mut().finish()
        }
    }

    pub struct SchemaConverterExport<C>(PhantomData<C>);

    impl<C: SchemaConverter> s::Guest for SchemaConverterExport<C> {
        fn convert(tools_json: String) -> Result<Conversion, String> {
            with_instance(C::new, |p: &mut C| p.convert(&tools_json))
        }

        fn format_result(call: ToolCall, result_json: String) -> Result<String, String> {
            with_instance(C::new, |p: &mut C| p.format_result(call, &result_json))
        }
    }

    pub struct ApprovalGuardExport<A>(PhantomData<A>);

    impl<A: ApprovalGuard> g::Guest for ApprovalGuardExport<A> {
        fn review(call: ProposedCall) -> Decision {
            with_instance(A::new, |p: &mut A| p.review(call))
        }
    }

    pub struct TransportExport<T>(PhantomData<T>);

    /// `None` once the connection is closed, so the plugin is never called after `close`.
    pub struct ConnectionExport<C>(RefCell<Option<C>>);

    impl<T: Transport> t::Guest for TransportExport<T> {
        type Connection = ConnectionExport<T::Connection>;

        fn connect(config: Vec<(String, String)>) -> Result<t::Connection, TransportError> {
            let config = Config::new(config);
            with_instance(T::new, |p: &mut T| p.connect(&config))
                .map(|c| t::Connection::new(ConnectionExport(RefCell::new(Some(c)))))
        }
    }

    impl<C: Connection> ConnectionExport<C> {
        fn with<R>(
            &self,
            f: impl FnOnce(&mut C) -> Result<R, TransportError>,
        ) -> Result<R, TransportError> {
            let mut slot = self.0.borrow_mut();
            let conn = slot.as_mut().ok_or(TransportError::Closed)?;
            let r = f(conn);
            if matches!(r, Err(TransportError::Closed)) {
                *slot = None;
            }
            r
        }
    }

    impl<C: Connection> t::GuestConnection for ConnectionExport<C> {
        fn send(&self, message: String) -> Result<(), TransportError> {
            self.with(|c| c.send(&message))
        }

        fn receive(&self, timeout_ms: u32) -> Result<Option<String>, TransportError> {
            self.with(|c| c.receive(Duration::from_millis(u64::from(timeout_ms))))
        }

        fn close(&self) -> Result<(), TransportError> {
            let Some(mut conn) = self.0.borrow_mut().take() else {
                return Err(TransportError::Closed);
            };
            conn.close()
        }
    }
}

// ------------------------------------------------------------------------------------------
// Export macros. Each defines `__rkmcp_plugin_export`, so a second export in the same crate is a
// compile error ("defined multiple times") instead of a component with two kinds.

/// Exports a [`Detector`] as this component's plugin.
#[macro_export]
macro_rules! export_detector {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __rkmcp_plugin_export = $crate::__private::DetectorExport<$plugin>;
        $crate::__private::detector::__export_detector_world!(
            __rkmcp_plugin_export with_types_in $crate::__private::detector
        );
    };
}

/// Exports a [`SchemaConverter`] as this component's plugin.
#[macro_export]
macro_rules! export_schema_converter {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __rkmcp_plugin_export = $crate::__private::SchemaConverterExport<$plugin>;
        $crate::__private::schema_converter::__export_schema_converter_world!(
            __rkmcp_plugin_export with_types_in $crate::__private::schema_converter
        );
    };
}

/// Exports an [`ApprovalGuard`] as this component's plugin.
#[macro_export]
macro_rules! export_approval_guard {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __rkmcp_plugin_export = $crate::__private::ApprovalGuardExport<$plugin>;
        $crate::__private::approval_guard::__export_approval_guard_world!(
            __rkmcp_plugin_export with_types_in $crate::__private::approval_guard
        );
    };
}

/// Exports a [`Transport`] as this component's plugin.
#[macro_export]
macro_rules! export_transport {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __rkmcp_plugin_export = $crate::__private::TransportExport<$plugin>;
        $crate::__private::transport::__export_transport_world!(
            __rkmcp_plugin_export with_types_in $crate::__private::transport
        );
    };
}
