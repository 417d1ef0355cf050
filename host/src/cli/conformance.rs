//! `rkmcp conformance-client URL` (hidden): the client the official MCP conformance suite drives
//! (`@modelcontextprotocol/conformance client --command "rkmcp conformance-client"`).
//!
//! It is rkmcp's own session layer, not a second protocol implementation: one server configured
//! in code (streamable HTTP at the URL the suite appends), started by the [`SessionManager`],
//! then exercised the way a user of `rkmcp tools call` / `resources read` / `prompts get` would:
//! every tool is called (arguments made from its schema), every resource read, every prompt got,
//! every skill listed and (except where a scenario checks listing alone) loaded and verified.
//! Server requests are answered by [`Answering`], which accepts (elicitation with the form's
//! defaults, sampling with a fixed text) so the suite can observe the whole exchange.
//!
//! The suite sets `MCP_CONFORMANCE_SCENARIO` (the scenario), `MCP_CONFORMANCE_PROTOCOL_VERSION`
//! (when run with `--spec-version`) and `MCP_CONFORMANCE_CONTEXT` (scenario data: `toolCalls`
//! to make with exact arguments; credentials for auth scenarios, which become the server's `[servers.auth]` as a user would
//! write it; authorization code sign-ins are approved without a person, see
//! `mcp::auth::headless`).
//!
//! Exit status: 1 when the session could not be started; calls the server answers with an
//! error are reported on stderr but are the suite's to judge (some scenarios list tools that
//! cannot be called).
#![allow(deprecated)] // sampling and roots: deprecated by SEP-2577, still part of the suite.
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Root,
};
use serde_json::{Map, Value, json};

use super::Context;
use crate::config::{self, PROTOCOL_VERSIONS};
use crate::mcp::client_requests::{ClientRequests, defaults_for};
use crate::mcp::{Roots, SessionManager};

/// The name the server gets in the in-code config (and in rkmcp's messages).
const SERVER: &str = "conformance";

#[derive(Debug, clap::Args)]
pub struct ConformanceArgs {
    /// The scenario server's URL (the suite appends it as the last argument).
    pub url: String,
    /// The scenario (default: $MCP_CONFORMANCE_SCENARIO).
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO")]
    pub scenario: Option<String>,
    /// The protocol version to speak (default: $MCP_CONFORMANCE_PROTOCOL_VERSION, else `auto`).
    #[arg(long, env = "MCP_CONFORMANCE_PROTOCOL_VERSION")]
    pub protocol: Option<String>,
    /// Scenario data as JSON (default: $MCP_CONFORMANCE_CONTEXT).
    #[arg(long, env = "MCP_CONFORMANCE_CONTEXT")]
    pub context: Option<String>,
}

pub async fn run(_ctx: &Context, args: ConformanceArgs) -> anyhow::Result<ExitCode> {
    let scenario = args.scenario.unwrap_or_default();
    let protocol = match args.protocol.as_deref() {
        Some(v) if PROTOCOL_VERSIONS.contains(&v) => v.to_string(),
        Some(other) => {
            eprintln!("conformance: protocol `{other}` is not one rkmcp speaks; using auto");
            "auto".into()
        }
        None => "auto".into(),
    };
    eprintln!(
        "conformance: scenario `{scenario}`, protocol {protocol}, server {}",
        args.url
    );
    // Keys and JWTs from the context go into files (0600, in a private folder removed at
    // exit), which the config then names, as a user's config would.
    let secrets = tempfile::Builder::new()
        .prefix("rkmcp-conformance-")
        .tempdir()?;
    let config = server_config(
        &args.url,
        &protocol,
        &scenario,
        args.context.as_deref(),
        secrets.path(),
    )?;
    if scenario.starts_with("auth/") {
        // The suite's authorization servers approve at once; sign in without a person.
        crate::mcp::auth::approve_without_a_person();
    }
    let requests = Arc::new(Answering {
        roots: crate::mcp::config_roots(&config),
    });
    let manager = SessionManager::start_with(&config, None, requests).await;
    if let Some(failure) = manager.failures().first() {
        eprintln!("conformance: {}", failure.error);
        manager.shutdown().await;
        return Ok(ExitCode::from(1));
    }
    let Some(session) = manager.session(SERVER).cloned() else {
        manager.shutdown().await;
        return Ok(ExitCode::from(1));
    };
    eprintln!(
        "conformance: connected, protocol {}{}",
        session
            .protocol_version()
            .map(|v| v.to_string())
            .unwrap_or_default(),
        if session.is_stateless() {
            " (stateless)"
        } else {
            ""
        }
    );
    let catalog = session.catalog();
    // The scenario's own calls first, with its exact arguments; then every other tool.
    let mut calls = context_tool_calls(args.context.as_deref());
    for tool in catalog.tools.iter() {
        if !calls.iter().any(|(name, _)| *name == *tool.name) {
            let arguments = tool_arguments(&tool.name, &tool.input_schema, &catalog.tools);
            calls.push((tool.name.to_string(), arguments));
        }
    }
    for (name, arguments) in calls {
        match session.call_tool(&name, Some(arguments)).await {
            Ok(result) => eprintln!(
                "conformance: tool `{name}`: {}",
                if result.is_error == Some(true) {
                    "returned an error result"
                } else {
                    "ok"
                }
            ),
            Err(err) => eprintln!("conformance: {err}"),
        }
    }
    for resource in catalog.resources.iter() {
        if let Err(err) = session.read_resource(&resource.uri).await {
            eprintln!("conformance: {err}");
        }
    }
    for prompt in catalog.prompts.iter() {
        let arguments: Map<String, Value> = prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true))
            .map(|a| (a.name.clone(), Value::String("conformance".into())))
            .collect();
        if let Err(err) = session.get_prompt(&prompt.name, Some(arguments)).await {
            eprintln!("conformance: {err}");
        }
    }
    exercise_skills(&manager, &scenario).await;
    drop(session);
    manager.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Skills (SEP-2640) the way `rkmcp skills list` and `rkmcp skills show NAME` use them: list,
/// then load each skill, which reads its SKILL.md and verifies it. A `*-no-prefetch` scenario
/// checks that listing alone reads no skill file, so there the client lists and stops, as a
/// user who only ran `skills list` would.
async fn exercise_skills(manager: &SessionManager, scenario: &str) {
    let (listed, failures) = crate::mcp::skills::list_all(manager, Some(SERVER)).await;
    for failure in failures {
        eprintln!("conformance: {failure}");
    }
    for skill in &listed {
        eprintln!("conformance: skill `{}` at {}", skill.name(), skill.uri());
    }
    if scenario.ends_with("-no-prefetch") {
        return;
    }
    let Some(session) = manager.session(SERVER) else {
        return;
    };
    for skill in &listed {
        match crate::mcp::skills::load(session, skill).await {
            Ok(loaded) => eprintln!(
                "conformance: loaded skill `{}` ({} bytes, verified)",
                loaded.name,
                loaded.text.len()
            ),
            Err(err) => eprintln!("conformance: {err}"),
        }
    }
}

/// `toolCalls` from the scenario context: `[{"name": …, "arguments": {…}}, …]`.
fn context_tool_calls(context: Option<&str>) -> Vec<(String, Map<String, Value>)> {
    let Some(text) = context else {
        return Vec::new();
    };
    let context: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(err) => {
            eprintln!("conformance: MCP_CONFORMANCE_CONTEXT is not JSON ({err}); ignored");
            return Vec::new();
        }
    };
    context
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|call| {
            let name = call.get("name")?.as_str()?.to_string();
            let arguments = call
                .get("arguments")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            Some((name, arguments))
        })
        .collect()
}

/// One streamable HTTP server at `url`, as a config file would say it.
/// The client's CIMD URL the suite expects (its `auth/basic-cimd` scenario).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// `[servers.auth]` for an auth scenario, from its context, as a user would write it:
/// - a private key (`private_key_pem`): client credentials with `private_key_jwt`;
/// - a workload JWT (`valid_jwt`): the JWT bearer grant (workload identity federation);
/// - an IdP (`idp_token_endpoint`, `idp_id_token`): enterprise-managed authorization;
/// - client credentials for the `client-credentials` scenarios, a pre-registered client where
///   the context has one, and otherwise the client's metadata document URL.
///
/// Keys and JWTs are written to files in `secrets` and named by path.
fn auth_table(
    scenario: &str,
    context: Option<&str>,
    secrets: &Path,
) -> anyhow::Result<Option<toml::Table>> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context: Value = context
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or_default();
    let mut auth = toml::Table::new();
    let field = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_string);
    let file = |name: &str, contents: &str| -> anyhow::Result<toml::Value> {
        let path = write_private(secrets, name, contents)?;
        Ok(path.display().to_string().into())
    };
    if let Some(id) = field("client_id") {
        auth.insert("client_id".into(), id.into());
        if let Some(secret) = field("client_secret") {
            auth.insert("client_secret".into(), secret.into());
        }
        if scenario.contains("client-credentials") && field("client_secret").is_some() {
            auth.insert("grant".into(), "client_credentials".into());
        }
    }
    if let Some(pem) = field("private_key_pem") {
        auth.insert("grant".into(), "client_credentials".into());
        auth.insert("private_key_file".into(), file("client-key.pem", &pem)?);
        if let Some(alg) = field("signing_algorithm") {
            auth.insert("private_key_algorithm".into(), alg.into());
        }
    } else if let Some(jwt) = field("valid_jwt") {
        auth.insert("grant".into(), "jwt_bearer".into());
        auth.insert("assertion_file".into(), file("workload.jwt", &jwt)?);
    } else if let (Some(endpoint), Some(id_token)) =
        (field("idp_token_endpoint"), field("idp_id_token"))
    {
        auth.insert("grant".into(), "enterprise_managed".into());
        auth.insert("idp_token_endpoint".into(), endpoint.into());
        auth.insert("assertion_file".into(), file("id-token.jwt", &id_token)?);
        if let Some(id) = field("idp_client_id") {
            auth.insert("idp_client_id".into(), id.into());
        }
    }
    if !auth.contains_key("client_id") {
        auth.insert("client_metadata_url".into(), CLIENT_METADATA_URL.into());
    }
    Ok(Some(auth))
}

/// Writes a file only its owner can read (tempfile creates it 0600) and keeps it in `dir`.
fn write_private(dir: &Path, name: &str, contents: &str) -> anyhow::Result<std::path::PathBuf> {
    use std::io::Write;
    let mut file = tempfile::Builder::new().prefix(name).tempfile_in(dir)?;
    file.write_all(contents.as_bytes())?;
    let (_, path) = file.keep()?;
    Ok(path)
}

fn server_config(
    url: &str,
    protocol: &str,
    scenario: &str,
    context: Option<&str>,
    secrets: &Path,
) -> anyhow::Result<config::Config> {
    let mut server = toml::Table::new();
    server.insert("name".into(), SERVER.into());
    server.insert("url".into(), url.into());
    server.insert("transport".into(), "http".into());
    server.insert("protocol".into(), protocol.into());
    // The suite's own timeout is 30 s per scenario; fail inside it with a message.
    server.insert("connect_timeout".into(), "25s".into());
    server.insert("request_timeout".into(), "20s".into());
    if let Some(auth) = auth_table(scenario, context, secrets)? {
        server.insert("auth".into(), toml::Value::Table(auth));
    }
    let mut root = toml::Table::new();
    root.insert(
        "servers".into(),
        toml::Value::Array(vec![toml::Value::Table(server)]),
    );
    let text = toml::to_string(&root)?;
    Ok(config::load_str(Path::new("conformance.toml"), &text)?)
}

/// Arguments for a tool: the scenario's own where it needs them, else one value per required
/// property made from the schema.
fn tool_arguments(
    name: &str,
    schema: &Map<String, Value>,
    tools: &[rmcp::model::Tool],
) -> Map<String, Value> {
    // json-schema-2020-12-preservation: echo the focal tool's schema back verbatim.
    if name == "json_schema_echo"
        && let Some(focal) = tools.iter().find(|t| t.name != name)
    {
        let mut args = Map::new();
        args.insert(
            "schema".into(),
            Value::Object(focal.input_schema.as_ref().clone()),
        );
        return args;
    }
    match example(&Value::Object(schema.clone())) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A value a schema accepts: its default, const or first enum value, else one by type (objects
/// get their required properties).
pub fn example(schema: &Value) -> Value {
    if let Some(v) = schema.get("default").or_else(|| schema.get("const")) {
        return v.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // A list of types: the first that is not null.
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let empty = Map::new();
            let properties = schema
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            Value::Object(
                properties
                    .iter()
                    .filter(|(name, _)| required.contains(&name.as_str()))
                    .map(|(name, prop)| (name.clone(), example(prop)))
                    .collect(),
            )
        }
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "array" => json!([]),
        "null" => Value::Null,
        _ => match schema.get("format").and_then(Value::as_str) {
            Some("email") => json!("conformance@example.com"),
            Some("uri") => json!("https://example.com/"),
            Some("date") => json!("2025-11-25"),
            Some("date-time") => json!("2025-11-25T00:00:00Z"),
            _ => json!("conformance"),
        },
    }
}

/// Answers every server request positively, so the suite sees the whole exchange.
struct Answering {
    roots: Roots,
}

#[async_trait::async_trait]
impl ClientRequests for Answering {
    async fn create_message(
        &self,
        server: &str,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        eprintln!("conformance: sampling request from `{server}`: answered with a fixed text");
        serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "rkmcp conformance client"},
            "model": "rkmcp-conformance",
            "stopReason": "endTurn",
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        eprintln!("conformance: elicitation from `{server}`: accepted");
        Ok(match params {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
                // The form's defaults (SEP-1034), and a made-up value for required fields
                // without one.
                let mut content = match defaults_for(&schema) {
                    Ok(content) => content,
                    Err(_) => Map::new(),
                };
                if let Value::Object(required) = example(&schema) {
                    for (name, value) in required {
                        content.entry(name).or_insert(value);
                    }
                }
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            _ => ElicitResult::new(ElicitationAction::Accept),
        })
    }

    fn roots(&self) -> Vec<Root> {
        self.roots.to_mcp()
    }

    fn roots_handle(&self) -> Option<Roots> {
        Some(self.roots.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "s": {"type": "string", "enum": ["x", "y"]},
                "d": {"type": "string", "default": "dflt"},
                "o": {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]},
                "skip": {"type": "string"}
            },
            "required": ["a", "s", "d", "o"]
        });
        assert_eq!(
            example(&schema),
            json!({"a": 1, "s": "x", "d": "dflt", "o": {"b": true}})
        );
    }
}
