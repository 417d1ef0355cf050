//! The generated GBNF grammars accept exactly what they promise: plain answers and valid calls of
//! the listed tools, and reject calls of unknown tools or with schema-invalid arguments.
//!
//! llama.cpp is not linked into this crate, so the grammars run on `Gbnf`, a small backtracking
//! GBNF interpreter written for this test (a test double for llama.cpp's grammar sampler,
//! covering the syntax the generator emits: literals, classes, `.`, groups, `|`, `*`, `+`, `?`,
//! `{m,n}` and rule references).
//!
//! Properties are constrained to the schema's key order, which is alphabetical here because
//! serde_json (without `preserve_order`) sorts object keys.

use std::collections::{BTreeSet, HashMap};

use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{
    GrammarMode, ToolDef, example_call, gbnf_grammar, gbnf_grammar_with,
};
use serde_json::json;

#[derive(Debug, Clone)]
enum Node {
    Lit(Vec<char>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Any,
    Ref(String),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Rep(Box<Node>, usize, Option<usize>),
}

struct Parser<'a> {
    s: &'a [char],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c == ' ') {
            self.pos += 1;
        }
    }

    fn escaped(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or("dangling escape")?;
        self.pos += 1;
        Ok(match c {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'x' => {
                let hex: String = self.s[self.pos..self.pos + 2].iter().collect();
                self.pos += 2;
                char::from_u32(u32::from_str_radix(&hex, 16).map_err(|e| e.to_string())?)
                    .ok_or("bad \\x")?
            }
            other => other,
        })
    }

    fn alt(&mut self) -> Result<Node, String> {
        let mut alts = vec![self.seq()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            alts.push(self.seq()?);
        }
        Ok(if alts.len() == 1 {
            alts.remove(0)
        } else {
            Node::Alt(alts)
        })
    }

    fn seq(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                None | Some('|') | Some(')') => break,
                _ => items.push(self.postfix()?),
            }
        }
        Ok(Node::Seq(items))
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.s[start..self.pos]
            .iter()
            .collect::<String>()
            .parse()
            .ok()
    }

    fn postfix(&mut self) -> Result<Node, String> {
        let mut n = self.primary()?;
        loop {
            n = match self.peek() {
                Some('*') => Node::Rep(Box::new(n), 0, None),
                Some('+') => Node::Rep(Box::new(n), 1, None),
                Some('?') => Node::Rep(Box::new(n), 0, Some(1)),
                Some('{') => {
                    self.pos += 1;
                    let lo = self.number().ok_or("bad {m,n}")?;
                    let hi = if self.peek() == Some(',') {
                        self.pos += 1;
                        self.number()
                    } else {
                        Some(lo)
                    };
                    if self.peek() != Some('}') {
                        return Err("unclosed {".into());
                    }
                    Node::Rep(Box::new(n), lo, hi)
                }
                _ => return Ok(n),
            };
            self.pos += 1;
        }
    }

    fn primary(&mut self) -> Result<Node, String> {
        match self.peek().ok_or("unexpected end")? {
            '"' => {
                self.pos += 1;
                let mut lit = Vec::new();
                loop {
                    match self.peek().ok_or("unclosed literal")? {
                        '"' => break,
                        '\\' => {
                            self.pos += 1;
                            lit.push(self.escaped()?);
                        }
                        c => {
                            lit.push(c);
                            self.pos += 1;
                        }
                    }
                }
                self.pos += 1;
                Ok(Node::Lit(lit))
            }
            '[' => {
                self.pos += 1;
                let negated = self.peek() == Some('^');
                if negated {
                    self.pos += 1;
                }
                let mut ranges = Vec::new();
                loop {
                    let c = match self.peek().ok_or("unclosed class")? {
                        ']' => break,
                        '\\' => {
                            self.pos += 1;
                            self.escaped()?
                        }
                        c => {
                            self.pos += 1;
                            c
                        }
                    };
                    if self.peek() == Some('-')
                        && self.s.get(self.pos + 1).is_some_and(|&d| d != ']')
                    {
                        self.pos += 1;
                        let hi = match self.peek().ok_or("bad range")? {
                            '\\' => {
                                self.pos += 1;
                                self.escaped()?
                            }
                            d => {
                                self.pos += 1;
                                d
                            }
                        };
                        ranges.push((c, hi));
                    } else {
                        ranges.push((c, c));
                    }
                }
                self.pos += 1;
                Ok(Node::Class { negated, ranges })
            }
            '.' => {
                self.pos += 1;
                Ok(Node::Any)
            }
            '(' => {
                self.pos += 1;
                let n = self.alt()?;
                if self.peek() != Some(')') {
                    return Err("unclosed (".into());
                }
                self.pos += 1;
                Ok(n)
            }
            c if c.is_ascii_alphanumeric() || c == '-' => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                {
                    self.pos += 1;
                }
                Ok(Node::Ref(self.s[start..self.pos].iter().collect()))
            }
            c => Err(format!("unexpected `{c}` at {}", self.pos)),
        }
    }
}

struct Gbnf {
    rules: HashMap<String, Node>,
}

impl Gbnf {
    fn parse(text: &str) -> Result<Gbnf, String> {
        let mut rules = HashMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (name, body) = line
                .split_once(" ::= ")
                .ok_or(format!("not a rule: {line}"))?;
            let chars: Vec<char> = body.chars().collect();
            let mut p = Parser { s: &chars, pos: 0 };
            let node = p.alt().map_err(|e| format!("rule {name}: {e}"))?;
            if p.pos != chars.len() {
                return Err(format!("rule {name}: trailing text at {}", p.pos));
            }
            rules.insert(name.to_string(), node);
        }
        Ok(Gbnf { rules })
    }

    /// All positions where `node` can end when started at `pos`.
    fn ends(&self, node: &Node, input: &[char], pos: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        match node {
            Node::Lit(l) => {
                if input[pos..].starts_with(l) {
                    out.insert(pos + l.len());
                }
            }
            Node::Class { negated, ranges } => {
                if let Some(&c) = input.get(pos) {
                    let hit = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                    if hit != *negated {
                        out.insert(pos + 1);
                    }
                }
            }
            Node::Any => {
                if pos < input.len() {
                    out.insert(pos + 1);
                }
            }
            Node::Ref(r) => return self.ends(&self.rules[r], input, pos),
            Node::Seq(items) => {
                let mut cur = BTreeSet::from([pos]);
                for item in items {
                    cur = cur
                        .iter()
                        .flat_map(|&p| self.ends(item, input, p))
                        .collect();
                    if cur.is_empty() {
                        break;
                    }
                }
                return cur;
            }
            Node::Alt(alts) => {
                for a in alts {
                    out.extend(self.ends(a, input, pos));
                }
            }
            Node::Rep(inner, lo, hi) => {
                // Each repetition must consume input, so positions strictly grow and the loop
                // ends after at most `input.len()` rounds.
                let mut cur = BTreeSet::from([pos]);
                let mut count = 0;
                if *lo == 0 {
                    out.insert(pos);
                }
                while !cur.is_empty() && hi.is_none_or(|h| count < h) {
                    cur = cur
                        .iter()
                        .flat_map(|&p| {
                            self.ends(inner, input, p)
                                .into_iter()
                                .filter(move |&e| e > p)
                        })
                        .collect();
                    count += 1;
                    if count >= *lo {
                        out.extend(cur.iter().copied());
                    }
                }
            }
        }
        out
    }

    fn accepts(&self, text: &str) -> bool {
        let input: Vec<char> = text.chars().collect();
        self.ends(&self.rules["root"], &input, 0)
            .contains(&input.len())
    }
}

fn tools() -> Vec<ToolDef> {
    serde_json::from_value(json!([
        {
            "name": "get_weather",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "unit": {"enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            }
        },
        {
            "name": "search",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "limit": {"type": "number"},
                    "exact": {"type": "boolean"},
                    "note": {"type": ["string", "null"]}
                }
            }
        }
    ]))
    .expect("tool defs")
}

fn grammar(format: ToolFormat) -> Gbnf {
    let text = gbnf_grammar(format, &tools()).unwrap_or_else(|| panic!("{format}: no grammar"));
    Gbnf::parse(&text).unwrap_or_else(|e| panic!("{format}: {e}\n{text}"))
}

#[test]
fn hermes_grammar_accepts_valid_calls_and_answers_only() {
    let g = grammar(ToolFormat::Hermes);
    let ok = [
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par\\\"is\", \"days\": 3, \"unit\": \"celsius\"}}\n</tool_call>",
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "fahrenheit"}}</tool_call>"#,
        r#"<tool_call>{"name": "search", "arguments": {}}</tool_call><tool_call>{"name": "search", "arguments": {"tags": ["a", "b"], "limit": -1.5e3, "exact": false, "note": null}}</tool_call>"#,
        r#"<tool_call>{"name": "search", "arguments": {"limit": 2}}</tool_call>"#,
        "It is sunny in Paris.",
        "Sure! Use <b>bold</b>.",
    ];
    for t in ok {
        assert!(g.accepts(t), "should accept: {t}");
    }
    let bad = [
        r#"<tool_call>{"name": "get_time", "arguments": {}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": 5}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 1.5}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "kelvin"}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "wind": true}}</tool_call>"#,
        r#"<tool_call>{"name": "search", "arguments": {"tags": [1]}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
        "<tool_call> oops",
        " leading space",
        "",
    ];
    for t in bad {
        assert!(!g.accepts(t), "should reject: {t}");
    }
}

#[test]
fn every_grammar_accepts_the_instruction_example_and_rejects_unknown_tools() {
    let t = tools();
    let mut checked = 0;
    for f in ToolFormat::all() {
        let Some(text) = gbnf_grammar(*f, &t) else {
            continue;
        };
        let g = Gbnf::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        let good = example_call(*f, "get_weather", &json!({"city": "Paris", "days": 2}));
        assert!(g.accepts(&good), "{f}: should accept {good}");
        let unknown = example_call(*f, "get_time", &json!({"city": "Paris"}));
        assert!(!g.accepts(&unknown), "{f}: should reject {unknown}");
        let invalid = example_call(*f, "get_weather", &json!({"days": 2}));
        assert!(!g.accepts(&invalid), "{f}: should reject {invalid}");
        assert!(g.accepts("Hello there."), "{f}: plain answer");
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} formats have grammars");
}

#[test]
fn plain_json_grammar_takes_objects_and_lists() {
    let g = grammar(ToolFormat::PlainJson);
    assert!(g.accepts(r#"{"name": "search", "arguments": {"exact": true}}"#));
    assert!(g.accepts(r#"[{"name": "search", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "x"}}]"#));
    assert!(!g.accepts(r#"[]"#));
    assert!(!g.accepts(r#"{"answer": 42}"#));
}

#[test]
fn a_tool_without_parameters_takes_only_empty_arguments() {
    let tools: Vec<ToolDef> = serde_json::from_value(json!([
        {"name": "no_params", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "closed", "inputSchema": {"type": "object", "additionalProperties": false}},
        {"name": "free", "inputSchema": {"type": "object"}},
        {"name": "open", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": true}},
        {"name": "typed_extra", "inputSchema": {"type": "object", "additionalProperties": {"type": "string"}}}
    ]))
    .expect("tool defs");
    let g =
        Gbnf::parse(&gbnf_grammar(ToolFormat::Hermes, &tools).expect("grammar")).expect("parse");
    let call = |name: &str, args: &str| {
        format!(r#"<tool_call>{{"name": "{name}", "arguments": {args}}}</tool_call>"#)
    };
    for name in ["no_params", "closed", "free", "open", "typed_extra"] {
        assert!(g.accepts(&call(name, "{}")), "{name}: {{}}");
    }
    for name in ["no_params", "closed"] {
        assert!(
            !g.accepts(&call(name, r#"{"answer": 17}"#)),
            "{name}: extra key"
        );
    }
    for name in ["free", "open", "typed_extra"] {
        assert!(
            g.accepts(&call(name, r#"{"answer": "17"}"#)),
            "{name}: any key"
        );
    }
}

#[test]
fn interpreter_self_check() {
    let g = Gbnf::parse("root ::= \"a\" [0-9]{1,2} (\"x\" | \"y\")* [^a] .\n").expect("parse");
    assert!(g.accepts("a1xyxbq"));
    assert!(g.accepts("a12bb"));
    assert!(!g.accepts("a123bb"));
    assert!(!g.accepts("a1ab"));
}

#[test]
fn call_only_grammars_refuse_plain_answers() {
    for f in ToolFormat::all() {
        let Some(text) = gbnf_grammar_with(*f, &tools(), GrammarMode::CallOnly) else {
            continue;
        };
        let g = Gbnf::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(!g.accepts("Hello there."), "{f}");
        let good = example_call(*f, "search", &json!({"exact": true}));
        assert!(g.accepts(&good), "{f}: {good}");
        assert!(!text.contains("answer"), "{f}: {text}");
    }
    // One call only: a tiny model made to call would otherwise repeat it to the token limit.
    for f in [ToolFormat::Hermes, ToolFormat::ToolCallJson] {
        let good = example_call(f, "search", &json!({"exact": true}));
        let twice = format!("{good}\n{good}");
        let only =
            Gbnf::parse(&gbnf_grammar_with(f, &tools(), GrammarMode::CallOnly).unwrap()).unwrap();
        let either = Gbnf::parse(&gbnf_grammar(f, &tools()).unwrap()).unwrap();
        assert!(!only.accepts(&twice), "{f}");
        assert!(either.accepts(&twice), "{f}");
    }
}

#[test]
fn answer_only_grammars_refuse_calls() {
    for f in ToolFormat::all() {
        let Some(text) = gbnf_grammar_with(*f, &tools(), GrammarMode::AnswerOnly) else {
            continue;
        };
        let g = Gbnf::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(g.accepts("It is 12:30 in Tokyo."), "{f}: {text}");
        let call = example_call(*f, "search", &json!({"exact": true}));
        assert!(!g.accepts(&call), "{f}: {call}");
    }
}
