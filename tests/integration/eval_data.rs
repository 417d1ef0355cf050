//! The tool-calling evaluation's data (tests/eval) is valid: the check `tool_eval --check` runs
//! without a model, here against the four real servers' tools and the schema files (what
//! tests/servers/schema_tools.py serves; one domain is compared with the running server).
use rkmcp_tests::eval::{self, Part};

#[tokio::test(flavor = "multi_thread")]
async fn the_evaluation_set_is_valid_and_split() {
    let set = eval::load();
    let (catalog, mut problems) = eval::catalog_from_files(&set).await;
    problems.extend(eval::check(&set, &catalog));
    assert!(
        problems.is_empty(),
        "{} problems in tests/eval (see `tool_eval --check`):\n{}",
        problems.len(),
        problems.join("\n")
    );
    let counts = eval::counts(&set, &catalog);
    let (tuning, heldout) = (counts[&Part::Tuning], counts[&Part::Heldout]);
    let questions = tuning.0 + heldout.0;
    assert!(questions >= 400, "{questions} questions");
    assert!(
        tuning.3 + heldout.3 >= 150,
        "{} tools",
        tuning.3 + heldout.3
    );
    // "none" questions: at least 15 % of all.
    assert!(
        (tuning.2 + heldout.2) * 100 >= questions * 15,
        "{} none questions of {questions}",
        tuning.2 + heldout.2
    );
    // The held-out part is roughly half the set.
    assert!(
        heldout.0 * 10 >= questions * 4,
        "held-out {} of {questions}",
        heldout.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_tools_serves_its_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let servers = vec!["finance".to_string()];
    let sessions = eval::start_servers(dir.path(), dir.path(), &servers).await;
    let live = eval::catalog_of(&sessions);
    sessions.shutdown().await;
    let file = eval::schema_file_tools("finance").expect("finance.json");
    assert_eq!(live.get("finance"), Some(&file));
}

#[test]
fn the_check_finds_a_broken_question() {
    // The same check on a copy of the data with one question broken: it must complain.
    let dir = tempfile::tempdir().expect("temp dir");
    let from = eval::eval_dir();
    std::fs::copy(from.join("toolsets.toml"), dir.path().join("toolsets.toml")).expect("copy");
    std::fs::create_dir_all(dir.path().join("questions")).expect("mkdir");
    for entry in std::fs::read_dir(from.join("questions")).expect("questions/") {
        let entry = entry.expect("entry");
        let mut text = std::fs::read_to_string(entry.path()).expect("read");
        if entry.file_name() == "heldout-finance.toml" {
            text = text.replacen(
                "expect_args = { symbol = \"NVDA\" }",
                "expect_args = { ticker = \"NVDA\" }",
                1,
            );
        }
        std::fs::write(dir.path().join("questions").join(entry.file_name()), text).expect("write");
    }
    let set = eval::load_from(dir.path());
    let mut catalog = eval::Catalog::new();
    catalog.insert(
        "finance".into(),
        eval::schema_file_tools("finance").expect("finance.json"),
    );
    let problems = eval::check(&set, &catalog);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`ticker` is not a parameter of finance__stock_quote")),
        "{problems:?}"
    );
}
