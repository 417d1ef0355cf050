//! Sampling approval at the terminal (`rkmcp chat`): the request (server, messages, limits, tools)
//! is shown and approved first (once / this server for the session / deny); then the answer the
//! model wrote is shown and approved before it goes back to the server. Menus from `inquire`, as
//! the elicitation forms ([`super::elicit_form`]); Esc or Ctrl-C means deny.
use std::io::Write;

use super::approve_prompt::{printable, printable_lines};
use crate::chat::sampling::{Answer, Prepared, RequestChoice, SamplingApprover};

/// Messages longer than this are cut for display (the model still gets all of it).
const MAX_SHOWN_CHARS: usize = 1500;

pub struct TerminalSamplingApprover;

#[async_trait::async_trait]
impl SamplingApprover for TerminalSamplingApprover {
    async fn review_request(&self, request: &Prepared) -> RequestChoice {
        let text = render_request(request);
        let server = request.server.clone();
        tokio::task::spawn_blocking(move || {
            let _ = writeln!(std::io::stderr(), "{text}");
            let once = "allow once";
            let session = format!("allow `{}` for this session", printable(&server));
            let deny = "deny";
            match inquire::Select::new(
                "Let the local model answer it?",
                vec![once.to_string(), session.clone(), deny.to_string()],
            )
            .prompt_skippable()
            {
                Ok(Some(c)) if c == once => RequestChoice::Once,
                Ok(Some(c)) if c == session => RequestChoice::ForSession,
                _ => RequestChoice::Deny,
            }
        })
        .await
        .unwrap_or(RequestChoice::Deny)
    }

    async fn review_answer(&self, server: &str, answer: &Answer) -> bool {
        let text = render_answer(server, answer);
        tokio::task::spawn_blocking(move || {
            let _ = writeln!(std::io::stderr(), "{text}");
            matches!(
                inquire::Select::new("Send it to the server?", vec!["send", "don't send"])
                    .prompt_skippable(),
                Ok(Some("send"))
            )
        })
        .await
        .unwrap_or(false)
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((i, _)) => format!(
            "{}… [{} more characters]",
            &text[..i],
            text[i..].chars().count()
        ),
        None => text.to_string(),
    }
}

/// The request as shown, without colours.
pub fn render_request(request: &Prepared) -> String {
    let mut out = format!(
        "\n── server `{}` asks the local model to write (sampling) ──\n",
        printable(&request.server)
    );
    let temperature = request
        .temperature
        .map(|t| format!(", temperature {t}"))
        .unwrap_or_default();
    out.push_str(&format!(
        "limits: at most {} tokens{temperature}{}\n",
        request.max_tokens,
        if request.stop.is_empty() {
            String::new()
        } else {
            format!(", stops at {:?}", request.stop)
        }
    ));
    if !request.tools.is_empty() {
        let names: Vec<String> = request.tools.iter().map(|t| printable(&t.name)).collect();
        out.push_str(&format!("tools offered: {}\n", names.join(", ")));
    }
    if let Some(system) = &request.system_prompt {
        out.push_str(&format!("system: {}\n", printable_lines(&cut(system))));
    }
    for m in &request.messages {
        out.push_str(&format!(
            "{}: {}\n",
            m.role.as_str(),
            printable_lines(&cut(&m.content))
        ));
    }
    out
}

/// The generated answer as shown.
pub fn render_answer(server: &str, answer: &Answer) -> String {
    let body = match answer {
        Answer::Text(text) => printable_lines(&cut(text)),
        Answer::ToolUse(calls) => calls
            .iter()
            .map(|(_, name, input)| {
                format!(
                    "call {}({})",
                    printable(name),
                    printable(&serde_json::Value::Object(input.clone()).to_string())
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    format!(
        "── the model's answer for `{}` ──\n{body}",
        printable(server)
    )
}
