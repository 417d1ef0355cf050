//! Tool arguments against the tool's JSON Schema. PLACEHOLDER with the agreed API: helper H1
//! replaces this file.
use std::fmt;

#[derive(Debug, Default)]
pub struct ArgumentValidator {}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Coercion {
    pub path: String,
    pub from: serde_json::Value,
    pub to: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct InvalidArguments {
    pub tool: String,
    pub errors: Vec<String>,
}

impl fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid arguments for `{}`: {}",
            self.tool,
            self.errors.join("; ")
        )
    }
}

impl ArgumentValidator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn check(
        &mut self,
        _tool: &str,
        _schema: &serde_json::Value,
        _args: &mut serde_json::Value,
    ) -> Result<Vec<Coercion>, InvalidArguments> {
        Ok(Vec::new())
    }
}
