//! Names the gateway's clients see, and the way back: resource URIs namespaced by server, and
//! pages of the gateway's own lists. Pure functions, so the round trips are tested without
//! servers.
//!
//! Tool and prompt names use the chat's naming ([`rkmcp_sessions::naming`]: the server's `prefix`,
//! `time__get_current_time`). Resource URIs cannot take a name prefix — clients and servers parse
//! them — so the server goes into the scheme: `everything+test://static/resource/1` is
//! `test://static/resource/1` of server `everything`. Schemes may hold letters, digits, `+`, `-`
//! and `.`, and server names letters, digits, `-` and `_`, so `_` is written as `.` (which a
//! server name cannot contain) and the first `+` always ends the server part. A server whose
//! `prefix` is empty keeps its URIs unchanged, as it keeps its tool names.
use rmcp::ErrorData;

/// `uri` of `server` as the gateway's clients see it.
pub fn namespaced_uri(server: &str, prefixed: bool, uri: &str) -> String {
    if !prefixed {
        return uri.to_string();
    }
    format!("{}+{uri}", server.replace('_', "."))
}

/// The server and its own URI for a namespaced URI, if it has the form [`namespaced_uri`]
/// gives. `None`: not namespaced (a URI of a server without prefix, or unknown).
pub fn split_uri(uri: &str) -> Option<(String, &str)> {
    let (server, rest) = uri.split_once('+')?;
    // The part before `+` must be all scheme characters (no `:` or `/`): `a/b+c` is no scheme.
    if server.is_empty()
        || !server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        || !rest.contains(':')
    {
        return None;
    }
    Some((server.replace('.', "_"), rest))
}

/// Whether `uri` is an instance of the RFC 6570 level-1 `template` (`{var}` matches one or more
/// characters other than `/`; `{+var}`, `{/var}` and friends match anything). Used to route a
/// read of an unprefixed server's templated resource.
pub fn matches_template(template: &str, uri: &str) -> bool {
    fn go(t: &str, u: &str) -> bool {
        match t.find('{') {
            None => t == u,
            Some(open) => {
                let (literal, rest) = t.split_at(open);
                let Some(u) = u.strip_prefix(literal) else {
                    return false;
                };
                let Some(close) = rest.find('}') else {
                    return false;
                };
                let expr = &rest[1..close];
                let after = &rest[close + 1..];
                let greedy = expr.starts_with(['+', '#', '/', '.', ';', '?', '&']);
                // Try every length of the variable's value (short URIs: cheap enough).
                (1..=u.len()).filter(|&n| u.is_char_boundary(n)).any(|n| {
                    let value = &u[..n];
                    (greedy || !value.contains('/')) && go(after, &u[n..])
                })
            }
        }
    }
    go(template, uri)
}

/// The page of `items` a cursor asks for: the gateway's cursors are offsets in its merged list.
/// Errors: a cursor the gateway did not give (JSON-RPC invalid params, naming the cursor).
pub fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let size = size.max(1);
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("invalid cursor `{c}`: not one this server gave out (lists may have changed; start again without a cursor)"),
                    None,
                )
            })?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        for (server, uri) in [
            ("everything", "test://static/resource/1"),
            ("my_files", "file:///tmp/a+b.txt"),
            ("a-b", "svn+ssh://host/x"),
            ("s1", "https://example.org/{id}"),
        ] {
            let ns = namespaced_uri(server, true, uri);
            assert_eq!(split_uri(&ns), Some((server.to_string(), uri)), "{ns}");
        }
        assert_eq!(
            namespaced_uri("my_files", true, "file:///x"),
            "my.files+file:///x"
        );
        assert_eq!(namespaced_uri("x", false, "file:///x"), "file:///x");
    }

    #[test]
    fn plain_uris_are_not_split() {
        assert_eq!(split_uri("file:///tmp/a+b"), None);
        assert_eq!(split_uri("test://static/resource/1"), None);
        assert_eq!(split_uri("x+"), None);
        // `svn+ssh://h` splits as server `svn`: only servers that exist are taken (the gateway
        // checks), so a plain URI of an unprefixed server still reaches it.
        assert_eq!(split_uri("svn+ssh://h"), Some(("svn".into(), "ssh://h")));
    }

    #[test]
    fn templates_match_their_instances() {
        assert!(matches_template(
            "test://static/resource/{id}",
            "test://static/resource/42"
        ));
        assert!(!matches_template(
            "test://static/resource/{id}",
            "test://static/resource/4/2"
        ));
        assert!(matches_template("file://{+path}", "file:///a/b/c"));
        assert!(matches_template("a://{x}/b/{y}", "a://1/b/2"));
        assert!(!matches_template("a://{x}/b/{y}", "a://1/c/2"));
        assert!(!matches_template("a://{x}", "a://"));
    }

    #[test]
    fn pages_cover_the_list_once() {
        let items: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (page, next) = page(&items, cursor.as_deref(), 3).unwrap();
            seen.extend(page);
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, items);
        let err = page(&items, Some("zz"), 3).unwrap_err();
        assert!(err.message.contains("zz"), "{}", err.message);
        assert!(page(&items, Some("99"), 3).is_err());
        let (empty, next) = page::<u32>(&[], None, 3).unwrap();
        assert!(empty.is_empty() && next.is_none());
    }
}
