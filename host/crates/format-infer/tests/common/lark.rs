//! The real llguidance parser over a byte-level vocabulary, for the inferred formats' grammars.

use std::sync::{Arc, OnceLock};

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie, TokenId};
use llguidance::{Matcher, ParserFactory};
use rkmcp_format_infer::InferredFormat;
use rkmcp_tool_formats::convert::ToolDef;
use serde_json::{Map, Value, json};

fn factory() -> &'static ParserFactory {
    static F: OnceLock<ParserFactory> = OnceLock::new();
    F.get_or_init(|| {
        let mut words: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut eos = vec![TokTrie::SPECIAL_TOKEN_MARKER];
        eos.extend_from_slice(b"<|eos|>");
        words.push(eos);
        let info = TokRxInfo::new(words.len() as u32, words.len() as u32 - 1);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(TokTrie::from(&info, &words)));
        let mut f = ParserFactory::new_simple(&env).expect("parser factory");
        f.quiet();
        f
    })
}

/// Whether `grammar` compiles, accepts all of `text` and may end there.
pub fn accepts(grammar: &str, text: &str) -> Result<(), String> {
    let parser = factory().create_parser(TopLevelGrammar::from_lark(grammar.to_string()));
    let mut m = Matcher::new(parser);
    if let Some(e) = m.get_error() {
        return Err(format!("does not compile: {e}"));
    }
    let toks: Vec<TokenId> = text.bytes().map(|b| b as TokenId).collect();
    let n = m.try_consume_tokens(&toks).map_err(|e| e.to_string())?;
    if n < toks.len() {
        return Err(format!("rejected after {:?}", &text[..n.min(text.len())]));
    }
    if !m.is_accepting().map_err(|e| e.to_string())? {
        return Err("accepted as a prefix only".into());
    }
    Ok(())
}

pub fn tools() -> Vec<ToolDef> {
    let tool = |name: &str, schema: Value| ToolDef {
        name: name.into(),
        description: None,
        input_schema: schema,
        annotations: None,
    };
    vec![
        tool(
            "get_weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        tool(
            "set_timer",
            json!({"type": "object", "properties": {"minutes": {"type": "integer"}, "label": {"type": "string"}}, "required": ["minutes", "label"]}),
        ),
    ]
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// The format's grammar accepts its own example calls and a plain answer, and rejects a call
/// of an unknown tool and a mistyped argument.
pub fn check_grammar(f: &InferredFormat) -> Result<(), String> {
    let g = f.lark_grammar(&tools(), true).ok_or("no grammar")?;
    let weather = args(json!({"city": "Paris"}));
    let timer = args(json!({"minutes": 15, "label": "tea"}));
    let examples = if f.parallel {
        vec![
            f.example_calls(&[("get_weather", &weather)]),
            f.example_calls(&[("get_weather", &weather), ("set_timer", &timer)]),
        ]
    } else {
        vec![f.example("set_timer", &timer)]
    };
    for e in &examples {
        accepts(&g, e).map_err(|err| format!("example {e:?}: {err}\n{g}"))?;
    }
    accepts(&g, "Paris is sunny today.").map_err(|e| format!("answer: {e}"))?;
    let unknown = f.example("get_time", &args(json!({"city": "Paris"})));
    if accepts(&g, &unknown).is_ok() {
        return Err(format!("accepts the unknown tool in {unknown:?}"));
    }
    let mistyped = f.example(
        "set_timer",
        &args(json!({"minutes": "soon", "label": "tea"})),
    );
    if accepts(&g, &mistyped).is_ok() {
        return Err(format!("accepts the mistyped {mistyped:?}"));
    }
    Ok(())
}
