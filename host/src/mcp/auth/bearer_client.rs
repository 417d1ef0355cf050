//! rmcp's streamable HTTP client with tokens from a [`BearerSource`]: every request carries the
//! current token; a 401 gets one refresh and one retry; a 403 `insufficient_scope` asks the source
//! for more scope (at most [`MAX_STEP_UPS`] times per request). rmcp's own `AuthClient` does the
//! first two for its manager only; this wrapper gives every token source (stored sign-in, client
//! credentials, static token) the same behaviour, and reports failures as [`AuthFailure`]s.
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
    async fn with_token<T, F, Fut>(&self, call: F) -> HttpResult<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = HttpResult<T>>,
    {
        let mut token = self.source.token().await.map_err(auth_error)?;
        let mut refreshed = false;
        let mut step_ups = 0;
        loop {
            match call(token.clone()).await {
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
        self.with_token(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
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
        self.with_token(|token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
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
        self.with_token(|token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
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
        self.with_token(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
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
        self.with_token(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
