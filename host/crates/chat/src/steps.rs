//! A call written one piece at a time (`argument_steps`): first the tool, then each argument in a
//! short generation of its own, with that parameter's name, type and description right before
//! the value.
//!
//! Why: a tiny model writing a whole call in one breath has the tool list far behind it by the
//! time it reaches the third argument, and copies the wrong part of the question or invents a
//! value. Here the engine writes the call's text itself and asks the model only for the gaps:
//!
//! ```text
//! [TOOL_CALL]{"name": "            ← the model picks a name (a grammar holds it to the choices)
//! [TOOL_CALL]{"name": "get_weather", "arguments": {
//!   // city (string): The city to look up
//!   "city":                        ← the model writes this value alone (the parameter's schema)
//! ```
//!
//! The comment lines are scratch, never shown or kept: the call the history keeps is the format's
//! own text of the finished call. Each step's text extends the previous one, so the backend's
//! prefix reuse prefills only the new line. Pure: the text and the grammars of each step; the
//! engine runs them ([`super::engine`]).
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{Grounding, ToolDef, example_call, fill_named_optional};
use serde_json::{Map, Value, json};

use super::prompt::ANSWER_DIRECTLY;

/// Placeholders written into a format's example call to find where the name and the arguments
/// go: no tool or parameter is named like them.
const NAME_MARK: &str = "rkmcp_step_name_mark";
const ARG_MARK: &str = "rkmcp_step_arg_mark";

/// The text of a JSON call around its name and up to its arguments' first key.
#[derive(Debug, Clone, PartialEq)]
pub struct CallText {
    format: ToolFormat,
    /// Up to the name's opening quote included: `[TOOL_CALL]{"name": "`.
    before_name: String,
    /// From the name's closing quote included up to the arguments' `{`: `", "arguments": {`.
    after_name: String,
}

impl CallText {
    /// The call text of `format`, when its calls are JSON objects that write the name first and
    /// then the arguments as an object (Hermes, `tool-call-json`, Llama 3, …); `None` for other
    /// syntaxes (pythonic calls, XML parameters), which keep the one-breath call.
    pub fn of(format: ToolFormat) -> Option<CallText> {
        let text = example_call(format, NAME_MARK, &json!({ ARG_MARK: 0 }));
        let name_at = text.find(NAME_MARK)?;
        let arg_at = text.find(&format!("\"{ARG_MARK}\": 0"))?;
        let before_name = &text[..name_at];
        let after_name = &text[name_at + NAME_MARK.len()..arg_at];
        // The name is a JSON string, the arguments an object opened right before the first key.
        (before_name.ends_with('"')
            && after_name.starts_with('"')
            && after_name.trim_end().ends_with('{'))
        .then(|| CallText {
            format,
            before_name: before_name.to_string(),
            after_name: after_name.to_string(),
        })
    }

    /// What the model continues to write a tool's name.
    pub fn name_prefix(&self) -> &str {
        &self.before_name
    }

    /// The text of a call of `tool` with its arguments opened, before the first parameter.
    fn opened(&self, tool: &str) -> String {
        format!("{}{tool}{}", self.before_name, self.after_name)
    }

    /// The format's own text of the finished call: what the history keeps.
    pub fn finished(&self, tool: &str, arguments: &Value) -> String {
        example_call(self.format, tool, arguments)
    }
}

/// The grammar of the name step: one of `names` and the name's closing quote.
pub fn name_grammar(names: &[&str]) -> String {
    let alts: Vec<String> = names
        .iter()
        .map(|n| Value::String(format!("{n}\"")).to_string())
        .collect();
    format!("start: {}\n", alts.join(" | "))
}

/// The tool named by the text the name step wrote (`get_weather"`), if it is one of `names`.
pub fn chosen<'a>(written: &str, names: &[&'a str]) -> Option<&'a str> {
    let name = written.trim().strip_suffix('"')?;
    names.iter().copied().find(|n| *n == name)
}

/// One argument the model is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentStep {
    pub name: String,
    /// The parameter's schema, with the tool's `$defs` so its references resolve.
    pub schema: Value,
    /// The scratch line before its value: `// city (string): The city to look up`.
    pub line: String,
}

/// The arguments asked of the model for `tool`, in the schema's order: the required ones and the
/// optional ones `message` names (their name, or one of their enum values, is a word of it).
///
/// The other optional ones are left out. Asking for them whenever the model went on with `,`
/// after the value before was measured (tuning part): it nearly always does, and then invents
/// them (`"passengers": 2027`, `"date": "2023-01-01"`), which changes what the call does.
pub fn argument_steps(tool: &ToolDef, message: &str) -> Vec<ArgumentStep> {
    let mut asked = tool.input_schema.clone();
    fill_named_optional(&mut asked, message);
    let required: Vec<&str> = asked
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let defs: Map<String, Value> = ["$defs", "definitions"]
        .iter()
        .filter_map(|k| Some((k.to_string(), tool.input_schema.get(*k)?.clone())))
        .collect();
    let Some(props) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(name, _)| required.contains(&name.as_str()))
        .map(|(name, schema)| {
            let mut schema = schema.clone();
            if let Value::Object(o) = &mut schema {
                for (k, v) in &defs {
                    o.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            ArgumentStep {
                line: scratch_line(name, &schema),
                name: name.clone(),
                schema,
            }
        })
        .collect()
}

/// `// NAME (TYPE[, one of …]): DESCRIPTION`, on one line.
fn scratch_line(name: &str, schema: &Value) -> String {
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "value".to_string(),
    };
    let mut what = ty;
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values.iter().take(8).map(Value::to_string).collect();
        what.push_str(&format!(", one of {}", shown.join(", ")));
    }
    let description = schema
        .get("description")
        .and_then(Value::as_str)
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let mut line = format!("// {name} ({what})");
    if !description.is_empty() {
        line.push_str(": ");
        line.push_str(&description);
    }
    // The line is for the model: control characters from a server's schema have no place in it.
    line.retain(|c| !c.is_control());
    line
}

/// The text the model continues to write the value of `next`, after the arguments `done` (each
/// with its value's JSON text). Each step's text begins with the one before it.
pub fn value_prefix(
    call: &CallText,
    tool: &str,
    done: &[(&ArgumentStep, String)],
    next: &ArgumentStep,
) -> String {
    let mut text = call.opened(tool);
    // Not done: a header naming every value the call will hold ("// arguments: \"pickup\",
    // \"dropoff\", …"), so a value written alone would not run on into the next key. Measured on
    // the tuning part it lost 3 points of expected values.
    for (step, value) in done {
        text.push_str(&key_text(step));
        text.push(' ');
        text.push_str(value);
        text.push(',');
    }
    text.push_str(&key_text(next));
    text
}

/// A parameter's scratch line and key. No space after the colon: the model writes it with the
/// value (` "Paris"` is one token where a prompt ending in a space would leave a bare `"`).
fn key_text(step: &ArgumentStep) -> String {
    format!("\n  {}\n  {}:", step.line, Value::String(step.name.clone()))
}

/// The message without what the call already holds (the tool's name, earlier values): the
/// words grounding (`copy_bias`) still prefers. In one generation a word's bias is spent once
/// written; each step is a generation of its own, so what was spent is left out here, or the
/// model copies the tool's name into its first value ("everything__echo" as the message).
pub fn unspent(message: &str, written: &[&str]) -> String {
    let mut text = message.to_string();
    for w in written {
        let w = w.trim();
        if !w.is_empty() {
            text = without_whole(&text, w);
        }
    }
    text
}

/// `text` with the occurrences of `w` that stand as whole words (`19` in "19 times", not in
/// "2019") replaced by a space.
fn without_whole(text: &str, w: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(w) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + w.len()..].chars().next();
        let word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        out.push_str(&rest[..at]);
        if word_char(before) || word_char(after) {
            out.push_str(w);
        } else {
            out.push(' ');
        }
        rest = &rest[at + w.len()..];
    }
    out.push_str(rest);
    out
}

/// The texts a value holds (its strings and numbers), for [`unspent`].
pub fn value_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| value_texts(v, out)),
        Value::Object(o) => o.values().for_each(|v| value_texts(v, out)),
        _ => {}
    }
}

/// What may follow a value in its step: what follows it inside a call, so a value ends where
/// the model would end it there (see [`rkmcp_tool_formats::convert::value_grammar`]).
const FOLLOWERS: &[&str] = &[",", "}"];

/// The grammar of one argument's step.
pub fn step_grammar(tool: &ToolDef, step: &ArgumentStep, grounding: Option<&Grounding>) -> String {
    rkmcp_tool_formats::convert::value_grammar(
        &step.name,
        &step.schema,
        tool.description.as_deref().unwrap_or(""),
        grounding,
        FOLLOWERS,
    )
}

/// What a step wrote: its value, and the value's JSON text for the next step's prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub value: Value,
    pub json: String,
}

/// The value a step wrote (` "Paris",`): the first JSON value of `written`, then at most one of
/// the followers.
pub fn read_value(written: &str) -> Result<Written, String> {
    let mut values = serde_json::Deserializer::from_str(written).into_iter::<Value>();
    let value = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(err)) => return Err(err.to_string()),
        None => return Err("nothing was written".into()),
    };
    let rest = written[values.byte_offset()..].trim();
    if !(rest.is_empty() || FOLLOWERS.contains(&rest)) {
        return Err(format!("{rest:?} follows the value"));
    }
    Ok(Written {
        value,
        json: written[..values.byte_offset()].trim().to_string(),
    })
}

/// The names the name step chooses among: the round's tools, and [`ANSWER_DIRECTLY`] when the
/// round lets the model answer instead.
pub fn choices(tools: &[ToolDef], answer_directly: bool) -> Vec<&str> {
    let mut names: Vec<&str> = tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| *n != ANSWER_DIRECTLY)
        .collect();
    if answer_directly {
        names.push(ANSWER_DIRECTLY);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> ToolDef {
        ToolDef {
            name: "wx__get_weather".into(),
            description: Some("The weather in a city.".into()),
            input_schema: json!({"type": "object", "properties": {
                "city": {"type": "string", "description": "The city\nto look up"},
                "unit": {"$ref": "#/$defs/Unit", "description": "Units"},
                "days": {"type": "integer"},
                "detail": {"type": "string", "enum": ["short", "hourly"]}
            }, "required": ["city"], "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}}),
            annotations: None,
        }
    }

    #[test]
    fn json_formats_have_call_text_and_other_syntaxes_do_not() {
        let c = CallText::of(ToolFormat::ToolCallJson).expect("tool-call-json");
        assert_eq!(c.name_prefix(), "[TOOL_CALL]{\"name\": \"");
        assert_eq!(
            c.opened("f"),
            "[TOOL_CALL]{\"name\": \"f\", \"arguments\": {"
        );
        let h = CallText::of(ToolFormat::Hermes).expect("hermes");
        assert!(h.name_prefix().starts_with("<tool_call>"), "{h:?}");
        assert!(CallText::of(ToolFormat::Pythonic).is_none());
        assert_eq!(
            c.finished("f", &json!({"a": 1})),
            example_call(ToolFormat::ToolCallJson, "f", &json!({"a": 1}))
        );
    }

    #[test]
    fn the_required_arguments_and_the_optional_ones_the_message_names_are_asked_for() {
        let t = weather();
        let names = |m: &str| -> Vec<String> {
            argument_steps(&t, m).into_iter().map(|s| s.name).collect()
        };
        assert_eq!(names("Weather in Paris?"), ["city"]);
        assert_eq!(
            names("Hourly weather in Paris for 3 days"),
            ["city", "days", "detail"]
        );
        let steps = argument_steps(&t, "Paris in unit f");
        assert_eq!(names("Paris in unit f"), ["city", "unit"]);
        assert_eq!(steps[1].schema["$defs"]["Unit"]["enum"], json!(["c", "f"]));
        assert_eq!(steps[0].line, "// city (string): The city to look up");
        assert_eq!(
            argument_steps(&t, "hourly in Paris")[1].line,
            "// detail (string, one of \"short\", \"hourly\")"
        );
    }

    #[test]
    fn each_steps_text_begins_with_the_one_before() {
        let c = CallText::of(ToolFormat::ToolCallJson).expect("tool-call-json");
        let t = weather();
        let steps = argument_steps(&t, "Hourly weather in Paris for 3 days");
        let first = value_prefix(&c, &t.name, &[], &steps[0]);
        assert_eq!(
            first,
            "[TOOL_CALL]{\"name\": \"wx__get_weather\", \"arguments\": {\n  // city (string): The city to look up\n  \"city\":"
        );
        let second = value_prefix(&c, &t.name, &[(&steps[0], "\"Paris\"".into())], &steps[1]);
        assert!(
            second.starts_with(&format!("{first} \"Paris\",")),
            "{second}"
        );
        assert!(second.ends_with("\"days\":"), "{second}");
    }

    #[test]
    fn what_the_call_holds_is_no_longer_preferred() {
        let message = "Call everything__echo with the message 'named tools work' 19 times";
        let mut texts = Vec::new();
        value_texts(&json!({"m": "named tools work", "n": [19]}), &mut texts);
        assert_eq!(texts, ["named tools work", "19"]);
        let mut written = vec!["everything__echo"];
        written.extend(texts.iter().map(String::as_str));
        let left = unspent(message, &written);
        assert!(
            !left.contains("everything__echo") && !left.contains("19"),
            "{left}"
        );
        assert!(left.contains("Call") && left.contains("times"), "{left}");
        assert_eq!(unspent(message, &["", " "]), message);
        assert_eq!(
            unspent("in 2019, 19 of them", &["19"]),
            "in 2019,   of them"
        );
    }

    #[test]
    fn a_steps_value_is_its_first_json_value_and_one_follower() {
        let read = |w: &str| read_value(w).map(|r| (r.value, r.json));
        assert_eq!(
            read(" \"Paris\","),
            Ok((json!("Paris"), "\"Paris\"".to_string()))
        );
        assert_eq!(read("19 }"), Ok((json!(19), "19".to_string())));
        assert_eq!(
            read(" {\"a\": [1]}"),
            Ok((json!({"a": [1]}), "{\"a\": [1]}".to_string()))
        );
        assert!(read(" \"Par").is_err(), "cut off");
        assert!(read("").is_err());
        assert!(read("1, 2").is_err());
    }

    #[test]
    fn the_name_step_chooses_among_the_rounds_names() {
        let tools = [weather()];
        let names = choices(&tools, true);
        assert_eq!(names, ["wx__get_weather", ANSWER_DIRECTLY]);
        assert_eq!(
            name_grammar(&names),
            "start: \"wx__get_weather\\\"\" | \"answer_directly\\\"\"\n"
        );
        assert_eq!(chosen("wx__get_weather\"", &names), Some("wx__get_weather"));
        assert_eq!(chosen("answer_directly\"", &names), Some(ANSWER_DIRECTLY));
        assert_eq!(chosen("wx__get", &names), None);
        assert_eq!(chosen("other\"", &names), None);
        assert_eq!(choices(&tools, false), ["wx__get_weather"]);
    }
}
