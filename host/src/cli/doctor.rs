//! `rkmcp doctor` — which backends can run here: the llama.cpp build, the RKLLM runtime (its
//! release and struct layout, or why it is refused), NPU device nodes, installed models.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rkmcp_llm::{rkllm, store};
use serde::Serialize;

use super::Context;
use super::ask::{ModelArgs, model_config};

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub model: ModelArgs,
}

#[derive(Debug, Serialize)]
struct Check {
    name: String,
    ok: bool,
    detail: String,
}

fn check(name: &str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        name: name.to_string(),
        ok,
        detail: detail.into(),
    }
}

/// NPU device nodes: the rknpu misc device, its debugfs folder, and DRM render nodes whose driver
/// is rknpu (mainline-style kernels expose the NPU that way).
fn npu_devices() -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/dev") {
        found.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("rknpu"))
                .map(|e| e.path()),
        );
    }
    let debugfs = Path::new("/sys/kernel/debug/rknpu");
    if debugfs.exists() {
        found.push(debugfs.to_path_buf());
    }
    if let Ok(entries) = std::fs::read_dir("/sys/class/drm") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("renderD") {
                continue;
            }
            let driver = std::fs::read_link(e.path().join("device/driver")).unwrap_or_default();
            if driver.to_string_lossy().contains("rknpu") {
                found.push(PathBuf::from("/dev/dri").join(name));
            }
        }
    }
    found.sort();
    found
}

pub async fn run(ctx: &Context, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let config = model_config(ctx, &args.model)?;
    let mut checks = Vec::new();

    let llama_built = cfg!(feature = "llama");
    checks.push(check(
        "backend llama (CPU)",
        llama_built,
        if llama_built {
            "built in (llama.cpp)"
        } else {
            "not built (cargo feature `llama` off)"
        },
    ));

    let mut rkllm_ok = false;
    match rkllm::find_library(config.rkllm_lib.as_deref()) {
        Ok(path) => match rkllm::RkllmLibrary::open(&path, config.rkllm_abi) {
            Ok(lib) => {
                rkllm_ok = true;
                checks.push(check(
                    "backend rkllm (NPU)",
                    true,
                    format!(
                        "{} · {}{}",
                        lib.path.display(),
                        lib.describe(),
                        if lib.has_function_tools() {
                            " · function tools"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            Err(err) => checks.push(check("backend rkllm (NPU)", false, err.to_string())),
        },
        Err(err) => checks.push(check("backend rkllm (NPU)", false, err.to_string())),
    }

    let devices = npu_devices();
    checks.push(check(
        "NPU devices",
        !devices.is_empty(),
        if devices.is_empty() {
            "none (/dev/rknpu*, /sys/kernel/debug/rknpu, rknpu /dev/dri/renderD*)".to_string()
        } else {
            devices
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        },
    ));

    let models = store::list_models().unwrap_or_default();
    checks.push(check(
        "model store",
        !models.is_empty(),
        format!(
            "{}: {}",
            store::models_dir().display(),
            if models.is_empty() {
                "empty".to_string()
            } else {
                models
                    .iter()
                    .map(|m| m.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    ));

    let plan = rkmcp_llm::plan(&config);
    let usable = match &plan {
        Ok((rkmcp_llm::BackendKind::Rkllm, _)) => rkllm_ok,
        Ok(_) => llama_built,
        Err(_) => false,
    };
    checks.push(match &plan {
        Ok((kind, model)) => check(
            "selected model",
            usable,
            format!(
                "{} with backend {}",
                model.display(),
                format!("{kind:?}").to_lowercase()
            ),
        ),
        Err(err) => check("selected model", false, err.to_string()),
    });

    if ctx.global.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "ok": usable, "checks": checks }))?
        );
    } else {
        for c in &checks {
            println!(
                "{} {:<22} {}",
                if c.ok { "yes" } else { "no " },
                c.name,
                c.detail
            );
        }
    }
    Ok(if usable {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
