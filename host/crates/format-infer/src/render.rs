//! Rendering a chat template with synthetic conversations, in the environment the host renders
//! GGUF templates in (`rkmcp-llm`'s template module): transformers' block trimming, Python
//! string methods, `raise_exception` and a fixed `strftime_now`.

use minijinja::{Environment, ErrorKind};
use serde_json::{Value, json};

/// The synthetic calls: a string argument, a number and a string, and an object.
pub(crate) fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("get_weather", json!({"city": "Paris"})),
        ("set_timer", json!({"minutes": 15, "label": "tea"})),
        (
            "make_note",
            json!({"title": "list", "meta": {"day": "mon"}}),
        ),
    ]
}

/// The synthetic tools the calls belong to (the schemas type the read-back check).
pub(crate) fn tools() -> Vec<Value> {
    let t = |name: &str, props: Value, required: Value| {
        json!({"type": "function", "function": {
            "name": name,
            "description": format!("Synthetic tool {name}."),
            "parameters": {"type": "object", "properties": props, "required": required}
        }})
    };
    vec![
        t(
            "get_weather",
            json!({"city": {"type": "string"}}),
            json!(["city"]),
        ),
        t(
            "set_timer",
            json!({"minutes": {"type": "integer"}, "label": {"type": "string"}}),
            json!(["minutes", "label"]),
        ),
        t(
            "make_note",
            json!({"title": {"type": "string"}, "meta": {"type": "object"}}),
            json!(["title", "meta"]),
        ),
    ]
}

/// Ids in the shape the strictest templates accept (Mistral: nine letters and digits).
const IDS: [&str; 3] = ["abc123def", "ghi456jkl", "mno789pqr"];

pub(crate) const ANSWER: &str = "ANSWER_TEXT_0";
pub(crate) const REASONING: &str = "REASONING_TEXT_0";
pub(crate) const RESULT: &str = "RESULT_TEXT_0";

/// An assistant message with `calls` (indexes into [`calls`]); `string_args`: arguments as a
/// JSON string (OpenAI's wire form, which some templates concatenate) instead of an object.
pub(crate) fn call_message(which: &[usize], string_args: bool) -> Value {
    let all = calls();
    let tool_calls: Vec<Value> = which
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (name, args) = &all[c];
            let arguments = if string_args {
                Value::String(args.to_string())
            } else {
                args.clone()
            };
            json!({"id": IDS[i], "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    json!({"role": "assistant", "content": "", "tool_calls": tool_calls})
}

/// One argument of each JSON kind, keyed by the kind: for templates that declare each value's
/// kind, to read how they spell every one.
pub(crate) const PROBE_KINDS: [(&str, &str); 7] = [
    ("probe_string", "string"),
    ("probe_integer", "integer"),
    ("probe_number", "number"),
    ("probe_boolean", "boolean"),
    ("probe_null", "null"),
    ("probe_array", "array"),
    ("probe_object", "object"),
];

/// A `make_note` call with the [`PROBE_KINDS`] arguments.
pub(crate) fn probe_message(string_args: bool) -> Value {
    let args = json!({
        "probe_string": "x", "probe_integer": 7, "probe_number": 0.5, "probe_boolean": true,
        "probe_null": null, "probe_array": [1], "probe_object": {"k": 1}
    });
    let arguments = if string_args {
        Value::String(args.to_string())
    } else {
        args
    };
    json!({"role": "assistant", "content": "", "tool_calls": [{"id": IDS[0], "type": "function",
        "function": {"name": "make_note", "arguments": arguments}}]})
}

pub(crate) fn conversation(tail: Vec<Value>) -> Vec<Value> {
    let mut m = vec![
        json!({"role": "system", "content": "You are a test."}),
        json!({"role": "user", "content": "Hello there."}),
    ];
    m.extend(tail);
    m
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
        },
    );
    env.add_function("strftime_now", |_fmt: String| "26 Jul 2024".to_string());
    env
}

/// A compiled template that renders conversations.
pub(crate) struct Renderer {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

impl Renderer {
    pub(crate) fn new(source: &str, bos: &str, eos: &str) -> Result<Renderer, String> {
        let mut env = environment();
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| describe(&e))?;
        Ok(Renderer {
            env,
            bos: bos.to_string(),
            eos: eos.to_string(),
        })
    }

    pub(crate) fn render(
        &self,
        messages: &[Value],
        generation_prompt: bool,
    ) -> Result<String, String> {
        let tmpl = self.env.get_template("chat").map_err(|e| describe(&e))?;
        tmpl.render(minijinja::context! {
            messages => messages,
            tools => tools(),
            add_generation_prompt => generation_prompt,
            bos_token => self.bos,
            eos_token => self.eos,
        })
        .map_err(|e| describe(&e))
    }
}

/// A render error with its cause chain, in one line.
fn describe(e: &minijinja::Error) -> String {
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        s.push_str(&format!(": {c}"));
        cause = c.source();
    }
    s
}
