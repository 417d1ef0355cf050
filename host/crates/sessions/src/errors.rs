//! Errors from rmcp and its HTTP stack, told the way a person needs them: the cause chain
//! ("error sending request for url (…): tcp connect error: Connection refused"), the HTTP status
//! and body, the JSON-RPC error's message — and never a Rust type name
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error`).
//!
//! rmcp keeps causes as `#[source]` in most places but not all (`StreamableHttpError::Client`,
//! `ClientInitializeError::TransportError` hold theirs as plain fields), so the walk knows those
//! types and steps into the field; any other error contributes its text minus the part that
//! repeats its source.
use std::error::Error;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::transport::worker::WorkerQuitReason;

use super::stdio_transport::UNREADABLE_CODE;

type HttpError = StreamableHttpError<reqwest::Error>;

/// One error's own words and the cause to continue with.
type Link<'a> = (Option<String>, Option<&'a (dyn Error + 'static)>);

/// The whole chain of `err`, joined with `: `.
pub fn describe(err: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    let mut depth = 0;
    while let Some(current) = next
        && depth < 16
    {
        depth += 1;
        let (own, source) = link(current);
        if let Some(own) = own.map(|s| s.trim().to_string())
            && !own.is_empty()
            && !parts.last().is_some_and(|last| last.contains(&own))
        {
            parts.push(own);
        }
        next = source;
    }
    if parts.is_empty() {
        return "unknown error".into();
    }
    parts.join(": ")
}

/// [`describe`] for an rmcp request error.
pub fn describe_service_error(err: &ServiceError) -> String {
    describe(err)
}

fn link<'a>(err: &'a (dyn Error + 'static)) -> Link<'a> {
    if let Some(e) = err.downcast_ref::<DynamicTransportError>() {
        return (None, Some(e.error.as_ref()));
    }
    if let Some(e) = err.downcast_ref::<ServiceError>() {
        return service_error(e);
    }
    if let Some(e) = err.downcast_ref::<ClientInitializeError>() {
        return initialize_error(e);
    }
    if let Some(e) = err.downcast_ref::<HttpError>() {
        return http_error(e);
    }
    if let Some(super::http::RemoteTransportError::Http(e)) =
        err.downcast_ref::<super::http::RemoteTransportError>()
    {
        return http_error(e);
    }
    if let Some(WorkerQuitReason::Fatal { error, context }) =
        err.downcast_ref::<WorkerQuitReason<HttpError>>()
    {
        return (Some(context.to_string()), Some(error));
    }
    generic(err)
}

/// Its text with the source's text (which the chain shows next) cut off the end.
fn generic<'a>(err: &'a (dyn Error + 'static)) -> Link<'a> {
    let text = err.to_string();
    let source = err.source();
    let own = match source.map(|s| s.to_string()) {
        Some(inner) if !inner.is_empty() && text.ends_with(&inner) => text
            [..text.len() - inner.len()]
            .trim_end_matches([':', ' ', '(', '['])
            .to_string(),
        _ => text,
    };
    (Some(own), source)
}

fn service_error(e: &ServiceError) -> Link<'_> {
    match e {
        ServiceError::McpError(data) if data.code.0 == UNREADABLE_CODE => {
            (Some(data.message.to_string()), None)
        }
        ServiceError::McpError(data) => (
            Some(format!(
                "{} (JSON-RPC error {}){}",
                data.message,
                data.code.0,
                data.data
                    .as_ref()
                    .map(|d| format!(" {}", super::framing::shorten(d.to_string().as_bytes())))
                    .unwrap_or_default()
            )),
            None,
        ),
        ServiceError::TransportSend(inner) => (Some("cannot send the request".into()), Some(inner)),
        ServiceError::TransportClosed => {
            (Some("the connection to the server is closed".into()), None)
        }
        ServiceError::UnexpectedResponse => (
            Some("the server answered with a result of the wrong kind".into()),
            None,
        ),
        other => generic(other),
    }
}

fn initialize_error(e: &ClientInitializeError) -> Link<'_> {
    let json = |v: &dyn erased::Json| super::framing::shorten(v.json().as_bytes());
    match e {
        ClientInitializeError::ExpectedInitResponse(message) => (
            Some(match message {
                Some(m) => format!("the server answered `initialize` with {}", json(m)),
                None => "the server closed the connection instead of answering `initialize`".into(),
            }),
            None,
        ),
        ClientInitializeError::ExpectedInitResult(result) => (
            Some(match result {
                Some(r) => format!("the server's `initialize` result is not one: {}", json(r)),
                None => "the server's `initialize` result is missing".into(),
            }),
            None,
        ),
        ClientInitializeError::TransportError { error, context } => {
            (Some(format!("cannot {context}")), Some(error))
        }
        ClientInitializeError::JsonRpcError(data) => (
            Some(format!("{} (JSON-RPC error {})", data.message, data.code.0)),
            None,
        ),
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => {
            let list = |v: &[rmcp::model::ProtocolVersion]| {
                v.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            (
                Some(format!(
                    "no protocol version in common (rkmcp speaks {}; the server {})",
                    list(client_supported),
                    list(server_supported)
                )),
                None,
            )
        }
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => (
            Some(format!(
                "`server/discover` failed ({}) and so did `initialize` ({})",
                describe(discover.as_ref()),
                describe(fallback.as_ref())
            )),
            None,
        ),
        other => generic(other),
    }
}

fn http_error(e: &HttpError) -> Link<'_> {
    match e {
        // The reqwest error says what failed (with the URL); its sources say why.
        StreamableHttpError::Client(inner) => (None, Some(inner)),
        StreamableHttpError::Io(inner) => (None, Some(inner)),
        StreamableHttpError::Deserialize(inner) => (
            Some("the server's answer is not valid JSON".into()),
            Some(inner),
        ),
        StreamableHttpError::UnexpectedContentType(content_type) => {
            (Some(unexpected_content_type(content_type.as_deref())), None)
        }
        StreamableHttpError::AuthRequired(_) => (
            Some("the server needs a sign-in (it answered HTTP 401)".into()),
            None,
        ),
        StreamableHttpError::InsufficientScope(_) => (
            Some("the server refused access for lack of scope (HTTP 403)".into()),
            None,
        ),
        StreamableHttpError::TransportChannelClosed => {
            (Some("the connection to the server is closed".into()), None)
        }
        other => generic(other),
    }
}

/// An answer that is neither JSON nor an event stream: usually a web page from the wrong URL or
/// from a proxy or captive portal in between.
pub fn unexpected_content_type(content_type: Option<&str>) -> String {
    let Some(raw) = content_type.map(str::trim).filter(|t| !t.is_empty()) else {
        return "the server's answer has no content type, so it is not MCP \
                (JSON or an event stream) — is the URL right?"
            .into();
    };
    let bare = raw.split(';').next().unwrap_or(raw).trim();
    let bare = super::http::printable(bare, 80);
    if bare.eq_ignore_ascii_case("text/html") {
        format!(
            "the server answered with an HTML page ({bare}), not MCP — \
             is the URL right, or is a proxy in the way?"
        )
    } else {
        format!(
            "the server answered with {bare}, not MCP (JSON or an event stream) — is the URL right?"
        )
    }
}

/// Serializing the message types that rmcp puts in its errors, for showing them as JSON.
mod erased {
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer: {0}")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn chain_without_repetition_or_type_names() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let dynamic = DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<X>",
            std::any::TypeId::of::<Outer>(),
            Box::new(Outer(io)),
        );
        let err = ServiceError::TransportSend(dynamic);
        let text = describe(&err);
        assert_eq!(
            text, "cannot send the request: outer: connection refused",
            "{text}"
        );
        assert!(!text.contains("::"));
    }
}
