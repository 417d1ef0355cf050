//! Elicitation forms as data: the `requestedSchema` of an `elicitation/create` request turned into
//! fields a terminal (or anything else) can ask for, with the schema's defaults filled in, and the
//! answers checked against the field's own schema before they go back to the server.
//!
//! The schema is read from JSON rather than rmcp's typed enums so that a server sending a field
//! rkmcp does not render (a nested object, say) gets a clear "cannot render field X" instead of a
//! deserialisation error, and so the form is tested with plain JSON. Answers are checked with the
//! `jsonschema` crate (format validation on: email, uri, date, date-time), so the rules are the
//! standard's, not hand-written.
use serde_json::{Map, Value};

/// A form to fill in.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// What the server says it wants, shown above the fields.
    pub message: String,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name sent back to the server.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    /// The schema's `default`, already checked against the field.
    pub default: Option<Value>,
    /// The property schema, for validating answers.
    schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        format: Option<String>,
    },
    Number {
        integer: bool,
    },
    Boolean,
    /// One of `options` (value, label).
    Select {
        options: Vec<(String, String)>,
    },
    /// Any of `options`.
    MultiSelect {
        options: Vec<(String, String)>,
    },
}

/// The user's answer to a whole form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormOutcome {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FormError {
    #[error("the requested schema is not an object schema with `properties`")]
    NotAnObject,
    #[error("field `{field}`: {message}")]
    Field { field: String, message: String },
}

impl Field {
    /// The label shown to the user: the title, else the property name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// Parses what the user typed into this field's JSON value and checks it against the
    /// field's schema. An empty answer means "no value" (an error for a required field).
    pub fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let input = input.trim();
        if input.is_empty() {
            return if self.required {
                Err("a value is required".into())
            } else {
                Ok(None)
            };
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(input.to_string()),
            FieldKind::Number { integer: true } => input
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "enter a whole number".to_string())?,
            FieldKind::Number { integer: false } => {
                let n: f64 = input.parse().map_err(|_| "enter a number".to_string())?;
                serde_json::Number::from_f64(n)
                    .map(Value::Number)
                    .ok_or_else(|| "enter a finite number".to_string())?
            }
            FieldKind::Boolean => match input.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".into()),
            },
            FieldKind::Select { options } => Value::String(pick(options, input)?),
            FieldKind::MultiSelect { options } => Value::Array(
                input
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| pick(options, s).map(Value::String))
                    .collect::<Result<_, _>>()?,
            ),
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// Checks a value against the field's schema (formats, bounds, lengths, enum members).
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&self.schema)
            .map_err(|e| format!("the server's schema for this field is invalid: {e}"))?;
        match validator.iter_errors(value).next() {
            None => Ok(()),
            Some(err) => Err(err.to_string()),
        }
    }
}

/// A choice typed as its value, its label, or its 1-based number.
fn pick(options: &[(String, String)], input: &str) -> Result<String, String> {
    if let Ok(n) = input.parse::<usize>()
        && let Some((value, _)) = n.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(value.clone());
    }
    options
        .iter()
        .find(|(value, label)| value == input || label.eq_ignore_ascii_case(input))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(v, _)| v.as_str()).collect();
            format!("choose one of: {}", names.join(", "))
        })
}

impl Form {
    /// Reads `requestedSchema`. Properties keep the server's order when the JSON map preserves
    /// it; otherwise they come sorted by name.
    pub fn from_schema(message: &str, schema: &Value) -> Result<Form, FormError> {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .ok_or(FormError::NotAnObject)?;
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Fields in the order of their names, as before serde_json kept object order
        // (`preserve_order`, which llguidance turns on).
        let mut sorted: Vec<(&String, &Value)> = properties.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let fields = sorted
            .into_iter()
            .map(|(name, prop)| field(name, prop, required.contains(&name.as_str())))
            .collect::<Result<_, _>>()?;
        Ok(Form {
            message: message.to_string(),
            fields,
        })
    }

    /// The answer made of defaults only, when every required field has one (`--accept-defaults`
    /// and the `applyDefaults` behaviour). `None` names nothing: see [`Form::missing_defaults`].
    pub fn defaults(&self) -> Option<Map<String, Value>> {
        if !self.missing_defaults().is_empty() {
            return None;
        }
        Some(
            self.fields
                .iter()
                .filter_map(|f| f.default.clone().map(|d| (f.name.clone(), d)))
                .collect(),
        )
    }

    /// Required fields without a default.
    pub fn missing_defaults(&self) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|f| f.required && f.default.is_none())
            .map(|f| f.name.as_str())
            .collect()
    }
}

fn field(name: &str, prop: &Value, required: bool) -> Result<Field, FormError> {
    let err = |message: String| FormError::Field {
        field: name.to_string(),
        message,
    };
    let text = |key: &str| prop.get(key).and_then(Value::as_str).map(str::to_string);
    let kind = if let Some(options) = prop.get("enum").and_then(Value::as_array) {
        // Legacy titled enums put the labels in `enumNames`.
        let names = prop.get("enumNames").and_then(Value::as_array);
        Some(FieldKind::Select {
            options: strings(options)
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| v.clone(), str::to_string);
                    (v, label)
                })
                .collect(),
        })
    } else {
        prop.get("oneOf")
            .and_then(Value::as_array)
            .map(|one_of| FieldKind::Select {
                options: const_titles(one_of),
            })
    };
    let kind = match (kind, prop.get("type").and_then(Value::as_str)) {
        (Some(kind), _) => kind,
        (None, Some("string")) => FieldKind::Text {
            format: text("format"),
        },
        (None, Some("number")) => FieldKind::Number { integer: false },
        (None, Some("integer")) => FieldKind::Number { integer: true },
        (None, Some("boolean")) => FieldKind::Boolean,
        (None, Some("array")) => {
            let items = prop.get("items").unwrap_or(&Value::Null);
            let options = if let Some(values) = items.get("enum").and_then(Value::as_array) {
                strings(values)
                    .into_iter()
                    .map(|v| (v.clone(), v))
                    .collect()
            } else if let Some(any_of) = items
                .get("anyOf")
                .or_else(|| items.get("oneOf"))
                .and_then(Value::as_array)
            {
                const_titles(any_of)
            } else {
                return Err(err(
                    "an array field must list its choices (`items.enum` or `items.anyOf`)".into(),
                ));
            };
            FieldKind::MultiSelect { options }
        }
        (None, other) => {
            return Err(err(format!(
                "cannot render a field of type {}",
                other.map_or_else(|| "(none given)".to_string(), |t| format!("`{t}`"))
            )));
        }
    };
    let mut field = Field {
        name: name.to_string(),
        title: text("title"),
        description: text("description"),
        required,
        kind,
        default: None,
        schema: prop.clone(),
    };
    if let Some(default) = prop.get("default") {
        // A default that breaks its own schema is dropped rather than offered.
        match field.check(default) {
            Ok(()) => field.default = Some(default.clone()),
            Err(e) => tracing::warn!("elicitation field `{name}`: ignoring default {default}: {e}"),
        }
    }
    Ok(field)
}

fn strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn const_titles(items: &[Value]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|item| {
            let value = item.get("const")?.as_str()?.to_string();
            let title = item
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| value.clone(), str::to_string);
            Some((value, title))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn every_kind() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "minLength": 2, "default": "Ada"},
                "email": {"type": "string", "format": "email", "description": "Where to write"},
                "site": {"type": "string", "format": "uri", "default": "https://example.org"},
                "born": {"type": "string", "format": "date"},
                "meeting": {"type": "string", "format": "date-time"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 36},
                "score": {"type": "number", "default": 0.5},
                "subscribe": {"type": "boolean", "default": true},
                "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}, "default": ["x"]},
                "pets": {"type": "array", "items": {"anyOf": [{"const": "cat", "title": "Cat"}, {"const": "dog", "title": "Dog"}]}}
            },
            "required": ["name", "email", "age"]
        })
    }

    fn form() -> Form {
        Form::from_schema("Tell me about you", &every_kind()).unwrap()
    }

    fn field<'a>(form: &'a Form, name: &str) -> &'a Field {
        form.fields.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn every_field_type_is_read_with_labels_requirements_and_defaults() {
        let form = form();
        assert_eq!(form.fields.len(), 13);
        let name = field(&form, "name");
        assert_eq!(name.label(), "Your name");
        assert!(name.required);
        assert_eq!(name.default, Some(json!("Ada")));
        assert_eq!(
            field(&form, "email").kind,
            FieldKind::Text {
                format: Some("email".into())
            }
        );
        assert_eq!(
            field(&form, "email").description.as_deref(),
            Some("Where to write")
        );
        assert_eq!(
            field(&form, "age").kind,
            FieldKind::Number { integer: true }
        );
        assert_eq!(field(&form, "subscribe").kind, FieldKind::Boolean);
        assert_eq!(
            field(&form, "size").kind,
            FieldKind::Select {
                options: vec![("s".into(), "Small".into()), ("l".into(), "Large".into())]
            }
        );
        assert_eq!(
            field(&form, "legacy").kind,
            FieldKind::Select {
                options: vec![("a".into(), "Alpha".into()), ("b".into(), "Beta".into())]
            }
        );
        assert_eq!(
            field(&form, "pets").kind,
            FieldKind::MultiSelect {
                options: vec![("cat".into(), "Cat".into()), ("dog".into(), "Dog".into())]
            }
        );
        assert_eq!(field(&form, "tags").default, Some(json!(["x"])));
    }

    #[test]
    fn answers_are_parsed_and_checked_against_formats_and_bounds() {
        let form = form();
        let f = |n| field(&form, n);
        assert_eq!(
            f("email").parse("ada@example.org"),
            Ok(Some(json!("ada@example.org")))
        );
        assert!(f("email").parse("not an email").is_err());
        assert!(f("site").parse("no scheme here").is_err());
        assert_eq!(f("born").parse("1815-12-10"), Ok(Some(json!("1815-12-10"))));
        assert!(f("born").parse("10/12/1815").is_err());
        assert!(
            f("meeting")
                .parse("2026-11-24T05:00:00Z")
                .unwrap()
                .is_some()
        );
        assert!(f("meeting").parse("tomorrow").is_err());
        assert_eq!(f("age").parse("36"), Ok(Some(json!(36))));
        assert!(f("age").parse("200").unwrap_err().contains("150"));
        assert!(f("age").parse("3.5").is_err());
        assert_eq!(f("score").parse("0.25"), Ok(Some(json!(0.25))));
        assert_eq!(f("subscribe").parse("no"), Ok(Some(json!(false))));
        assert_eq!(f("size").parse("Large"), Ok(Some(json!("l"))));
        assert_eq!(f("size").parse("1"), Ok(Some(json!("s"))));
        assert!(f("size").parse("medium").unwrap_err().contains("s, l"));
        assert_eq!(f("pets").parse("dog, cat"), Ok(Some(json!(["dog", "cat"]))));
        assert!(f("name").parse("A").is_err(), "minLength 2");
        assert_eq!(f("name").parse("  "), Err("a value is required".into()));
        assert_eq!(f("born").parse(""), Ok(None), "optional field left empty");
    }

    #[test]
    fn defaults_answer_the_form_only_when_every_required_field_has_one() {
        let form = form();
        assert_eq!(form.defaults(), None);
        assert_eq!(form.missing_defaults(), ["email"]);
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer", "default": 36},
                "note": {"type": "string"}
            },
            "required": ["name"]
        });
        let form = Form::from_schema("", &schema).unwrap();
        let answer = form.defaults().unwrap();
        assert_eq!(Value::Object(answer), json!({"name": "Ada", "age": 36}));
    }

    #[test]
    fn a_default_breaking_its_own_schema_is_not_offered() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "maximum": 3, "default": 9}
        }});
        let form = Form::from_schema("", &schema).unwrap();
        assert_eq!(form.fields[0].default, None);
    }

    #[test]
    fn fields_rkmcp_cannot_render_are_named() {
        let schema = json!({"type": "object", "properties": {"deep": {"type": "object"}}});
        assert_eq!(
            Form::from_schema("", &schema),
            Err(FormError::Field {
                field: "deep".into(),
                message: "cannot render a field of type `object`".into()
            })
        );
        assert_eq!(
            Form::from_schema("", &json!({"type": "string"})),
            Err(FormError::NotAnObject)
        );
    }
}
