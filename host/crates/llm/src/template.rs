//! Chat templates: how a conversation becomes the one string a model was trained on.
//!
//! GGUF models carry their Hugging Face Jinja template (`tokenizer.chat_template`); rkmcp renders
//! it with minijinja (with Python-compatible string methods, as HF templates expect). When a
//! model has no template, or its template uses something minijinja cannot render, rkmcp falls
//! back to a built-in renderer for the template's family, recognised by its special tokens.
//! Built-ins can also be chosen by name with `model.chat_template`.
use serde::Serialize;

use crate::{LlmError, Message, Role};

/// A template family rkmcp renders itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Builtin {
    /// `<|im_start|>role\n…<|im_end|>\n` — SmolLM2, Qwen (without Qwen's tool wrapping), many more.
    ChatMl,
    /// Qwen 2.5/3: ChatML, tool results wrapped in `<tool_response>` inside a user turn.
    Qwen,
    /// Llama 3.x: header tokens, `<|eot_id|>`, tool results as role `ipython`.
    Llama3,
    /// Gemma 2/3: `<start_of_turn>user|model`, the system prompt joined to the first user turn.
    Gemma,
    /// Phi-3: `<|role|>\n…<|end|>\n`.
    Phi3,
}

impl Builtin {
    pub const ALL: [Builtin; 5] = [
        Builtin::ChatMl,
        Builtin::Qwen,
        Builtin::Llama3,
        Builtin::Gemma,
        Builtin::Phi3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::ChatMl => "chatml",
            Builtin::Qwen => "qwen",
            Builtin::Llama3 => "llama3",
            Builtin::Gemma => "gemma",
            Builtin::Phi3 => "phi3",
        }
    }

    pub fn from_name(name: &str) -> Option<Builtin> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == name.trim().to_ascii_lowercase())
    }

    /// Recognises a Jinja template's family by its special tokens (as llama.cpp does).
    pub fn detect(source: &str) -> Option<Builtin> {
        if source.contains("<|im_start|>") {
            Some(if source.contains("<tool_response>") {
                Builtin::Qwen
            } else {
                Builtin::ChatMl
            })
        } else if source.contains("<|start_header_id|>") {
            Some(Builtin::Llama3)
        } else if source.contains("<start_of_turn>") {
            Some(Builtin::Gemma)
        } else if source.contains("<|assistant|>") && source.contains("<|end|>") {
            Some(Builtin::Phi3)
        } else {
            None
        }
    }

    /// Text that ends the assistant's turn, used as an extra stop sequence.
    pub fn end_of_turn(self) -> &'static str {
        match self {
            Builtin::ChatMl | Builtin::Qwen => "<|im_end|>",
            Builtin::Llama3 => "<|eot_id|>",
            Builtin::Gemma => "<end_of_turn>",
            Builtin::Phi3 => "<|end|>",
        }
    }

    /// Renders without a BOS token: the tokenizer adds it.
    pub fn render(self, messages: &[Message], add_generation_prompt: bool) -> String {
        let mut out = String::new();
        match self {
            Builtin::ChatMl => {
                for m in messages {
                    out.push_str(&format!(
                        "<|im_start|>{}\n{}<|im_end|>\n",
                        m.role.as_str(),
                        m.content
                    ));
                }
                if add_generation_prompt {
                    out.push_str("<|im_start|>assistant\n");
                }
            }
            Builtin::Qwen => {
                let mut i = 0;
                while i < messages.len() {
                    let m = &messages[i];
                    if m.role == Role::Tool {
                        // Consecutive tool results share one user turn.
                        out.push_str("<|im_start|>user");
                        while i < messages.len() && messages[i].role == Role::Tool {
                            out.push_str(&format!(
                                "\n<tool_response>\n{}\n</tool_response>",
                                messages[i].content
                            ));
                            i += 1;
                        }
                        out.push_str("<|im_end|>\n");
                        continue;
                    }
                    out.push_str(&format!(
                        "<|im_start|>{}\n{}<|im_end|>\n",
                        m.role.as_str(),
                        m.content
                    ));
                    i += 1;
                }
                if add_generation_prompt {
                    out.push_str("<|im_start|>assistant\n");
                }
            }
            Builtin::Llama3 => {
                for m in messages {
                    let role = if m.role == Role::Tool {
                        "ipython"
                    } else {
                        m.role.as_str()
                    };
                    out.push_str(&format!(
                        "<|start_header_id|>{role}<|end_header_id|>\n\n{}<|eot_id|>",
                        m.content.trim()
                    ));
                }
                if add_generation_prompt {
                    out.push_str("<|start_header_id|>assistant<|end_header_id|>\n\n");
                }
            }
            Builtin::Gemma => {
                let mut system = String::new();
                for m in messages {
                    match m.role {
                        Role::System => {
                            system.push_str(m.content.trim());
                            system.push_str("\n\n");
                        }
                        Role::Assistant => out.push_str(&format!(
                            "<start_of_turn>model\n{}<end_of_turn>\n",
                            m.content.trim()
                        )),
                        Role::User | Role::Tool => {
                            let prefix = std::mem::take(&mut system);
                            out.push_str(&format!(
                                "<start_of_turn>user\n{prefix}{}<end_of_turn>\n",
                                m.content.trim()
                            ));
                        }
                    }
                }
                if add_generation_prompt {
                    out.push_str("<start_of_turn>model\n");
                }
            }
            Builtin::Phi3 => {
                for m in messages {
                    let role = if m.role == Role::Tool {
                        "user"
                    } else {
                        m.role.as_str()
                    };
                    out.push_str(&format!("<|{role}|>\n{}<|end|>\n", m.content));
                }
                if add_generation_prompt {
                    out.push_str("<|assistant|>\n");
                }
            }
        }
        out
    }
}

/// The template a backend renders conversations with.
#[derive(Debug, Clone)]
pub enum ChatTemplate {
    Builtin(Builtin),
    /// A Hugging Face Jinja template with the special tokens it refers to.
    Jinja {
        source: String,
        bos_token: String,
        eos_token: String,
        /// Used when minijinja cannot render `source`.
        fallback: Option<Builtin>,
    },
}

impl ChatTemplate {
    /// Picks the template: the configured override (a built-in name or Jinja source), else the
    /// model's own, else ChatML.
    pub fn resolve(
        override_: Option<&str>,
        model_template: Option<String>,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<ChatTemplate, LlmError> {
        let jinja = |source: String| {
            // Validate now so a broken template is reported at load time, not mid-chat.
            let env = environment();
            match env.template_from_str(&source) {
                Ok(_) => Ok(ChatTemplate::Jinja {
                    fallback: Builtin::detect(&source),
                    source,
                    bos_token: bos_token.to_string(),
                    eos_token: eos_token.to_string(),
                }),
                Err(err) => match Builtin::detect(&source) {
                    Some(b) => {
                        // The notice target (rkmcp_term_safe::NOTICE_TARGET): shown to the person.
                        tracing::warn!(
                            target: "rkmcp_notice",
                            "chat template does not parse ({err}); using built-in `{}`",
                            b.name()
                        );
                        Ok(ChatTemplate::Builtin(b))
                    }
                    None => Err(LlmError::Template(format!(
                        "the chat template does not parse: {err}"
                    ))),
                },
            }
        };
        match override_ {
            Some(text) if text.contains("{%") || text.contains("{{") => jinja(text.to_string()),
            Some(name) => Builtin::from_name(name).map(ChatTemplate::Builtin).ok_or_else(|| {
                let names: Vec<_> = Builtin::ALL.iter().map(|b| b.name()).collect();
                LlmError::Template(format!(
                    "unknown chat template `{name}` in model.chat_template (built-ins: {}; or give a Jinja template)",
                    names.join(", ")
                ))
            }),
            None => match model_template {
                Some(source) if !source.trim().is_empty() => jinja(source),
                _ => Ok(ChatTemplate::Builtin(Builtin::ChatMl)),
            },
        }
    }

    pub fn name(&self) -> String {
        match self {
            ChatTemplate::Builtin(b) => b.name().to_string(),
            ChatTemplate::Jinja {
                fallback: Some(b), ..
            } => format!("jinja ({})", b.name()),
            ChatTemplate::Jinja { .. } => "jinja".to_string(),
        }
    }

    /// Whether the template wraps tool results in markers of its own (Qwen's
    /// `<tool_response>`), so they are passed as the bare result.
    pub fn wraps_tool_results(&self) -> bool {
        self.family() == Some(Builtin::Qwen)
    }

    /// The family, for end-of-turn markers.
    pub fn family(&self) -> Option<Builtin> {
        match self {
            ChatTemplate::Builtin(b) => Some(*b),
            ChatTemplate::Jinja { fallback, .. } => *fallback,
        }
    }

    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, LlmError> {
        match self {
            ChatTemplate::Builtin(b) => Ok(b.render(messages, add_generation_prompt)),
            ChatTemplate::Jinja {
                source,
                bos_token,
                eos_token,
                fallback,
            } => {
                match render_jinja(
                    source,
                    messages,
                    add_generation_prompt,
                    bos_token,
                    eos_token,
                ) {
                    Ok(text) => Ok(text),
                    Err(err) => match fallback {
                        Some(b) => {
                            tracing::debug!(
                                "Jinja chat template failed ({err}); using built-in `{}`",
                                b.name()
                            );
                            Ok(b.render(messages, add_generation_prompt))
                        }
                        None => Err(LlmError::Template(format!(
                            "rendering the chat template failed: {err}"
                        ))),
                    },
                }
            }
        }
    }
}

fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    // What transformers sets for chat templates.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    // `message['content'].strip()`, `.startswith(…)`, `.items()` …
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    env.add_function("strftime_now", |_fmt: String| -> String {
        // Templates use it for "Today Date"; a fixed date keeps prompts cacheable and tests
        // deterministic.
        "26 Jul 2024".to_string()
    });
    env
}

pub fn render_jinja(
    source: &str,
    messages: &[Message],
    add_generation_prompt: bool,
    bos_token: &str,
    eos_token: &str,
) -> Result<String, minijinja::Error> {
    let env = environment();
    let tmpl = env.template_from_str(source)?;
    tmpl.render(minijinja::context! {
        messages => messages,
        add_generation_prompt => add_generation_prompt,
        bos_token => bos_token,
        eos_token => eos_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convo() -> Vec<Message> {
        vec![
            Message::system("Be brief."),
            Message::user("What is 2+2?"),
            Message::assistant("4"),
            Message::tool("{\"result\": 4}"),
        ]
    }

    #[test]
    fn chatml_exact() {
        assert_eq!(
            Builtin::ChatMl.render(&convo(), true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n\
             <|im_start|>assistant\n4<|im_end|>\n<|im_start|>tool\n{\"result\": 4}<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn qwen_groups_tool_results_in_one_user_turn() {
        let mut c = convo();
        c.push(Message::tool("second"));
        let text = Builtin::Qwen.render(&c, true);
        assert!(text.ends_with(
            "<|im_start|>user\n<tool_response>\n{\"result\": 4}\n</tool_response>\n<tool_response>\nsecond\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
        ), "{text}");
    }

    #[test]
    fn llama3_exact() {
        assert_eq!(
            Builtin::Llama3.render(&convo(), true),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>\
             <|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>\
             <|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>\
             <|start_header_id|>ipython<|end_header_id|>\n\n{\"result\": 4}<|eot_id|>\
             <|start_header_id|>assistant<|end_header_id|>\n\n"
        );
    }

    #[test]
    fn gemma_merges_system_into_first_user_turn() {
        assert_eq!(
            Builtin::Gemma.render(&convo()[..3], true),
            "<start_of_turn>user\nBe brief.\n\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn detection_by_special_tokens() {
        assert_eq!(
            Builtin::detect("{{ '<|im_start|>' + m.role }}"),
            Some(Builtin::ChatMl)
        );
        assert_eq!(
            Builtin::detect("<|im_start|> <tool_response>"),
            Some(Builtin::Qwen)
        );
        assert_eq!(
            Builtin::detect("<|start_header_id|>"),
            Some(Builtin::Llama3)
        );
        assert_eq!(Builtin::detect("<start_of_turn>"), Some(Builtin::Gemma));
        assert_eq!(
            Builtin::detect("<|assistant|> <|end|>"),
            Some(Builtin::Phi3)
        );
        assert_eq!(Builtin::detect("{{ messages }}"), None);
    }

    #[test]
    fn unknown_override_names_the_built_ins() {
        let err = ChatTemplate::resolve(Some("vicuna"), None, "", "")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("vicuna") && err.contains("chatml") && err.contains("gemma"),
            "{err}"
        );
    }

    #[test]
    fn jinja_with_python_methods_renders() {
        let src = "{% for m in messages %}[{{ m.role.upper() }}] {{ m.content.strip() }}\n{% endfor %}\
                   {% if add_generation_prompt %}[ASSISTANT]{% endif %}";
        let t = ChatTemplate::resolve(Some(src), None, "<s>", "</s>").unwrap();
        let text = t.render(&[Message::user("  hi  ")], true).unwrap();
        assert_eq!(text, "[USER] hi\n[ASSISTANT]");
    }

    #[test]
    fn raise_exception_falls_back_to_detected_builtin() {
        let src = "{{ raise_exception('no tools here') }}<|im_start|>";
        let t = ChatTemplate::resolve(Some(src), None, "", "").unwrap();
        assert_eq!(
            t.render(&[Message::user("x")], true).unwrap(),
            Builtin::ChatMl.render(&[Message::user("x")], true)
        );
        let no_family =
            ChatTemplate::resolve(Some("{{ raise_exception('nope') }}"), None, "", "").unwrap();
        assert!(
            no_family
                .render(&[Message::user("x")], true)
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
    }
}
