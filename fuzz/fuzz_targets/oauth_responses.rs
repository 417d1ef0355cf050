//! What an MCP server or its authorization server hands rkmcp during sign-in: `WWW-Authenticate`
//! challenges (`host/crates/sessions/src/auth/challenge.rs`) and the URLs in them and in metadata, judged by
//! the fetch policy (`host/crates/sessions/src/auth/fetch_policy.rs`), both compiled in with `#[path]`.
//!
//! Properties: no panic; challenges written by the grammar read back as written; a URL the
//! policy passes is https, or http with the server and the URL both on loopback, and never
//! names an address of a class the server is not at itself; a URL passed for the browser is
//! http(s).
#![no_main]
#![allow(dead_code)]
use libfuzzer_sys::fuzz_target;

#[path = "../../host/crates/sessions/src/auth/challenge.rs"]
mod challenge;

// The session crate's `crate::http::printable`, which the policy's messages use: a stand-in
// with the shipped function's behaviour (no control characters, at most `max` characters).
mod http {
    pub fn printable(text: &str, max: usize) -> String {
        text.chars()
            .filter(|c| !c.is_control() || *c == ' ')
            .take(max)
            .collect()
    }
}
#[path = "../../host/crates/sessions/src/auth/fetch_policy.rs"]
mod fetch_policy;

use fetch_policy::{AddressClass, FetchPolicy, check_browser_url, classify};

/// Challenges built from `data` (fields split at 0 bytes), and the header that writes them.
fn written_challenges(data: &[u8]) -> (Vec<challenge::Challenge>, String) {
    let tchar = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    let mut challenges: Vec<challenge::Challenge> = Vec::new();
    let mut pending_name: Option<String> = None;
    for field in data.split(|b| *b == 0) {
        let Some((&kind, rest)) = field.split_first() else {
            continue;
        };
        match kind % 3 {
            0 => {
                let scheme: String = rest
                    .iter()
                    .filter(|b| tchar(b))
                    .map(|b| *b as char)
                    .collect();
                if !scheme.is_empty() {
                    challenges.push(challenge::Challenge {
                        scheme,
                        params: Vec::new(),
                    });
                }
            }
            1 => {
                let name: String = rest
                    .iter()
                    .filter(|b| tchar(b))
                    .map(|b| *b as char)
                    .collect();
                pending_name = (!name.is_empty()).then(|| name.to_ascii_lowercase());
            }
            _ => {
                if let (Some(name), Some(last)) = (pending_name.take(), challenges.last_mut()) {
                    let value: String = String::from_utf8_lossy(rest)
                        .chars()
                        .filter(|c| !c.is_control())
                        .collect();
                    last.params.push((name, value));
                }
            }
        }
    }
    let header = challenges
        .iter()
        .map(|c| {
            let params: Vec<String> = c
                .params
                .iter()
                .map(|(n, v)| format!("{n}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
                .collect();
            if params.is_empty() {
                c.scheme.clone()
            } else {
                format!("{} {}", c.scheme, params.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    (challenges, header)
}

fuzz_target!(|data: &[u8]| {
    let (challenges, header) = written_challenges(data);
    assert_eq!(challenge::parse(&header), challenges, "{header}");

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = challenge::parse(text);
    if let Some(found) = challenge::challenge_resource_metadata(text) {
        assert!(!found.trim().is_empty());
        assert!(
            parsed
                .iter()
                .any(|c| c.param("resource_metadata").is_some())
        );
    }

    // `server URL \n fetched URL`.
    let (server, target) = text.split_once('\n').unwrap_or((text, text));
    if let (Ok(server), Ok(target)) = (url::Url::parse(server), url::Url::parse(target)) {
        let policy = FetchPolicy::for_server(&server);
        if policy.check_url(&target).is_ok() {
            let class_of = |u: &url::Url| match u.host() {
                Some(url::Host::Ipv4(ip)) => Some(classify(ip.into())),
                Some(url::Host::Ipv6(ip)) => Some(classify(ip.into())),
                Some(url::Host::Domain(d)) if fetch_policy::is_localhost_name(d) => {
                    Some(AddressClass::Loopback)
                }
                _ => None,
            };
            let target_class = class_of(&target);
            match target.scheme() {
                "https" => {}
                "http" => assert!(
                    class_of(&server) == Some(AddressClass::Loopback)
                        && target_class == Some(AddressClass::Loopback),
                    "plain http passed for {target} (server {server})"
                ),
                other => panic!("scheme {other} passed"),
            }
            if let Some(class) = target_class {
                assert!(
                    class == AddressClass::Public || class_of(&server) == Some(class),
                    "{target} ({class:?}) passed for server {server}"
                );
            }
        }
    }
    if let Ok(url) = check_browser_url(text.trim()) {
        assert!(matches!(url.scheme(), "http" | "https"));
    }
});
