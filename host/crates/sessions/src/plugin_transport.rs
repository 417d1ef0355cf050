//! A WebAssembly transport plugin (`transport = "plugin:<name>"`) adapted to rmcp's `Transport`,
//! so a plugin connection is used exactly like stdio or HTTP.
//!
//! The plugin moves JSON-RPC messages as text; this adapter parses what it receives. A message
//! that is not valid JSON-RPC is reported (naming the plugin) and skipped rather than ending the
//! session, as a server's stray output on stdio would be — but only a few are reported, and a
//! flood of them closes the connection ([`BadMessageBudget`]).
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rkmcp_plugin_host::budget::{BadMessageBudget, BadVerdict};
use rkmcp_plugin_host::{ConnectionError, PluginConnection};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};

/// How long one guest `receive` may wait before we ask again; short enough that closing the
/// session is noticed promptly.
const RECEIVE_POLL: Duration = Duration::from_millis(250);

pub struct PluginTransport {
    conn: Arc<PluginConnection>,
    /// Messages read by the reader task. rmcp drops `receive` futures when it has something to
    /// send; a guest call cut off half-way would leave the plugin's store unusable, so the guest
    /// is only ever called from this task, which is never cancelled mid-call.
    incoming: tokio::sync::mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
}

impl PluginTransport {
    /// `gave_up` is set when this adapter closes the connection itself because the plugin sent a
    /// flood of messages that are not JSON-RPC: the plugin is at fault, so the negotiation does
    /// not open a second connection to try `initialize` (which would only repeat the flood and
    /// its notices).
    pub fn new(conn: PluginConnection, server: &str, gave_up: Arc<AtomicBool>) -> Self {
        let conn = Arc::new(conn);
        let (tx, incoming) = tokio::sync::mpsc::channel(64);
        tokio::spawn(read_loop(conn.clone(), server.to_string(), tx, gave_up));
        PluginTransport { conn, incoming }
    }
}

async fn read_loop(
    conn: Arc<PluginConnection>,
    server: String,
    tx: tokio::sync::mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    gave_up: Arc<AtomicBool>,
) {
    let mut bad = BadMessageBudget::default();
    loop {
        match conn.receive(RECEIVE_POLL).await {
            Ok(None) => {
                if tx.is_closed() {
                    return;
                }
            }
            Ok(Some(text)) => match serde_json::from_str(&text) {
                Ok(message) => {
                    if tx.send(message).await.is_err() {
                        return;
                    }
                }
                Err(err) => match bad.record(std::time::Instant::now()) {
                    BadVerdict::Report => tracing::warn!(
                        target: rkmcp_term_safe::NOTICE_TARGET,
                        server = %server,
                        plugin = %conn.plugin_name(),
                        "skipping a message that is not JSON-RPC ({err}): {}",
                        rkmcp_term_safe::sanitize_inline(
                            &text.chars().take(200).collect::<String>()
                        )
                    ),
                    BadVerdict::Quiet => {}
                    BadVerdict::Close { count } => {
                        tracing::error!(
                            target: rkmcp_term_safe::NOTICE_TARGET,
                            server = %server,
                            "transport plugin `{}` sent {count} messages that are not JSON-RPC within {} s; closing the connection",
                            conn.plugin_name(),
                            bad.window().as_secs()
                        );
                        gave_up.store(true, Ordering::Release);
                        let _ = conn.close().await;
                        return;
                    }
                },
            },
            Err(ConnectionError::Closed { .. }) => return,
            Err(err) => {
                tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %server, "transport plugin failed: {err}");
                return;
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PluginTransportError {
    #[error(transparent)]
    Connection(#[from] ConnectionError),
    #[error("cannot encode a JSON-RPC message: {0}")]
    Encode(#[from] serde_json::Error),
}

impl rmcp::transport::Transport<RoleClient> for PluginTransport {
    type Error = PluginTransportError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let conn = self.conn.clone();
        async move {
            let text = serde_json::to_string(&item)?;
            conn.send(&text).await?;
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let conn = self.conn.clone();
        async move { Ok(conn.close().await?) }
    }
}
