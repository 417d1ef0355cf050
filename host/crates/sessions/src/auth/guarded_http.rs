//! The HTTP client for every OAuth request rkmcp makes: to URLs a server or its metadata handed
//! out (discovery, registration, token, device and revocation endpoints, the conformance
//! suite's authorization redirects), through rmcp ([`GuardedHttp`] is its `OAuthHttpClient`) or
//! directly.
//!
//! - Every URL, and every redirect hop, passes [`FetchPolicy::check_url`] before anything is
//!   sent; host names are resolved here, and only the addresses the policy allows are connected
//!   to (reqwest connects to what our resolver returns, so there is no second lookup to rebind).
//!   Hosts of the proxies in `HTTP(S)_PROXY` / `ALL_PROXY` are resolved without the filter: the
//!   proxy resolves the target itself then.
//! - Answers are cut off past [`MAX_ANSWER_BYTES`] and requests past [`TOTAL_TIMEOUT`] (from
//!   connecting to the last byte), so a hostile server cannot stall a sign-in or fill memory.
//! - A failure is a [`FetchError`], a sentence naming the URL and what happened. rmcp flattens
//!   some errors into strings ("Request failed"), so each one is also recorded per server and
//!   picked up by [`take_problems`] when the sign-in failure is worded.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest,
};
use url::Url;

use super::fetch_policy::{FetchPolicy, Reason, Refusal, is_localhost_name};
use rkmcp_config::ServerConfig;

/// The largest answer read from an authorization server (metadata, token, registration).
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The longest an OAuth request may take, from connecting to the last byte of the answer.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Redirects followed where following is asked for (registration); each hop is checked.
const MAX_REDIRECTS: usize = 5;

/// Limits on one request; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: usize,
    pub timeout: Duration,
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: MAX_ANSWER_BYTES,
            timeout: TOTAL_TIMEOUT,
            connect_timeout: TOTAL_TIMEOUT,
        }
    }
}

/// What went wrong with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchErrorKind {
    /// The policy refused the URL (or every address of its host): nothing was sent.
    Refused(Refusal),
    /// The answer was longer than the limit; reading stopped there.
    TooLarge(usize),
    /// No complete answer within the limit.
    TooSlow(Duration),
    /// Anything else: cannot connect, TLS, a broken answer.
    Failed(String),
}

/// A failed OAuth request, as a sentence naming the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    pub url: String,
    pub kind: FetchErrorKind,
}

/// What a URL is, from its path, for messages: "the authorization server's metadata at …".
fn what_is(url: &str) -> String {
    let shown = crate::http::printable(url, 300);
    if url.contains("/.well-known/oauth-protected-resource") {
        format!("the protected resource metadata at {shown}")
    } else if url.contains("/.well-known/oauth-authorization-server")
        || url.contains("/.well-known/openid-configuration")
    {
        format!("the authorization server's metadata at {shown}")
    } else {
        format!("the answer from {shown}")
    }
}

fn size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            FetchErrorKind::Refused(refusal) => write!(f, "{refusal}"),
            FetchErrorKind::TooLarge(limit) => write!(
                f,
                "{} is larger than {}; rkmcp stopped reading it",
                what_is(&self.url),
                size(*limit)
            ),
            FetchErrorKind::TooSlow(limit) => {
                let what = what_is(&self.url);
                let what = what
                    .strip_prefix("the answer from ")
                    .map_or(what.clone(), |u| format!("the request to {u}"));
                write!(
                    f,
                    "{what} did not complete within {}; rkmcp gave up waiting",
                    humantime::format_duration(*limit)
                )
            }
            FetchErrorKind::Failed(detail) => write!(
                f,
                "the request to {} failed: {detail}",
                crate::http::printable(&self.url, 300)
            ),
        }
    }
}

impl std::error::Error for FetchError {}

/// Problems met per server (config name), for the sign-in failure that follows.
static PROBLEMS: Mutex<Vec<(String, FetchError)>> = Mutex::new(Vec::new());

fn record(server: &str, error: &FetchError) {
    let mut problems = PROBLEMS.lock().unwrap_or_else(|e| e.into_inner());
    // Bounded: a server that keeps failing must not grow this for ever.
    if problems.len() >= 64 {
        problems.remove(0);
    }
    problems.push((server.to_string(), error.clone()));
}

/// The problems recorded for `server` since the last call, oldest first.
pub fn take_problems(server: &str) -> Vec<FetchError> {
    let mut problems = PROBLEMS.lock().unwrap_or_else(|e| e.into_inner());
    let (mine, others): (Vec<_>, Vec<_>) = problems.drain(..).partition(|(s, _)| s == server);
    *problems = others;
    mine.into_iter().map(|(_, e)| e).collect()
}

/// An answer, read to the end (within the limit).
pub struct Answer {
    pub status: reqwest::StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Name resolution through the operating system.
struct SystemLookup;

impl Resolve for SystemLookup {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok::<Addrs, BoxError>(Box::new(addrs.into_iter()))
        })
    }
}

/// Resolves names and keeps only the addresses the policy allows.
struct PolicyResolver {
    policy: Option<Arc<FetchPolicy>>,
    lookup: Arc<dyn Resolve>,
    /// Proxy hosts: resolved without the filter.
    proxies: Arc<[String]>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        let policy = self.policy.clone();
        let proxy = self.proxies.contains(&host);
        let lookup = (!is_localhost_name(&host)).then(|| self.lookup.resolve(name));
        Box::pin(async move {
            let resolved: Vec<IpAddr> = match lookup {
                Some(lookup) => lookup.await?.map(|a| a.ip()).collect(),
                // RFC 6761: `localhost` is this machine, whatever a DNS server says.
                None => vec![
                    IpAddr::V4(Ipv4Addr::LOCALHOST),
                    IpAddr::V6(Ipv6Addr::LOCALHOST),
                ],
            };
            let allowed = match &policy {
                Some(policy) if !proxy => policy.allowed_addresses(&host, &resolved)?,
                _ => resolved,
            };
            Ok::<Addrs, BoxError>(Box::new(
                allowed.into_iter().map(|ip| SocketAddr::new(ip, 0)),
            ))
        })
    }
}

fn proxy_hosts() -> Arc<[String]> {
    [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .filter_map(|var| std::env::var(var).ok())
    .filter_map(|proxy| {
        let proxy = if proxy.contains("://") {
            proxy
        } else {
            format!("http://{proxy}")
        };
        Url::parse(&proxy)
            .ok()?
            .host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
    })
    .collect()
}

/// The guarded client for one MCP server.
pub struct GuardedHttp {
    server: String,
    policy: Option<Arc<FetchPolicy>>,
    follow: reqwest::Client,
    stop: reqwest::Client,
    limits: Limits,
}

impl GuardedHttp {
    /// For URLs handed out by `config`'s server: the policy of its URL applies.
    pub fn for_server(config: &ServerConfig) -> Result<Self, String> {
        let url = config.url.as_deref().unwrap_or_default();
        let url = Url::parse(url).map_err(|e| format!("`url` is not a URL: {e}"))?;
        let limits = Limits {
            connect_timeout: config.connect_timeout.min(TOTAL_TIMEOUT),
            ..Limits::default()
        };
        Self::build(
            &config.name,
            Some(FetchPolicy::for_server(&url)),
            Arc::new(SystemLookup),
            limits,
        )
    }

    /// For a URL the person configured (an identity provider's token endpoint): no address
    /// policy, but the same limits.
    pub fn for_configured_url(config: &ServerConfig) -> Result<Self, String> {
        let limits = Limits {
            connect_timeout: config.connect_timeout.min(TOTAL_TIMEOUT),
            ..Limits::default()
        };
        Self::build(&config.name, None, Arc::new(SystemLookup), limits)
    }

    /// A client with the given policy, name lookup and limits (tests use a fixed lookup).
    pub fn build(
        server: &str,
        policy: Option<FetchPolicy>,
        lookup: Arc<dyn Resolve>,
        limits: Limits,
    ) -> Result<Self, String> {
        crate::http::install_tls_provider();
        let policy = policy.map(Arc::new);
        let resolver = Arc::new(PolicyResolver {
            policy: policy.clone(),
            lookup,
            proxies: proxy_hosts(),
        });
        let hop_policy = policy.clone();
        let follow = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match &hop_policy {
                Some(policy) => match policy.check_url(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(refusal) => attempt.error(refusal),
                },
                None => attempt.follow(),
            }
        });
        let client = |redirect| {
            reqwest::Client::builder()
                .redirect(redirect)
                .timeout(limits.timeout)
                .connect_timeout(limits.connect_timeout)
                .dns_resolver(resolver.clone())
                .build()
                .map_err(|e| {
                    format!(
                        "cannot build the HTTP client: {}",
                        crate::http::describe_reqwest(&e)
                    )
                })
        };
        Ok(GuardedHttp {
            server: server.to_string(),
            policy,
            follow: client(follow)?,
            stop: client(reqwest::redirect::Policy::none())?,
            limits,
        })
    }

    /// A POST that does not follow redirects (token endpoints answer directly).
    pub fn post(&self, url: &str) -> reqwest::RequestBuilder {
        self.stop.post(url)
    }

    /// A GET that does not follow redirects.
    pub fn get(&self, url: &str) -> reqwest::RequestBuilder {
        self.stop.get(url)
    }

    /// The policy's verdict on `url`, before anything is sent.
    pub fn check(&self, url: &str) -> Result<Url, FetchError> {
        let failed = |kind| FetchError {
            url: url.to_string(),
            kind,
        };
        let parsed = Url::parse(url)
            .map_err(|e| failed(FetchErrorKind::Failed(format!("it is not a URL: {e}"))))?;
        if let Some(policy) = &self.policy {
            policy
                .check_url(&parsed)
                .map_err(|r| failed(FetchErrorKind::Refused(r)))?;
        }
        Ok(parsed)
    }

    /// Sends a request made with [`Self::post`] or [`Self::get`] and reads the answer.
    pub async fn send(&self, builder: reqwest::RequestBuilder) -> Result<Answer, FetchError> {
        let (client, request) = builder.build_split();
        let request = request.map_err(|e| FetchError {
            url: e.url().map(|u| u.to_string()).unwrap_or_default(),
            kind: FetchErrorKind::Failed(crate::http::describe_reqwest(&e)),
        })?;
        self.execute_with(&client, request).await
    }

    async fn execute_with(
        &self,
        client: &reqwest::Client,
        request: reqwest::Request,
    ) -> Result<Answer, FetchError> {
        let url = request.url().to_string();
        let result = async {
            self.check(&url)?;
            let mut response = client
                .execute(request)
                .await
                .map_err(|e| self.reqwest_failure(&url, &e))?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| self.reqwest_failure(&url, &e))?
            {
                if chunk.len() > self.limits.max_bytes.saturating_sub(body.len()) {
                    return Err(FetchError {
                        url: url.clone(),
                        kind: FetchErrorKind::TooLarge(self.limits.max_bytes),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<Answer, FetchError>(Answer {
                status,
                headers,
                body,
            })
        }
        .await;
        if let Err(e) = &result {
            tracing::warn!(server = %self.server, "{e}");
            record(&self.server, e);
        }
        result
    }

    /// A reqwest failure in words: a refusal by the resolver or a redirect hop, a timeout, or
    /// what reqwest says.
    fn reqwest_failure(&self, url: &str, err: &reqwest::Error) -> FetchError {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
        while let Some(e) = cur {
            if let Some(refusal) = e.downcast_ref::<Refusal>() {
                let mut refusal = refusal.clone();
                // The resolver knows only the host; the person wants the URL.
                if matches!(refusal.reason, Reason::Resolved(_)) {
                    refusal.url = err.url().map_or(url.to_string(), |u| u.to_string());
                }
                return FetchError {
                    url: url.to_string(),
                    kind: FetchErrorKind::Refused(refusal),
                };
            }
            cur = e.source();
        }
        let kind = if err.is_timeout() {
            FetchErrorKind::TooSlow(self.limits.timeout)
        } else {
            FetchErrorKind::Failed(crate::http::describe_reqwest(err))
        };
        FetchError {
            url: url.to_string(),
            kind,
        }
    }
}

impl GuardedHttp {
    /// One request for rmcp, with the redirect handling it asks for.
    async fn for_rmcp(
        &self,
        request: OAuthHttpRequest,
    ) -> Result<http::Response<Vec<u8>>, BoxError> {
        let client = match request.redirect_policy {
            OAuthHttpRedirectPolicy::Follow => &self.follow,
            _ => &self.stop,
        };
        let request = reqwest::Request::try_from(request.request)?;
        let answer = self.execute_with(client, request).await?;
        let mut response = http::Response::builder().status(answer.status.as_u16());
        for (name, value) in &answer.headers {
            response = response.header(name.as_str(), value.as_bytes());
        }
        Ok(response.body(answer.body)?)
    }
}

impl OAuthHttpClient for GuardedHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(self.for_rmcp(request))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Answers each name with fixed addresses (what a hostile DNS server would say).
    struct FixedLookup(HashMap<String, Vec<IpAddr>>);

    impl Resolve for FixedLookup {
        fn resolve(&self, name: Name) -> Resolving {
            let addrs: Vec<SocketAddr> = self
                .0
                .get(name.as_str())
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            Box::pin(async move { Ok(Box::new(addrs.into_iter()) as Addrs) })
        }
    }

    /// A loopback HTTP server answering every request with `answer` (after `delay` per chunk
    /// when trickling); counts connections.
    async fn server(answer: Vec<u8>, trickle: Option<Duration>) -> (u16, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    match trickle {
                        None => {
                            let _ = socket.write_all(&answer).await;
                        }
                        Some(delay) => {
                            for byte in answer {
                                if socket.write_all(&[byte]).await.is_err() {
                                    break;
                                }
                                tokio::time::sleep(delay).await;
                            }
                        }
                    }
                });
            }
        });
        (port, count)
    }

    fn ok_json(body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn guard(server: &str, names: &[(&str, &str)], limits: Limits) -> GuardedHttp {
        let lookup = FixedLookup(
            names
                .iter()
                .map(|(n, ip)| (n.to_string(), vec![ip.parse().unwrap()]))
                .collect(),
        );
        GuardedHttp::build(
            "test",
            Some(FetchPolicy::for_server(&Url::parse(server).unwrap())),
            Arc::new(lookup),
            limits,
        )
        .unwrap()
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_never_connected_to_for_a_public_server() {
        let (port, connections) = server(ok_json("{}"), None).await;
        let guard = guard(
            "https://mcp.example.com/mcp",
            &[("rebind.example", "127.0.0.1")],
            Limits::default(),
        );
        let url = format!("https://rebind.example:{port}/.well-known/oauth-authorization-server");
        let err = guard.send(guard.get(&url)).await.err().unwrap();
        assert!(matches!(err.kind, FetchErrorKind::Refused(_)), "{err}");
        assert!(
            err.to_string().contains(&url)
                && err.to_string().contains("127.0.0.1, a loopback address"),
            "{err}"
        );
        assert_eq!(connections.load(Ordering::SeqCst), 0, "it connected");
        // The same name for a server on this machine: fetched (over https it would need TLS,
        // so the loopback server's plain http is used through `localhost`).
        let local = GuardedHttp::build(
            "test",
            Some(FetchPolicy::for_server(
                &Url::parse("http://127.0.0.1:1/mcp").unwrap(),
            )),
            Arc::new(FixedLookup(HashMap::new())),
            Limits::default(),
        )
        .unwrap();
        let answer = local
            .send(local.get(&format!("http://localhost:{port}/x")))
            .await
            .unwrap();
        assert_eq!(answer.text(), "{}");
        assert_eq!(connections.load(Ordering::SeqCst), 1);
        assert!(
            take_problems("test")
                .iter()
                .any(|p| matches!(p.kind, FetchErrorKind::Refused(_)))
        );
    }

    #[tokio::test]
    async fn redirects_are_checked_hop_by_hop() {
        let redirect = "HTTP/1.1 307 Temporary Redirect\r\nLocation: https://169.254.169.254/latest/meta-data/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        let (port, _) = server(redirect.as_bytes().to_vec(), None).await;
        let local = GuardedHttp::build(
            "redirects",
            Some(FetchPolicy::for_server(
                &Url::parse("http://127.0.0.1:1/mcp").unwrap(),
            )),
            Arc::new(FixedLookup(HashMap::new())),
            Limits::default(),
        )
        .unwrap();
        let url = format!("http://127.0.0.1:{port}/register");
        let err = local.send(local.follow.post(&url)).await.err().unwrap();
        assert!(err.to_string().contains("169.254.169.254"), "{err}");
        assert!(err.to_string().contains("link-local"), "{err}");
    }

    #[tokio::test]
    async fn oversized_and_slow_answers_are_cut_off() {
        let big = "x".repeat(2048);
        let (port, _) = server(ok_json(&big), None).await;
        let limits = Limits {
            max_bytes: 1024,
            timeout: Duration::from_millis(600),
            connect_timeout: Duration::from_millis(600),
        };
        let local = guard("http://127.0.0.1:1/mcp", &[], limits);
        let url = format!("http://127.0.0.1:{port}/.well-known/oauth-authorization-server");
        let err = local.send(local.get(&url)).await.err().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "the authorization server's metadata at {url} is larger than 1 KiB; rkmcp stopped reading it"
            )
        );

        let (slow, _) = server(
            ok_json("{\"issuer\": \"x\"}"),
            Some(Duration::from_millis(100)),
        )
        .await;
        let url = format!("http://127.0.0.1:{slow}/token");
        let started = std::time::Instant::now();
        let err = local.send(local.post(&url)).await.err().unwrap();
        assert!(started.elapsed() < Duration::from_secs(3), "not cut off");
        assert_eq!(
            err.to_string(),
            format!("the request to {url} did not complete within 600ms; rkmcp gave up waiting")
        );
    }
}
