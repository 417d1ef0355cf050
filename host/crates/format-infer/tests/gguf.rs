//! The default model's template, read from its GGUF header, is inferred (SmolLM2: ChatML
//! without tool calls, so its template renders none and inference says so).

use std::path::PathBuf;

#[test]
fn the_installed_model_template_is_read_and_judged() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let path =
        PathBuf::from(home).join(".local/share/rkmcp/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !path.exists() {
        eprintln!("skipped: {} is not installed", path.display());
        return;
    }
    let t = rkmcp_format_infer::model_template(&path).expect("GGUF header");
    assert!(t.source.contains("<|im_start|>"), "{}", t.source);
    assert_eq!(t.eos_token, "<|im_end|>");
    let e = rkmcp_format_infer::infer_with(&t.source, &t.bos_token, &t.eos_token).unwrap_err();
    assert!(e.to_string().contains("rendered no tool call"), "{e}");
}

#[test]
fn a_file_that_is_not_gguf_is_named() {
    let e = rkmcp_format_infer::model_template(std::path::Path::new(env!("CARGO_MANIFEST_PATH")))
        .unwrap_err();
    assert!(
        e.contains("is not a GGUF model file") && e.contains("Cargo.toml"),
        "{e}"
    );
}
