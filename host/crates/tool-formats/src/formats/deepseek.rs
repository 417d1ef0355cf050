//! `deepseek` (R1, V3, V3.1):
//! `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`
//! (R1/V3 write `function<｜tool▁sep｜>NAME` and a ```json block). The detector also reads the
//! V3.2/V4 DSML blocks, since a model name alone cannot tell the versions apart.

use serde_json::{Map, Value};

use super::deepseek_dsml::DSML_BLOCKS;
use super::grammar::{Rules, args_schema, call_list, json_expr, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, THINK, tojson};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::strip_fence;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, call_with_json_args};
use crate::scan::unquoted_end;

pub(crate) static FORMAT: Format = Format {
    name: "deepseek",
    detector: |s| Box::new(MarkerDetector::new(DEEPSEEK, DEEPSEEK_HIDDEN, s)),
    reasoning: THINK,
    end_tokens: &["<｜end▁of▁sentence｜>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, use the tool-call markers with the arguments as a JSON block",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("tool▁calls▁begin", 50), ("tool▁call▁begin", 50)],
        names: &[("deepseek", 90)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    let args = tojson(&Value::Object(args.clone()));
    format!(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )
}

pub(crate) fn result(r: &ResultTurn) -> String {
    format!("<｜tool▁output▁begin｜>{}<｜tool▁output▁end｜>", r.body)
}

const DS_CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";

const DS_CALLS_END: &str = "<｜tool▁calls▁end｜>";

const DS_CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";

const DS_CALL_END: &str = "<｜tool▁call▁end｜>";

const DS_SEP: &str = "<｜tool▁sep｜>";

fn deepseek_calls(raw: &str, inner: &str, _terminated: bool) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut rest = inner;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let Some(after) = t.strip_prefix(DS_CALL_BEGIN) else {
            let near = crate::parse::near(t, 30);
            out.push(Parsed::bad(
                raw,
                format!("unexpected text `{near}` where {DS_CALL_BEGIN} was expected"),
            ));
            break;
        };
        // A marker quoted in a JSON argument value does not end the call.
        match unquoted_end(after, DS_CALL_END).map(|(e, _)| e) {
            Some(e) => {
                let seg = &t[..DS_CALL_BEGIN.len() + e + DS_CALL_END.len()];
                out.push(deepseek_one(seg, &after[..e]));
                rest = &after[e + DS_CALL_END.len()..];
            }
            None => {
                out.push(deepseek_one_unterminated(t, after));
                break;
            }
        }
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "no calls between the tool-call markers"));
    }
    out
}

fn deepseek_one_unterminated(seg: &str, body: &str) -> Parsed {
    match deepseek_one(seg, body) {
        Parsed::Bad { raw, error } => Parsed::Bad {
            raw,
            error: format!("{error} (missing {DS_CALL_END})"),
        },
        ok => ok,
    }
}

fn deepseek_one(raw: &str, body: &str) -> Parsed {
    let Some((left, right)) = body.split_once(DS_SEP) else {
        return Parsed::bad(raw, format!("missing {DS_SEP}"));
    };
    let left = left.trim();
    // R1/V3 put the type before the separator and the name on the first line after it; V3.1 puts
    // the name before the separator.
    let (name, args) = if left == "function" || left.is_empty() {
        let right = right.trim_start();
        match right.split_once('\n') {
            Some((n, a)) => (n.trim(), a),
            None => match right.find(['{', '`']) {
                Some(p) => (right[..p].trim(), &right[p..]),
                None => (right.trim(), ""),
            },
        }
    } else {
        (left, right)
    };
    if name.is_empty() {
        return Parsed::bad(raw, "tool call without a name");
    }
    call_with_json_args(raw, name, strip_fence(args), None)
}

fn deepseek_single(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if terminated {
        vec![deepseek_one(raw, inner)]
    } else {
        vec![deepseek_one_unterminated(raw, inner)]
    }
}

/// DeepSeek's call tokens are special tokens: never text, even out of place.
pub(crate) static DEEPSEEK_HIDDEN: &[&str] = &[DS_CALLS_END, DS_CALL_END, DS_SEP];

/// The markers spelt with `_` instead of `▁`, as R1 distills (and converted tokenizers) also
/// write them: `(variant, canonical)`.
const DS_UNDERSCORE: [(&str, &str); 5] = [
    ("<｜tool_calls_begin｜>", DS_CALLS_BEGIN),
    ("<｜tool_calls_end｜>", DS_CALLS_END),
    ("<｜tool_call_begin｜>", DS_CALL_BEGIN),
    ("<｜tool_call_end｜>", DS_CALL_END),
    ("<｜tool_sep｜>", DS_SEP),
];

/// `inner` with the underscore markers in their canonical spelling.
fn canonical(inner: &str) -> String {
    DS_UNDERSCORE
        .iter()
        .fold(inner.to_string(), |s, (v, c)| s.replace(v, c))
}

fn deepseek_calls_underscore(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    deepseek_calls(raw, &canonical(inner), terminated)
}

pub(crate) static DEEPSEEK: &[Block] = &[
    DSML_BLOCKS[0],
    DSML_BLOCKS[1],
    DSML_BLOCKS[2],
    DSML_BLOCKS[3],
    super::deepseek_v41::V41_BLOCK,
    Block {
        start: DS_CALLS_BEGIN,
        end: End::Finder {
            find: |b| unquoted_end(b, DS_CALLS_END),
            closers: ">",
        },
        parse: deepseek_calls,
    },
    Block {
        start: DS_CALL_BEGIN,
        end: End::Finder {
            find: |b| unquoted_end(b, DS_CALL_END),
            closers: ">",
        },
        parse: deepseek_single,
    },
    Block {
        start: DS_UNDERSCORE[0].0,
        end: End::Finder {
            find: |b| unquoted_end(b, DS_UNDERSCORE[1].0),
            closers: ">",
        },
        parse: deepseek_calls_underscore,
    },
];

/// The R1/V3 form the example teaches. The markers are plain literals: DeepSeek's vocabulary
/// has them as added tokens that are not control tokens, so they are text to llguidance.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    let mut r = Rules::default();
    call_list(tools, parallel, "WS?", &mut r, |t, _| {
        format!(
            "{} {} {} {} {}",
            lit(&format!("{DS_CALL_BEGIN}function{DS_SEP}")),
            lit(&t.name),
            lit("\n```json\n"),
            json_expr(&args_schema(t)),
            lit(&format!("\n```{DS_CALL_END}"))
        )
    });
    r.named(
        "calls",
        &format!("{} call_list {}", lit(DS_CALLS_BEGIN), lit(DS_CALLS_END)),
    );
    r.finish()
}
