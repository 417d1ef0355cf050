//! The tool-calling evaluation's data (tests/eval) is valid: the check `tool_eval --check` runs,
//! without a model, against the tools the real servers and tests/servers/schema_tools.py list.
use rkmcp_tests::eval::{self, Part};

#[tokio::test(flavor = "multi_thread")]
async fn the_evaluation_set_is_valid_and_split() {
    let set = eval::load();
    let catalog = eval::live_catalog(&set).await;
    let problems = eval::check(&set, &catalog);
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
    assert!(tuning.3 + heldout.3 >= 150, "{} tools", tuning.3 + heldout.3);
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
            text = text.replacen("expect_args = { symbol = \"NVDA\" }", "expect_args = { ticker = \"NVDA\" }", 1);
        }
        std::fs::write(dir.path().join("questions").join(entry.file_name()), text).expect("write");
    }
    let set = eval::load_from(dir.path());
    // The tools straight from the schema file (no servers needed for this one).
    let mut catalog = eval::Catalog::new();
    let defs: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(eval::schema_file("finance")).expect("finance.json"),
    )
    .expect("JSON");
    for d in defs {
        catalog.entry("finance".into()).or_default().insert(
            format!("finance__{}", d["name"].as_str().unwrap_or_default()),
            d["inputSchema"].clone(),
        );
    }
    let problems = eval::check(&set, &catalog);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`ticker` is not a parameter of finance__stock_quote")),
        "{problems:?}"
    );
}
