//! The tool-calling evaluation's data (tests/eval): toolsets, parts, questions, the servers each
//! toolset runs, and the validation `tool_eval --check` and the `eval_data` integration test run
//! without a model. The bench itself is tests/benches/tool_eval.
//!
//! tests/eval/toolsets.toml splits the set once, by tool and domain, into a **tuning** part
//! (settings are chosen on it) and a **held-out** part (reported, never used for choosing); no
//! server, hence no tool, is in both. A toolset is the servers one group of questions runs with
//! (its own domain plus a fixed set of others as distractors, ~30–35 tools).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rkmcp::mcp::SessionManager;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{deps, everything_cmd, filesystem_cmd, load_config, repo, stdio_entry, time_server};

/// Servers that are real programs (the original four); every other server name `N` is
/// tests/servers/schema_tools.py serving tests/eval/tools/N.json.
pub const BUILTIN_SERVERS: [&str; 4] = ["time", "everything", "files", "tools"];

/// Exposed tool name (`server__tool`) → its input schema, per server.
pub type Catalog = BTreeMap<String, BTreeMap<String, Value>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Tuning,
    Heldout,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Part::Tuning => "tuning",
            Part::Heldout => "heldout",
        }
    }

    fn parse(s: &str) -> Option<Part> {
        match s {
            "tuning" => Some(Part::Tuning),
            "heldout" => Some(Part::Heldout),
            _ => None,
        }
    }

    /// `--part tuning|heldout|all`.
    pub fn parse_selection(s: &str) -> Result<Vec<Part>, String> {
        match s {
            "all" => Ok(vec![Part::Tuning, Part::Heldout]),
            other => Part::parse(other)
                .map(|p| vec![p])
                .ok_or_else(|| format!("unknown part `{other}` (tuning, heldout, all)")),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsetsFile {
    toolsets: Vec<Toolset>,
    #[serde(default)]
    distractor_only: Vec<String>,
}

/// One group of questions and the servers it runs with.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolset {
    pub name: String,
    /// `tuning` or `heldout`.
    pub part: String,
    /// Question files under tests/eval/questions.
    pub questions: Vec<String>,
    /// Server names: one of [`BUILTIN_SERVERS`] or a schema file's stem.
    pub servers: Vec<String>,
}

impl Toolset {
    pub fn part(&self) -> Option<Part> {
        Part::parse(&self.part)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionFile {
    questions: Vec<Question>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub question: String,
    pub expect_tool: String,
    #[serde(default)]
    pub also_ok: Vec<String>,
    #[serde(default)]
    pub expect_args: Map<String, Value>,
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Question {
    pub fn expects_none(&self) -> bool {
        self.expect_tool == "none"
    }

    /// `{dir}` replaced by the files server's directory, in the question and expected values.
    pub fn with_dir(&self, dir: &str) -> Question {
        let mut q = self.clone();
        q.question = q.question.replace("{dir}", dir);
        for v in q.expect_args.values_mut() {
            replace_in(v, dir);
        }
        q
    }
}

fn replace_in(v: &mut Value, dir: &str) {
    match v {
        Value::String(s) => *s = s.replace("{dir}", dir),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_in(x, dir)),
        Value::Object(m) => m.values_mut().for_each(|x| replace_in(x, dir)),
        _ => {}
    }
}

/// A question with where it comes from.
#[derive(Debug, Clone)]
pub struct EvalQuestion {
    pub part: Part,
    pub toolset: String,
    pub file: String,
    pub question: Question,
}

/// The whole set as loaded: toolsets in file order, questions in toolset then file order.
#[derive(Debug, Clone)]
pub struct EvalSet {
    /// The folder it was loaded from (tests/eval).
    pub dir: PathBuf,
    pub toolsets: Vec<Toolset>,
    pub distractor_only: Vec<String>,
    pub questions: Vec<EvalQuestion>,
    /// Files that could not be read or parsed, toolsets with an unknown part.
    pub load_problems: Vec<String>,
}

impl EvalSet {
    /// The questions of one part, in order.
    pub fn part_questions(&self, part: Part) -> Vec<&EvalQuestion> {
        self.questions.iter().filter(|q| q.part == part).collect()
    }

    pub fn toolset(&self, name: &str) -> Option<&Toolset> {
        self.toolsets.iter().find(|t| t.name == name)
    }

    /// Every server any toolset names, once, in first-use order.
    pub fn all_servers(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.toolsets.iter().flat_map(|t| &t.servers) {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }
}

pub fn eval_dir() -> PathBuf {
    repo().join("tests/eval")
}

/// Loads tests/eval/toolsets.toml and every question file it names. Panics only when
/// toolsets.toml itself cannot be read or parsed; other problems are in `load_problems`.
pub fn load() -> EvalSet {
    load_from(&eval_dir())
}

pub fn load_from(dir: &Path) -> EvalSet {
    let path = dir.join("toolsets.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let file: ToolsetsFile =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut set = EvalSet {
        dir: dir.to_path_buf(),
        toolsets: file.toolsets,
        distractor_only: file.distractor_only,
        questions: Vec::new(),
        load_problems: Vec::new(),
    };
    for ts in &set.toolsets {
        let Some(part) = ts.part() else {
            set.load_problems.push(format!(
                "toolset `{}`: unknown part `{}` (tuning, heldout)",
                ts.name, ts.part
            ));
            continue;
        };
        for name in &ts.questions {
            let qpath = dir.join("questions").join(name);
            let parsed = std::fs::read_to_string(&qpath)
                .map_err(|e| e.to_string())
                .and_then(|t| toml::from_str::<QuestionFile>(&t).map_err(|e| e.to_string()));
            match parsed {
                Ok(f) => set
                    .questions
                    .extend(f.questions.into_iter().map(|q| EvalQuestion {
                        part,
                        toolset: ts.name.clone(),
                        file: name.clone(),
                        question: q,
                    })),
                Err(e) => set.load_problems.push(format!("{}: {e}", qpath.display())),
            }
        }
    }
    set
}

/// The schema file of a non-builtin server.
pub fn schema_file(server: &str) -> PathBuf {
    eval_dir().join("tools").join(format!("{server}.json"))
}

/// The files server's directory: a few small files to read, list and search.
pub fn fill_files(dir: &Path) {
    let files = [
        (
            "notes.txt",
            "Meeting notes, Monday:\n- ship the tool evaluation\n- buy more coffee\n",
        ),
        (
            "todo.md",
            "# TODO\n\n- [ ] write the report\n- [x] set up the servers\n",
        ),
        (
            "config.json",
            "{\n  \"theme\": \"dark\",\n  \"language\": \"en\",\n  \"autosave\": true\n}\n",
        ),
        (
            "data/report.csv",
            "month,sales\nJanuary,120\nFebruary,135\nMarch,160\n",
        ),
        (
            "data/readme.md",
            "Quarterly sales figures, one row per month.\n",
        ),
    ];
    for (name, text) in files {
        crate::write(dir, name, text);
    }
}

/// `[[servers]]` entries for `servers` (builtin or schema-file servers).
pub fn servers_toml(servers: &[String], files_dir: &Path) -> String {
    let python = deps().join("venv/bin/python");
    let mut toml = String::new();
    for name in servers {
        match name.as_str() {
            "time" => toml.push_str(&stdio_entry(
                "time",
                &time_server().display().to_string(),
                &[],
                "",
            )),
            "everything" => {
                let (cmd, args) = everything_cmd();
                toml.push_str(&stdio_entry(
                    "everything",
                    &cmd,
                    &args,
                    "allow = [\"echo\", \"get-sum\"]",
                ));
            }
            "files" => {
                let (cmd, mut args) = filesystem_cmd();
                args.push(files_dir.display().to_string());
                toml.push_str(&stdio_entry(
                    "files",
                    &cmd,
                    &args,
                    "allow = [\"read_text_file\", \"list_directory\", \"search_files\"]",
                ));
            }
            "tools" => toml.push_str(&stdio_entry(
                "tools",
                &python.display().to_string(),
                &[repo()
                    .join("tests/servers/eval_tools.py")
                    .display()
                    .to_string()],
                "",
            )),
            domain => toml.push_str(&stdio_entry(
                domain,
                &python.display().to_string(),
                &[
                    repo()
                        .join("tests/servers/schema_tools.py")
                        .display()
                        .to_string(),
                    schema_file(domain).display().to_string(),
                ],
                "",
            )),
        }
    }
    toml
}

/// Starts `servers` (all at once) with their config in `config_dir`; panics if one fails.
pub async fn start_servers(
    config_dir: &Path,
    files_dir: &Path,
    servers: &[String],
) -> SessionManager {
    let python = deps().join("venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup first",
        python.display()
    );
    let config = load_config(config_dir, &servers_toml(servers, files_dir));
    let sessions = SessionManager::start(&config, None).await;
    assert!(
        sessions.failures().is_empty(),
        "servers failed to start: {:?}",
        sessions.failures()
    );
    sessions
}

/// The tools of running servers, per server.
pub fn catalog_of(sessions: &SessionManager) -> Catalog {
    let (exposed, _) = sessions.tools();
    let mut out = Catalog::new();
    for t in exposed {
        out.entry(t.server.clone()).or_default().insert(
            t.name.clone(),
            Value::Object((*t.tool.input_schema).clone()),
        );
    }
    out
}

/// Starts every server the set names once (a few at a time: twenty Python servers starting
/// together on a loaded machine miss the 30 s start-up limit), lists their tools, stops them.
pub async fn live_catalog(set: &EvalSet) -> Catalog {
    let config_dir = tempfile::tempdir().expect("a temporary directory");
    let files_dir = tempfile::tempdir().expect("a temporary directory");
    fill_files(files_dir.path());
    let mut catalog = Catalog::new();
    for (i, batch) in set.all_servers().chunks(4).enumerate() {
        let dir = config_dir.path().join(format!("batch{i}"));
        let sessions = start_servers(&dir, files_dir.path(), batch).await;
        catalog.extend(catalog_of(&sessions));
        sessions.shutdown().await;
    }
    catalog
}

/// The tools of a schema file, under their exposed names (`server__tool`), as
/// tests/servers/schema_tools.py serves them.
pub fn schema_file_tools(server: &str) -> Result<BTreeMap<String, Value>, String> {
    let path = schema_file(server);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let defs: Vec<Value> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for d in defs {
        let name = d
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{}: a tool without a name", path.display()))?;
        let schema = d
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
        if out.insert(format!("{server}__{name}"), schema).is_some() {
            return Err(format!(
                "{}: tool `{name}` is defined twice",
                path.display()
            ));
        }
    }
    Ok(out)
}

/// The cheap catalog: the builtin servers started (four processes), the schema-file domains
/// read from their files (what schema_tools.py would list; `live_catalog` starts them all).
pub async fn catalog_from_files(set: &EvalSet) -> (Catalog, Vec<String>) {
    let builtin: Vec<String> = set
        .all_servers()
        .into_iter()
        .filter(|s| BUILTIN_SERVERS.contains(&s.as_str()))
        .collect();
    let mut catalog = Catalog::new();
    if !builtin.is_empty() {
        let config_dir = tempfile::tempdir().expect("a temporary directory");
        let files_dir = tempfile::tempdir().expect("a temporary directory");
        fill_files(files_dir.path());
        let sessions = start_servers(config_dir.path(), files_dir.path(), &builtin).await;
        catalog = catalog_of(&sessions);
        sessions.shutdown().await;
    }
    let mut problems = Vec::new();
    for server in set.all_servers() {
        if BUILTIN_SERVERS.contains(&server.as_str()) || !schema_file(&server).exists() {
            continue;
        }
        match schema_file_tools(&server) {
            Ok(tools) => {
                catalog.insert(server, tools);
            }
            Err(e) => problems.push(e),
        }
    }
    (catalog, problems)
}

// ------------------------------------------------------------------------------------------------
// Validation (`tool_eval --check`, the eval_data integration test)

/// Every problem of the set against the servers' tools; empty when the set is valid.
///
/// - toolsets: known parts, unique names, existing servers, every question file in one toolset,
///   no server (so no tool) in both parts;
/// - questions: `expect_tool` and `also_ok` are tools of the question's toolset (or "none" with
///   the tag "none" and no arguments), `expect_args` keys are properties of the tool's schema and
///   their values have its types and enums, no question twice;
/// - coverage: every tool of a part is expected by a question of that part or listed in
///   `distractor_only` (and nothing listed there is expected or unknown).
pub fn check(set: &EvalSet, catalog: &Catalog) -> Vec<String> {
    let mut problems = set.load_problems.clone();

    // Toolsets.
    let mut names = BTreeSet::new();
    let mut file_owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut server_parts: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ts in &set.toolsets {
        if !names.insert(ts.name.as_str()) {
            problems.push(format!("toolset `{}` is defined twice", ts.name));
        }
        for f in &ts.questions {
            if let Some(other) = file_owner.insert(f, &ts.name) {
                problems.push(format!(
                    "question file {f} is in toolsets `{other}` and `{}`",
                    ts.name
                ));
            }
        }
        let mut seen = BTreeSet::new();
        for s in &ts.servers {
            if !seen.insert(s) {
                problems.push(format!("toolset `{}` names server `{s}` twice", ts.name));
            }
            server_parts.entry(s).or_default().insert(ts.part.as_str());
            if !BUILTIN_SERVERS.contains(&s.as_str()) && !schema_file(s).exists() {
                problems.push(format!(
                    "toolset `{}`: server `{s}` is neither builtin nor {}",
                    ts.name,
                    schema_file(s).display()
                ));
            } else if !catalog.contains_key(s) {
                problems.push(format!(
                    "toolset `{}`: server `{s}` lists no tools",
                    ts.name
                ));
            }
        }
        if ts.questions.is_empty() {
            problems.push(format!("toolset `{}` has no question files", ts.name));
        }
    }
    if let Ok(entries) = std::fs::read_dir(set.dir.join("questions")) {
        let mut files: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        files.sort();
        for f in files {
            if !file_owner.contains_key(f.as_str()) {
                problems.push(format!("questions/{f} is in no toolset"));
            }
        }
    }
    for (server, parts) in &server_parts {
        if parts.len() > 1 {
            problems.push(format!(
                "server `{server}` is in both parts ({}): held-out tools must not be tuned on",
                parts.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }

    // Questions.
    let toolset_tools = |name: &str| -> BTreeMap<&str, &Value> {
        set.toolset(name)
            .map(|ts| {
                ts.servers
                    .iter()
                    .filter_map(|s| catalog.get(s))
                    .flat_map(|tools| tools.iter().map(|(k, v)| (k.as_str(), v)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    let mut used: BTreeMap<Part, BTreeSet<&str>> = BTreeMap::new();
    for eq in &set.questions {
        let q = &eq.question;
        let at = format!("{} ({:?})", eq.file, q.question);
        let key: String = q
            .question
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(first) = texts.insert(key, eq.file.clone()) {
            problems.push(format!("{at}: the same question is in {first}"));
        }
        if q.question.trim().is_empty() {
            problems.push(format!("{at}: empty question"));
        }
        let tools = toolset_tools(&eq.toolset);
        let none_tag = q.tags.iter().any(|t| t == "none");
        if q.expects_none() {
            if !none_tag {
                problems.push(format!("{at}: expects no tool but is not tagged \"none\""));
            }
            if !q.expect_args.is_empty() || !q.also_ok.is_empty() {
                problems.push(format!("{at}: expects no tool but has expect_args/also_ok"));
            }
            if q.tags.iter().any(|t| t == "named") {
                problems.push(format!("{at}: tagged \"named\" but expects no tool"));
            }
            continue;
        }
        if none_tag {
            problems.push(format!(
                "{at}: tagged \"none\" but expects {}",
                q.expect_tool
            ));
        }
        for name in q.also_ok.iter() {
            if !tools.contains_key(name.as_str()) {
                problems.push(format!(
                    "{at}: also_ok `{name}` is not a tool of toolset `{}`",
                    eq.toolset
                ));
            }
            used.entry(eq.part).or_default().insert(name);
        }
        let Some(schema) = tools.get(q.expect_tool.as_str()) else {
            problems.push(format!(
                "{at}: expect_tool `{}` is not a tool of toolset `{}`",
                q.expect_tool, eq.toolset
            ));
            continue;
        };
        used.entry(eq.part).or_default().insert(&q.expect_tool);
        let props = schema.get("properties").and_then(Value::as_object);
        for (key, expected) in &q.expect_args {
            match props.and_then(|p| p.get(key)) {
                None => problems.push(format!(
                    "{at}: expect_args `{key}` is not a parameter of {}",
                    q.expect_tool
                )),
                Some(prop) => {
                    let alternatives: Vec<&Value> =
                        match expected.get("any").and_then(Value::as_array) {
                            Some(any) => any.iter().collect(),
                            None => vec![expected],
                        };
                    for value in alternatives {
                        if let Err(e) = check_value(prop, value) {
                            problems.push(format!("{at}: expect_args `{key}`: {e}"));
                        }
                    }
                }
            }
        }
    }

    // Coverage per part.
    let listed: BTreeSet<&str> = set.distractor_only.iter().map(String::as_str).collect();
    let mut known: BTreeSet<&str> = BTreeSet::new();
    for part in [Part::Tuning, Part::Heldout] {
        let servers: BTreeSet<&str> = set
            .toolsets
            .iter()
            .filter(|t| t.part() == Some(part))
            .flat_map(|t| t.servers.iter().map(String::as_str))
            .collect();
        let used = used.remove(&part).unwrap_or_default();
        for server in servers {
            for tool in catalog.get(server).into_iter().flat_map(|t| t.keys()) {
                known.insert(tool);
                let is_used = used.contains(tool.as_str());
                if !is_used && !listed.contains(tool.as_str()) {
                    problems.push(format!(
                        "{} part: no question expects `{tool}` and it is not in distractor_only",
                        part.name()
                    ));
                }
                if is_used && listed.contains(tool.as_str()) {
                    problems.push(format!(
                        "distractor_only lists `{tool}`, which a {} question expects",
                        part.name()
                    ));
                }
            }
        }
    }
    for tool in &listed {
        if !known.contains(tool) {
            problems.push(format!(
                "distractor_only lists `{tool}`, which no server has"
            ));
        }
    }
    problems
}

/// Counts for the check's summary: (questions, tool questions, none questions, tools) per part.
pub fn counts(set: &EvalSet, catalog: &Catalog) -> BTreeMap<Part, (usize, usize, usize, usize)> {
    let mut out = BTreeMap::new();
    for part in [Part::Tuning, Part::Heldout] {
        let qs = set.part_questions(part);
        let none = qs.iter().filter(|q| q.question.expects_none()).count();
        let servers: BTreeSet<&str> = set
            .toolsets
            .iter()
            .filter(|t| t.part() == Some(part))
            .flat_map(|t| t.servers.iter().map(String::as_str))
            .collect();
        let tools: usize = servers
            .iter()
            .filter_map(|s| catalog.get(*s))
            .map(BTreeMap::len)
            .sum();
        out.insert(part, (qs.len(), qs.len() - none, none, tools));
    }
    out
}

// ------------------------------------------------------------------------------------------------
// A minimal JSON-Schema check (the bench's `right+valid`, and expected values above)

/// Required keys, property types, enums, no unknown keys when `additionalProperties` is false.
pub fn schema_check(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(args) = args.as_object() else {
        return Err("arguments are not an object".into());
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(key) {
                return Err(format!("missing required `{key}`"));
            }
        }
    }
    for (key, value) in args {
        match props.and_then(|p| p.get(key)) {
            Some(prop) => check_value(prop, value).map_err(|e| format!("`{key}`: {e}"))?,
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(format!("unknown key `{key}`"));
            }
            None => {}
        }
    }
    Ok(())
}

pub fn check_value(schema: &Value, value: &Value) -> Result<(), String> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
        return Err(format!("expected {}, got {value}", types.join(" or ")));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(format!(
            "{value} is not one of {}",
            Value::Array(options.clone())
        ));
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for v in array {
            check_value(items, v)?;
        }
    }
    if value.is_object() && schema.get("properties").is_some() {
        schema_check(schema, value)?;
    }
    Ok(())
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}
