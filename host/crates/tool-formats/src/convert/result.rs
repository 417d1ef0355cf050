//! Formatting MCP tool results for the model, per format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ToolCall, ToolFormat};

/// Default limit for a formatted result body, in characters: large enough for a file or a web
/// page excerpt, small enough for a 4k-token context.
pub const DEFAULT_RESULT_LIMIT: usize = 8000;

/// An MCP `CallToolResult` (deserializes from its JSON).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResultLike {
    #[serde(default)]
    pub content: Vec<ContentItem>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

/// One MCP content item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ContentItem {
    Text {
        text: String,
    },
    Image {
        data: String,
        mime_type: String,
    },
    Audio {
        data: String,
        mime_type: String,
    },
    Resource {
        resource: EmbeddedResource,
    },
    ResourceLink {
        uri: String,
        #[serde(default)]
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A content type this crate does not know yet.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultOptions {
    /// Body characters kept before the truncation notice.
    pub max_chars: usize,
}

impl Default for ResultOptions {
    fn default() -> Self {
        ResultOptions {
            max_chars: DEFAULT_RESULT_LIMIT,
        }
    }
}

/// Decoded size of base64 data without decoding it.
fn base64_size(data: &str) -> usize {
    let d = data.trim_end();
    let pad = d.bytes().rev().take_while(|&b| b == b'=').count();
    (d.len() * 3 / 4).saturating_sub(pad)
}

fn human_size(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

/// The result as plain text: text items verbatim, binary items described.
fn body(result: &CallToolResultLike) -> String {
    let mut parts: Vec<String> = Vec::new();
    for item in &result.content {
        parts.push(match item {
            ContentItem::Text { text } => text.clone(),
            ContentItem::Image { data, mime_type } => {
                format!(
                    "[image: {mime_type}, {}]",
                    human_size(base64_size(data) as u64)
                )
            }
            ContentItem::Audio { data, mime_type } => {
                format!(
                    "[audio: {mime_type}, {}]",
                    human_size(base64_size(data) as u64)
                )
            }
            ContentItem::Resource { resource } => {
                let mime = resource.mime_type.as_deref().unwrap_or("unknown type");
                match (&resource.text, &resource.blob) {
                    (Some(text), _) => format!("[resource: {} ({mime})]\n{text}", resource.uri),
                    (None, Some(blob)) => {
                        format!(
                            "[resource: {} ({mime}, {})]",
                            resource.uri,
                            human_size(base64_size(blob) as u64)
                        )
                    }
                    (None, None) => format!("[resource: {} ({mime})]", resource.uri),
                }
            }
            ContentItem::ResourceLink {
                uri,
                name,
                mime_type,
                size,
                description,
            } => {
                let mut s = format!("[resource link: {name} <{uri}>");
                let mut meta = Vec::new();
                if let Some(m) = mime_type {
                    meta.push(m.clone());
                }
                if let Some(sz) = size {
                    meta.push(human_size(*sz));
                }
                if !meta.is_empty() {
                    s.push_str(&format!(" ({})", meta.join(", ")));
                }
                if let Some(d) = description {
                    s.push_str(&format!(": {d}"));
                }
                s.push(']');
                s
            }
            ContentItem::Unknown => "[unsupported content item]".into(),
        });
    }
    if parts.is_empty()
        && let Some(sc) = &result.structured_content
    {
        parts.push(sc.to_string());
    }
    let text = parts.join("\n");
    if result.is_error {
        format!("Error: {text}")
    } else {
        text
    }
}

fn truncate(s: String, max_chars: usize) -> String {
    let total = s.chars().count();
    if total <= max_chars {
        return s;
    }
    let cut = s
        .char_indices()
        .nth(max_chars)
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    format!(
        "{}\n[… truncated: showing the first {max_chars} of {total} characters]",
        &s[..cut]
    )
}

/// `result` with its text content cut to `max_chars` characters in all (each cut marked with a
/// visible notice), for a converter that formats the result itself (a schema-converter plugin):
/// it gets a result of bounded size and still writes its own wrapper around it.
pub fn truncate_text_content(result: &CallToolResultLike, max_chars: usize) -> CallToolResultLike {
    let mut left = max_chars;
    let mut out = result.clone();
    for item in &mut out.content {
        if let ContentItem::Text { text } = item {
            let total = text.chars().count();
            if total <= left {
                left -= total;
            } else if left == 0 {
                *text = format!("[… truncated: {total} more characters not shown]");
            } else {
                *text = truncate(std::mem::take(text), left);
                left = 0;
            }
        }
    }
    out
}

/// The result body alone (binary content described, long bodies truncated with a visible notice),
/// for chat templates that put their own wrapper around tool turns (Qwen's `<tool_response>`).
pub fn result_body(result: &CallToolResultLike, opts: &ResultOptions) -> String {
    truncate(body(result), opts.max_chars)
}

/// [`format_tool_result_with`] with the default limit.
pub fn format_tool_result(
    format: ToolFormat,
    call: &ToolCall,
    result: &CallToolResultLike,
) -> String {
    format_tool_result_with(format, call, result, &ResultOptions::default())
}

/// The text of a tool turn for `format`: the result body (binary content described, long bodies
/// truncated with a visible notice) in the wrapper that format's chat templates use.
pub fn format_tool_result_with(
    format: ToolFormat,
    call: &ToolCall,
    result: &CallToolResultLike,
    opts: &ResultOptions,
) -> String {
    let b = truncate(body(result), opts.max_chars);
    (format.spec().result)(&crate::formats::ResultTurn {
        name: &call.name,
        id: &call.id,
        body: b,
        is_error: result.is_error,
    })
}
