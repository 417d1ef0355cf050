//! MCP skills, client side: the `io.modelcontextprotocol/skills` extension (SEP-2640).
//!
//! A server that declares the extension lists its skills with `skills/list`: per skill the URI
//! of its `SKILL.md`, the frontmatter of that file, and a manifest of its files with the
//! `sha256:` digest and byte size of each (or `"dynamic"` when the files are generated). The
//! files themselves are ordinary resources, read with `resources/read`.
//!
//! Two rules of the extension shape this module:
//! - **No prefetch.** Listing reads no file; nothing here runs on connect. A skill's files are
//!   read only when someone loads it ([`load`]) or asks for one of its files ([`read_file`]).
//! - **Verify before use.** A file is checked against its manifest entry (size first, then
//!   digest), and a `SKILL.md` also has its YAML frontmatter parsed and compared field by field
//!   with the listing's frontmatter. Any difference is a [`SkillError::Refused`] naming the skill,
//!   the file and what differs; the content is dropped, never handed on.
use rmcp::model::{Skill, SkillResource, SkillResources};
use serde_json::{Map, Value};

use super::{Session, SessionError, SessionManager};

/// The extension's identifier, declared in the client's capabilities.
pub const SKILLS_EXTENSION: &str = rmcp::model::SKILLS_EXTENSION_ID;

/// A skill as one server lists it.
#[derive(Debug, Clone)]
pub struct ListedSkill {
    pub server: String,
    pub skill: Skill,
}

impl ListedSkill {
    pub fn name(&self) -> &str {
        self.skill.name()
    }

    pub fn description(&self) -> &str {
        &self.skill.frontmatter.description
    }

    pub fn uri(&self) -> &str {
        &self.skill.uri
    }

    /// The listing as JSON for `--json`: the entry as the server sent it, plus the server.
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(&self.skill).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("name".into(), Value::String(self.name().to_string()));
            map.insert("server".into(), Value::String(self.server.clone()));
        }
        value
    }
}

/// How a loaded file was checked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Verification {
    /// Size and digest matched the manifest entry.
    Manifest { digest: String, size: u64 },
    /// The skill lists its files as `"dynamic"`: there is no digest or size to check against.
    Dynamic,
}

/// A skill's `SKILL.md`, verified.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadedSkill {
    pub server: String,
    pub name: String,
    pub uri: String,
    /// The whole file, frontmatter included.
    pub text: String,
    /// The file's frontmatter (equal to the listing's).
    pub frontmatter: Map<String, Value>,
    pub verification: Verification,
}

/// One supporting file of a skill, verified.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SkillFile {
    pub server: String,
    pub skill: String,
    pub uri: String,
    pub text: String,
    pub verification: Verification,
}

#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("no skill named `{name}`{hint} (listed: {listed})")]
    NotFound {
        name: String,
        hint: String,
        listed: String,
    },
    #[error("skill `{name}` is served by several servers ({servers}); name one as SERVER/{name}")]
    Ambiguous { name: String, servers: String },
    #[error(transparent)]
    Request(#[from] SessionError),
    #[error(
        "refused skill `{skill}` from server `{server}`: {file} {reason}; its content was not used"
    )]
    Refused {
        skill: String,
        server: String,
        file: String,
        reason: String,
    },
}

/// `skills/list` (every page) of one session; an empty list when the server does not declare
/// the extension, so callers can ask every server alike.
pub async fn list_session(session: &Session) -> Result<Vec<Skill>, SessionError> {
    if !declares_skills(session) {
        return Ok(Vec::new());
    }
    let peer = session.peer();
    session
        .timed(
            "listing skills (skills/list)".into(),
            peer.list_all_skills(),
        )
        .await
}

/// Whether the server declared the skills extension.
pub fn declares_skills(session: &Session) -> bool {
    session
        .server_info()
        .is_some_and(|info| info.capabilities.supports_skills())
}

/// The skills of every running server (or of `only`), with the servers whose listing failed.
pub async fn list_all(
    manager: &SessionManager,
    only: Option<&str>,
) -> (Vec<ListedSkill>, Vec<SessionError>) {
    let mut listed = Vec::new();
    let mut failures = Vec::new();
    for session in manager.sessions() {
        if only.is_some_and(|name| name != session.name()) {
            continue;
        }
        match list_session(session).await {
            Ok(skills) => listed.extend(skills.into_iter().map(|skill| ListedSkill {
                server: session.name().to_string(),
                skill,
            })),
            Err(err) => failures.push(err),
        }
    }
    (listed, failures)
}

/// The skill called `wanted` (`NAME` or `SERVER/NAME`) among `listed`.
pub fn find<'a>(listed: &'a [ListedSkill], wanted: &str) -> Result<&'a ListedSkill, SkillError> {
    let (server, name) = match wanted.split_once('/') {
        Some((server, name)) => (Some(server), name),
        None => (None, wanted),
    };
    let matches: Vec<&ListedSkill> = listed
        .iter()
        .filter(|s| s.name() == name && server.is_none_or(|server| s.server == server))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => {
            let names: Vec<&str> = listed.iter().map(ListedSkill::name).collect();
            Err(SkillError::NotFound {
                name: wanted.to_string(),
                hint: rkmcp_config::nearest(name, &names)
                    .map(|n| format!(" — did you mean `{n}`?"))
                    .unwrap_or_default(),
                listed: if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                },
            })
        }
        several => Err(SkillError::Ambiguous {
            name: name.to_string(),
            servers: several
                .iter()
                .map(|s| s.server.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Loads a skill: reads its `SKILL.md` and verifies it against the listing (size, digest,
/// frontmatter). Only verified content is returned.
pub async fn load(session: &Session, listed: &ListedSkill) -> Result<LoadedSkill, SkillError> {
    let skill = &listed.skill;
    let refuse = |reason: String| refused(listed, &skill.uri, reason);
    if let Err(err) = skill.validate() {
        return Err(refuse(format!(
            "cannot be checked: its listing is malformed ({err})"
        )));
    }
    let entry = manifest_entry(skill, &skill.uri);
    if matches!(skill.resources, SkillResources::Files(_)) && entry.is_none() {
        return Err(refuse("is not in the skill's own file list".into()));
    }
    let bytes = read_bytes(session, &skill.uri)
        .await
        .map_err(|err| refuse_read(listed, &skill.uri, err))?;
    let verification = verify_bytes(entry, &bytes).map_err(refuse)?;
    let text = String::from_utf8(bytes).map_err(|_| refuse("is not UTF-8 text".into()))?;
    let frontmatter = parse_frontmatter(&text).map_err(refuse)?;
    let listed_frontmatter = match serde_json::to_value(&skill.frontmatter) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let differences = frontmatter_differences(&frontmatter, &listed_frontmatter);
    if !differences.is_empty() {
        return Err(refuse(format!(
            "has frontmatter that differs from the skill's listing: {}",
            differences.join("; ")
        )));
    }
    Ok(LoadedSkill {
        server: listed.server.clone(),
        name: listed.name().to_string(),
        uri: skill.uri.clone(),
        text,
        frontmatter,
        verification,
    })
}

/// Reads one supporting file of a skill — `path` relative to the skill's directory
/// (`references/FORMS.md`) or its full URI — verified against the manifest. A file the
/// manifest does not list is refused unread.
pub async fn read_file(
    session: &Session,
    listed: &ListedSkill,
    path: &str,
) -> Result<SkillFile, SkillError> {
    let skill = &listed.skill;
    let root = skill.uri.strip_suffix(rmcp::model::SKILL_MD).unwrap_or("");
    let uri = if path.contains("://") {
        path.to_string()
    } else {
        format!("{root}{}", path.trim_start_matches('/'))
    };
    let entry = manifest_entry(skill, &uri);
    if let SkillResources::Files(files) = &skill.resources
        && entry.is_none()
    {
        let listed_files: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
        return Err(refused(
            listed,
            &uri,
            format!(
                "is not in the skill's file list ({}), so it cannot be verified",
                listed_files.join(", ")
            ),
        ));
    }
    if !uri.starts_with(root) || root.is_empty() {
        return Err(refused(
            listed,
            &uri,
            "is outside the skill's directory".into(),
        ));
    }
    let bytes = read_bytes(session, &uri)
        .await
        .map_err(|err| refuse_read(listed, &uri, err))?;
    let verification = verify_bytes(entry, &bytes).map_err(|r| refused(listed, &uri, r))?;
    let text =
        String::from_utf8(bytes).map_err(|_| refused(listed, &uri, "is not UTF-8 text".into()))?;
    Ok(SkillFile {
        server: listed.server.clone(),
        skill: listed.name().to_string(),
        uri,
        text,
        verification,
    })
}

fn refused(listed: &ListedSkill, file: &str, reason: String) -> SkillError {
    SkillError::Refused {
        skill: listed.name().to_string(),
        server: listed.server.clone(),
        file: file.to_string(),
        reason,
    }
}

fn refuse_read(listed: &ListedSkill, file: &str, err: ReadError) -> SkillError {
    match err {
        ReadError::Session(err) => SkillError::Request(err),
        ReadError::Content(reason) => refused(listed, file, reason),
    }
}

fn manifest_entry<'a>(skill: &'a Skill, uri: &str) -> Option<&'a SkillResource> {
    match &skill.resources {
        SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
        _ => None,
    }
}

/// Size, then digest (a wrong length is reported without hashing); `None` for a dynamic skill.
fn verify_bytes(entry: Option<&SkillResource>, bytes: &[u8]) -> Result<Verification, String> {
    let Some(entry) = entry else {
        return Ok(Verification::Dynamic);
    };
    let size = bytes.len() as u64;
    if size != entry.size {
        return Err(format!(
            "is {size} bytes, the skill's listing says {} bytes",
            entry.size
        ));
    }
    let digest = rmcp::model::sha256_digest(bytes);
    if digest != entry.digest {
        return Err(format!(
            "has digest {digest}, the skill's listing says {}",
            entry.digest
        ));
    }
    Ok(Verification::Manifest {
        digest,
        size: entry.size,
    })
}

enum ReadError {
    Session(SessionError),
    Content(String),
}

/// The bytes of the resource at `uri`: its text as UTF-8, or its blob decoded.
async fn read_bytes(session: &Session, uri: &str) -> Result<Vec<u8>, ReadError> {
    use base64::Engine as _;
    let result = session
        .read_resource(uri)
        .await
        .map_err(ReadError::Session)?;
    let contents = serde_json::to_value(&result.contents).unwrap_or(Value::Null);
    let items = contents.as_array().cloned().unwrap_or_default();
    // The item for this URI; a single item without one is taken as it (some servers echo
    // a normalised URI).
    let item = items
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or(match items.as_slice() {
            [only] => Some(only),
            _ => None,
        })
        .ok_or_else(|| {
            ReadError::Content(format!(
                "was not in the server's answer to resources/read ({} content items)",
                items.len()
            ))
        })?;
    if let Some(text) = item.get("text").and_then(Value::as_str) {
        return Ok(text.as_bytes().to_vec());
    }
    if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        return base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| ReadError::Content(format!("came as a blob that is not base64 ({e})")));
    }
    Err(ReadError::Content(
        "came with neither text nor blob content".into(),
    ))
}

/// The YAML frontmatter at the start of a `SKILL.md`: the block between a first line `---`
/// and the next line `---`, parsed with a full YAML parser into a mapping.
pub fn parse_frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = || "does not begin with a YAML frontmatter block (`---` … `---`)".to_string();
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(missing)?;
    let mut yaml_len = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r', ' ', '\t']) == "---" {
            yaml_len = Some(offset);
            break;
        }
        offset += line.len();
    }
    let yaml = &rest[..yaml_len.ok_or_else(missing)?];
    let value: Value = serde_yaml_ng::from_str(yaml)
        .map_err(|e| format!("has frontmatter that is not valid YAML ({e})"))?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(format!(
            "has frontmatter that is not a mapping of fields (it is {})",
            kind_of(&other)
        )),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Field-by-field differences between the file's frontmatter and the listing's, one line per
/// field (a field missing on one side counts as null there), in field order.
pub fn frontmatter_differences(
    file: &Map<String, Value>,
    listing: &Map<String, Value>,
) -> Vec<String> {
    let mut keys: Vec<&String> = file.keys().chain(listing.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let in_file = file.get(key).unwrap_or(&NULL);
            let in_listing = listing.get(key).unwrap_or(&NULL);
            (!same_value(in_file, in_listing)).then(|| {
                format!(
                    "`{key}` is {} in the file but {} in the listing",
                    shown(file.get(key)),
                    shown(listing.get(key))
                )
            })
        })
        .collect()
}

static NULL: Value = Value::Null;

/// Equal as JSON values, with numbers compared by value (YAML `1.0` and JSON `1` are one
/// number).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

fn shown(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "absent".into();
    };
    let text = super::client_requests::terminal_safe(&value.to_string());
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(119).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frontmatter_is_read_up_to_the_closing_line() {
        let text =
            "---\nname: pdf\ndescription: \"Fill: forms\"\nmetadata:\n  v: 1.0\n---\nBody\n---\n";
        let map = parse_frontmatter(text).unwrap();
        assert_eq!(
            Value::Object(map),
            json!({"name": "pdf", "description": "Fill: forms", "metadata": {"v": 1.0}})
        );
        assert!(parse_frontmatter("name: x\n").is_err());
        assert!(parse_frontmatter("---\nname: [x\n---\n").is_err());
        assert!(parse_frontmatter("---\n- a\n---\n").is_err());
        assert!(
            parse_frontmatter("---\nname: x\n").is_err(),
            "unclosed block"
        );
    }

    #[test]
    fn differences_name_each_field() {
        let file = json!({"name": "pdf", "description": "Exfiltrate", "v": 1.0});
        let listing = json!({"name": "pdf", "description": "Extract", "v": 1, "extra": true});
        let diffs =
            frontmatter_differences(file.as_object().unwrap(), listing.as_object().unwrap());
        assert_eq!(
            diffs,
            vec![
                "`description` is \"Exfiltrate\" in the file but \"Extract\" in the listing",
                "`extra` is absent in the file but true in the listing",
            ]
        );
    }

    #[test]
    fn size_is_checked_before_the_digest() {
        let entry = SkillResource::from_bytes("skill://a/SKILL.md", b"hello");
        assert!(verify_bytes(Some(&entry), b"hello").is_ok());
        assert!(
            verify_bytes(Some(&entry), b"hello!")
                .unwrap_err()
                .contains("6 bytes")
        );
        assert!(
            verify_bytes(Some(&entry), b"jello")
                .unwrap_err()
                .contains("digest")
        );
        assert_eq!(verify_bytes(None, b"x"), Ok(Verification::Dynamic));
    }
}
