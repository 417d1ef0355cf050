//! `WWW-Authenticate` values as RFC 9110 §11.6.1 writes them: challenges (`Bearer`, `DPoP`)
//! separated by commas, each with `name=value` parameters, a value a token or a quoted string
//! with `\` escapes. A server's challenge decides which URL sign-in fetches next
//! (`resource_metadata`) and whether a DPoP-bound token is tried, so it is read as written: a
//! comma or a `resource_metadata=` inside a quoted `error_description` is text, not structure.
//!
//! Pure (std only), so the fuzz target `oauth_responses` compiles this file in.

/// One challenge: its scheme and parameters (names lower-cased, values unquoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The first parameter named `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The challenges of a header value. What does not parse is skipped up to the next comma that
/// is not inside a quoted string; nothing here fails.
pub fn parse(header: &str) -> Vec<Challenge> {
    let mut challenges: Vec<Challenge> = Vec::new();
    let mut rest = header;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return challenges;
        }
        let token_len = rest.find(|c: char| !is_tchar(c)).unwrap_or(rest.len());
        if token_len == 0 {
            rest = skip_item(rest);
            continue;
        }
        let (token, after) = rest.split_at(token_len);
        let after_space = after.trim_start_matches([' ', '\t']);
        match after_space.strip_prefix('=') {
            // A parameter of the challenge before it (token68 such as `abc==` is not one).
            Some(value) if !value.starts_with('=') => {
                let (value, remainder) = read_value(value.trim_start_matches([' ', '\t']));
                if let (Some(challenge), Some(value)) = (challenges.last_mut(), value) {
                    challenge.params.push((token.to_ascii_lowercase(), value));
                }
                rest = remainder;
            }
            Some(_) => rest = skip_item(after_space),
            None => {
                challenges.push(Challenge {
                    scheme: token.to_string(),
                    params: Vec::new(),
                });
                rest = after_space;
            }
        }
    }
}

/// A parameter value (token or quoted string) and what follows it; `None` for a value that is
/// neither, whose text is skipped.
fn read_value(text: &str) -> (Option<String>, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return (Some(value), &quoted[i + 1..]),
                '\\' => match chars.next() {
                    Some((_, escaped)) => value.push(escaped),
                    None => break,
                },
                c => value.push(c),
            }
        }
        // No closing quote: the value runs to the end, which is not a value.
        return (None, "");
    }
    // Unquoted: a token by the grammar, but servers write URLs unquoted too (`:` and `/` are
    // not token characters), so it runs to the next comma or space, as they mean it.
    let len = text
        .find(|c: char| c == ',' || c == '"' || c.is_whitespace())
        .unwrap_or(text.len());
    if len == 0 {
        return (None, skip_item(text));
    }
    let (value, after) = text.split_at(len);
    let after_trimmed = after.trim_start_matches([' ', '\t']);
    if after_trimmed.is_empty() || after_trimmed.starts_with(',') {
        (Some(value.to_string()), after_trimmed)
    } else {
        // `name=va lue`: the value is what came before the space; the rest of the item is not
        // a parameter.
        (Some(value.to_string()), skip_item(after_trimmed))
    }
}

/// `text` after the current item: past the next comma outside a quoted string.
fn skip_item(text: &str) -> &str {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            ',' if !in_quotes => return &text[i + 1..],
            _ => {}
        }
    }
    ""
}

/// The `resource_metadata` URL a challenge names (RFC 9728 §5.1), as the server wrote it.
pub fn challenge_resource_metadata(header: &str) -> Option<String> {
    parse(header)
        .iter()
        .find_map(|c| c.param("resource_metadata"))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// Whether a `WWW-Authenticate` value holds a challenge with the `DPoP` scheme (RFC 9449 §7.1),
/// alone or next to a `Bearer` one.
pub fn offers_dpop_scheme(header: &str) -> bool {
    parse(header)
        .iter()
        .any(|c| c.scheme.eq_ignore_ascii_case("dpop"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_and_parameters_are_read() {
        let parsed = parse(
            r#"Bearer realm="mcp", error="invalid_token", error_description="expired, \"renew\"", DPoP algs="ES256 PS256", Basic"#,
        );
        let schemes: Vec<_> = parsed.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Bearer", "DPoP", "Basic"]);
        assert_eq!(parsed[0].param("REALM"), Some("mcp"));
        assert_eq!(
            parsed[0].param("error_description"),
            Some(r#"expired, "renew""#)
        );
        assert_eq!(parsed[1].param("algs"), Some("ES256 PS256"));
        assert!(parsed[2].params.is_empty());
    }

    #[test]
    fn resource_metadata_is_the_parameter_not_text_that_looks_like_it() {
        let plain = r#"Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource""#;
        assert_eq!(
            challenge_resource_metadata(plain).as_deref(),
            Some("https://mcp.example/.well-known/oauth-protected-resource")
        );
        assert_eq!(
            challenge_resource_metadata("Bearer Resource_Metadata = https://a.example/m , scope=x")
                .as_deref(),
            Some("https://a.example/m")
        );
        // Inside a quoted description, or as the tail of another name: not the parameter.
        let hidden = r#"Bearer error_description="see resource_metadata=http://169.254.169.254/""#;
        assert_eq!(challenge_resource_metadata(hidden), None);
        assert_eq!(
            challenge_resource_metadata(r#"Bearer xresource_metadata="http://10.0.0.1/""#),
            None
        );
        assert_eq!(
            challenge_resource_metadata(r#"Bearer resource_metadata="""#),
            None
        );
        assert_eq!(
            challenge_resource_metadata(r#"Bearer resource_metadata="unterminated"#),
            None
        );
    }

    #[test]
    fn the_dpop_scheme_is_found_as_a_scheme() {
        assert!(offers_dpop_scheme(r#"DPoP algs="ES256", Bearer realm="x""#));
        assert!(offers_dpop_scheme(r#"Bearer realm="x", DPoP algs="ES256""#));
        assert!(offers_dpop_scheme("dpop"));
        assert!(!offers_dpop_scheme(
            r#"Bearer error_description="use a DPoP token""#
        ));
        assert!(!offers_dpop_scheme(
            r#"Bearer error_description="x, DPoP y""#
        ));
        assert!(!offers_dpop_scheme(r#"Bearer dpop_nonce="abc""#));
    }

    #[test]
    fn garbage_is_skipped_not_fatal() {
        for header in [
            "",
            ",,,",
            "\"",
            "=x",
            "Bearer ===",
            "Bearer a=\"\\",
            "ü, Bearer",
        ] {
            let _ = parse(header);
        }
        assert_eq!(
            parse("ü, Bearer realm=r")[0],
            Challenge {
                scheme: "Bearer".into(),
                params: vec![("realm".into(), "r".into())],
            }
        );
        // token68 (`Basic abc==`) is not taken for a parameter.
        assert_eq!(
            parse("Basic YWxhZGRpbjpvcGVuc2VzYW1l=="),
            vec![Challenge {
                scheme: "Basic".into(),
                params: vec![],
            }]
        );
    }
}
