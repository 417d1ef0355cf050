//! Streamable HTTP transport: a reqwest client with the configured headers.
//!
//! rmcp is built with `reqwest-tls-no-provider` and rustls uses `ring` (installed once here):
//! the default aws-lc provider is a slow C build that buys nothing for a client.
use std::collections::HashMap;
use std::sync::Once;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::config::ServerConfig;

fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub fn streamable_http(
    config: &ServerConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    install_tls_provider();
    let url = config
        .url
        .as_deref()
        .ok_or_else(|| "no `url` configured".to_string())?;
    let mut headers = HashMap::new();
    let mut auth = None;
    for (name, value) in &config.headers {
        // rmcp adds `Authorization: Bearer …` itself from `auth_header`.
        if name.eq_ignore_ascii_case("authorization") {
            auth = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_string());
            continue;
        }
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header name `{name}` is not valid: {e}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| format!("value of header `{name}` is not valid: {e}"))?;
        headers.insert(header, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut transport_config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers);
    if let Some(token) = auth {
        transport_config = transport_config.auth_header(token);
    }
    Ok(StreamableHttpClientTransport::with_client(
        client,
        transport_config,
    ))
}
