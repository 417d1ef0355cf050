//! MCP skills (SEP-2640) against tests/servers/skills_server.py, a real PyPI `mcp` 2.x server
//! with `skills/list`, `skills/get` and `resources/read` that records every read: listing
//! reads no file, loading reads and verifies the SKILL.md only, and each tampering (digest,
//! size, frontmatter, a supporting file, a file the manifest does not list) is refused with an
//! error that names the skill, the file and what differs.
use std::path::Path;

use rkmcp::mcp::SessionManager;
use rkmcp::mcp::skills::{self, ListedSkill, SkillError, Verification};
use rkmcp_tests::*;
use serde_json::Value;

const PDF: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const REVIEW: &str = "skill://code-review/SKILL.md";

/// A config with the skills server (`--tamper MODE` unless "none"), recording reads in
/// `dir/reads.txt`.
fn skills_server(dir: &Path, tamper: &str) -> String {
    let mut args = vec![
        repo()
            .join("tests/servers/skills_server.py")
            .display()
            .to_string(),
        "--reads".into(),
        dir.join("reads.txt").display().to_string(),
    ];
    if tamper != "none" {
        args.extend(["--tamper".to_string(), tamper.to_string()]);
    }
    let python = deps().join("venv/bin/python").display().to_string();
    stdio_entry("skills", &python, &args, "")
}

/// The URIs the server was asked to read, in order.
fn reads(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("reads.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

async fn start(dir: &Path, tamper: &str) -> (SessionManager, Vec<ListedSkill>) {
    let config = load_config(dir, &skills_server(dir, tamper));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let (listed, failures) = skills::list_all(&manager, None).await;
    assert!(failures.is_empty(), "{failures:?}");
    (manager, listed)
}

/// Loads `name` and returns the refusal's message; panics if it loaded.
async fn refusal(tamper: &str, name: &str, file: Option<&str>) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let (manager, listed) = start(dir.path(), tamper).await;
    let skill = skills::find(&listed, name).unwrap();
    let session = manager.session("skills").unwrap();
    let err = match file {
        None => skills::load(session, skill).await.map(|l| l.text),
        Some(path) => skills::read_file(session, skill, path)
            .await
            .map(|f| f.text),
    }
    .expect_err("tampered content was accepted");
    assert!(matches!(err, SkillError::Refused { .. }), "{err}");
    manager.shutdown().await;
    (err.to_string(), reads(dir.path()))
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_reads_no_skill_file() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, listed) = start(dir.path(), "none").await;
    let names: Vec<(&str, &str, &str)> = listed
        .iter()
        .map(|s| (s.name(), s.uri(), s.server.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("pdf-processing", PDF, "skills"),
            ("code-review", REVIEW, "skills")
        ]
    );
    assert_eq!(
        listed[0].description(),
        "Extract, fill, and assemble PDF documents"
    );
    manager.shutdown().await;
    assert_eq!(
        reads(dir.path()),
        Vec::<String>::new(),
        "connecting or listing read a skill file"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn loading_reads_only_skill_md_and_verifies_it() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, listed) = start(dir.path(), "none").await;
    let session = manager.session("skills").unwrap();

    let pdf = skills::find(&listed, "pdf-processing").unwrap();
    let loaded = skills::load(session, pdf).await.unwrap();
    assert!(loaded.text.starts_with("---\nname: pdf-processing\n"));
    assert!(loaded.text.contains("Skill body."));
    assert!(
        matches!(loaded.verification, Verification::Manifest { size, .. } if size == loaded.text.len() as u64)
    );
    assert_eq!(
        reads(dir.path()),
        vec![PDF],
        "loading read more than SKILL.md"
    );

    // Nested, numeric and quoted frontmatter fields compare equal to the listing's JSON.
    let review = skills::find(&listed, "skills/code-review").unwrap();
    let loaded = skills::load(session, review).await.unwrap();
    assert_eq!(loaded.frontmatter["metadata"]["version"], 1.5);

    let forms = skills::read_file(session, pdf, "references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(forms.text, "Forms: fill every field, then flatten.\n");
    assert_eq!(reads(dir.path()), vec![PDF, REVIEW, FORMS]);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_digest_mismatch_is_refused() {
    let (message, reads) = refusal("digest", "pdf-processing", None).await;
    assert!(
        message.contains("refused skill `pdf-processing` from server `skills`"),
        "{message}"
    );
    assert!(message.contains(PDF), "{message}");
    assert!(
        message.contains("has digest sha256:")
            && message.contains("the skill's listing says sha256:"),
        "{message}"
    );
    assert_eq!(reads, vec![PDF], "went on to read the skill's other files");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_size_mismatch_is_refused() {
    let (message, reads) = refusal("size", "pdf-processing", None).await;
    assert!(message.contains(PDF), "{message}");
    let expected = "is 207 bytes, the skill's listing says 163 bytes";
    assert!(message.contains(expected), "{message}");
    assert_eq!(reads, vec![PDF]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frontmatter_difference_is_refused_field_by_field() {
    let (message, reads) = refusal("frontmatter", "pdf-processing", None).await;
    assert!(message.contains(PDF), "{message}");
    assert!(
        message.contains(
            "`description` is \"Exfiltrate credentials\" in the file but \"Extract, fill, and assemble PDF documents\" in the listing"
        ),
        "{message}"
    );
    assert!(
        !message.contains("`name`"),
        "an equal field was reported: {message}"
    );
    assert_eq!(reads, vec![PDF]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_supporting_file_is_refused() {
    let (message, _) = refusal("forms", "pdf-processing", Some("references/FORMS.md")).await;
    assert!(message.contains(FORMS), "{message}");
    // The tampered file is longer than listed, so the size check (run before the digest) refuses it.
    assert!(
        message.contains("bytes, the skill's listing says")
            && message.contains("its content was not used"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_the_manifest_does_not_list_is_refused_unread() {
    let (message, reads) = refusal("none", "pdf-processing", Some("secrets.md")).await;
    assert!(
        message.contains("skill://pdf-processing/secrets.md is not in the skill's file list"),
        "{message}"
    );
    assert_eq!(reads, Vec::<String>::new());
}

#[test]
fn the_cli_lists_skills_and_shows_only_verified_ones() {
    let home = tempfile::tempdir().unwrap();
    let run = |tamper: &str, args: &[&str]| {
        let config = write(
            home.path(),
            "rkmcp.toml",
            &skills_server(home.path(), tamper),
        );
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        run_rkmcp(home.path(), &all)
    };
    let out = run("none", &["skills", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listing["skills"][0]["name"], "pdf-processing");
    assert_eq!(listing["skills"][0]["server"], "skills");
    assert_eq!(listing["skills"][0]["uri"], PDF);
    assert_eq!(
        listing["skills"][1]["frontmatter"]["description"],
        "Review a change: correctness first, then style"
    );
    assert_eq!(
        reads(home.path()),
        Vec::<String>::new(),
        "`skills list` read a file"
    );

    let out = run("none", &["skills", "show", "pdf-processing"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Skill body."), "{}", stdout(&out));

    let out = run("digest", &["skills", "show", "pdf-processing"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("refused skill `pdf-processing` from server `skills`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "", "unverified content was printed");

    let out = run("none", &["skills", "show", "pdf-procesing"]);
    assert!(
        stderr(&out).contains("did you mean `pdf-processing`?"),
        "{}",
        stderr(&out)
    );
}
