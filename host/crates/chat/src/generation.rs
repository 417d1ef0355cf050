//! One generation streamed through the detector: answer text and reasoning go out as events as
//! they arrive, calls are collected, and Ctrl-C aborts the backend and keeps what was said.
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use rkmcp_llm::{FinishReason, GenerateRequest, SharedBackend, Stats};
use rkmcp_plugin_host::Detector;
use rkmcp_tool_formats::convert::ToolDef;
use rkmcp_tool_formats::{
    DetectorEvent, DetectorOptions, ReasoningFilter, ToolCall, ToolFormat, reasoning_open_in_prompt,
};

use super::detect::ResponseDetector;
use super::events::{ChatEvent, notify};

/// What one generation contained.
#[derive(Default)]
pub struct Detected {
    pub text: String,
    /// The model's reasoning, kept apart from `text`.
    pub reasoning: String,
    /// The rendered prompt had opened a reasoning block.
    pub reasoning_open: bool,
    pub calls: Vec<ToolCall>,
    /// (raw, error)
    pub malformed: Vec<(String, String)>,
}

impl Detected {
    fn take(&mut self, found: Vec<DetectorEvent>, events: &UnboundedSender<ChatEvent>) {
        for ev in found {
            match ev {
                DetectorEvent::Text(t) | DetectorEvent::Reasoning(t) if t.is_empty() => {}
                DetectorEvent::Text(t) => {
                    self.text.push_str(&t);
                    let _ = events.send(ChatEvent::Text { text: t });
                }
                DetectorEvent::Reasoning(t) => {
                    self.reasoning.push_str(&t);
                    let _ = events.send(ChatEvent::Reasoning { text: t });
                }
                DetectorEvent::ToolCall(c) => self.calls.push(c),
                DetectorEvent::Malformed { raw, error } => self.malformed.push((raw, error)),
            }
        }
    }
}

/// A finished (or cancelled) generation.
pub struct Generated {
    /// The model's output as generated, markers included.
    pub raw: String,
    /// How the backend finished, and its figures; `None` when the generation was cancelled.
    pub finished: Option<(FinishReason, Stats)>,
    pub detected: Detected,
}

/// How the model's output is read.
pub struct Reading<'a> {
    pub format: ToolFormat,
    pub tools: &'a [ToolDef],
    /// `None`: no tools offered, so no detector (reasoning is still split off).
    pub detector: Option<(&'a str, Option<&'a Detector>)>,
    /// The format read from the model's template, which then reads the calls.
    pub inferred: Option<&'a rkmcp_format_infer::InferredFormat>,
}

/// Streams one generation of `request` on `backend`, read as `reading` says.
pub async fn stream(
    backend: &SharedBackend,
    request: GenerateRequest,
    reading: Reading<'_>,
    events: &UnboundedSender<ChatEvent>,
    cancel: &CancellationToken,
) -> anyhow::Result<Generated> {
    // Whether the rendered prompt already opened a reasoning block (`<think>` at its end).
    let reasoning_open = match backend.render(request.messages.clone()).await {
        Ok(prompt) => reasoning_open_in_prompt(&prompt),
        Err(err) => {
            tracing::debug!("rendering the prompt to look for an open reasoning block: {err}");
            false
        }
    };
    let mut opts = DetectorOptions::for_tools(reading.tools);
    opts.reasoning_open = reasoning_open;
    let mut stream = backend.generate(request);
    let inferred = reading.inferred.and_then(|f| f.detector(&opts).ok());
    let mut detector = match (reading.detector, inferred) {
        (Some(_), Some(d)) => Some(ResponseDetector::with_detector(reading.format, &opts, d)),
        (Some((dialect, plugin)), None) => {
            let (d, notice) = ResponseDetector::start(reading.format, &opts, plugin, dialect).await;
            notify(events, notice);
            Some(d)
        }
        (None, _) => None,
    };
    // Without tools there is no detector, but reasoning is still kept apart.
    let mut reasoning_only = ReasoningFilter::new(reading.format, reasoning_open);
    let mut detected = Detected {
        reasoning_open,
        ..Detected::default()
    };
    let mut raw = String::new();
    let mut aborted = false;
    loop {
        let chunk = if aborted {
            // Drain what was generated before the abort took effect.
            stream.chunks.recv().await
        } else {
            tokio::select! {
                chunk = stream.chunks.recv() => chunk,
                _ = cancel.cancelled() => {
                    stream.abort.abort();
                    aborted = true;
                    continue;
                }
            }
        };
        let Some(chunk) = chunk else { break };
        raw.push_str(&chunk);
        match detector.as_mut() {
            Some(d) => {
                let (found, notice) = d.feed(&chunk).await;
                notify(events, notice);
                detected.take(found, events);
            }
            None => {
                let (mut found, answer) = reasoning_only.feed(&chunk);
                found.push(DetectorEvent::Text(answer));
                detected.take(found, events);
            }
        }
    }
    if let Some(d) = detector.as_mut() {
        let (found, notice) = d.finish().await;
        notify(events, notice);
        detected.take(found, events);
    } else {
        let (mut found, answer) = reasoning_only.finish();
        found.push(DetectorEvent::Text(answer));
        detected.take(found, events);
    }
    let finished = match stream.finish().await {
        Ok(g) => {
            let _ = events.send(ChatEvent::Generated {
                stats: g.stats.clone(),
                finish: g.finish,
            });
            // The backend's text is authoritative (chunks are exactly it, minus stop strings).
            if g.text.len() > raw.len() {
                raw = g.text;
            }
            Some((g.finish, g.stats))
        }
        Err(err) if cancel.is_cancelled() => {
            tracing::debug!("generation ended by cancellation: {err}");
            None
        }
        Err(err) => return Err(anyhow::anyhow!("the model failed: {err}")),
    };
    Ok(Generated {
        raw,
        finished,
        detected,
    })
}
