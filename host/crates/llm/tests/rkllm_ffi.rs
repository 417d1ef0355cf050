//! The RKLLM FFI path — dlopen, layout detection, rkllm_init, rkllm_run, result callbacks from a
//! runtime thread, abort, destroy — against the RKLLM TEST DOUBLE (there is no NPU in CI), built
//! once per layout (1.2.0, 1.2.1, 1.3.0); and the bindings against the real headers' layouts.
mod common;
#[path = "rkllm_ffi/layout.rs"]
mod layout;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rkmcp_llm::rkllm::{self, Abi, RkllmBackend, RkllmLibrary};
use rkmcp_llm::{
    AbiSetting, AbortHandle, Backend, FinishReason, GenerateRequest, Generation, LlmError, Message,
    ModelConfig,
};

const ABIS: [Abi; 3] = Abi::ALL;

fn load(abi: Abi, config: &ModelConfig) -> (tempfile::TempDir, RkllmBackend) {
    let dir = tempfile::tempdir().unwrap();
    let lib = Arc::new(RkllmLibrary::open(common::double(abi), AbiSetting::Auto).unwrap());
    assert_eq!(lib.abi, abi, "layout detected from the version string");
    let model = common::fake_model(dir.path());
    let backend = RkllmBackend::load(lib, &model, config).unwrap();
    (dir, backend)
}

fn ask(
    backend: &mut RkllmBackend,
    request: &GenerateRequest,
) -> (Result<Generation, LlmError>, Vec<String>) {
    let mut chunks = Vec::new();
    let result = backend.generate(request, &AbortHandle::new(), &mut |c| {
        chunks.push(c.to_string())
    });
    (result, chunks)
}

fn user(text: &str) -> GenerateRequest {
    GenerateRequest::new(vec![Message::user(text)])
}

#[test]
fn scripted_answer_streams_with_runtime_stats() {
    for abi in ABIS {
        let (_dir, mut backend) = load(abi, &ModelConfig::default());
        let (result, chunks) = ask(&mut backend, &user("Hi"));
        let generation = result.unwrap();
        assert_eq!(
            generation.text, "Hello from the RKLLM test double.",
            "{abi}"
        );
        assert_eq!(chunks.concat(), generation.text);
        assert!(chunks.len() >= 6, "streamed in pieces, got {chunks:?}");
        assert_eq!(generation.finish, FinishReason::EndOfTurn);
        let s = &generation.stats;
        if abi.has_perf() {
            assert_eq!(
                (s.prompt_tokens, s.generated_tokens),
                (7, 4),
                "perf from the FINISH callback"
            );
            assert_eq!(s.prefill_ms, 12.5);
            assert!(
                (s.tokens_per_s - 100.0).abs() < 1e-6,
                "4 tokens in 40 ms: {}",
                s.tokens_per_s
            );
        } else {
            // 1.2.0 reports no statistics: rkmcp counts the callbacks itself.
            assert_eq!((s.prompt_tokens, s.generated_tokens), (0, 6), "{abi}");
        }
        assert!(s.peak_rss_mib > 0.0);
        assert!(
            backend.info().detail.contains(&format!("layout {abi}")),
            "{}",
            backend.info().detail
        );
        assert_eq!(backend.is_running(), Some(false));
    }
}

#[test]
fn utf8_split_over_waiting_callbacks_is_reassembled() {
    for abi in ABIS {
        let (_dir, mut backend) = load(abi, &ModelConfig::default());
        let (result, chunks) = ask(&mut backend, &user("[[utf8]]"));
        let text = result.unwrap().text;
        assert_eq!(text, "café costs 5€ 😀 日本", "{abi}");
        // Every chunk handed out is whole characters (a &str) and together they are the text.
        assert_eq!(chunks.concat(), text);
        assert!(chunks.iter().all(|c| !c.contains('\u{FFFD}')), "{chunks:?}");
    }
}

#[test]
fn role_thinking_and_parameters_reach_the_runtime() {
    for abi in ABIS {
        let mut config = ModelConfig {
            enable_thinking: true,
            max_new_tokens: 77,
            context_length: Some(1024),
            ..Default::default()
        };
        config.sampling.temperature = 0.5;
        config.sampling.top_k = 9;
        let (_dir, mut backend) = load(abi, &config);
        let request = GenerateRequest::new(vec![
            Message::user("weather?"),
            Message::assistant("<tool_call>…</tool_call>"),
            Message::tool("[[echo]] sunny"),
        ]);
        let text = ask(&mut backend, &request).0.unwrap().text;
        // 1.2.0's input has no role and no thinking switch.
        let role = if abi.has_role() {
            "role=tool thinking=true"
        } else {
            "role= thinking=false"
        };
        assert!(
            text.starts_with(&format!("{role} keep_history=1 max_new_tokens=77")),
            "{abi}: {text}"
        );
        assert!(text.contains("ctx=1024 temperature=0.5 top_k=9"), "{text}");
        // Only 1.3.0 has a per-run max_new_tokens.
        let run_max = if abi == Abi::V1_3_0 {
            "run_max_new_tokens=Some(77)"
        } else {
            "run_max_new_tokens=None"
        };
        assert!(text.contains(run_max), "{text}");
        // The runtime's own template wraps the turn: rkmcp sends the contents, not a rendering.
        assert!(
            text.ends_with("prompt=\"weather?\\n\\n[[echo]] sunny\""),
            "{text}"
        );
    }
}

#[test]
fn continued_conversation_sends_only_the_new_turn() {
    for abi in ABIS {
        let (_dir, mut backend) = load(abi, &ModelConfig::default());
        let mut messages = vec![Message::system("Be terse."), Message::user("[[echo]] one")];
        let first = ask(&mut backend, &GenerateRequest::new(messages.clone()))
            .0
            .unwrap()
            .text;
        assert!(
            first.contains("cleared=0")
                && first.ends_with("prompt=\"Be terse.\\n\\n[[echo]] one\""),
            "{first}"
        );
        messages.push(Message::assistant(first));
        messages.push(Message::user("[[echo]] two"));
        let second = ask(&mut backend, &GenerateRequest::new(messages))
            .0
            .unwrap()
            .text;
        assert!(
            second.contains("cleared=0") && second.ends_with("prompt=\"[[echo]] two\""),
            "{abi}: {second}"
        );
        // A different conversation: the KV cache is cleared and everything is sent.
        let other = ask(&mut backend, &user("[[echo]] fresh")).0.unwrap().text;
        assert!(
            other.contains("cleared=1") && other.ends_with("prompt=\"[[echo]] fresh\""),
            "{other}"
        );
    }
}

#[test]
fn configured_template_renders_the_whole_conversation() {
    for abi in ABIS {
        let config = ModelConfig {
            chat_template: Some("chatml".into()),
            ..Default::default()
        };
        let (_dir, mut backend) = load(abi, &config);
        let text = ask(&mut backend, &user("[[echo]] hi")).0.unwrap().text;
        assert!(
            text.contains(r#"template=Some("\"\"|\"\"|\"\"")"#),
            "the runtime template is switched off: {text}"
        );
        assert!(
            text.ends_with(
                r#"prompt="<|im_start|>user\n[[echo]] hi<|im_end|>\n<|im_start|>assistant\n""#
            ),
            "{text}"
        );
    }
}

#[test]
fn native_tools_are_set_through_the_runtime() {
    for abi in ABIS {
        let config = ModelConfig {
            native_tools: true,
            ..Default::default()
        };
        let (_dir, mut backend) = load(abi, &config);
        let mut request = GenerateRequest::new(vec![
            Message::system("You call tools."),
            Message::user("[[echo]] go"),
        ]);
        request.tools_json = Some(r#"[{"type":"function","function":{"name":"now"}}]"#.into());
        if abi == Abi::V1_2_0 {
            // 1.2.0 has no rkllm_set_function_tools: a clear error, not a crash.
            assert!(!backend.library().has_function_tools());
            let err = ask(&mut backend, &request).0.unwrap_err().to_string();
            assert!(
                err.contains("rkllm_set_function_tools (runtime ≥ 1.2.1)")
                    && err.contains("native_tools = false"),
                "{err}"
            );
            continue;
        }
        let text = ask(&mut backend, &request).0.unwrap().text;
        assert!(
            text.contains(r#"tools=Some("system=\"You call tools.\" tools=[{\"type\":\"function\",\"function\":{\"name\":\"now\"}}] response=\"tool_response\"")"#),
            "{abi}: {text}"
        );
        // The system prompt went with the tools, not into the turn.
        assert!(text.ends_with("prompt=\"[[echo]] go\""), "{text}");

        // With the runtime template switched off the runtime refuses tools: a clear error.
        let config = ModelConfig {
            native_tools: true,
            chat_template: Some("chatml".into()),
            ..Default::default()
        };
        let (_dir, mut backend) = load(abi, &config);
        let err = ask(&mut backend, &request).0.unwrap_err().to_string();
        assert!(err.contains("rkllm_set_function_tools failed"), "{err}");
    }
}

#[test]
fn error_state_and_failed_run_are_errors() {
    for abi in ABIS {
        let (_dir, mut backend) = load(abi, &ModelConfig::default());
        let err = ask(&mut backend, &user("[[error]]")).0.unwrap_err();
        assert!(
            matches!(err, LlmError::Runtime(_)) && err.to_string().contains("reported an error"),
            "{err}"
        );
        let err = ask(&mut backend, &user("[[fail]]")).0.unwrap_err();
        assert!(
            err.to_string().contains("rkllm_run failed (code -1)"),
            "{err}"
        );
        // The handle still works afterwards.
        assert_eq!(
            ask(&mut backend, &user("again")).0.unwrap().finish,
            FinishReason::EndOfTurn
        );
    }
}

#[test]
fn abort_from_another_thread_stops_the_runtime() {
    for abi in ABIS {
        let (_dir, mut backend) = load(
            abi,
            &ModelConfig {
                max_new_tokens: 5000,
                ..Default::default()
            },
        );
        let abort = AbortHandle::new();
        let remote = abort.clone();
        let aborter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            remote.abort();
        });
        let mut chunks = 0;
        let generation = backend
            .generate(&user("[[slow]]"), &abort, &mut |_| chunks += 1)
            .unwrap();
        aborter.join().unwrap();
        assert_eq!(generation.finish, FinishReason::Aborted, "{abi}");
        // 2000 pieces 5 ms apart would take 10 s; abort after 100 ms leaves far fewer.
        assert!(chunks > 0 && chunks < 1000, "{chunks} chunks");
        assert_eq!(backend.is_running(), Some(false));
        // An aborted turn is not kept as context.
        let next = ask(&mut backend, &user("[[echo]]")).0.unwrap().text;
        assert!(next.contains("cleared=0"), "{next}");
    }
}

#[test]
fn stop_sequences_and_token_limit_end_generation() {
    for abi in ABIS {
        let (_dir, mut backend) = load(abi, &ModelConfig::default());
        let mut request = user("Hi");
        request.stop = vec![" RKLLM".into()];
        let (result, chunks) = ask(&mut backend, &request);
        let generation = result.unwrap();
        assert_eq!(
            (generation.text.as_str(), generation.finish),
            ("Hello from the", FinishReason::Stop),
            "{abi}"
        );
        assert!(!chunks.concat().contains("RKLLM"));

        let mut request = user("[[slow]]");
        request.max_new_tokens = Some(5);
        let generation = ask(&mut backend, &request).0.unwrap();
        assert_eq!(generation.text, "t0 t1 t2 t3 t4 ", "{abi}");
        assert_eq!(generation.finish, FinishReason::MaxTokens);
    }
}

#[test]
fn handles_are_destroyed_on_drop() {
    for abi in ABIS {
        let dir = tempfile::tempdir().unwrap();
        // A private copy: its live-handle counter is not shared with the other tests.
        let path = common::private_double(abi, dir.path());
        // SAFETY: the test double; the symbol is its test-only counter.
        let probe = unsafe { libloading::Library::new(&path) }.unwrap();
        let live = unsafe {
            probe.get::<unsafe extern "C" fn() -> i32>(b"rkllm_test_double_live_handles")
        }
        .unwrap();
        let lib = Arc::new(RkllmLibrary::open(&path, AbiSetting::Auto).unwrap());
        let model = common::fake_model(dir.path());
        let a = RkllmBackend::load(Arc::clone(&lib), &model, &ModelConfig::default()).unwrap();
        let b = RkllmBackend::load(Arc::clone(&lib), &model, &ModelConfig::default()).unwrap();
        assert_eq!(unsafe { live() }, 2);
        drop(a);
        assert_eq!(unsafe { live() }, 1);
        drop(b);
        assert_eq!(unsafe { live() }, 0, "{abi}");
    }
}

#[test]
fn init_failure_names_model_and_runtime() {
    let lib = Arc::new(RkllmLibrary::open(common::double(Abi::V1_3_0), AbiSetting::Auto).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.rkllm");
    let err = RkllmBackend::load(Arc::clone(&lib), &model, &ModelConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("does not exist") && err.contains("model.rkllm"),
        "{err}"
    );
    // The double refuses models that start with "BAD", as the runtime refuses foreign files.
    std::fs::write(&model, b"BAD model").unwrap();
    let err = RkllmBackend::load(lib, &model, &ModelConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rkllm_init failed (code -1)") && err.contains("layout 1.3.0"),
        "{err}"
    );
}

#[test]
fn each_layout_is_detected_from_its_library() {
    for abi in ABIS {
        let lib = RkllmLibrary::open(common::double(abi), AbiSetting::Auto).unwrap();
        assert_eq!(
            (lib.abi, lib.version.as_deref()),
            (abi, Some(abi.to_string().as_str()))
        );
        assert_eq!(lib.has_function_tools(), abi != Abi::V1_2_0);
    }
    // "1.2" covers two layouts: the symbols choose between them.
    for abi in [Abi::V1_2_0, Abi::V1_2_1] {
        let lib = RkllmLibrary::open(common::double(abi), AbiSetting::V1_2).unwrap();
        assert_eq!(lib.abi, abi);
    }
}

#[test]
fn releases_are_told_apart_or_refused_by_version_and_symbols() {
    let open = |abi: Abi, version: Option<&str>, setting: AbiSetting| {
        let dir = tempfile::tempdir().unwrap();
        let path = common::relabelled_double(abi, dir.path(), version);
        RkllmLibrary::open(&path, setting).map(|lib| (lib.abi, lib.version.clone()))
    };
    let refused = |abi: Abi, version: Option<&str>| {
        open(abi, version, AbiSetting::Auto)
            .unwrap_err()
            .to_string()
    };
    // Releases sharing a layout.
    for v in ["1.2.2", "1.2.3"] {
        assert_eq!(
            open(Abi::V1_2_1, Some(v), AbiSetting::Auto).unwrap(),
            (Abi::V1_2_1, Some(v.into()))
        );
    }
    // Older than 1.2.0, or never compared: refused, naming the version and what to install.
    for (abi, v) in [
        (Abi::V1_2_0, "1.1.4"),
        (Abi::V1_3_0, "1.4.0"),
        (Abi::V1_3_0, "1.3.1"),
    ] {
        let err = refused(abi, Some(v));
        assert!(
            err.contains(v) && err.contains("release 1.3.0") && err.contains("librkllmrt.so"),
            "{err}"
        );
    }
    // A version that contradicts the symbols: 1.2.0 has no rkllm_set_function_tools.
    let err = refused(Abi::V1_2_1, Some("1.2.0"));
    assert!(
        err.contains("1.2.0") && err.contains("rkllm_set_function_tools"),
        "{err}"
    );
    // No version string: the symbols identify 1.2.0 …
    assert_eq!(
        open(Abi::V1_2_0, None, AbiSetting::Auto).unwrap(),
        (Abi::V1_2_0, None)
    );
    // … but not 1.2.1–1.3.0 apart, unless configured.
    let err = refused(Abi::V1_3_0, None);
    assert!(err.contains("model.rkllm_abi"), "{err}");
    assert_eq!(
        open(Abi::V1_3_0, None, AbiSetting::V1_3).unwrap().0,
        Abi::V1_3_0
    );
    assert_eq!(
        open(Abi::V1_2_1, None, AbiSetting::V1_2).unwrap().0,
        Abi::V1_2_1
    );
}

#[test]
fn version_strings_are_read_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let version = |p: &Path| rkllm::detect_version(p).unwrap();
    // The runtime's log line, with a beta suffix.
    let p = write(
        "beta.so",
        b"\x7fELF\0I rkllm: rkllm-runtime version: 1.2.1b1, rknpu driver version: %s\0",
    );
    assert_eq!(version(&p).as_deref(), Some("1.2.1b1"));
    // A format string with the number stored on its own.
    let p = write(
        "fmt.so",
        b"\x7fELF\0I rkllm: rkllm-runtime version: %s\0junk\x011.2.0\0more",
    );
    assert_eq!(version(&p).as_deref(), Some("1.2.0"));
    assert_eq!(
        version(&write("none.so", b"\x7fELF\0nothing to see\0")),
        None
    );
    // Two different bare versions: ambiguous, so none.
    assert_eq!(version(&write("two.so", b"\x001.2.1\0\x001.3.0\0")), None);
}

#[test]
fn missing_library_lists_what_was_tried() {
    let err = rkllm::find_library(Some(Path::new("/nonexistent/librkllmrt.so")))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent/librkllmrt.so") && err.contains("Install"),
        "{err}"
    );
    let err = RkllmLibrary::open(Path::new("/nonexistent/librkllmrt.so"), AbiSetting::Auto)
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn a_library_without_the_rkllm_symbols_is_refused() {
    // The C library this process already uses: a real ELF shared object that is not RKLLM.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let libc = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
        .expect("libc in /proc/self/maps");
    let err = RkllmLibrary::open(Path::new(libc), AbiSetting::V1_3)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is not the RKLLM runtime") && err.contains("rkllm_init"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("librkllmrt.so");
    std::fs::write(&text, "not a library").unwrap();
    let err = RkllmLibrary::open(&text, AbiSetting::V1_3)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot load") && err.contains("librkllmrt.so"),
        "{err}"
    );
}

#[test]
fn shared_backend_streams_to_async_code_and_aborts_from_a_task() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_dir, backend) = load(
            Abi::V1_3_0,
            &ModelConfig {
                max_new_tokens: 5000,
                ..Default::default()
            },
        );
        let shared = rkmcp_llm::SharedBackend::new(Box::new(backend));
        let mut stream = shared.generate(user("[[slow]]"));
        let first = stream.chunks.recv().await.expect("a first chunk");
        assert_eq!(first, "t0 ");
        let abort = stream.abort.clone();
        tokio::spawn(async move { abort.abort() }).await.unwrap();
        let generation = tokio::time::timeout(Duration::from_secs(10), stream.finish())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(generation.finish, FinishReason::Aborted);

        let generation = shared.generate(user("Hi")).finish().await.unwrap();
        assert_eq!(generation.text, "Hello from the RKLLM test double.");
    });
}
