//! Network: sockets are off unless the grant lists `host:port` patterns. Every bind, connect and
//! name lookup goes through the pure checks in [`crate::grants`]: literal addresses directly,
//! host names by remembering what the plugin looked up (only granted names may be looked up)
//! and allowing those addresses on the granted ports.
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::Host as _;
use wasmtime_wasi::p2::bindings::sockets::network::{ErrorCode, Network as WasiNetwork};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsView as _};

use super::{Apply, Capability, ResolveCx, StoreSetup};
use crate::config::Grant;
use crate::grants::NetworkPolicy;
use crate::state::PluginState;

/// Names the plugin resolved through the host, with their addresses. Shared between the
/// name-lookup hook and the connect check of one store.
pub type Resolved = Arc<Mutex<Vec<(String, Vec<IpAddr>)>>>;

/// What one store's name-lookup guard consults: the plugin's policy (none granted: every
/// lookup refused) and what the plugin has looked up so far.
#[derive(Default)]
pub struct StoreNet {
    pub policy: Arc<NetworkPolicy>,
    pub resolved: Resolved,
}

/// `network = ["host:port", …]`: where the plugin may connect.
pub struct Network;

impl Capability for Network {
    fn key(&self) -> &'static str {
        "network"
    }

    fn check(&self, grant: &Grant) -> anyhow::Result<()> {
        NetworkPolicy::parse(&grant.network)?;
        Ok(())
    }

    fn resolve(&self, cx: &ResolveCx<'_>) -> anyhow::Result<Box<dyn Apply>> {
        Ok(Box::new(Policy(Arc::new(NetworkPolicy::parse(
            &cx.grant.network,
        )?))))
    }

    fn summary(&self, grant: &Grant) -> Vec<String> {
        grant.network.clone()
    }
}

/// One plugin's parsed patterns.
struct Policy(Arc<NetworkPolicy>);

impl Apply for Policy {
    fn apply(&self, store: &mut StoreSetup<'_>) -> anyhow::Result<()> {
        // A fresh record of lookups per store: one instance's lookups never widen another's.
        let resolved = Resolved::default();
        apply(store.wasi, store.plugin, &self.0, &resolved);
        *store.net = StoreNet {
            policy: self.0.clone(),
            resolved,
        };
        Ok(())
    }
}

fn apply(
    builder: &mut WasiCtxBuilder,
    plugin: &str,
    policy: &Arc<NetworkPolicy>,
    resolved: &Resolved,
) {
    if policy.is_empty() {
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        return;
    }
    // UDP is never granted: MCP transports are streams, and UDP would need its own rules.
    builder
        .allow_tcp(true)
        .allow_udp(false)
        .allow_ip_name_lookup(policy.needs_name_lookup());
    let policy = policy.clone();
    let resolved = resolved.clone();
    let plugin = plugin.to_string();
    builder.socket_addr_check(move |addr, usage| {
        let allowed = match usage {
            SocketAddrUse::TcpBind => NetworkPolicy::allows_bind(addr),
            SocketAddrUse::TcpConnect => {
                let seen = resolved.lock().map(|r| r.clone()).unwrap_or_default();
                policy.allows_connect(addr, &seen)
            }
            _ => false,
        };
        if !allowed {
            tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, plugin = %plugin, "network access to {addr} was denied: its grant does not allow it (see `rkmcp plugins grant`)");
        }
        Box::pin(async move { allowed })
    });
}

/// Replaces `wasi:sockets/ip-name-lookup.resolve-addresses` with a version that refuses names
/// the grant does not cover and records the addresses of the ones it does, so the connect
/// check can allow exactly those addresses (wasmtime-wasi alone can only switch lookups on or
/// off, and its connect check only sees addresses).
pub fn add_name_lookup_guard(linker: &mut Linker<PluginState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut inst = linker
        .instance(NAME_LOOKUP_INTERFACE)
        .map_err(anyhow::Error::from)?;
    inst.func_wrap_async(
        "resolve-addresses",
        |mut store: StoreContextMut<'_, PluginState>, (network, name): (Resource<WasiNetwork>, String)| {
            Box::new(async move {
                let allowed = store.data().net.policy.allows_name(&name);
                let result = if allowed {
                    let ips: Vec<IpAddr> = match tokio::net::lookup_host((name.as_str(), 0)).await {
                        Ok(addrs) => addrs.map(|a| a.ip()).collect(),
                        Err(_) => Vec::new(),
                    };
                    if let Ok(mut seen) = store.data().net.resolved.lock() {
                        seen.push((name.clone(), ips));
                    }
                    let mut view = store.data_mut().sockets();
                    match view.resolve_addresses(network, name) {
                        Ok(stream) => Ok(stream),
                        Err(e) => Err(e.downcast()?),
                    }
                } else {
                    tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, plugin = %store.data().plugin, "looking up the name `{name}` was denied: its grant does not allow it (see `rkmcp plugins grant`)");
                    Err(ErrorCode::AccessDenied)
                };
                Ok((result,))
            })
        },
    )
    .map_err(anyhow::Error::from)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The interface version wasmtime-wasi 48 defines; guests importing any 0.2.x are linked to it.
const NAME_LOOKUP_INTERFACE: &str = "wasi:sockets/ip-name-lookup@0.2.12";
