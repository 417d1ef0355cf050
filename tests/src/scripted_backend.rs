//! TEST DOUBLE of an LLM backend: `ScriptedBackend` answers each generation with the next scripted
//! text, streamed in small chunks, and records what it was asked. It stands in for the model
//! where a test needs exact, repeatable model output (the chat loop's transcripts); the real
//! model is tested elsewhere with the real llama.cpp backend.
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rkmcp_llm::{
    AbortHandle, Backend, BackendInfo, Capabilities, FinishReason, GenerateRequest, Generation,
    LlmError, Message, SharedBackend, Stats,
};

/// One scripted generation.
#[derive(Debug, Clone)]
pub enum Step {
    /// Streams this text, then ends the turn.
    Say(String),
    /// Streams this text, then keeps "generating" until aborted (for cancellation tests).
    SayThenHang(String),
}

/// What the backend was asked, per generation.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub messages: Vec<Message>,
    pub grammar: Option<String>,
    pub tools_json: Option<String>,
    /// The request's temperature override (`None`: the configured sampling).
    pub temperature: Option<f32>,
}

pub struct ScriptedBackend {
    script: VecDeque<Step>,
    seen: Arc<Mutex<Vec<SeenRequest>>>,
    chunk_chars: usize,
    capabilities: Capabilities,
}

impl ScriptedBackend {
    /// A backend that will answer with `steps`, in order, streamed `chunk_chars` characters at a
    /// time (small chunks exercise the detectors' handling of split markers).
    pub fn new(
        steps: Vec<Step>,
        chunk_chars: usize,
    ) -> (ScriptedBackend, Arc<Mutex<Vec<SeenRequest>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (
            ScriptedBackend {
                script: steps.into(),
                seen: Arc::clone(&seen),
                chunk_chars: chunk_chars.max(1),
                capabilities: Capabilities::default(),
            },
            seen,
        )
    }

    /// Pretends to honour grammars (they are recorded, not enforced).
    pub fn with_grammar(mut self) -> Self {
        self.capabilities.grammar = true;
        self
    }

    pub fn shared(self) -> SharedBackend {
        SharedBackend::new(Box::new(self))
    }
}

/// Shorthand: a shared scripted backend that says `steps` in 3-character chunks.
pub fn scripted(steps: &[&str]) -> (SharedBackend, Arc<Mutex<Vec<SeenRequest>>>) {
    let (b, seen) =
        ScriptedBackend::new(steps.iter().map(|s| Step::Say(s.to_string())).collect(), 3);
    (b.shared(), seen)
}

impl Backend for ScriptedBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: "scripted",
            model: PathBuf::from("scripted-test-double"),
            chat_template: "chatml".into(),
            context_length: 4096,
            capabilities: self.capabilities,
            detail: "TEST DOUBLE: replays scripted answers".into(),
        }
    }

    fn render(&self, messages: &[Message]) -> Result<String, LlmError> {
        Ok(messages
            .iter()
            .map(|m| format!("{}: {}\n", m.role.as_str(), m.content))
            .collect())
    }

    fn generate(
        &mut self,
        request: &GenerateRequest,
        abort: &AbortHandle,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, LlmError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(SeenRequest {
                messages: request.messages.clone(),
                grammar: request.grammar.clone(),
                tools_json: request.tools_json.clone(),
                temperature: request.temperature,
            });
        }
        let Some(step) = self.script.pop_front() else {
            return Err(LlmError::Runtime(
                "the scripted backend ran out of answers: the chat loop generated more often than the test expected".into(),
            ));
        };
        let (text, hang) = match step {
            Step::Say(t) => (t, false),
            Step::SayThenHang(t) => (t, true),
        };
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(self.chunk_chars) {
            if abort.is_aborted() {
                break;
            }
            let piece: String = piece.iter().collect();
            on_text(&piece);
        }
        let mut finish = FinishReason::EndOfTurn;
        if hang {
            while !abort.is_aborted() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if abort.is_aborted() {
            finish = FinishReason::Aborted;
        }
        Ok(Generation {
            text,
            finish,
            stats: Stats {
                generated_tokens: chars.len() as u32,
                ..Stats::default()
            },
        })
    }

    fn reset(&mut self) -> Result<(), LlmError> {
        Ok(())
    }
}
