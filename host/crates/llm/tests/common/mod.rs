//! Shared test helpers: building the RKLLM TEST DOUBLE for each layout.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rkmcp_llm::rkllm::Abi;

/// The target dir this test binary was built in (`<target>/<profile>/deps/<test>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // <target>[/<triple>]/<profile>/deps/<test>: the triple level is there for cross builds.
    let mut dir = exe
        .ancestors()
        .nth(3)
        .expect("test binary lives in <target>/<profile>/deps")
        .to_path_buf();
    if dir
        .file_name()
        .is_some_and(|n| n == env!("RKMCP_LLM_TARGET"))
    {
        dir.pop();
    }
    dir
}

fn build_double(abi: Abi) -> PathBuf {
    // A target dir of its own: the outer `cargo test` may still hold the main one's lock.
    let dir = target_dir().join("rkllm-test-double").join(abi.to_string());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    let target = env!("RKMCP_LLM_TARGET");
    cmd.args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "rkllm-test-double",
        "--target",
        target,
        "--target-dir",
    ])
    .arg(&dir);
    match abi {
        Abi::V1_2_0 => cmd.args(["--features", "abi-v1-2-0"]),
        Abi::V1_2_1 => cmd.args(["--features", "abi-v1-2-1"]),
        Abi::V1_3_0 => &mut cmd,
    };
    let status = cmd
        .status()
        .expect("run cargo to build the RKLLM test double");
    assert!(
        status.success(),
        "building the RKLLM test double ({abi}) failed"
    );
    let built = dir.join(target).join("release/librkllmrt_test_double.so");
    // Installed under the runtime's real file name, as a user would.
    let lib_dir = dir.join("lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let lib = lib_dir.join("librkllmrt.so");
    std::fs::copy(&built, &lib).expect("copy the test double");
    lib
}

/// `librkllmrt.so` TEST DOUBLE for `abi`, built once per test process.
pub fn double(abi: Abi) -> &'static Path {
    static BUILT: [OnceLock<PathBuf>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let index = Abi::ALL
        .iter()
        .position(|a| *a == abi)
        .expect("Abi::ALL lists every layout");
    BUILT[index].get_or_init(|| build_double(abi))
}

/// A copy of the double for `abi` in `dir` whose version string says `version` instead (same
/// length), or carries none (`None`): a stand-in for other releases and for stripped files.
pub fn relabelled_double(abi: Abi, dir: &Path, version: Option<&str>) -> PathBuf {
    let mut bytes = std::fs::read(double(abi)).unwrap();
    let marker = format!("rkllm-runtime version: {abi} (TEST DOUBLE)");
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .expect("the double carries its version string");
    let replacement = match version {
        Some(v) => format!("rkllm-runtime version: {v} (TEST DOUBLE)"),
        None => "-".repeat(marker.len()),
    };
    assert_eq!(replacement.len(), marker.len(), "same length as {marker:?}");
    bytes[at..at + marker.len()].copy_from_slice(replacement.as_bytes());
    let path = dir.join("librkllmrt.so");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A fresh copy of the double at its own path: `dlopen` gives it its own global state.
pub fn private_double(abi: Abi, dir: &Path) -> PathBuf {
    let path = dir.join("librkllmrt.so");
    std::fs::copy(double(abi), &path).unwrap();
    path
}

/// A file that stands in for an `.rkllm` model (the double only checks that it exists).
pub fn fake_model(dir: &Path) -> PathBuf {
    let path = dir.join("model.rkllm");
    std::fs::write(
        &path,
        b"not a real model: the RKLLM test double only checks the file exists",
    )
    .unwrap();
    path
}

/// The default GGUF model; the CPU tests need it (scripts/setup.d/50-model.sh installs it).
pub fn smollm2() -> PathBuf {
    let path = rkmcp_llm::store::default_model_path();
    assert!(
        path.is_file(),
        "{} is missing: run scripts/setup.d/50-model.sh (CI runs it in scripts/setup)",
        path.display()
    );
    path
}
