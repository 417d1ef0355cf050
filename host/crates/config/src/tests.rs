//! Loading and validating configs: the messages a person sees for each mistake.
use std::time::Duration;

use super::*;

fn load(text: &str) -> Result<Config, ConfigError> {
    load_str(Path::new("/cfg/rkmcp.toml"), text)
}

#[test]
fn seed_form_infers_transport_and_applies_defaults() {
    let c = load(
        r#"
[[servers]]
name = "time"
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]

[[servers]]
name = "web"
url = "http://127.0.0.1:3000/mcp"
request_timeout = "2s"
prefix = ""
"#,
    )
    .unwrap();
    assert_eq!(c.servers[0].transport, TransportKind::Stdio);
    assert_eq!(c.servers[0].prefix, "time__");
    assert_eq!(c.servers[0].request_timeout, DEFAULT_REQUEST_TIMEOUT);
    assert_eq!(c.servers[1].transport, TransportKind::Auto);
    assert_eq!(c.servers[1].request_timeout, Duration::from_secs(2));
    assert_eq!(c.servers[1].prefix, "");
}

#[test]
fn protocol_log_level_and_roots() {
    let c = load(
        "[roots]\npaths = [\"work\", \"/abs\"]\n[[servers]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"2025-06-18\"\nlog_level = \"Warning\"\n[[servers]]\nname = \"b\"\ncommand = \"x\"\n",
    )
    .unwrap();
    assert_eq!(
        c.servers[0].protocol,
        Protocol::Version("2025-06-18".into())
    );
    assert_eq!(c.servers[0].log_level.as_deref(), Some("warning"));
    assert_eq!(c.servers[1].protocol, Protocol::Auto);
    assert_eq!(c.roots, [PathBuf::from("/cfg/work"), PathBuf::from("/abs")]);
    let err = load("[[servers]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"2025-11-52\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean `2025-11-25`?"), "{err}");
    assert!(err.contains("server `a`"), "{err}");
    let err = load("[[servers]]\nname = \"a\"\ncommand = \"x\"\nlog_level = \"verbose\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a log level"), "{err}");
}

#[test]
fn typo_in_key_names_position_and_suggests() {
    let err = load("[[servers]]\nname = \"a\"\ncomand = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("/cfg/rkmcp.toml:3:1"), "{err}");
    assert!(err.contains("servers[0].comand"), "{err}");
    assert!(err.contains("did you mean `command`?"), "{err}");
}

#[test]
fn unknown_transport_suggests() {
    let err = load("[[servers]]\nname = \"a\"\ntransport = \"stdoi\"\ncommand = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean `stdio`?"), "{err}");
    assert!(err.contains(":2:1"), "{err}");
}

#[test]
fn masks_secrets() {
    let c = load(
        r#"
[[servers]]
name = "a"
command = "x"
args = ["--api-key", "sekrit", "--token=abc", "--port", "3"]
env = { GITHUB_TOKEN = "ghp_1", PATH = "/bin" }
"#,
    )
    .unwrap()
    .masked();
    let s = &c.servers[0];
    assert_eq!(s.env["GITHUB_TOKEN"], "***");
    assert_eq!(s.env["PATH"], "/bin");
    assert_eq!(s.args, ["--api-key", "***", "--token=***", "--port", "3"]);
}

#[test]
fn later_layer_replaces_server_by_name() {
    let a = file::parse(
        Path::new("/u/config.toml"),
        "[[servers]]\nname = \"x\"\ncommand = \"old\"\n[[servers]]\nname = \"y\"\ncommand = \"y\"\n",
        Format::Toml,
    )
    .unwrap();
    let b = file::parse(
        Path::new("/w/rkmcp.toml"),
        "[[servers]]\nname = \"x\"\ncommand = \"new\"\n",
        Format::Toml,
    )
    .unwrap();
    let c = resolve(vec![
        ("/u/config.toml".into(), a),
        ("/w/rkmcp.toml".into(), b),
    ])
    .unwrap();
    assert_eq!(c.servers.len(), 2);
    assert_eq!(c.servers[0].command.as_deref(), Some("new"));
    assert_eq!(c.servers[0].source, PathBuf::from("/w/rkmcp.toml"));
}

#[test]
fn claude_desktop_json_is_read_unchanged() {
    let c = load_str(
        Path::new("/cfg/claude_desktop_config.json"),
        r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
"fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
"remote": { "type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"} },
"off": { "command": "x", "disabled": true }
  }
}"#,
    )
    .unwrap();
    assert_eq!(c.servers.len(), 3);
    let fs = c.server("fs").unwrap();
    assert_eq!(fs.transport, TransportKind::Stdio);
    assert_eq!(c.server("remote").unwrap().transport, TransportKind::Http);
    assert!(!c.server("off").unwrap().enabled);
}

#[test]
fn vscode_json_servers_form() {
    let c = load_str(
        Path::new("/cfg/mcp.json"),
        r#"{ "servers": { "time": { "type": "stdio", "command": "mcp-server-time" } }, "inputs": [] }"#,
    )
    .unwrap();
    assert_eq!(c.servers[0].name, "time");
}

#[test]
fn json_typo_is_positioned() {
    let err = load_str(
        Path::new("/cfg/mcp.json"),
        "{\n  \"mcpServers\": {\n    \"a\": { \"comand\": \"x\" }\n  }\n}",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/cfg/mcp.json:3:"), "{err}");
    assert!(err.contains("did you mean `command`?"), "{err}");
}

#[test]
fn servers_auth_is_resolved_and_its_secret_never_serialized() {
    let c = load(
        r#"
[[servers]]
name = "ci"
url = "https://ci.example.com/mcp"
[servers.auth]
grant = "client_credentials"
client_id = "rkmcp-ci"
client_secret = "s3cr3t-value"
token_endpoint_auth_method = "client_secret_basic"
scopes = ["mcp:tools"]
"#,
    )
    .unwrap();
    let auth = c.servers[0].auth.clone().unwrap();
    assert_eq!(auth.grant, Grant::ClientCredentials);
    assert_eq!(auth.client_secret.as_deref(), Some("s3cr3t-value"));
    assert_eq!(
        auth.token_endpoint_auth_method,
        Some(TokenEndpointAuth::ClientSecretBasic)
    );
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("s3cr3t-value"), "{json}");
    assert!(json.contains("\"client_secret\":\"***\""), "{json}");
}

#[test]
fn enterprise_and_key_settings_never_serialize_secrets() {
    let c = load(
        r#"
[[servers]]
name = "corp"
url = "https://corp.example.com/mcp"
[servers.auth]
grant = "enterprise_managed"
client_id = "rkmcp"
client_secret = "as-s3cret"
idp_token_endpoint = "https://idp.example.com/token"
idp_client_id = "rkmcp-at-idp"
idp_client_secret = "idp-s3cret"
assertion_env = "CORP_ID_TOKEN"
"#,
    )
    .unwrap();
    let auth = c.servers[0].auth.clone().unwrap();
    assert_eq!(auth.grant, Grant::EnterpriseManaged);
    assert_eq!(auth.idp_client_secret.as_deref(), Some("idp-s3cret"));
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("s3cret"), "{json}");
    assert!(json.contains("\"idp_client_secret\":\"***\""), "{json}");
    assert!(
        json.contains("\"assertion_env\":\"CORP_ID_TOKEN\""),
        "{json}"
    );
}

#[test]
fn servers_auth_mistakes_are_named() {
    let cases = [
        (
            "grant = \"client_credential\"",
            "did you mean `client_credentials`?",
        ),
        (
            "grant = \"client_credentials\"\nclient_id = \"x\"",
            "needs `auth.client_id` and `auth.client_secret`",
        ),
        ("client_secret = \"x\"", "needs `auth.client_id`"),
        (
            "client_metadata_url = \"http://x/y.json\"",
            "must be an https:// URL",
        ),
        (
            "bearer_token_env = \"MY TOKEN\"",
            "names an environment variable",
        ),
        (
            "token_endpoint_auth_method = \"private_key_jwt\"",
            "needs `auth.private_key_file`",
        ),
        (
            "token_endpoint_auth_method = \"tls_client_auth\"",
            "not supported",
        ),
        (
            "client_id = \"c\"\nprivate_key_file = \"/nonexistent/k.pem\"",
            "`auth.private_key_file`: cannot read /nonexistent/k.pem",
        ),
        (
            "private_key_file = \"/nonexistent/k.pem\"",
            "`auth.private_key_file` needs `auth.client_id`",
        ),
        (
            "client_id = \"c\"\nprivate_key_file = \"k.pem\"\nprivate_key_algorithm = \"HS256\"",
            "`auth.private_key_algorithm`: `HS256` is not a supported signing algorithm",
        ),
        (
            "grant = \"jwt_bearer\"",
            "needs `auth.assertion_file` or `auth.assertion_env`",
        ),
        (
            "grant = \"jwt_bearer\"\nassertion_env = \"A B\"",
            "`auth.assertion_env` names an environment variable",
        ),
        (
            "assertion_file = \"a.jwt\"",
            "are for `grant = \"jwt_bearer\"` or `\"enterprise_managed\"`",
        ),
        (
            "grant = \"enterprise_managed\"\nclient_id = \"c\"\nassertion_file = \"id.jwt\"",
            "needs `auth.idp_token_endpoint`",
        ),
        (
            "idp_token_endpoint = \"https://idp/token\"",
            "are for `grant = \"enterprise_managed\"`",
        ),
    ];
    for (auth, expected) in cases {
        let err = load(&format!(
            "[[servers]]\nname = \"w\"\nurl = \"https://w.example/mcp\"\n[servers.auth]\n{auth}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains(expected), "{auth}: {err}");
        assert!(err.contains("server `w`"), "{err}");
    }
    let err =
        load("[[servers]]\nname = \"s\"\ncommand = \"x\"\n[servers.auth]\nclient_id = \"c\"\n")
            .unwrap_err()
            .to_string();
    assert!(err.contains("for remote (`url`) servers"), "{err}");
}

#[test]
fn discover_timeout_defaults_and_bounds() {
    let c = load(
        "[defaults]\ndiscover_timeout = \"3s\"\n[[servers]]\nname = \"a\"\ncommand = \"x\"\n[[servers]]\nname = \"b\"\ncommand = \"x\"\ndiscover_timeout = \"500ms\"\n",
    )
    .unwrap();
    assert_eq!(c.servers[0].discover_timeout, Duration::from_secs(3));
    assert_eq!(c.servers[1].discover_timeout, Duration::from_millis(500));
    let c = load("[[servers]]\nname = \"a\"\ncommand = \"x\"\n").unwrap();
    assert_eq!(c.servers[0].discover_timeout, DEFAULT_DISCOVER_TIMEOUT);
    let err = load("[[servers]]\nname = \"a\"\ncommand = \"x\"\ndiscover_timeout = \"30s\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`discover_timeout`") && err.contains("at most 10s"),
        "{err}"
    );
}
