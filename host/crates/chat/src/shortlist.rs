//! Which tools a small model is shown for one message (`[chat] tool_shortlist = N`).
//!
//! MCP servers offer dozens of tools; a 135M-parameter model given twelve picks the one it has
//! seen most in training (a weather tool) whatever was asked. Shown a few that match the
//! question, it has a real choice. Tools are scored by the words they share with the user's
//! message — name (weighted most), title, description, parameter names and descriptions, enum
//! values — each word weighted by how rare it is among the tools (IDF), so "file" matters less
//! when every tool reads files. The best `N` are listed, best first; ties and tools that share
//! nothing keep their configured order, so an unrelated question still sees a stable list.
use std::collections::{HashMap, HashSet};

use rkmcp_tool_formats::convert::ToolDef;
use serde_json::Value;

/// Words that say nothing about which tool fits.
pub(super) const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do",
    "does", "for", "from", "get", "give", "has", "have", "how", "i", "in", "is", "it", "its", "me",
    "my", "now", "of", "on", "or", "please", "right", "show", "tell", "that", "the", "there",
    "this", "to", "use", "was", "what", "whats", "when", "where", "which", "who", "will", "with",
    "would", "you", "your",
];

/// Lowercase word stems of `text`: split on anything not alphanumeric and at camelCase humps,
/// stopwords dropped, plural and verb endings cut (`files` → `file`, `converting` → `convert`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    let mut flush = |word: &mut String| {
        if !word.is_empty() {
            let w = stem(&word.to_lowercase());
            if w.chars().count() > 1 && !STOPWORDS.contains(&w.as_str()) {
                out.push(w);
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                flush(&mut word);
            }
            prev_lower = c.is_lowercase();
            word.push(c);
        } else {
            flush(&mut word);
            prev_lower = false;
        }
    }
    flush(&mut word);
    out
}

/// `w` (lowercase) without its plural or verb ending.
pub(super) fn stem(w: &str) -> String {
    let long = |base: &str| base.chars().count() >= 3;
    if let Some(base) = w.strip_suffix("ies").filter(|b| long(b)) {
        return format!("{base}y");
    }
    if let Some(base) = w
        .strip_suffix("es")
        .filter(|b| long(b) && ["s", "x", "z", "ch", "sh"].iter().any(|e| b.ends_with(e)))
    {
        return base.to_string();
    }
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix).filter(|b| long(b)) {
            return base.to_string();
        }
    }
    match w.strip_suffix('s') {
        Some(base) if long(base) && !base.ends_with('s') => base.to_string(),
        _ => w.to_string(),
    }
}

/// `text` without its examples ("IANA timezone name (e.g., 'Asia/Tokyo')" → "IANA timezone
/// name ()"): a place named as an example says nothing about what a tool does, and would rank
/// the tool that happens to mention Tokyo above the one that tells the time.
fn without_examples(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    while let Some((start, marker)) = ["e.g.", "for example"]
        .iter()
        .filter_map(|m| lower[rest..].find(m).map(|i| (rest + i, m.len())))
        .min()
    {
        out.push_str(&text[rest..start]);
        // The example runs to the closing parenthesis, else to the end of the sentence.
        let tail = &lower[start + marker..];
        let end = tail
            .find(')')
            .or_else(|| tail.find(". ").map(|i| i + 1))
            .unwrap_or(tail.len());
        rest = start + marker + end;
    }
    out.push_str(&text[rest..]);
    out
}

/// Each word of a tool with the weight of the field it came from (the highest, if several).
fn tool_words(tool: &ToolDef) -> HashMap<String, f64> {
    let mut weights: HashMap<String, f64> = HashMap::new();
    let mut add = |text: &str, weight: f64| {
        for w in words(text) {
            let e = weights.entry(w).or_insert(0.0);
            *e = e.max(weight);
        }
    };
    add(&tool.name, 3.0);
    if let Some(d) = &tool.description {
        add(&without_examples(d), 1.0);
    }
    if let Some(title) = tool
        .annotations
        .as_ref()
        .and_then(|a| a.get("title"))
        .and_then(Value::as_str)
    {
        add(title, 2.0);
    }
    if let Some(props) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, prop) in props {
            add(name, 1.5);
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                add(&without_examples(d), 1.0);
            }
            for v in prop
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(s) = v.as_str() {
                    add(s, 1.0);
                }
            }
        }
    }
    weights
}

/// The relevance of each tool to `query`, in the tools' order.
pub fn scores(query: &str, tools: &[ToolDef]) -> Vec<f64> {
    let docs: Vec<HashMap<String, f64>> = tools.iter().map(tool_words).collect();
    let n = docs.len() as f64;
    let query: HashSet<String> = words(query).into_iter().collect();
    docs.iter()
        .map(|doc| {
            query
                .iter()
                .filter_map(|w| {
                    let weight = doc.get(w)?;
                    let df = docs.iter().filter(|d| d.contains_key(w)).count() as f64;
                    Some(weight * (1.0 + n / df).ln())
                })
                .sum()
        })
        .collect()
}

/// The `max` tools that best match `query`, best first (all of them, in their order, when
/// `max` is 0 or not smaller than their number). With `ties`, tools that score as well as the
/// last one taken come too: when the words cannot tell two tools apart, the model should.
pub fn shortlist(query: &str, tools: &[ToolDef], max: usize, ties: bool) -> Vec<ToolDef> {
    if max == 0 || tools.len() <= max {
        return tools.to_vec();
    }
    let scores = scores(query, tools);
    let mut order: Vec<usize> = (0..tools.len()).collect();
    // Stable: equal scores keep the configured order.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let cutoff = scores[order[max - 1]];
    let tied = |i: &usize| ties && cutoff > 0.0 && scores[*i] >= cutoff - 1e-9 * cutoff;
    let extra = order[max..].iter().take_while(|i| tied(i)).count();
    order
        .into_iter()
        .take(max + extra)
        .map(|i| tools[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, props: Value) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: Some(description.into()),
            input_schema: json!({"type": "object", "properties": props}),
            annotations: None,
        }
    }

    fn tools() -> Vec<ToolDef> {
        vec![
            tool(
                "tools__get_weather",
                "Current weather for a city",
                json!({"city": {"type": "string"}}),
            ),
            tool(
                "time__get_current_time",
                "Get current time in a specific timezone",
                json!({"timezone": {"type": "string", "description": "IANA timezone name"}}),
            ),
            tool(
                "files__read_text_file",
                "Read the complete contents of a file as text",
                json!({"path": {"type": "string"}}),
            ),
            tool(
                "files__list_directory",
                "Get a detailed listing of all files and directories in a specified path",
                json!({"path": {"type": "string"}}),
            ),
            tool(
                "everything__get-sum",
                "Returns the sum of two numbers",
                json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            ),
        ]
    }

    fn names(tools: &[ToolDef]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn words_are_split_stemmed_and_stopwords_dropped() {
        assert_eq!(
            words("What's in the readTextFile of my Files? converting cities"),
            ["read", "text", "file", "file", "convert", "city"]
        );
    }

    #[test]
    fn the_tool_that_shares_the_question_s_words_comes_first() {
        let t = tools();
        assert_eq!(
            names(&shortlist("What time is it in Tokyo?", &t, 2, false))[0],
            "time__get_current_time"
        );
        assert_eq!(
            names(&shortlist("Show me the files in /tmp/data", &t, 2, false)),
            ["files__read_text_file", "files__list_directory"]
        );
        assert_eq!(
            names(&shortlist("Add 17 and 25: what is the sum?", &t, 1, false)),
            ["everything__get-sum"]
        );
        assert_eq!(
            names(&shortlist("List the directory /srv", &t, 1, false)),
            ["files__list_directory"]
        );
    }

    #[test]
    fn unrelated_questions_keep_the_configured_order_and_zero_shows_everything() {
        let t = tools();
        assert_eq!(
            names(&shortlist("Hello there!", &t, 3, false)),
            names(&t[..3])
        );
        assert_eq!(names(&shortlist("files", &t, 0, false)), names(&t));
        assert_eq!(names(&shortlist("files", &t, 9, false)), names(&t));
    }

    /// The real tools of mcp-server-time (from the converter corpus) among the others.
    fn with_real_time_tools() -> Vec<ToolDef> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tool-formats/converter-corpus/tools/mcp-server-time.json"
        );
        let text = std::fs::read_to_string(path).expect("corpus file");
        let mut t: Vec<ToolDef> = serde_json::from_str(&text).expect("tools");
        t.extend(
            tools()
                .into_iter()
                .filter(|t| !t.name.starts_with("time__")),
        );
        t
    }

    #[test]
    fn examples_in_descriptions_do_not_count() {
        assert_eq!(
            without_examples(
                "Target IANA timezone name (e.g., 'Asia/Tokyo'). Use 'UTC' if unsure."
            ),
            "Target IANA timezone name (). Use 'UTC' if unsure."
        );
        assert_eq!(
            without_examples("A city, for example Paris. Or e.g. Rome"),
            "A city,  Or "
        );
        // convert_time names Tokyo as an example; that does not make it the Tokyo tool.
        let t = with_real_time_tools();
        let s = scores("What time is it in Tokyo?", &t);
        assert_eq!(s[0], s[1], "{s:?}");
    }

    #[test]
    fn tools_the_words_cannot_tell_apart_are_all_listed_when_ties_are_kept() {
        let t = with_real_time_tools();
        let q = "What time is it in Tokyo?";
        assert_eq!(names(&shortlist(q, &t, 1, false)), ["get_current_time"]);
        assert_eq!(
            names(&shortlist(q, &t, 1, true)),
            ["get_current_time", "convert_time"]
        );
        // A clear winner comes alone; nothing ties with a question that matches nothing.
        assert_eq!(
            names(&shortlist("Convert 09:30 Paris time to Tokyo", &t, 1, true)),
            ["convert_time"]
        );
        assert_eq!(names(&shortlist("Hello there!", &t, 1, true)).len(), 1);
    }
}
