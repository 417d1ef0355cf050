//! The tools a user's message names ("Use the get-sum tool", "call get_sum", "the sum tool").
//!
//! A tiny model asked to choose between the tools and `answer_directly` answers in prose even
//! when told which tool to use. A person who names a tool wants it called, so the engine holds
//! the first round of the turn to a call of the named tool (see [`super::round`]).
//!
//! What names a tool — strict, so that ordinary words are not read as names:
//! 1. a name-like word (with `-` or `_` inside, or camelCase) that is a tool's name or its
//!    exposed name once case and `-`/`_` are ignored: `get-sum`, `get_sum`, `getSum`,
//!    `everything__get-sum`;
//! 2. words right before "tool", "tools" or "function" that are all words of one tool's name:
//!    "the get sum tool", "the sum tool", "your echo tool". At least one of them says something
//!    ("the get tool" names nothing), and an indefinite article before them asks about a kind of
//!    tool, not for one ("is there a weather tool?" names nothing);
//! 3. every word of a name of two words or more, in order, after "use", "using", "call", "run"
//!    or "invoke": "use get sum", "call the get current time".
//!
//! A plain word alone never names a tool: "the echo of the mountains" and "echo this" name
//! nothing. A mention right after a negation ("don't use the echo tool", "without get-sum")
//! names nothing. A mention that fits several tools names them all (the model chooses among
//! them), only those whose name is exactly the mentioned words if there are such; one that fits
//! more than [`MAX_AMBIGUOUS`] tools says too little and names none.
use rkmcp_tool_formats::convert::ToolDef;
use serde::Serialize;

use super::shortlist::{STOPWORDS, stem};

/// A mention that fits more tools than this names none of them.
pub const MAX_AMBIGUOUS: usize = 3;

/// The longest run of words before "tool" read as a name.
const MAX_MENTION_WORDS: usize = 4;

/// The nouns after which the words before are read as a tool's name.
const TOOL_NOUNS: &[&str] = &["tool", "tools", "function"];

/// The verbs after which a tool's spaced name is read as a name.
const CALL_VERBS: &[&str] = &["use", "using", "call", "run", "invoke"];

/// Words between a verb or a mention's start and the name; they end the run of name words.
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "your", "my", "our", "their", "its", "any",
    "some",
];

/// Before a mention, these ask about a kind of tool rather than name one.
const INDEFINITE: &[&str] = &["a", "an", "any", "some"];

/// Before a mention (within [`NEGATION_REACH`] words), these say the tool is not wanted.
const NEGATIONS: &[&str] = &["not", "no", "never", "without", "dont", "instead", "avoid"];
const NEGATION_REACH: usize = 3;

/// A tool as the user may name it.
#[derive(Debug, Clone, Copy)]
pub struct ToolName<'a> {
    /// The name the model sees (`everything__get-sum`).
    pub exposed: &'a str,
    /// The server's own name for it (`get-sum`).
    pub tool: &'a str,
}

/// A tool the message named, and the words that named it (for the transcript).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedTool {
    /// The exposed name.
    pub tool: String,
    /// The message's words that named it.
    pub mention: String,
}

/// The tools `message` names, in the order of `tools`, each once (with its first mention).
pub fn named_tools(message: &str, tools: &[ToolName<'_>]) -> Vec<NamedTool> {
    let known: Vec<Known> = tools.iter().map(Known::new).collect();
    let words = tokens(message);
    let mut found: Vec<Option<String>> = vec![None; tools.len()];
    let mut note = |indices: Vec<usize>, mention: &str| {
        for i in indices {
            found[i].get_or_insert_with(|| mention.to_string());
        }
    };
    for (at, word) in words.iter().enumerate() {
        let Some(word) = word else { continue };
        if let Some((indices, mention)) = by_name_like_word(&known, &words, at, word) {
            note(indices, mention);
        }
        let lower = word.to_lowercase();
        if TOOL_NOUNS.contains(&lower.as_str())
            && let Some((indices, mention)) = by_words_before_noun(&known, &words, at)
        {
            note(indices, &mention);
        }
        if CALL_VERBS.contains(&lower.as_str())
            && let Some((indices, mention)) = by_spaced_name_after_verb(&known, &words, at)
        {
            note(indices, &mention);
        }
    }
    tools
        .iter()
        .zip(found)
        .filter_map(|(t, mention)| {
            mention.map(|mention| NamedTool {
                tool: t.exposed.to_string(),
                mention,
            })
        })
        .collect()
}

/// `listed` (the shortlist) with the named tools of `all` it lacks put first: a tool the user
/// named is shown to the model whatever the shortlist chose.
pub fn with_named(mut listed: Vec<ToolDef>, all: &[ToolDef], named: &[NamedTool]) -> Vec<ToolDef> {
    let missing: Vec<ToolDef> = all
        .iter()
        .filter(|t| named.iter().any(|n| n.tool == t.name))
        .filter(|t| !listed.iter().any(|l| l.name == t.name))
        .cloned()
        .collect();
    listed.splice(0..0, missing);
    listed
}

/// What a tool's names are compared with.
struct Known {
    /// The tool's name and its exposed name, lowercase, parts joined by `_`.
    keys: [String; 2],
    /// The stemmed words of the tool's own name.
    words: Vec<String>,
}

impl Known {
    fn new(t: &ToolName<'_>) -> Known {
        Known {
            keys: [key(t.tool), key(t.exposed)],
            words: parts(t.tool).iter().map(|p| stem(p)).collect(),
        }
    }
}

/// The message's words in order; `None` where punctuation ends a phrase. `/` and whitespace
/// only separate words (`everything/get-sum` is two words of one phrase).
fn tokens(text: &str) -> Vec<Option<&str>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() || matches!(c, '-' | '_' | '\'' | '’') {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            let w = trim(&text[s..i]);
            out.push((!w.is_empty()).then_some(w));
        }
        if !c.is_whitespace() && c != '/' {
            out.push(None);
        }
    }
    if let Some(s) = start {
        let w = trim(&text[s..]);
        out.push((!w.is_empty()).then_some(w));
    }
    out
}

/// `w` without the dashes and quotes around it (`-3`, `'hi'`).
fn trim(w: &str) -> &str {
    w.trim_matches(|c| matches!(c, '-' | '_' | '\'' | '’'))
}

/// The lowercase parts of a name: split at `-`, `_` and camelCase humps.
fn parts(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut part = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '-' || c == '_' || (c.is_uppercase() && prev_lower) {
            if !part.is_empty() {
                out.push(std::mem::take(&mut part));
            }
            prev_lower = false;
            if c == '-' || c == '_' {
                continue;
            }
        }
        prev_lower = c.is_lowercase();
        part.extend(c.to_lowercase());
    }
    if !part.is_empty() {
        out.push(part);
    }
    out
}

/// A name compared without case or separators: `get-sum`, `get_sum` and `getSum` are `get_sum`.
fn key(name: &str) -> String {
    parts(name).join("_")
}

/// Rule 1: `word` is name-like and is some tool's name.
fn by_name_like_word<'w>(
    known: &[Known],
    words: &[Option<&'w str>],
    at: usize,
    word: &'w str,
) -> Option<(Vec<usize>, &'w str)> {
    if parts(word).len() < 2 || negated(words, at) {
        return None;
    }
    let k = key(word);
    let indices: Vec<usize> = (0..known.len())
        .filter(|&i| known[i].keys.contains(&k))
        .collect();
    (!indices.is_empty()).then_some((indices, word))
}

/// Rule 2: the words before the noun at `noun` (a run without determiners or punctuation) are
/// all words of some tool's name; the longest such run is the mention.
fn by_words_before_noun(
    known: &[Known],
    words: &[Option<&str>],
    noun: usize,
) -> Option<(Vec<usize>, String)> {
    let mut best: Option<(usize, Vec<usize>, Vec<String>)> = None;
    for len in 1..=MAX_MENTION_WORDS.min(noun) {
        let Some(word) = words[noun - len] else { break };
        if DETERMINERS.contains(&word.to_lowercase().as_str()) {
            break;
        }
        let mentioned: Vec<String> = words[noun - len..noun]
            .iter()
            .flatten()
            .flat_map(|w| parts(w))
            .map(|p| stem(&p))
            .collect();
        let fits: Vec<usize> = (0..known.len())
            .filter(|&i| mentioned.iter().all(|w| known[i].words.contains(w)))
            .collect();
        if fits.is_empty() {
            break;
        }
        best = Some((len, fits, mentioned));
    }
    let (len, fits, mentioned) = best?;
    let start = noun - len;
    let says_something = mentioned.iter().any(|w| !STOPWORDS.contains(&w.as_str()));
    let indefinite = start > 0
        && words[start - 1].is_some_and(|w| INDEFINITE.contains(&w.to_lowercase().as_str()));
    if !says_something || indefinite || negated(words, start) {
        return None;
    }
    // "the echo tool" names `echo`, not also `echo_twice`.
    let exact: Vec<usize> = fits
        .iter()
        .copied()
        .filter(|&i| {
            known[i].words.iter().all(|w| mentioned.contains(w))
                && mentioned.iter().all(|w| known[i].words.contains(w))
        })
        .collect();
    let indices = if exact.is_empty() { fits } else { exact };
    let mention = words[start..=noun]
        .iter()
        .flatten()
        .copied()
        .collect::<Vec<_>>();
    (indices.len() <= MAX_AMBIGUOUS).then(|| (indices, mention.join(" ")))
}

/// Rule 3: after the verb at `verb` (and any determiner), the whole spaced name of a tool of two
/// words or more.
fn by_spaced_name_after_verb(
    known: &[Known],
    words: &[Option<&str>],
    verb: usize,
) -> Option<(Vec<usize>, String)> {
    if negated(words, verb) {
        return None;
    }
    let mut start = verb + 1;
    while let Some(Some(w)) = words.get(start)
        && DETERMINERS.contains(&w.to_lowercase().as_str())
    {
        start += 1;
    }
    let mut indices = Vec::new();
    let mut longest = 0;
    for (i, tool) in known.iter().enumerate() {
        let n = tool.words.len();
        let Some(following) = words.get(start..start + n) else {
            continue;
        };
        let same = n >= 2
            && following.iter().zip(&tool.words).all(|(w, want)| {
                w.is_some_and(|w| parts(w).len() == 1 && stem(&w.to_lowercase()) == *want)
            });
        if same {
            indices.push(i);
            longest = longest.max(n);
        }
    }
    if indices.is_empty() {
        return None;
    }
    let mention: Vec<&str> = words[start..start + longest]
        .iter()
        .flatten()
        .copied()
        .collect();
    Some((indices, mention.join(" ")))
}

/// Whether a negation comes shortly before the word at `at` in the same phrase.
fn negated(words: &[Option<&str>], at: usize) -> bool {
    words[..at]
        .iter()
        .rev()
        .take(NEGATION_REACH)
        .map_while(|w| *w)
        .any(|w| {
            let w = w.to_lowercase().replace('’', "'");
            NEGATIONS.contains(&w.replace('\'', "").as_str()) || w.ends_with("n't")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools of the evaluation's servers (and two that share a word).
    const TOOLS: &[(&str, &str)] = &[
        ("time__get_current_time", "get_current_time"),
        ("time__convert_time", "convert_time"),
        ("everything__echo", "echo"),
        ("everything__get-sum", "get-sum"),
        ("files__read_text_file", "read_text_file"),
        ("files__list_directory", "list_directory"),
        ("files__search_files", "search_files"),
        ("tools__get_weather", "get_weather"),
        ("tools__calculate", "calculate"),
        ("tools__word_count", "word_count"),
        ("tools__add_tags", "add_tags"),
        ("tools__search_flights", "search_flights"),
        ("tools__set_reminder", "set_reminder"),
        ("fx__echoTwice", "echoTwice"),
    ];

    fn named(message: &str) -> Vec<String> {
        let tools: Vec<ToolName<'_>> = TOOLS
            .iter()
            .map(|(exposed, tool)| ToolName { exposed, tool })
            .collect();
        named_tools(message, &tools)
            .into_iter()
            .map(|n| n.tool)
            .collect()
    }

    #[test]
    fn a_tool_named_by_its_name_in_any_spelling_is_found() {
        let cases: &[(&str, &[&str])] = &[
            // The exposed name, the server's name, separators swapped, camelCase.
            (
                "Call everything__get-sum with 2 and 3",
                &["everything__get-sum"],
            ),
            (
                "What is 19 plus 23? Use the get-sum tool.",
                &["everything__get-sum"],
            ),
            ("get-sum: 8 and -3", &["everything__get-sum"]),
            ("use get_sum for 4 and 5", &["everything__get-sum"]),
            ("GET-SUM 4 5", &["everything__get-sum"]),
            ("try getSum on 1 and 2", &["everything__get-sum"]),
            ("everything/get-sum, 2 and 2", &["everything__get-sum"]),
            (
                "Run read-text-file on notes.txt",
                &["files__read_text_file"],
            ),
            ("echo_twice: hi", &["fx__echoTwice"]),
            // Spaced, before "tool", or after a verb.
            (
                "What is 19 plus 23? Use the get sum tool.",
                &["everything__get-sum"],
            ),
            ("use get sum on 19 and 23", &["everything__get-sum"]),
            (
                "Please call the get current time for Paris",
                &["time__get_current_time"],
            ),
            (
                "With the word count function, count 'a b c'",
                &["tools__word_count"],
            ),
            // Distinctive words before "tool".
            ("Add 17 and 25 with the sum tool.", &["everything__get-sum"]),
            ("Use the echo tool to repeat: hi", &["everything__echo"]),
            ("Ask the weather tool about Oslo", &["tools__get_weather"]),
            ("Use your tags tool on note 4", &["tools__add_tags"]),
            (
                "the current time tool, for Tokyo",
                &["time__get_current_time"],
            ),
            // Two tools named.
            (
                "Use get-sum, then the echo tool",
                &["everything__echo", "everything__get-sum"],
            ),
        ];
        for (message, want) in cases {
            assert_eq!(named(message), *want, "{message}");
        }
    }

    #[test]
    fn ordinary_words_negations_and_questions_about_kinds_of_tools_name_nothing() {
        let cases = [
            "Write a poem about the echo of the mountains.",
            "Echo back the message 'hello world'.",
            "Please echo: hello from the evaluation.",
            "What is the sum of 3.5 and 4.25?",
            "Calculate (3 + 4) * 12.",
            "Get the current time in Tokyo.",
            "What tools do you have?",
            "Which tool tells the time?",
            "Is there a weather tool?",
            "Use the get tool",
            "Don't use the echo tool, just say hi.",
            "Answer without get-sum: what is 2 and 2?",
            "I do not want get sum used",
            "A well-known sum of money",
            "the calculator tool",
            "",
        ];
        for message in cases {
            assert_eq!(named(message), Vec::<String>::new(), "{message}");
        }
    }

    #[test]
    fn a_mention_that_fits_a_few_tools_names_them_all_and_more_names_none() {
        // Both time tools have "time"; both searches "search".
        assert_eq!(
            named("Use the time tool for Tokyo"),
            ["time__get_current_time", "time__convert_time"]
        );
        assert_eq!(
            named("the search tool: flights to Rome"),
            ["files__search_files", "tools__search_flights"]
        );
        // "echo" is exactly `echo`'s name and only part of `echoTwice`'s.
        assert_eq!(named("the echo tool"), ["everything__echo"]);
        assert_eq!(named("the echo twice tool"), ["fx__echoTwice"]);
        // A name two servers share names both.
        let tools = [
            ToolName {
                exposed: "a__echo",
                tool: "echo",
            },
            ToolName {
                exposed: "b__echo",
                tool: "echo",
            },
        ];
        let both: Vec<String> = named_tools("the echo tool", &tools)
            .into_iter()
            .map(|n| n.tool)
            .collect();
        assert_eq!(both, ["a__echo", "b__echo"]);
        // Four tools with "get": too many (and "get" says nothing anyway).
        let many: Vec<(String, String)> = (0..4)
            .map(|i| (format!("s__fetch_{i}"), format!("fetch_{i}")))
            .collect();
        let tools: Vec<ToolName<'_>> = many
            .iter()
            .map(|(e, t)| ToolName {
                exposed: e,
                tool: t,
            })
            .collect();
        assert!(named_tools("use the fetch tool", &tools).is_empty());
        assert_eq!(named_tools("use the fetch 2 tool", &tools).len(), 1);
    }

    #[test]
    fn the_mention_is_recorded_as_the_user_wrote_it() {
        let tools = [ToolName {
            exposed: "everything__get-sum",
            tool: "get-sum",
        }];
        let found = |m: &str| named_tools(m, &tools);
        assert_eq!(
            found("What is 19 plus 23? Use the get-sum tool."),
            [NamedTool {
                tool: "everything__get-sum".into(),
                mention: "get-sum".into()
            }]
        );
        assert_eq!(found("Ask the Get Sum tool")[0].mention, "Get Sum tool");
        assert_eq!(found("use get sum on 2 and 3")[0].mention, "get sum");
    }

    #[test]
    fn named_tools_the_shortlist_left_out_are_listed_first() {
        let def = |name: &str| ToolDef {
            name: name.into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            annotations: None,
        };
        let all: Vec<ToolDef> = ["a", "b", "c", "d"].into_iter().map(def).collect();
        let named = |names: &[&str]| -> Vec<NamedTool> {
            names
                .iter()
                .map(|n| NamedTool {
                    tool: n.to_string(),
                    mention: n.to_string(),
                })
                .collect()
        };
        let listed =
            |tools: Vec<ToolDef>| -> Vec<String> { tools.into_iter().map(|t| t.name).collect() };
        let short = vec![def("c")];
        assert_eq!(
            listed(with_named(short.clone(), &all, &named(&["d", "b"]))),
            ["b", "d", "c"]
        );
        assert_eq!(
            listed(with_named(short.clone(), &all, &named(&["c"]))),
            ["c"]
        );
        assert_eq!(listed(with_named(short, &all, &[])), ["c"]);
    }

    #[test]
    fn names_are_split_at_separators_and_humps() {
        assert_eq!(parts("everything__get-sum"), ["everything", "get", "sum"]);
        assert_eq!(parts("readTextFile"), ["read", "text", "file"]);
        assert_eq!(key("Get_Sum"), key("get-sum"));
        assert_eq!(
            tokens("Use the get-sum tool. 'hi' -3 everything/echo"),
            [
                Some("Use"),
                Some("the"),
                Some("get-sum"),
                Some("tool"),
                None,
                Some("hi"),
                Some("3"),
                Some("everything"),
                Some("echo")
            ]
        );
    }
}
