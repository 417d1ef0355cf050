//! The streaming detector engines. Most formats are "marker blocks" (a start marker, a body, an
//! end) and share [`marker::MarkerDetector`]; formats where the call is the whole message share
//! [`whole::WholeDetector`]; harmony has its own channel state machine. [`reasoning`] wraps any of
//! them to keep the model's reasoning apart. Which engine and which markers a format uses is
//! decided in its module under `crate::formats`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::parse::{Parsed, schema_types, typed_value_padded};
use crate::{DetectorEvent, DetectorOptions, ToolCall, ToolCallDetector, ToolFormat};

pub(crate) mod bodies;
pub(crate) mod harmony;
pub(crate) mod marker;
pub(crate) mod reasoning;
pub(crate) mod stop;
pub(crate) mod whole;

/// What every detector of one session shares: the tools' input schemas (to type arguments the
/// model wrote as text).
#[derive(Debug, Clone, Default)]
pub(crate) struct Setup {
    pub schemas: Arc<HashMap<String, Value>>,
}

pub(crate) fn detector(format: ToolFormat, opts: &DetectorOptions) -> Box<dyn ToolCallDetector> {
    let spec = format.spec();
    let setup = Setup {
        schemas: Arc::new(opts.schemas.clone()),
    };
    let mut det = (spec.detector)(&setup);
    if !spec.reasoning.is_empty() {
        det = Box::new(reasoning::ReasoningSplitter::new(
            det,
            spec.reasoning,
            spec.reasoning_ends,
            opts.reasoning_open,
        ));
    }
    if spec.end_tokens.is_empty() {
        return det;
    }
    Box::new(stop::StopFilter::new(det, spec.end_tokens))
}

/// Deterministic call ids per detector session; types text-valued arguments.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    count: u64,
    schemas: Arc<HashMap<String, Value>>,
    /// The format escapes `<`, `>` and `&` in values as XML entities.
    entities: bool,
    /// The format writes text values tight against their tags: no newline padding to strip.
    verbatim: bool,
}

impl Ids {
    pub(crate) fn new(setup: &Setup) -> Ids {
        Ids {
            count: 0,
            schemas: setup.schemas.clone(),
            entities: false,
            verbatim: false,
        }
    }

    pub(crate) fn with_verbatim_values(mut self) -> Ids {
        self.verbatim = true;
        self
    }

    pub(crate) fn with_entities(mut self) -> Ids {
        self.entities = true;
        self
    }

    fn property(&self, tool: &str, key: &str) -> Option<&Value> {
        self.schemas.get(tool)?.get("properties")?.get(key)
    }

    pub(crate) fn events(&mut self, parsed: Vec<Parsed>, out: &mut Vec<DetectorEvent>) {
        for p in parsed {
            let (name, arguments, id) = match p {
                Parsed::Call {
                    name,
                    arguments,
                    id,
                } => (name, arguments, id),
                Parsed::TextCall { name, args, id } => {
                    let mut m = Map::new();
                    for (k, v) in args {
                        let typed = typed_value_padded(
                            &v,
                            self.property(&name, &k),
                            self.entities,
                            !self.verbatim,
                        );
                        m.insert(k, typed);
                    }
                    (name, Value::Object(m), id)
                }
                Parsed::DeclaredCall { name, args, id } => {
                    let mut m = Map::new();
                    for (k, v, is_text) in args {
                        let typed = declared_value(&v, is_text, self.property(&name, &k));
                        m.insert(k, typed);
                    }
                    (name, Value::Object(m), id)
                }
                Parsed::NotACall(text) => {
                    push_text(out, &text);
                    continue;
                }
                Parsed::Bad { raw, error } => {
                    out.push(DetectorEvent::Malformed { raw, error });
                    continue;
                }
            };
            self.count += 1;
            let id = id.unwrap_or_else(|| format!("call_{}", self.count));
            out.push(DetectorEvent::ToolCall(ToolCall {
                id,
                name,
                arguments,
            }));
        }
    }
}

/// A value whose kind the model declared (`is_text`: the string as written, else JSON), typed
/// by the property's `schema` where the two disagree: a declared text for a property that takes
/// no strings is read by the schema (`string="true">5` for an integer is 5), and JSON that fits
/// none of the schema's types is read by the schema too (`string="false">00123` for a string is
/// "00123"). Without a schema, the declaration decides; JSON that does not parse is guessed.
pub(crate) fn declared_value(raw: &str, is_text: bool, schema: Option<&Value>) -> Value {
    let types = schema.map(schema_types).unwrap_or_default();
    if is_text {
        if types.is_empty() || types.contains(&"string") {
            return Value::String(raw.to_string());
        }
        return typed_value_padded(raw, schema, false, false);
    }
    match serde_json::from_str::<Value>(raw.trim()) {
        Ok(v) if types.is_empty() || types.iter().any(|t| fits(&v, t)) => v,
        _ if types.is_empty() => typed_value_padded(raw, None, false, true),
        _ => typed_value_padded(raw, schema, false, false),
    }
}

/// Whether `v` is of the JSON Schema type `ty`.
fn fits(v: &Value, ty: &str) -> bool {
    match ty {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        _ => false,
    }
}

/// Pushes non-empty text.
pub(crate) fn push_text(out: &mut Vec<DetectorEvent>, s: &str) {
    if !s.is_empty() {
        out.push(DetectorEvent::Text(s.to_string()));
    }
}
