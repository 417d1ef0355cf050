//! The CPU backend generating from the real default model (SmolLM2-135M-Instruct Q4_1).
//! Assertions are about structure and determinism, not prose.
#![cfg(feature = "llama")]
mod common;

use std::time::Duration;

use rkmcp_llm::llama::LlamaBackend;
use rkmcp_llm::template::Builtin;
use rkmcp_llm::{
    AbortHandle, Backend, FinishReason, GenerateRequest, Generation, LlmError, Message,
    ModelConfig, SamplingConfig,
};

fn greedy_config(max_new_tokens: u32) -> ModelConfig {
    ModelConfig {
        sampling: SamplingConfig::greedy(),
        max_new_tokens,
        // Tests run two at a time on CI's two cores: one thread each.
        threads: Some(1),
        context_length: Some(1024),
        ..Default::default()
    }
}

fn load(config: &ModelConfig) -> LlamaBackend {
    LlamaBackend::load(&common::smollm2(), config).unwrap()
}

fn run(backend: &mut LlamaBackend, request: &GenerateRequest) -> (Generation, Vec<String>) {
    let mut chunks = Vec::new();
    let generation = backend
        .generate(request, &AbortHandle::new(), &mut |c| {
            chunks.push(c.to_string())
        })
        .unwrap();
    (generation, chunks)
}

fn question() -> GenerateRequest {
    GenerateRequest::new(vec![Message::user(
        "What is the capital of France? Answer in one sentence.",
    )])
}

#[test]
fn greedy_generation_is_deterministic_and_stats_are_sane() {
    let mut backend = load(&greedy_config(48));
    let mut fresh = question();
    fresh.reuse_cache = false;
    let (first, chunks) = run(&mut backend, &fresh);
    assert!(!first.text.trim().is_empty());
    assert_eq!(
        chunks.concat(),
        first.text,
        "streamed chunks are the answer"
    );
    assert!(
        matches!(
            first.finish,
            FinishReason::EndOfTurn | FinishReason::MaxTokens
        ),
        "{:?}",
        first.finish
    );
    assert!(
        !first.text.contains("<|im_end|>") && !first.text.contains("<|im_start|>"),
        "{}",
        first.text
    );
    let s = &first.stats;
    assert!(s.prompt_tokens > 10 && s.cached_tokens == 0, "{s:?}");
    assert!(s.generated_tokens > 0 && s.generated_tokens <= 48, "{s:?}");
    assert!(s.prefill_ms > 0.0 && s.prefill_tokens_per_s > 0.0, "{s:?}");
    assert!(s.tokens_per_s > 0.0 && s.generation_ms > 0.0, "{s:?}");
    assert!(s.time_to_first_token_ms > 0.0, "{s:?}");
    assert!(s.peak_rss_mib > 50.0, "a 98 MB model is mapped: {s:?}");

    // Same input, greedy: the same answer, from a fresh model and from a reused KV cache.
    let (again, _) = run(&mut backend, &fresh);
    assert_eq!(again.text, first.text);
    let (cached, _) = run(&mut backend, &question());
    let (cached2, _) = run(&mut backend, &question());
    assert_eq!(cached2.text, first.text);
    assert!(
        cached2.stats.cached_tokens > 0,
        "the prompt prefix came from the KV cache: {:?}",
        cached2.stats
    );
    assert_eq!(cached.text, first.text);
    let mut other = load(&greedy_config(48));
    assert_eq!(run(&mut other, &fresh).0.text, first.text);
}

#[test]
fn multi_turn_reuses_the_cache_for_earlier_turns() {
    let mut backend = load(&greedy_config(24));
    let mut messages = question().messages;
    let (first, _) = run(&mut backend, &GenerateRequest::new(messages.clone()));
    messages.push(Message::assistant(first.text.clone()));
    messages.push(Message::user("And of Italy?"));
    let (second, _) = run(&mut backend, &GenerateRequest::new(messages));
    assert!(!second.text.trim().is_empty());
    assert!(
        second.stats.cached_tokens >= first.stats.prompt_tokens,
        "first turn's prompt reused: {:?} vs {:?}",
        second.stats,
        first.stats
    );
}

#[test]
fn seeded_sampling_repeats() {
    let mut config = greedy_config(24);
    config.sampling = SamplingConfig {
        temperature: 0.9,
        seed: Some(1234),
        ..SamplingConfig::default()
    };
    let mut backend = load(&config);
    let mut request =
        GenerateRequest::new(vec![Message::user("Tell me a short story about a cat.")]);
    request.reuse_cache = false;
    let a = run(&mut backend, &request).0.text;
    let b = run(&mut backend, &request).0.text;
    assert!(!a.is_empty());
    assert_eq!(a, b, "same seed, same text");
}

#[test]
fn a_request_temperature_overrides_the_configured_sampling() {
    let mut hot = greedy_config(24);
    hot.sampling = SamplingConfig {
        temperature: 1.5,
        seed: Some(7),
        ..SamplingConfig::default()
    };
    let mut request =
        GenerateRequest::new(vec![Message::user("Tell me a short story about a cat.")]);
    request.reuse_cache = false;
    // The same sampling (penalties included) at temperature 0.
    let mut cold = hot.clone();
    cold.sampling.temperature = 0.0;
    let greedy = run(&mut load(&cold), &request).0.text;
    let mut backend = load(&hot);
    let sampled = run(&mut backend, &request).0.text;
    assert_ne!(
        sampled, greedy,
        "a hot seeded sampler writes something else"
    );
    request.temperature = Some(0.0);
    assert_eq!(run(&mut backend, &request).0.text, greedy);
    // The override holds for one request only.
    request.temperature = None;
    assert_eq!(run(&mut backend, &request).0.text, sampled);
}

#[test]
fn grammar_constrains_the_output() {
    let mut backend = load(&greedy_config(64));
    let mut request =
        GenerateRequest::new(vec![Message::user("Is Paris in France? Reply in JSON.")]);
    request.grammar = Some(
        r#"root ::= "{" ws "\"answer\":" ws ("\"yes\"" | "\"no\"") ws "," ws "\"confidence\":" ws [0-9] ws "}"
ws ::= [ ]?"#
            .into(),
    );
    let (generation, _) = run(&mut backend, &request);
    assert_eq!(
        generation.finish,
        FinishReason::EndOfTurn,
        "the grammar ends the turn: {:?}",
        generation.text
    );
    let value: serde_json::Value = serde_json::from_str(&generation.text)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", generation.text));
    assert!(
        matches!(value["answer"].as_str(), Some("yes" | "no")),
        "{value}"
    );
    assert!(
        value["confidence"].as_u64().is_some_and(|c| c <= 9),
        "{value}"
    );

    request.grammar = Some("root ::= (".into());
    let err = backend
        .generate(&request, &AbortHandle::new(), &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Request(_)) && err.to_string().contains("grammar"),
        "{err}"
    );
}

#[test]
fn stop_sequences_cut_the_answer() {
    let mut backend = load(&greedy_config(48));
    let mut request = question();
    request.reuse_cache = false;
    let full = run(&mut backend, &request).0.text;
    // Stop at the first space after the first few characters: the answer is what came before.
    let cut = full
        .char_indices()
        .skip(3)
        .find(|(_, c)| *c == ' ')
        .map(|(i, _)| i)
        .expect("a multi-word answer");
    let stop = full[cut..].chars().take(3).collect::<String>();
    request.stop = vec![stop.clone()];
    let (stopped, chunks) = run(&mut backend, &request);
    assert_eq!(stopped.finish, FinishReason::Stop);
    assert_eq!(stopped.text, full[..full.find(&stop).unwrap()]);
    assert!(!chunks.concat().contains(&stop));
}

#[test]
fn abort_stops_generation() {
    let mut backend = load(&greedy_config(2000));
    let request = GenerateRequest::new(vec![Message::user(
        "Write a very long essay about the history of Europe.",
    )]);
    let aborted = AbortHandle::new();
    aborted.abort();
    let g = backend.generate(&request, &aborted, &mut |_| {}).unwrap();
    assert_eq!((g.finish, g.text.as_str()), (FinishReason::Aborted, ""));

    let abort = AbortHandle::new();
    let remote = abort.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        remote.abort();
    });
    let g = backend.generate(&request, &abort, &mut |_| {}).unwrap();
    t.join().unwrap();
    assert_eq!(g.finish, FinishReason::Aborted);
    assert!(g.stats.generated_tokens < 2000);
}

#[test]
fn max_tokens_limits_generation() {
    let mut backend = load(&greedy_config(2000));
    let mut request = GenerateRequest::new(vec![Message::user("Count from 1 to 100.")]);
    request.max_new_tokens = Some(5);
    let g = run(&mut backend, &request).0;
    assert_eq!(
        (g.finish, g.stats.generated_tokens),
        (FinishReason::MaxTokens, 5)
    );
}

#[test]
fn smollm2_gguf_template_renders_through_minijinja() {
    let backend = load(&greedy_config(8));
    assert!(
        backend.template().name().starts_with("jinja"),
        "{}",
        backend.template().name()
    );
    let messages = [
        Message::user("Hi"),
        Message::assistant("Hello!"),
        Message::user("Bye"),
    ];
    let text = backend.render(&messages).unwrap();
    // SmolLM2's template: ChatML plus its default system prompt when none is given.
    let expected = format!(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n{}",
        Builtin::ChatMl.render(&messages, true)
    );
    assert_eq!(text, expected);
}

/// rkmcp's built-in renderers against llama.cpp's own implementation of the same templates.
#[test]
fn builtin_templates_match_llama_cpp() {
    use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate};
    let backend = load(&greedy_config(8));
    let model = backend_model(&backend);
    let conversations = [
        vec![
            Message::system("Be brief."),
            Message::user("What is 2+2?"),
            Message::assistant("4"),
            Message::user("And 3+3?"),
        ],
        vec![
            Message::user("Hi there"),
            Message::assistant("Hello."),
            Message::user("  spaced  "),
        ],
    ];
    for builtin in [
        Builtin::ChatMl,
        Builtin::Llama3,
        Builtin::Gemma,
        Builtin::Phi3,
    ] {
        for messages in &conversations {
            let chat: Vec<LlamaChatMessage> = messages
                .iter()
                .map(|m| LlamaChatMessage::new(m.role.as_str().into(), m.content.clone()).unwrap())
                .collect();
            let theirs = model
                .apply_chat_template(
                    &LlamaChatTemplate::new(builtin.name()).unwrap(),
                    &chat,
                    true,
                )
                .unwrap();
            assert_eq!(builtin.render(messages, true), theirs, "{}", builtin.name());
        }
    }
}

fn backend_model(backend: &LlamaBackend) -> &llama_cpp_2::model::LlamaModel {
    backend.model()
}
