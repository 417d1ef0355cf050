//! `gemma4` (Gemma 4): `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:5}<tool_call|>`. Strings are
//! delimited by the `<|"|>` token; keys are bare; numbers, `true`/`false`/`null`, `{…}` and
//! `[…]` as in JSON. Reasoning is the thought channel `<|channel>thought…<channel|>`.

use serde_json::{Map, Number, Value};

use super::grammar::{Literals, Rules, Values, args_schema, call_list, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;

pub(crate) static FORMAT: Format = Format {
    name: "gemma4",
    detector: |s| Box::new(MarkerDetector::new(GEMMA4, &["<tool_call|>"], s)),
    reasoning: &[("<|channel>thought", "<channel|>")],
    // After a call the model goes on with the token its template puts next: the response.
    end_tokens: &["<turn|>", "<eos>", "<|tool_response>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write <|tool_call>call:NAME{argument:value,…}<tool_call|> with text values between <|\"|> tokens",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<|tool_call>", 15), ("<|\"|>", 15)],
        names: &[("gemma4", 116)],
        family: &[("<|turn>", 35)],
    },
};

const QUOTE: &str = "<|\"|>";
const START: &str = "<|tool_call>";
const END: &str = "<tool_call|>";

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("{START}call:{name}{}{END}", write_object(args, QUOTE))
}

fn result(r: &ResultTurn) -> String {
    format!(
        "<|tool_response>response:{}{{value:{QUOTE}{}{QUOTE}}}<tool_response|>",
        r.name, r.body
    )
}

/// `{k:v,…}` with strings between `quote` tokens.
pub(crate) fn write_object(args: &Map<String, Value>, quote: &str) -> String {
    let items: Vec<String> = args
        .iter()
        .map(|(k, v)| format!("{k}:{}", write_value(v, quote)))
        .collect();
    format!("{{{}}}", items.join(","))
}

fn write_value(v: &Value, quote: &str) -> String {
    match v {
        Value::String(s) => format!("{quote}{s}{quote}"),
        Value::Object(o) => write_object(o, quote),
        Value::Array(a) => format!(
            "[{}]",
            a.iter()
                .map(|x| write_value(x, quote))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

/// The first `end` marker outside `quote`-delimited strings.
pub(crate) fn end_outside_quotes(body: &str, quote: &str, end: &str) -> Option<(usize, usize)> {
    let mut i = 0;
    let mut in_str = false;
    while i < body.len() {
        let r = &body[i..];
        if r.starts_with(quote) {
            in_str = !in_str;
            i += quote.len();
            continue;
        }
        if !in_str && r.starts_with(end) {
            return Some((i, i + end.len()));
        }
        i += r.chars().next().map_or(1, char::len_utf8);
    }
    None
}

fn gemma4_end(body: &str) -> Option<(usize, usize)> {
    end_outside_quotes(body, QUOTE, END)
}

fn gemma4_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    call_blocks(raw, inner, terminated, QUOTE, END)
}

/// One or more `call:NAME{…}` in a block (`inner` is between the markers).
pub(crate) fn call_blocks(
    raw: &str,
    inner: &str,
    terminated: bool,
    quote: &str,
    end: &str,
) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut p = Lit {
        s: inner,
        pos: 0,
        quote,
    };
    loop {
        p.ws();
        if p.at_end() {
            break;
        }
        match p.call() {
            Ok((name, arguments)) => out.push(Parsed::Call {
                name,
                arguments,
                id: None,
            }),
            // Cut off by the end of the response: malformed, never a partial call.
            Err(_) if !terminated => return vec![Parsed::bad(raw, format!("missing {end}"))],
            Err(e) => return vec![Parsed::bad(raw, e)],
        }
    }
    if out.is_empty() {
        let error = if terminated {
            "empty tool call".to_string()
        } else {
            format!("missing {end}")
        };
        out.push(Parsed::bad(raw, error));
    }
    // Complete calls whose end marker never came (a runtime may stop at it) still count.
    out
}

/// Gemma's call literal syntax.
struct Lit<'a> {
    s: &'a str,
    pos: usize,
    quote: &'a str,
}

impl<'a> Lit<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn ws(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn err(&self, what: &str) -> String {
        let near = crate::parse::near(self.rest(), 20);
        format!("{what} at byte {} (near `{near}`)", self.pos)
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn call(&mut self) -> Result<(String, Value), String> {
        self.ws();
        let r = self.rest();
        let Some(after) = r.strip_prefix("call:") else {
            return Err(self.err("expected `call:NAME{…}`"));
        };
        let brace = after
            .find('{')
            .ok_or_else(|| self.err("expected `{` after the name"))?;
        let name = after[..brace].trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(self.err("invalid function name"));
        }
        let name = name.to_string();
        self.pos += "call:".len() + brace;
        let args = self.object()?;
        Ok((name, args))
    }

    fn object(&mut self) -> Result<Value, String> {
        if !self.eat('{') {
            return Err(self.err("expected `{`"));
        }
        let mut m = Map::new();
        if self.eat('}') {
            return Ok(Value::Object(m));
        }
        loop {
            self.ws();
            let key = if self.rest().starts_with(self.quote) {
                self.string()?
            } else {
                let r = self.rest();
                let end = r.find(':').ok_or_else(|| self.err("expected `key:`"))?;
                let k = r[..end].trim().trim_matches('"').to_string();
                self.pos += end;
                k
            };
            if key.is_empty() || !self.eat(':') {
                return Err(self.err("expected `key:`"));
            }
            let v = self.value()?;
            m.insert(key, v);
            if self.eat(',') {
                continue;
            }
            if self.eat('}') {
                return Ok(Value::Object(m));
            }
            return Err(self.err("expected `,` or `}`"));
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += self.quote.len();
        let r = self.rest();
        let end = r
            .find(self.quote)
            .ok_or_else(|| self.err("unterminated string"))?;
        let s = r[..end].to_string();
        self.pos += end + self.quote.len();
        Ok(s)
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        let r = self.rest();
        if r.starts_with(self.quote) {
            return self.string().map(Value::String);
        }
        if r.starts_with('{') {
            return self.object();
        }
        if r.starts_with('[') {
            self.pos += 1;
            let mut items = Vec::new();
            if self.eat(']') {
                return Ok(Value::Array(items));
            }
            loop {
                items.push(self.value()?);
                if self.eat(',') {
                    continue;
                }
                if self.eat(']') {
                    return Ok(Value::Array(items));
                }
                return Err(self.err("expected `,` or `]`"));
            }
        }
        if r.starts_with('"') {
            // A JSON string the model wrote instead of the quote token.
            let mut de = serde_json::Deserializer::from_str(r).into_iter::<Value>();
            if let Some(Ok(v @ Value::String(_))) = de.next() {
                self.pos += de.byte_offset();
                return Ok(v);
            }
        }
        let end = r.find([',', '}', ']']).unwrap_or(r.len());
        let tok = r[..end].trim();
        if tok.is_empty() {
            return Err(self.err("expected a value"));
        }
        self.pos += end;
        Ok(match tok {
            "true" | "True" => Value::Bool(true),
            "false" | "False" => Value::Bool(false),
            "null" | "None" => Value::Null,
            _ => match serde_json::from_str::<Number>(tok) {
                Ok(n) => Value::Number(n),
                // A bare word: the text itself.
                Err(_) => Value::String(tok.to_string()),
            },
        })
    }
}

pub(crate) static GEMMA4: &[Block] = &[Block {
    start: START,
    end: End::Finder {
        find: gemma4_end,
        closers: ">",
    },
    parse: gemma4_body,
}];

/// Gemma 4's literals: strings between `<|"|>` tokens, JSON's `true`/`false`/`null`, bare keys.
pub(crate) const LITS: Literals = Literals {
    quote: Some(QUOTE),
    forbid: &[],
    true_: "true",
    false_: "false",
    null: "null",
    quoted_keys: false,
    sep: r#"",""#,
    colon: r#"":""#,
};

/// One `<|tool_call>` block per call; the markers and the string quote are special tokens of
/// Gemma 4's vocabulary.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    const START_TOKEN: &str = START;
    const END_TOKEN: &str = END;
    let mut r = Rules::default();
    let mut values = Values::new(&LITS, &mut r);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = values
            .keyword_args(&args_schema(t), "\":\"", r)
            .unwrap_or_default();
        format!(
            "{START_TOKEN} {} \"{{\" {args} \"}}\" {END_TOKEN}",
            lit(&format!("call:{}", t.name))
        )
    });
    r.named("calls", "call_list");
    r.finish()
}
