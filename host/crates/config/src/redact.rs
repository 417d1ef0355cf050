//! Secrets masked for display (`config show`, `--json`): env values and headers with
//! secret-looking names, secret flags' values, credentials in URLs.
pub(super) fn looks_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "auth",
        "credential",
        "cookie",
        "session",
    ]
    .iter()
    .any(|w| key.contains(w))
}

/// Masks `--api-key=…` and the value after `--token`, `--password`, ….
pub(super) fn mask_secret_args(args: &mut [String]) {
    let mut mask_next = false;
    for arg in args.iter_mut() {
        if mask_next {
            *arg = "***".into();
            mask_next = false;
            continue;
        }
        if let Some(flag) = arg.strip_prefix('-') {
            match flag.split_once('=') {
                Some((name, _)) if looks_secret(name) => *arg = format!("-{name}=***"),
                None if looks_secret(flag) => mask_next = true,
                _ => {}
            }
        }
    }
}

pub(super) fn mask_url_credentials(url: &str) -> String {
    // scheme://user:pass@host → scheme://***@host
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((_creds, host)) = rest.split_once('@')
        && !rest[..rest.find('/').unwrap_or(rest.len())].is_empty()
        && rest.find('@') < rest.find('/').or(Some(usize::MAX))
    {
        return format!("{scheme}://***@{host}");
    }
    url.to_string()
}
