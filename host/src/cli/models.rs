//! `rkmcp models list|path` — the model store.
use std::path::PathBuf;
use std::process::ExitCode;

use rkmcp_llm::store;

use super::Context;
use super::ask::llm_error;

#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// List the models in the model store ($XDG_DATA_HOME/rkmcp/models).
    List,
    /// Print the file a model name resolves to (default: the default model), or the store folder
    /// with --dir.
    Path {
        /// A file name in the store or a path.
        name: Option<PathBuf>,
        /// Print the store folder instead.
        #[arg(long, conflicts_with = "name")]
        dir: bool,
    },
}

pub async fn run(ctx: &Context, cmd: ModelsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ModelsCommand::List => {
            let models = store::list_models().map_err(llm_error)?;
            if ctx.global.json {
                let out = serde_json::json!({ "dir": store::models_dir(), "models": models });
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else if models.is_empty() {
                eprintln!(
                    "no models in {} (scripts/setup installs the default model {})",
                    store::models_dir().display(),
                    store::DEFAULT_MODEL_FILE
                );
            } else {
                println!("{:<48} {:>6} {:>10}  PATH", "NAME", "FORMAT", "SIZE");
                for m in &models {
                    let format = match m.format {
                        rkmcp_llm::ModelFormat::Gguf => "gguf",
                        rkmcp_llm::ModelFormat::Rkllm => "rkllm",
                    };
                    let name = if m.default {
                        format!("{} (default)", m.name)
                    } else {
                        m.name.clone()
                    };
                    println!(
                        "{name:<48} {format:>6} {:>8.1}MB  {}",
                        m.size_bytes as f64 / 1e6,
                        m.path.display()
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Path { dir: true, .. } => {
            print_path(ctx, &store::models_dir())?;
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Path { name, .. } => {
            let path = store::resolve_model(name.as_deref()).map_err(llm_error)?;
            print_path(ctx, &path)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_path(ctx: &Context, path: &std::path::Path) -> anyhow::Result<()> {
    if ctx.global.json {
        println!("{}", serde_json::json!({ "path": path }));
    } else {
        println!("{}", path.display());
    }
    Ok(())
}
