//! One module per released WIT contract version, Zed-extension-host style: each has its own
//! `bindgen!`, the newest ([`latest`]) provides the types the rest of the host uses, and older
//! modules convert their results up. Which module serves a component is read from the version in
//! its exported interface names ([`crate::kind::classify`]).
pub mod v0_1_0;
pub mod v0_2_0;

pub use v0_2_0 as latest;

/// Contract versions this host can run, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[v0_2_0::VERSION, v0_1_0::VERSION];

/// A pre-linked component or an instance's bindings, for the contract version the component was
/// built against.
pub enum Versioned<Latest, V010> {
    Latest(Latest),
    V0_1_0(V010),
}

/// Runs `$body` with `$b` bound to whichever version's value `$value` holds. The body is the
/// same code for every version (the generated methods have the same names); it must return the
/// same type in every arm, so an older version's results are converted up inside it (`From`).
/// `map` wraps the body's `Ok` value in the same version again (for instantiation).
macro_rules! per_version {
    ($value:expr, $b:ident => $body:expr) => {
        match $value {
            // The body converts an older version's results up; for the latest it is the identity.
            #[allow(clippy::useless_conversion)]
            $crate::wit::Versioned::Latest($b) => $body,
            $crate::wit::Versioned::V0_1_0($b) => $body,
        }
    };
    (map $value:expr, $b:ident => $body:expr) => {
        match $value {
            $crate::wit::Versioned::Latest($b) => ($body).map($crate::wit::Versioned::Latest),
            $crate::wit::Versioned::V0_1_0($b) => ($body).map($crate::wit::Versioned::V0_1_0),
        }
    };
}
pub(crate) use per_version;

use crate::state::PluginState;

pub type DetectorPre = Versioned<
    latest::detector::DetectorPluginPre<PluginState>,
    v0_1_0::detector::DetectorPluginPre<PluginState>,
>;
pub type DetectorBindings =
    Versioned<latest::detector::DetectorPlugin, v0_1_0::detector::DetectorPlugin>;
pub type SchemaConverterPre = Versioned<
    latest::schema_converter::SchemaConverterPluginPre<PluginState>,
    v0_1_0::schema_converter::SchemaConverterPluginPre<PluginState>,
>;
pub type SchemaConverterBindings = Versioned<
    latest::schema_converter::SchemaConverterPlugin,
    v0_1_0::schema_converter::SchemaConverterPlugin,
>;
pub type ApprovalGuardPre = Versioned<
    latest::approval_guard::ApprovalGuardPluginPre<PluginState>,
    v0_1_0::approval_guard::ApprovalGuardPluginPre<PluginState>,
>;
pub type ApprovalGuardBindings = Versioned<
    latest::approval_guard::ApprovalGuardPlugin,
    v0_1_0::approval_guard::ApprovalGuardPlugin,
>;
pub type TransportPre = Versioned<
    latest::transport::TransportPluginPre<PluginState>,
    v0_1_0::transport::TransportPluginPre<PluginState>,
>;
pub type TransportBindings =
    Versioned<latest::transport::TransportPlugin, v0_1_0::transport::TransportPlugin>;

/// Adds every supported version's host imports: a component imports those of its own version.
pub fn add_to_linker(
    linker: &mut wasmtime::component::Linker<PluginState>,
) -> wasmtime::Result<()> {
    v0_2_0::add_to_linker(linker)?;
    v0_1_0::add_to_linker(linker)
}
