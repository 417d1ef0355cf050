//! Who allows a tool call: the `[chat.approval]` policy, approval-guard plugins and the person at
//! the terminal.
//!
//! Every call the model makes (after its arguments were validated) is reviewed here before it
//! runs. The answer is a [`Verdict`]: allowed or denied, and by whom (`policy`, `guard:NAME`,
//! `--yes`, `session`, `annotations`, `user`). A denied call does not run; the model is told why.
//!
//! # Configuration: `[chat.approval]` in rkmcp.toml (every key optional)
//!
//! ```toml
//! [chat.approval]
//! auto_approve = ["time/*", "everything/echo", "files/read_*"]  # default []
//! deny = ["fs/write_*"]                                          # default []
//! always_ask = ["shell/*"]                                       # default []
//! read_only = "allow"          # "allow" (default) | "ask"
//! unannotated = "ask"          # "ask" (default) | "allow"
//! guards = ["approval-guard-default"]                            # default []
//! ```
//!
//! Patterns are globs (`*`, `?`, `[abc]`, `{a,b}`; case-sensitive; `*` also matches `/`) matched
//! against `SERVER/TOOL` (the server's name in rkmcp's config and the tool's own name, e.g.
//! `time/get_current_time`) **and** against the name the model sees (e.g.
//! `time__get_current_time`); either match counts. A pattern that does not parse is a
//! configuration error: rkmcp does not start.
//!
//! - `deny`: matching calls are always denied, even with `--yes`.
//! - `auto_approve`: matching calls are allowed without asking.
//! - `always_ask`: matching calls are asked about even when `auto_approve` or the tool's
//!   annotations would allow them (`--yes` still approves them).
//! - `read_only`: what to do with tools whose MCP annotations say `readOnlyHint: true`.
//! - `unannotated`: what to do with tools that have no annotations at all (MCP then assumes a
//!   tool may be destructive). A tool that has annotations but is not read-only (destructive,
//!   or additive with `destructiveHint: false`) is always asked about unless a rule above
//!   allows it.
//! - `guards`: approval-guard plugins (WebAssembly, see `rkmcp plugins`), consulted in this
//!   order for every call that `deny` did not already deny. A guard can only make a decision
//!   stricter: it denies, asks a person, or lets the rules below decide. A guard that fails (trap,
//!   deadline, quarantine) denies the call: a guard you configured is never skipped silently.
//!
//! Annotations are *hints* from the server: a hostile server can claim anything. Use `deny`,
//! `always_ask` or a guard for tools you do not trust.
//!
//! # Order of decisions for one call (the first that applies wins)
//!
//! 1. A `deny` pattern matches → denied (`policy`).
//! 2. Each guard in order: `deny` → denied (`guard:NAME`) at once; `ask` → a person must be
//!    asked (the guard's question is shown); a failed guard → denied (`guard:NAME`).
//! 3. `--yes` → allowed (`--yes`).
//! 4. You answered "for this session" for this server's tool earlier → allowed (`session`).
//! 5. An `always_ask` pattern matches, or a guard asked → ask.
//! 6. An `auto_approve` pattern matches → allowed (`policy`).
//! 7. Annotations: read-only with `read_only = "allow"` → allowed (`annotations`); no
//!    annotations with `unannotated = "allow"` → allowed (`policy`); anything else → ask.
//! 8. Ask: at a terminal (`rkmcp chat`) you answer *once*, *for this session* (this tool of this
//!    server, until rkmcp exits) or *deny* (`user`). Where nobody can answer (`rkmcp ask`, stdin
//!    not a terminal) the call is denied (`policy`) with a hint on how to allow it.
//!
//! Guards are told `interactive = true` when a question can be answered: a person is at the
//! terminal, or `--yes` answers every question with yes. Otherwise the plugin host turns a
//! guard's `ask` into a deny.
use std::collections::HashSet;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rkmcp_plugin_host::{ApprovalGuard, Decision, ProposedCall};
use serde::{Deserialize, Serialize};

/// The `[chat.approval]` table of rkmcp.toml. See the [module docs](self) for the policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Globs over `SERVER/TOOL` and the exposed name: allowed without asking.
    pub auto_approve: Vec<String>,
    /// Globs: always denied, even with `--yes`.
    pub deny: Vec<String>,
    /// Globs: always asked about (unless `--yes`), even if another rule would allow.
    pub always_ask: Vec<String>,
    /// Tools annotated `readOnlyHint: true`: allowed (default) or asked about.
    pub read_only: AllowOrAsk,
    /// Tools without any annotations: asked about (default) or allowed.
    pub unannotated: AllowOrAsk,
    /// Approval-guard plugins, consulted in order.
    pub guards: Vec<String>,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            auto_approve: Vec::new(),
            deny: Vec::new(),
            always_ask: Vec::new(),
            read_only: AllowOrAsk::Allow,
            unannotated: AllowOrAsk::Ask,
            guards: Vec::new(),
        }
    }
}

/// The value of `read_only` and `unannotated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowOrAsk {
    Allow,
    Ask,
}

/// One call the model wants to make.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The server's name in rkmcp's config.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    /// The name the model sees (`time__get_current_time`).
    pub exposed_name: String,
    pub arguments: serde_json::Value,
    pub annotations: Option<rmcp::model::ToolAnnotations>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow { by: String },
    Deny { by: String, reason: String },
}

/// A person's answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptAnswer {
    AllowOnce,
    /// Allow this tool of this server until rkmcp exits.
    AllowSession,
    Deny,
}

/// Asks a person whether a call may run (`why` says why the question is asked).
#[async_trait::async_trait]
pub trait Prompter: Send + Sync {
    async fn ask(&self, request: &ApprovalRequest, why: &str) -> PromptAnswer;
}

/// A list of patterns from one config key, compiled.
#[derive(Debug, Clone)]
struct Patterns {
    patterns: Vec<String>,
    set: GlobSet,
}

impl Patterns {
    fn new(key: &str, patterns: &[String]) -> Result<Patterns, String> {
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            if p.trim().is_empty() {
                return Err(format!(
                    "{key}: an empty pattern matches no tool; remove it"
                ));
            }
            let glob =
                Glob::new(p).map_err(|e| format!("{key}: invalid pattern `{p}`: {}", e.kind()))?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|e| format!("{key}: the patterns cannot be compiled: {e}"))?;
        Ok(Patterns {
            patterns: patterns.to_vec(),
            set,
        })
    }

    /// The first pattern (in config order) that matches `SERVER/TOOL` or the exposed name.
    fn first_match(&self, request: &ApprovalRequest) -> Option<&str> {
        if self.patterns.is_empty() {
            return None;
        }
        let qualified = format!("{}/{}", request.server, request.tool);
        let mut hits = self.set.matches(&qualified);
        hits.extend(self.set.matches(&request.exposed_name));
        hits.into_iter()
            .min()
            .and_then(|i| self.patterns.get(i))
            .map(String::as_str)
    }
}

/// The `[chat.approval]` rules, compiled. Built by [`Policy::new`]; used by [`decide`].
#[derive(Debug, Clone)]
pub struct Policy {
    deny: Patterns,
    always_ask: Patterns,
    auto_approve: Patterns,
    read_only: AllowOrAsk,
    unannotated: AllowOrAsk,
}

impl Policy {
    /// Compiles the patterns. Err names the key and the pattern that does not parse.
    pub fn new(config: &ApprovalConfig) -> Result<Policy, String> {
        Ok(Policy {
            deny: Patterns::new("deny", &config.deny)?,
            always_ask: Patterns::new("always_ask", &config.always_ask)?,
            auto_approve: Patterns::new("auto_approve", &config.auto_approve)?,
            read_only: config.read_only,
            unannotated: config.unannotated,
        })
    }

    /// Rule 1: the verdict when a `deny` pattern matches.
    fn denied(&self, request: &ApprovalRequest) -> Option<Verdict> {
        self.deny.first_match(request).map(|pattern| Verdict::Deny {
            by: "policy".into(),
            reason: format!(
                "`{}/{}` matches the [chat.approval] deny pattern `{pattern}`",
                request.server, request.tool
            ),
        })
    }
}

/// What is known about one call besides the request and the policy (inputs of [`decide`]).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The first guard that denied: (guard name, reason).
    pub guard_deny: Option<(String, String)>,
    /// Questions of the guards that asked: (guard name, question), in guard order.
    pub guard_questions: Vec<(String, String)>,
    /// `--yes` was given.
    pub yes: bool,
    /// The person allowed this server's tool for the session earlier.
    pub session_allowed: bool,
}

/// The outcome of [`decide`].
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Decided without a person.
    Done(Verdict),
    /// A person must decide. `why` is shown to them; `if_nobody` is the deny reason when nobody
    /// can answer.
    Ask { why: String, if_nobody: String },
}

/// Rules 1–7 of the [module docs](self): everything but asking the person. Pure, so each rule
/// can be tested without plugins or a terminal.
pub fn decide(policy: &Policy, request: &ApprovalRequest, facts: &Facts) -> Step {
    // 1. deny patterns beat everything.
    if let Some(v) = policy.denied(request) {
        return Step::Done(v);
    }
    // 2. a guard's deny.
    if let Some((guard, reason)) = &facts.guard_deny {
        return Step::Done(Verdict::Deny {
            by: format!("guard:{guard}"),
            reason: reason.clone(),
        });
    }
    // 3. --yes.
    if facts.yes {
        return Step::Done(Verdict::Allow { by: "--yes".into() });
    }
    // 4. allowed for this session.
    if facts.session_allowed {
        return Step::Done(Verdict::Allow {
            by: "session".into(),
        });
    }
    // 5. always_ask or a guard's question.
    let always_ask = policy.always_ask.first_match(request);
    if always_ask.is_some() || !facts.guard_questions.is_empty() {
        let mut why = Vec::new();
        if let Some(pattern) = always_ask {
            why.push(format!(
                "it matches the [chat.approval] always_ask pattern `{pattern}`"
            ));
        }
        for (guard, question) in &facts.guard_questions {
            why.push(format!("guard `{guard}` asks: {question}"));
        }
        let mut hints = vec!["pass --yes".to_string()];
        if let Some(pattern) = always_ask {
            hints.push(format!("remove `{pattern}` from always_ask"));
        }
        return Step::Ask {
            if_nobody: nobody_reason(request, &why.join("; "), &hints),
            why: why.join("; "),
        };
    }
    // 6. auto_approve.
    if policy.auto_approve.first_match(request).is_some() {
        return Step::Done(Verdict::Allow {
            by: "policy".into(),
        });
    }
    // 7. annotations.
    let why = match hints_of(request) {
        None => {
            if policy.unannotated == AllowOrAsk::Allow {
                return Step::Done(Verdict::Allow {
                    by: "policy".into(),
                });
            }
            "the tool has no annotations, so it may modify data".to_string()
        }
        Some(h) if h.read_only_hint == Some(true) => {
            if policy.read_only == AllowOrAsk::Allow {
                return Step::Done(Verdict::Allow {
                    by: "annotations".into(),
                });
            }
            "the tool is read-only (readOnlyHint), but [chat.approval] read_only = \"ask\"".into()
        }
        Some(h) => match h.destructive_hint {
            Some(true) => "the tool may modify data (destructiveHint)".to_string(),
            Some(false) => {
                "the tool may change things (not readOnlyHint; destructiveHint false: additive \
                 changes only)"
                    .to_string()
            }
            None => "the tool may modify data (not readOnlyHint, and MCP assumes such a tool is \
                     destructive)"
                .to_string(),
        },
    };
    let hints = [
        "pass --yes".to_string(),
        format!(
            "add an auto_approve rule such as {}",
            suggested_rule(request)
        ),
    ];
    Step::Ask {
        if_nobody: nobody_reason(request, &why, &hints),
        why,
    }
}

/// The annotations, unless they say nothing about behaviour (absent, or only a title).
fn hints_of(request: &ApprovalRequest) -> Option<&rmcp::model::ToolAnnotations> {
    request.annotations.as_ref().filter(|a| {
        a.read_only_hint.is_some()
            || a.destructive_hint.is_some()
            || a.idempotent_hint.is_some()
            || a.open_world_hint.is_some()
    })
}

/// `"SERVER/TOOL"` as a TOML string holding a glob that matches exactly this tool.
fn suggested_rule(request: &ApprovalRequest) -> String {
    let glob = format!(
        "{}/{}",
        globset::escape(&request.server),
        globset::escape(&request.tool)
    );
    let mut out = String::from("\"");
    for c in glob.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn nobody_reason(request: &ApprovalRequest, why: &str, hints: &[String]) -> String {
    format!(
        "`{}/{}` needs approval ({why}) and nobody can give it here: run `rkmcp chat` in a \
         terminal, {}",
        request.server,
        request.tool,
        or_list(hints)
    )
}

/// `a, b, or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => format!("or {one}"),
        [init @ .., last] => format!("{}, or {last}", init.join(", ")),
    }
}

/// The verdict for a person's answer.
pub fn verdict_for(answer: PromptAnswer) -> Verdict {
    match answer {
        PromptAnswer::AllowOnce | PromptAnswer::AllowSession => {
            Verdict::Allow { by: "user".into() }
        }
        PromptAnswer::Deny => Verdict::Deny {
            by: "user".into(),
            reason: "denied by the user".into(),
        },
    }
}

/// The approval chain of one chat: policy, guards, the person (if any) and what they allowed
/// for the session.
pub struct Approver {
    policy: Policy,
    guards: Vec<ApprovalGuard>,
    prompter: Option<Arc<dyn Prompter>>,
    yes: bool,
    /// (server, tool) pairs the person allowed for this session. Behind a lock so one approver
    /// can review concurrent calls (`rkmcp serve`).
    session: std::sync::Mutex<HashSet<(String, String)>>,
}

impl Approver {
    /// `guards` are the plugins named in `config.guards`, in order (see
    /// [`load_plugins`](super::start::load_plugins)). Err = a config error (a bad glob), without
    /// the `[chat.approval]` prefix.
    pub fn new(
        config: &ApprovalConfig,
        guards: Vec<ApprovalGuard>,
        prompter: Option<Arc<dyn Prompter>>,
        yes: bool,
    ) -> Result<Self, String> {
        Ok(Approver {
            policy: Policy::new(config)?,
            guards,
            prompter,
            yes,
            session: std::sync::Mutex::default(),
        })
    }

    /// Decides one call (the order is in the [module docs](self)). May ask the person.
    pub async fn review(&self, request: &ApprovalRequest) -> Verdict {
        self.review_with(request, self.prompter.clone()).await
    }

    /// [`review`](Self::review) with the person reached through `prompter` instead of the one
    /// given at construction (`rkmcp serve` asks the connected client, when it can answer).
    pub async fn review_with(
        &self,
        request: &ApprovalRequest,
        prompter: Option<Arc<dyn Prompter>>,
    ) -> Verdict {
        let verdict = self.review_inner(request, prompter).await;
        tracing::debug!(
            server = %request.server,
            tool = %request.tool,
            ?verdict,
            "approval"
        );
        verdict
    }

    async fn review_inner(
        &self,
        request: &ApprovalRequest,
        prompter: Option<Arc<dyn Prompter>>,
    ) -> Verdict {
        // Rule 1 first: a denied call is not shown to the guards.
        if let Some(v) = self.policy.denied(request) {
            return v;
        }
        let mut facts = Facts {
            yes: self.yes,
            ..Facts::default()
        };
        // Guards see `interactive` when a question gets an answer: from a person, or from
        // `--yes` (their questions are then answered yes instead of being turned into denies).
        self.consult_guards(request, &mut facts, prompter.is_some() || self.yes)
            .await;
        facts.session_allowed = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(request.server.clone(), request.tool.clone()));
        match decide(&self.policy, request, &facts) {
            Step::Done(v) => v,
            Step::Ask { why, if_nobody } => {
                let Some(prompter) = &prompter else {
                    return Verdict::Deny {
                        by: "policy".into(),
                        reason: if_nobody,
                    };
                };
                let answer = prompter.ask(request, &why).await;
                if answer == PromptAnswer::AllowSession {
                    self.session
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert((request.server.clone(), request.tool.clone()));
                }
                verdict_for(answer)
            }
        }
    }

    /// Rule 2: asks each guard in order, stopping at the first deny or failure.
    async fn consult_guards(&self, request: &ApprovalRequest, facts: &mut Facts, answered: bool) {
        if self.guards.is_empty() {
            return;
        }
        let a = request.annotations.clone().unwrap_or_default();
        let call = ProposedCall {
            server: request.server.clone(),
            tool: request.tool.clone(),
            arguments: request.arguments.clone(),
            annotations: rkmcp_plugin_host::ToolAnnotations {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            },
            interactive: answered,
        };
        for guard in &self.guards {
            match guard.review(&call).await {
                Ok(Decision::Allow) => {}
                Ok(Decision::Ask(question)) => facts
                    .guard_questions
                    .push((guard.name().to_string(), question)),
                Ok(Decision::Deny(reason)) => {
                    facts.guard_deny = Some((guard.name().to_string(), reason));
                    return;
                }
                Err(err) => {
                    facts.guard_deny =
                        Some((guard.name().to_string(), format!("the guard failed: {err}")));
                    return;
                }
            }
        }
    }

    /// Whether a person can be asked (a prompter is attached).
    pub fn is_interactive(&self) -> bool {
        self.prompter.is_some()
    }

    /// Puts a new version of the guard of the same name in its place (hot reload, between
    /// turns); false when no guard of that name is configured (nothing changes).
    pub fn replace_guard(&mut self, guard: ApprovalGuard) -> bool {
        match self.guards.iter_mut().find(|g| g.name() == guard.name()) {
            Some(slot) => {
                *slot = guard;
                true
            }
            None => false,
        }
    }

    /// The names of the guards consulted, in order.
    pub fn guard_names(&self) -> Vec<&str> {
        self.guards.iter().map(ApprovalGuard::name).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::model::ToolAnnotations;
    use serde_json::json;

    use super::*;

    fn request(server: &str, tool: &str, annotations: Option<ToolAnnotations>) -> ApprovalRequest {
        ApprovalRequest {
            server: server.into(),
            tool: tool.into(),
            exposed_name: format!("{server}__{tool}"),
            arguments: json!({"path": "/tmp/x"}),
            annotations,
        }
    }

    fn read_only() -> Option<ToolAnnotations> {
        Some(ToolAnnotations::new().read_only(true))
    }

    fn destructive() -> Option<ToolAnnotations> {
        Some(ToolAnnotations::new().read_only(false).destructive(true))
    }

    fn config(toml_text: &str) -> ApprovalConfig {
        toml::from_str(toml_text).unwrap_or_else(|e| panic!("{toml_text}\n{e}"))
    }

    fn policy(toml_text: &str) -> Policy {
        Policy::new(&config(toml_text)).unwrap_or_else(|e| panic!("{toml_text}\n{e}"))
    }

    fn allow(by: &str) -> Step {
        Step::Done(Verdict::Allow { by: by.into() })
    }

    fn asks(step: &Step) -> &str {
        match step {
            Step::Ask { why, .. } => why,
            other => panic!("expected a question, got {other:?}"),
        }
    }

    /// TEST DOUBLE for a person at the terminal: answers every question with `answer` and counts
    /// (and keeps) the questions.
    struct CountingPrompter {
        answer: PromptAnswer,
        asked: AtomicUsize,
        whys: Mutex<Vec<String>>,
    }

    impl CountingPrompter {
        fn new(answer: PromptAnswer) -> Arc<Self> {
            Arc::new(CountingPrompter {
                answer,
                asked: AtomicUsize::new(0),
                whys: Mutex::new(Vec::new()),
            })
        }

        fn asked(&self) -> usize {
            self.asked.load(Ordering::SeqCst)
        }
    }

    #[async_trait::async_trait]
    impl Prompter for CountingPrompter {
        async fn ask(&self, _request: &ApprovalRequest, why: &str) -> PromptAnswer {
            self.asked.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut w) = self.whys.lock() {
                w.push(why.to_string());
            }
            self.answer
        }
    }

    fn approver(toml_text: &str, prompter: Option<Arc<CountingPrompter>>, yes: bool) -> Approver {
        let prompter = prompter.map(|p| p as Arc<dyn Prompter>);
        Approver::new(&config(toml_text), Vec::new(), prompter, yes)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn config_parses_from_toml_with_defaults_and_rejects_unknown_keys() {
        let c = config(
            r#"
            auto_approve = ["time/*", "everything/echo", "files/read_*"]
            deny = ["fs/write_*"]
            always_ask = ["shell/*"]
            read_only = "ask"
            unannotated = "allow"
            guards = ["approval-guard-default"]
            "#,
        );
        assert_eq!(c.auto_approve.len(), 3);
        assert_eq!(c.read_only, AllowOrAsk::Ask);
        assert_eq!(c.unannotated, AllowOrAsk::Allow);
        assert_eq!(c.guards, ["approval-guard-default"]);

        let d = config("");
        assert_eq!(d, ApprovalConfig::default());
        assert_eq!(d.read_only, AllowOrAsk::Allow);
        assert_eq!(d.unannotated, AllowOrAsk::Ask);

        let err = toml::from_str::<ApprovalConfig>("auto_aprove = [\"x\"]")
            .expect_err("unknown key")
            .to_string();
        assert!(err.contains("auto_aprove"), "{err}");
        let err = toml::from_str::<ApprovalConfig>("read_only = \"maybe\"")
            .expect_err("bad value")
            .to_string();
        assert!(err.contains("maybe"), "{err}");
    }

    #[test]
    fn a_bad_glob_is_a_config_error_naming_key_and_pattern() {
        let err = Approver::new(
            &config("auto_approve = [\"fs/[abc\"]"),
            Vec::new(),
            None,
            false,
        )
        .err()
        .expect("bad glob");
        assert!(
            err.contains("auto_approve") && err.contains("fs/[abc"),
            "{err}"
        );
        let err = Policy::new(&config("deny = [\"ok/*\", \"a{b\"]")).expect_err("bad glob");
        assert!(err.starts_with("deny:") && err.contains("a{b"), "{err}");
        let err = Policy::new(&config("always_ask = [\"\"]")).expect_err("empty");
        assert!(err.contains("always_ask") && err.contains("empty"), "{err}");
    }

    #[test]
    fn deny_pattern_beats_yes_auto_approve_and_read_only() {
        let p = policy("deny = [\"fs/write_*\"]\nauto_approve = [\"fs/*\"]");
        let facts = Facts {
            yes: true,
            session_allowed: true,
            ..Facts::default()
        };
        match decide(&p, &request("fs", "write_file", read_only()), &facts) {
            Step::Done(Verdict::Deny { by, reason }) => {
                assert_eq!(by, "policy");
                assert!(reason.contains("fs/write_*"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Other tools of the server are not affected.
        assert_eq!(
            decide(&p, &request("fs", "read_file", None), &facts),
            allow("--yes")
        );
    }

    #[test]
    fn deny_pattern_matches_the_exposed_name_too() {
        let p = policy("deny = [\"*__rm\"]");
        let step = decide(&p, &request("shell", "rm", read_only()), &Facts::default());
        assert!(matches!(step, Step::Done(Verdict::Deny { .. })), "{step:?}");
    }

    #[test]
    fn a_guard_deny_beats_yes_and_names_the_guard() {
        let facts = Facts {
            guard_deny: Some(("g1".into(), "outside the roots".into())),
            yes: true,
            ..Facts::default()
        };
        assert_eq!(
            decide(&policy(""), &request("fs", "write_file", None), &facts),
            Step::Done(Verdict::Deny {
                by: "guard:g1".into(),
                reason: "outside the roots".into()
            })
        );
    }

    #[test]
    fn yes_allows_unannotated_destructive_and_always_ask_tools() {
        let p = policy("always_ask = [\"fs/*\"]");
        let yes = Facts {
            yes: true,
            guard_questions: vec![("g".into(), "sure?".into())],
            ..Facts::default()
        };
        for r in [
            request("other", "t", None),
            request("other", "t", destructive()),
            request("fs", "write_file", None),
        ] {
            assert_eq!(decide(&p, &r, &yes), allow("--yes"), "{r:?}");
        }
    }

    #[test]
    fn auto_approve_matches_server_slash_tool_and_exposed_name() {
        let p = policy(
            "auto_approve = [\"time/*\", \"everything/echo\", \"files/read_*\", \"mem__*\"]",
        );
        let none = Facts::default();
        for (server, tool) in [
            ("time", "get_current_time"),
            ("everything", "echo"),
            ("files", "read_text_file"),
            ("mem", "store"),
        ] {
            assert_eq!(
                decide(&p, &request(server, tool, destructive()), &none),
                allow("policy"),
                "{server}/{tool}"
            );
        }
        for (server, tool) in [
            ("everything", "echo2"),
            ("files", "write_file"),
            ("timer", "x"),
        ] {
            asks(&decide(&p, &request(server, tool, None), &none));
        }
    }

    #[test]
    fn read_only_tools_are_allowed_by_annotations_unless_read_only_is_ask() {
        let r = request("fs", "read_file", read_only());
        assert_eq!(
            decide(&policy(""), &r, &Facts::default()),
            allow("annotations")
        );
        let why = asks(&decide(
            &policy("read_only = \"ask\""),
            &r,
            &Facts::default(),
        ))
        .to_string();
        assert!(why.contains("read_only"), "{why}");
    }

    #[test]
    fn destructive_unannotated_and_additive_tools_are_asked_about() {
        let p = policy("");
        let none = Facts::default();
        let why = asks(&decide(&p, &request("db", "drop", destructive()), &none)).to_string();
        assert!(why.contains("destructiveHint"), "{why}");
        let why = asks(&decide(&p, &request("db", "drop", None), &none)).to_string();
        assert!(why.contains("no annotations"), "{why}");
        // A title alone says nothing about behaviour.
        let titled = Some(ToolAnnotations::with_title("Drop"));
        let why = asks(&decide(&p, &request("db", "drop", titled), &none)).to_string();
        assert!(why.contains("no annotations"), "{why}");
        // Annotated, not read-only, destructiveHint absent: MCP's default is destructive.
        let partly = Some(ToolAnnotations::new().idempotent(true));
        let why = asks(&decide(&p, &request("db", "put", partly), &none)).to_string();
        assert!(why.contains("destructive"), "{why}");
        let additive = Some(ToolAnnotations::new().read_only(false).destructive(false));
        asks(&decide(&p, &request("db", "add", additive), &none));
    }

    #[test]
    fn unannotated_allow_allows_only_tools_without_annotations() {
        let p = policy("unannotated = \"allow\"");
        let none = Facts::default();
        assert_eq!(decide(&p, &request("x", "t", None), &none), allow("policy"));
        asks(&decide(&p, &request("x", "t", destructive()), &none));
    }

    #[test]
    fn always_ask_beats_auto_approve_and_read_only() {
        let p = policy("auto_approve = [\"fs/*\"]\nalways_ask = [\"fs/read_*\"]");
        let why = asks(&decide(
            &p,
            &request("fs", "read_file", read_only()),
            &Facts::default(),
        ))
        .to_string();
        assert!(
            why.contains("always_ask") && why.contains("fs/read_*"),
            "{why}"
        );
        assert_eq!(
            decide(&p, &request("fs", "list", read_only()), &Facts::default()),
            allow("policy")
        );
    }

    #[test]
    fn a_guard_question_is_asked_even_for_auto_approved_tools() {
        let p = policy("auto_approve = [\"fs/*\"]");
        let facts = Facts {
            guard_questions: vec![("approval-guard-default".into(), "Run it?".into())],
            ..Facts::default()
        };
        let why = asks(&decide(
            &p,
            &request("fs", "read_file", read_only()),
            &facts,
        ))
        .to_string();
        assert!(
            why.contains("approval-guard-default") && why.contains("Run it?"),
            "{why}"
        );
    }

    #[test]
    fn session_allowance_beats_always_ask_but_not_deny() {
        let facts = Facts {
            session_allowed: true,
            ..Facts::default()
        };
        assert_eq!(
            decide(
                &policy("always_ask = [\"*\"]"),
                &request("db", "drop", None),
                &facts
            ),
            allow("session")
        );
        assert!(matches!(
            decide(
                &policy("deny = [\"*\"]"),
                &request("db", "drop", None),
                &facts
            ),
            Step::Done(Verdict::Deny { .. })
        ));
    }

    #[tokio::test]
    async fn without_a_prompter_a_question_is_a_deny_with_a_concrete_hint() {
        let a = approver("", None, false);
        assert!(!a.is_interactive());
        match a.review(&request("fx", "add_tool", None)).await {
            Verdict::Deny { by, reason } => {
                assert_eq!(by, "policy");
                for part in [
                    "`fx/add_tool` needs approval",
                    "no annotations",
                    "rkmcp chat",
                    "--yes",
                    "auto_approve",
                    "\"fx/add_tool\"",
                ] {
                    assert!(reason.contains(part), "{part:?} not in {reason}");
                }
            }
            v => panic!("{v:?}"),
        }
        // always_ask: an auto_approve rule would not help, so it is not suggested.
        let a = approver("always_ask = [\"fx/*\"]", None, false);
        match a.review(&request("fx", "t", read_only())).await {
            Verdict::Deny { reason, .. } => {
                assert!(reason.contains("remove `fx/*` from always_ask"), "{reason}");
                assert!(!reason.contains("auto_approve"), "{reason}");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn the_suggested_rule_escapes_glob_characters() {
        assert_eq!(
            suggested_rule(&request("s", "a*b", None)),
            "\"s/a[*]b\"".to_string()
        );
    }

    #[tokio::test]
    async fn allow_once_asks_again_next_time() {
        let p = CountingPrompter::new(PromptAnswer::AllowOnce);
        let a = approver("", Some(p.clone()), false);
        assert!(a.is_interactive());
        let r = request("db", "drop", destructive());
        for _ in 0..2 {
            assert_eq!(a.review(&r).await, Verdict::Allow { by: "user".into() });
        }
        assert_eq!(p.asked(), 2);
        let whys = p.whys.lock().map(|w| w.clone()).unwrap_or_default();
        assert!(whys[0].contains("destructiveHint"), "{whys:?}");
    }

    #[tokio::test]
    async fn allow_session_is_remembered_per_server_and_tool() {
        let p = CountingPrompter::new(PromptAnswer::AllowSession);
        let a = approver("", Some(p.clone()), false);
        let r = request("db", "drop", destructive());
        assert_eq!(a.review(&r).await, Verdict::Allow { by: "user".into() });
        assert_eq!(
            a.review(&r).await,
            Verdict::Allow {
                by: "session".into()
            }
        );
        assert_eq!(p.asked(), 1, "the second call must not be asked about");
        // Same tool name on another server: asked again.
        a.review(&request("db2", "drop", destructive())).await;
        assert_eq!(p.asked(), 2);
        // A deny pattern still wins over the session allowance.
        let denying = approver("deny = [\"db/*\"]", Some(p.clone()), false);
        denying
            .session
            .lock()
            .unwrap()
            .insert(("db".into(), "drop".into()));
        assert!(matches!(denying.review(&r).await, Verdict::Deny { .. }));
        assert_eq!(p.asked(), 2);
    }

    #[tokio::test]
    async fn a_person_can_deny() {
        let p = CountingPrompter::new(PromptAnswer::Deny);
        let a = approver("", Some(p.clone()), false);
        let r = request("db", "drop", None);
        for _ in 0..2 {
            assert_eq!(
                a.review(&r).await,
                Verdict::Deny {
                    by: "user".into(),
                    reason: "denied by the user".into()
                }
            );
        }
        assert_eq!(p.asked(), 2, "a deny is not remembered");
    }

    #[tokio::test]
    async fn allowed_calls_do_not_reach_the_prompter() {
        let p = CountingPrompter::new(PromptAnswer::Deny);
        let a = approver("auto_approve = [\"time/*\"]", Some(p.clone()), false);
        assert_eq!(
            a.review(&request("time", "now", None)).await,
            Verdict::Allow {
                by: "policy".into()
            }
        );
        assert_eq!(
            a.review(&request("fs", "read", read_only())).await,
            Verdict::Allow {
                by: "annotations".into()
            }
        );
        let yes = approver("", Some(p.clone()), true);
        assert_eq!(
            yes.review(&request("db", "drop", None)).await,
            Verdict::Allow { by: "--yes".into() }
        );
        assert_eq!(p.asked(), 0);
    }

    #[test]
    fn verdicts_serialize_with_snake_case_tags() {
        let v = serde_json::to_value(verdict_for(PromptAnswer::Deny)).unwrap_or_default();
        assert_eq!(
            v,
            json!({"deny": {"by": "user", "reason": "denied by the user"}})
        );
    }
}
