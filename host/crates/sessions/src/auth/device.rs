//! Signing in on a machine without a browser: the device authorization grant (RFC 8628). rkmcp
//! shows a URL and a short code; the person opens the URL on any device, enters the code and
//! signs in there, while rkmcp polls the token endpoint. rmcp has no device flow, so the two
//! requests are made here; discovery, the store and error reporting are shared with the browser
//! sign-in.
use std::time::{Duration, Instant};

use rmcp::transport::auth::{OAuthTokenResponse, StoredCredentials};

use super::login::{LoginOptions, LoginUi, SignedIn};
use super::oauth;
use super::store::{ServerStore, TokenStore, now_secs};
use super::{AuthFailure, Step};
use rkmcp_config::ServerConfig;

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

#[derive(serde::Deserialize)]
struct DeviceAuthorization {
    device_code: String,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    expires_in: u64,
    interval: Option<u64>,
}

/// The `error` / `error_description` of an OAuth error body, or the HTTP status.
fn oauth_error(status: reqwest::StatusCode, body: &str) -> (String, String) {
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let error = json["error"].as_str().unwrap_or("").to_string();
    let description = json["error_description"].as_str().unwrap_or("").to_string();
    if error.is_empty() {
        (format!("HTTP {status}"), String::new())
    } else {
        (error, description)
    }
}

fn describe(error: &str, description: &str) -> String {
    let error = crate::http::printable(error, 100);
    if description.is_empty() {
        error
    } else {
        format!("{error}: {}", crate::http::printable(description, 300))
    }
}

/// Signs in with the device authorization grant and stores the tokens.
pub async fn device_login(
    config: &ServerConfig,
    options: &LoginOptions,
    ui: &mut dyn LoginUi,
) -> Result<SignedIn, AuthFailure> {
    let name = config.name.as_str();
    let auth = config.auth.clone().unwrap_or_default();
    let store_err =
        |e: super::store::StoreError| AuthFailure::new(name, Step::Store, e.to_string());
    let store = TokenStore::open_default().await.map_err(store_err)?;
    store.entries().await.map_err(store_err)?;
    let url = oauth::server_url(config)?;
    let server_store = ServerStore::new(store, name, url.as_str(), auth.client_id.clone());
    let oauth::Discovered {
        manager,
        metadata,
        endpoint,
    } = oauth::discover_endpoint(config, "device_authorization_endpoint").await?;
    let Some(endpoint) = endpoint else {
        return Err(AuthFailure::new(
            name,
            Step::Discovery,
            "the authorization server does not offer the device authorization grant (RFC 8628)",
        )
        .at(metadata.issuer.clone().unwrap_or_default())
        .next(format!(
            "sign in without --device: open the printed URL on any machine and paste the URL it sends you back to ({})",
            super::login_command(config)
        )));
    };
    let scopes = if !options.scopes.is_empty() {
        options.scopes.clone()
    } else if !auth.scopes.is_empty() {
        auth.scopes.clone()
    } else {
        manager.select_initial_scopes(&[]).await
    };
    let client = oauth::guarded_client(config)?;
    let (client_id, secret) = match (&auth.client_id, &auth.client_secret) {
        (Some(id), secret) => (id.clone(), secret.clone()),
        (None, _) => (
            register(config, &client, metadata.registration_endpoint.as_deref()).await?,
            None,
        ),
    };
    let post = |url: &str, mut form: Vec<(&'static str, String)>| {
        let mut request = client.post(url);
        match &secret {
            Some(s) => request = request.basic_auth(&client_id, Some(s)),
            None => form.push(("client_id", client_id.clone())),
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        client.send(
            request
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(body),
        )
    };
    let mut form = vec![("resource", url.to_string())];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let response = post(&endpoint, form)
        .await
        .map_err(|e| AuthFailure::new(name, Step::Authorization, e.to_string()).at(&endpoint))?;
    let status = response.status;
    let text = response.text();
    if !status.is_success() {
        let (error, description) = oauth_error(status, &text);
        return Err(
            AuthFailure::new(name, Step::Authorization, describe(&error, &description))
                .at(&endpoint)
                .next("check the scopes and the client settings"),
        );
    }
    let device: DeviceAuthorization = serde_json::from_str(&text).map_err(|e| {
        AuthFailure::new(
            name,
            Step::Authorization,
            format!("the answer is not a device authorization: {e}"),
        )
        .at(&endpoint)
    })?;
    // The page the person is sent to must be a web page, and they are told whose it is: a
    // hostile authorization server could name someone else's.
    let page = check_page(name, &endpoint, &device.verification_uri)?;
    let complete = device
        .verification_uri_complete
        .as_deref()
        .map(|u| check_page(name, &endpoint, u))
        .transpose()?;
    for line in device_prompt(
        name,
        metadata.issuer.as_deref(),
        &endpoint,
        &page,
        complete.as_ref(),
        &device.user_code,
    ) {
        ui.say(&line);
    }
    ui.say("Waiting for you to finish signing in…");

    let token_url = metadata.token_endpoint.clone();
    let mut interval = Duration::from_secs(device.interval.unwrap_or(5).max(1));
    let deadline = Instant::now() + Duration::from_secs(device.expires_in).min(options.timeout);
    let tokens: OAuthTokenResponse = loop {
        if Instant::now() >= deadline {
            return Err(AuthFailure::new(
                name,
                Step::Authorization,
                "the code expired before the sign-in finished",
            )
            .next("run the command again"));
        }
        tokio::time::sleep(interval).await;
        let form = vec![
            ("grant_type", DEVICE_GRANT.to_string()),
            ("device_code", device.device_code.clone()),
            ("resource", url.to_string()),
        ];
        let response = post(&token_url, form)
            .await
            .map_err(|e| AuthFailure::new(name, Step::Token, e.to_string()).at(&token_url))?;
        let status = response.status;
        let text = response.text();
        if status.is_success() {
            break serde_json::from_str(&text).map_err(|e| {
                AuthFailure::new(
                    name,
                    Step::Token,
                    format!("the token response is not valid: {e}"),
                )
                .at(&token_url)
            })?;
        }
        let (error, description) = oauth_error(status, &text);
        match error.as_str() {
            "authorization_pending" => {}
            "slow_down" => interval += Duration::from_secs(5),
            _ => {
                return Err(
                    AuthFailure::new(name, Step::Token, describe(&error, &description))
                        .at(&token_url)
                        .next("run the command again"),
                );
            }
        }
    };
    use oauth2::TokenResponse;
    let granted = tokens
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or(scopes);
    use rmcp::transport::auth::CredentialStore;
    server_store
        .save(
            StoredCredentials::new(client_id, Some(tokens), granted, Some(now_secs()))
                .with_issuer(metadata.issuer.clone()),
        )
        .await
        .map_err(|e| AuthFailure::new(name, Step::Store, e.to_string()))?;
    let entry = server_store
        .entry()
        .await
        .map_err(|e| AuthFailure::new(name, Step::Store, e.to_string()))?
        .ok_or_else(|| AuthFailure::new(name, Step::Store, "the tokens were not stored"))?;
    Ok(SignedIn::from_entry(&entry))
}

/// A verification page to show the person: a web address, or the failure saying why not.
fn check_page(name: &str, endpoint: &str, raw: &str) -> Result<url::Url, AuthFailure> {
    super::fetch_policy::check_browser_url(raw).map_err(|refusal| {
        AuthFailure::new(
            name,
            Step::Authorization,
            format!("the authorization server's verification page is not usable: {refusal}"),
        )
        .at(endpoint)
        .next("the authorization server is misconfigured or hostile (tell its operator)")
    })
}

/// The host of a URL, for the person to recognise (`example.com`, `example.com:8443`).
fn host_of(url: &url::Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => String::new(),
    }
}

/// What the person is told: the page and its host, the code, and who asked. When the page is
/// on another host than the authorization server, that is said too: the code must only be
/// entered at a host the person trusts with their sign-in.
pub fn device_prompt(
    name: &str,
    issuer: Option<&str>,
    endpoint: &str,
    page: &url::Url,
    complete: Option<&url::Url>,
    user_code: &str,
) -> Vec<String> {
    let printable = crate::http::printable;
    let asked_by = issuer
        .or(Some(endpoint))
        .and_then(|u| url::Url::parse(u).ok())
        .map(|u| host_of(&u))
        .unwrap_or_default();
    let host = host_of(page);
    let mut lines = vec![format!(
        "To sign in to `{name}`, open {} (a page at {}) and enter the code {}",
        printable(page.as_str(), 300),
        printable(&host, 200),
        printable(user_code, 40)
    )];
    if let Some(complete) = complete {
        lines.push(format!("  (or open {})", printable(complete.as_str(), 300)));
    }
    if !asked_by.is_empty() && asked_by != host {
        lines.push(format!(
            "  The authorization server at {} sends you to {}: enter the code only if you trust that host with this sign-in.",
            printable(&asked_by, 200),
            printable(&host, 200)
        ));
    }
    lines
}

/// Dynamic client registration (RFC 7591) of a public client for the device grant.
async fn register(
    config: &ServerConfig,
    client: &super::guarded_http::GuardedHttp,
    endpoint: Option<&str>,
) -> Result<String, AuthFailure> {
    let name = config.name.as_str();
    let Some(endpoint) = endpoint else {
        return Err(AuthFailure::new(
            name,
            Step::Registration,
            "the authorization server offers no dynamic client registration",
        )
        .next("set `[servers.auth] client_id` to a client registered for the device grant"));
    };
    let body = serde_json::json!({
        "client_name": "rkmcp",
        "grant_types": [DEVICE_GRANT, "refresh_token"],
        "response_types": [],
        "redirect_uris": [],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    let response = client
        .send(client.post(endpoint).json(&body))
        .await
        .map_err(|e| AuthFailure::new(name, Step::Registration, e.to_string()).at(endpoint))?;
    let status = response.status;
    let text = response.text();
    if !status.is_success() {
        let (error, description) = oauth_error(status, &text);
        return Err(
            AuthFailure::new(name, Step::Registration, describe(&error, &description))
                .at(endpoint)
                .next("set `[servers.auth] client_id` to a client registered for the device grant"),
        );
    }
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    json["client_id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| {
            AuthFailure::new(
                name,
                Step::Registration,
                "the registration answer has no client_id",
            )
            .at(endpoint)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_page_host_and_a_host_other_than_the_authorization_server() {
        let page = url::Url::parse("https://evil.example/device").unwrap();
        let lines = device_prompt(
            "web",
            Some("https://auth.example.com"),
            "https://auth.example.com/device",
            &page,
            None,
            "ABCD-EFGH",
        );
        assert_eq!(
            lines,
            [
                "To sign in to `web`, open https://evil.example/device (a page at evil.example) and enter the code ABCD-EFGH",
                "  The authorization server at auth.example.com sends you to evil.example: enter the code only if you trust that host with this sign-in.",
            ]
        );
        // Its own page: no warning, the port kept.
        let own = url::Url::parse("https://auth.example.com:8443/device").unwrap();
        let lines = device_prompt(
            "web",
            Some("https://auth.example.com:8443"),
            "https://auth.example.com:8443/device_authorization",
            &own,
            Some(&own),
            "X",
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].contains("(a page at auth.example.com:8443)"),
            "{lines:?}"
        );
        assert!(check_page("web", "https://a/d", "javascript:alert(1)").is_err());
    }
}
