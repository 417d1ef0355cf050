//! The shared corpus: every transcript gives its expected normalized events, fed in one piece,
//! split in two at every char boundary, and one char at a time. `BLESS_CORPUS=1` rewrites the
//! expectations from the current output (review the diff before committing).

mod common;

use common::{Case, cases, run_chunks_with};
use rkmcp_tool_formats::{DetectorEvent, ToolFormat};

fn matches(expected: &[DetectorEvent], actual: &[DetectorEvent]) -> bool {
    expected.len() == actual.len()
        && expected.iter().zip(actual).all(|(e, a)| match (e, a) {
            // Expectations hold a fragment of the error message, so wording can improve.
            (
                DetectorEvent::Malformed { raw: er, error: ee },
                DetectorEvent::Malformed { raw: ar, error: ae },
            ) => er == ar && ae.contains(ee.as_str()),
            _ => e == a,
        })
}

fn check(case: &Case) -> Result<(), String> {
    let whole = run_chunks_with(case.format, &case.opts, [case.input.as_str()]);
    if std::env::var_os("BLESS_CORPUS").is_some() {
        let json = serde_json::to_string_pretty(&whole).map_err(|e| e.to_string())? + "\n";
        std::fs::write(&case.expected_path, json).map_err(|e| e.to_string())?;
    }
    let text = std::fs::read_to_string(&case.expected_path)
        .map_err(|e| format!("{}: {e}", case.expected_path.display()))?;
    let expected: Vec<DetectorEvent> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: {e}", case.expected_path.display()))?;
    if !matches(&expected, &whole) {
        return Err(format!(
            "one-shot mismatch\nexpected: {expected:#?}\nactual: {whole:#?}"
        ));
    }
    for (i, _) in case.input.char_indices().skip(1) {
        let (a, b) = case.input.split_at(i);
        let split = run_chunks_with(case.format, &case.opts, [a, b]);
        if split != whole {
            return Err(format!(
                "split at byte {i} differs\none-shot: {whole:#?}\nsplit: {split:#?}"
            ));
        }
    }
    let chars: Vec<String> = case.input.chars().map(String::from).collect();
    let by_char = run_chunks_with(case.format, &case.opts, chars.iter().map(String::as_str));
    if by_char != whole {
        return Err(format!(
            "char-by-char differs\none-shot: {whole:#?}\nchar-by-char: {by_char:#?}"
        ));
    }
    Ok(())
}

#[test]
fn corpus_transcripts_give_expected_events_for_any_split() {
    let all = cases();
    let mut failures = Vec::new();
    for case in &all {
        if let Err(e) = check(case) {
            failures.push(format!("{}/{}: {e}", case.format, case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn corpus_covers_every_format_with_calls_text_and_malformed() {
    let all = cases();
    for f in ToolFormat::all() {
        let mine: Vec<&Case> = all.iter().filter(|c| c.format == *f).collect();
        assert!(
            mine.len() >= 3,
            "{f}: only {} corpus transcripts",
            mine.len()
        );
        let events: Vec<DetectorEvent> = mine
            .iter()
            .flat_map(|c| run_chunks_with(c.format, &c.opts, [c.input.as_str()]))
            .collect();
        let calls = events
            .iter()
            .filter(|e| matches!(e, DetectorEvent::ToolCall(_)))
            .count();
        assert!(calls >= 3, "{f}: corpus has only {calls} calls");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, DetectorEvent::Malformed { .. })),
            "{f}: no malformed case"
        );
        assert!(
            events.iter().any(|e| matches!(e, DetectorEvent::Text(_))),
            "{f}: no text case"
        );
    }
}

/// Per family: transcripts and exact passes (one-shot, every split, char by char), printed as a
/// table (`cargo test --release -p rkmcp-tool-formats --test corpus -- --nocapture report`).
#[test]
fn report_per_family() {
    let all = cases();
    println!("{:<16} {:>6} {:>6}", "format", "cases", "exact");
    let (mut total, mut passed) = (0, 0);
    for f in ToolFormat::all() {
        let mine: Vec<&Case> = all.iter().filter(|c| c.format == *f).collect();
        let ok = mine.iter().filter(|c| check(c).is_ok()).count();
        println!("{:<16} {:>6} {:>6}", f.name(), mine.len(), ok);
        total += mine.len();
        passed += ok;
    }
    println!("{:<16} {:>6} {:>6}", "all", total, passed);
    assert_eq!(passed, total, "corpus cases failing: see the table");
}
