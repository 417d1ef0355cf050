//! rmcp's streamable HTTP client with tokens from a [`BearerSource`]: every request carries the
//! current token; a 401 gets one refresh and one retry; a 403 `insufficient_scope` asks the source
//! for more scope (at most [`MAX_STEP_UPS`] times per request). rmcp's own `AuthClient` does the
//! first two for its manager only; this wrapper gives every token source (stored sign-in, client
//! credentials, static token) the same behaviour, and reports failures as [`AuthFailure`]s.
//! A DPoP-bound token (RFC 9449) is sent with the `DPoP` scheme and a fresh proof per request.
use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

use super::dpop::{self, DpopKey};
use super::{AuthFailure, BearerSource};

/// Step-up attempts for one request before giving up (the server keeps asking for more).
pub const MAX_STEP_UPS: usize = 2;

#[derive(Clone)]
pub struct BearerClient {
    inner: reqwest::Client,
    source: Arc<dyn BearerSource>,
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// An auth failure carried through rmcp's error type; [`find_auth_failure`] gets it back.
fn auth_error(failure: AuthFailure) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Io(std::io::Error::other(failure))
}

/// The [`AuthFailure`] somewhere in an error's chain, if any.
pub fn find_auth_failure<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a AuthFailure> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(f) = e.downcast_ref::<AuthFailure>() {
            return Some(f);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(f) = inner.downcast_ref::<AuthFailure>()
        {
            return Some(f);
        }
        cur = e.source();
    }
    None
}

impl BearerClient {
    pub fn new(inner: reqwest::Client, source: Arc<dyn BearerSource>) -> Self {
        BearerClient { inner, source }
    }

    /// Runs `call` with the source's token, reacting to 401 and 403 `insufficient_scope`.
    /// `call` gets the bearer token for rmcp to send, and the headers to add; a DPoP token
    /// travels in those headers instead (with a proof for `method` and `uri`), as rmcp's client
    /// only knows the Bearer scheme.
    async fn with_token<T, F, Fut>(
        &self,
        request: Request<'_>,
        custom_headers: &HashMap<HeaderName, HeaderValue>,
        call: F,
    ) -> HttpResult<T>
    where
        F: Fn(Option<String>, HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = HttpResult<T>>,
    {
        let mut token = self.source.token().await.map_err(auth_error)?;
        let mut refreshed = false;
        let mut nonce_asked = false;
        let mut step_ups = 0;
        loop {
            let key = self.source.dpop_key();
            let (bearer, headers) = match (&key, &token) {
                (Some(key), Some(token)) => (
                    None,
                    dpop_headers(key, request, token, custom_headers.clone())?,
                ),
                _ => (token.clone(), custom_headers.clone()),
            };
            let result = call(bearer, headers).await;
            // RFC 9449 §9: the server wants its nonce in the proof; one retry with it.
            if let Err(StreamableHttpError::AuthRequired(challenge)) = &result
                && !nonce_asked
                && dpop::asks_for_nonce(&challenge.www_authenticate_header)
                && let (Some(key), Some(token)) = (&key, &token)
            {
                nonce_asked = true;
                if self.learn_nonce(key, request, token, custom_headers).await {
                    continue;
                }
            }
            match result {
                Err(StreamableHttpError::AuthRequired(challenge)) if !refreshed => {
                    refreshed = true;
                    match self
                        .source
                        .rejected(token.as_deref(), Some(&challenge.www_authenticate_header))
                        .await
                        .map_err(auth_error)?
                    {
                        Some(fresh) => token = Some(fresh),
                        None => return Err(StreamableHttpError::AuthRequired(challenge)),
                    }
                }
                Err(StreamableHttpError::InsufficientScope(err)) if step_ups < MAX_STEP_UPS => {
                    step_ups += 1;
                    let challenge = err.www_authenticate_header.clone();
                    match self
                        .source
                        .insufficient_scope(&challenge)
                        .await
                        .map_err(auth_error)?
                    {
                        Some(fresh) => token = Some(fresh),
                        None => return Err(StreamableHttpError::InsufficientScope(err)),
                    }
                }
                other => return other,
            }
        }
    }

    /// Learns the nonce the MCP server wants, after it refused a proof without it.
    ///
    /// The nonce comes in the refusal's `DPoP-Nonce` header, which rmcp's client does not pass
    /// on (it keeps only `WWW-Authenticate`), so the refusal is provoked again here with a
    /// `ping`: harmless if the server answers it, and answered before the request itself runs,
    /// since a server checks the proof first. Costs one round trip per nonce the server issues.
    async fn learn_nonce(
        &self,
        key: &DpopKey,
        request: Request<'_>,
        token: &str,
        custom_headers: &HashMap<HeaderName, HeaderValue>,
    ) -> bool {
        let probe = Request {
            method: "POST",
            ..request
        };
        let Ok(headers) = dpop_headers(key, probe, token, custom_headers.clone()) else {
            return false;
        };
        let mut builder = self
            .inner
            .post(request.uri)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .headers(headers.into_iter().collect())
            .json(&serde_json::json!({
                "jsonrpc": "2.0",
                "id": "rkmcp-dpop-nonce",
                "method": "ping",
            }));
        if let Some(session) = request.session_id {
            builder = builder.header("Mcp-Session-Id", session);
        }
        let Ok(response) = builder.send().await else {
            return false;
        };
        match response
            .headers()
            .get(dpop::NONCE_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            Some(nonce) => {
                key.remember_nonce(request.uri, nonce);
                true
            }
            None => false,
        }
    }
}

/// What a request is, for its DPoP proof.
#[derive(Clone, Copy)]
struct Request<'a> {
    method: &'static str,
    uri: &'a str,
    session_id: Option<&'a str>,
}

impl<'a> Request<'a> {
    fn new(method: &'static str, uri: &'a Arc<str>, session_id: Option<&'a Arc<str>>) -> Self {
        Request {
            method,
            uri,
            session_id: session_id.map(|s| s.as_ref()),
        }
    }
}

/// `custom_headers` plus `Authorization: DPoP <token>` and a fresh proof (RFC 9449 §7.1).
fn dpop_headers(
    key: &DpopKey,
    request: Request<'_>,
    token: &str,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HttpResult<HashMap<HeaderName, HeaderValue>> {
    let unusable = |what: &str| {
        StreamableHttpError::Io(std::io::Error::other(format!(
            "the DPoP {what} cannot be sent in an HTTP header"
        )))
    };
    let proof = key
        .proof(request.method, request.uri, Some(token))
        .map_err(|e| StreamableHttpError::Io(std::io::Error::other(e)))?;
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("DPoP {token}")).map_err(|_| unusable("access token"))?,
    );
    headers.insert(
        HeaderName::from_static("dpop"),
        HeaderValue::from_str(&proof).map_err(|_| unusable("proof"))?,
    );
    Ok(headers)
}

impl StreamableHttpClient for BearerClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let request = Request::new("POST", &uri, session_id.as_ref());
        self.with_token(request, &custom_headers, |token, headers| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                headers,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let request = Request::new("POST", &uri, session_id.as_ref());
        self.with_token(request, &custom_headers, |token, headers| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                headers,
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let request = Request::new("DELETE", &uri, Some(&session_id));
        self.with_token(request, &custom_headers, |token, headers| {
            self.inner
                .delete_session(uri.clone(), session_id.clone(), token, headers)
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let request = Request::new("GET", &uri, session_id.as_ref());
        self.with_token(request, &custom_headers, |token, headers| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers,
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let request = Request::new("GET", &uri, session_id.as_ref());
        self.with_token(request, &custom_headers, |token, headers| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers,
                max_sse_event_size,
            )
        })
        .await
    }
}
