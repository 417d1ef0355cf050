//! `rkmcp formats infer|parse` — read a model's tool-call format from its chat template, and
//! run a detector over raw model output, to see how rkmcp reads a model before chatting with it.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use rkmcp_format_infer::{FormatChoice, InferredFormat, choose_format, infer_with, model_template};
use rkmcp_tool_formats::convert::ToolDef;
use rkmcp_tool_formats::{DetectorOptions, ToolCallDetector, ToolFormat, normalize};

use super::{Context, UsageError};

#[derive(Debug, clap::Subcommand)]
pub enum FormatsCommand {
    /// Infer the tool-call format from a chat template and print its description.
    ///
    /// The template is rendered with synthetic conversations (an answer, one and two calls with
    /// string, number and object arguments, reasoning, a tool result); the differences give the
    /// markers around calls, how names and arguments are written, the reasoning markers and the
    /// end-of-turn token. The description must read the template's own calls back, else the
    /// command fails and says why (render error, no call rendered, ambiguous markers).
    /// --json prints the description as JSON (the form `formats parse` and the chat use).
    #[command(
        after_help = "Examples:\n  rkmcp formats infer --template chat_template.jinja\n  rkmcp formats infer --model SmolLM2-135M-Instruct.Q4_1.gguf --json"
    )]
    Infer {
        #[command(flatten)]
        source: TemplateSource,
    },
    /// Read raw model output on stdin and print what the detector finds, as JSON.
    ///
    /// Each event is one of {"text": …}, {"reasoning": …}, {"tool_call": {"id", "name",
    /// "arguments"}} (arguments typed by the tool's input schema when --tools gives it) and
    /// {"malformed": {"raw", "error"}} (a call that could not be read: reported, never shown as
    /// text). With --template or --model the format is the one the chat would use: a known
    /// format module when the template's call syntax or the model name names one, else the one
    /// inferred from the template; which one is said on stderr.
    #[command(
        after_help = "Examples:\n  echo '<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>' | rkmcp formats parse --format hermes\n  rkmcp formats parse --template t.jinja --tools tools.json < output.txt"
    )]
    Parse {
        /// A format module by name (hermes, qwen3-coder, mistral, …).
        #[arg(long, value_name = "NAME", conflicts_with_all = ["template", "model"], required_unless_present_any = ["template", "model"])]
        format: Option<String>,
        #[command(flatten)]
        source: OptionalSource,
        /// MCP tool definitions (a JSON array, or `tools/list`'s {"tools": […]}) whose input
        /// schemas type the arguments.
        #[arg(long, value_name = "TOOLS.json")]
        tools: Option<PathBuf>,
        /// The prompt already opened the reasoning block (it ended with `<think>`).
        #[arg(long)]
        reasoning_open: bool,
    },
}

/// Where a template comes from: exactly one of a file or a model.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct TemplateSource {
    /// A Jinja chat template file (Hugging Face `chat_template`).
    #[arg(long, value_name = "FILE")]
    template: Option<PathBuf>,
    /// A GGUF model (a file name in the model store or a path): its `tokenizer.chat_template`.
    #[arg(long, value_name = "MODEL")]
    model: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct OptionalSource {
    /// A Jinja chat template file (Hugging Face `chat_template`).
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    template: Option<PathBuf>,
    /// A GGUF model (a file name in the model store or a path): its `tokenizer.chat_template`.
    #[arg(long, value_name = "MODEL")]
    model: Option<PathBuf>,
}

/// A template with its special tokens and the model name it belongs to.
struct Template {
    source: String,
    bos: String,
    eos: String,
    model: Option<String>,
}

fn load(template: Option<&Path>, model: Option<&Path>) -> anyhow::Result<Template> {
    if let Some(path) = template {
        let source = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the chat template {}", path.display()))?;
        return Ok(Template {
            source,
            bos: "<s>".into(),
            eos: "</s>".into(),
            model: None,
        });
    }
    let Some(name) = model else {
        return Err(UsageError("give --template FILE or --model MODEL".into()).into());
    };
    let path = rkmcp_llm::store::resolve_model(Some(name)).map_err(super::ask::llm_error)?;
    let t = model_template(&path).map_err(anyhow::Error::msg)?;
    Ok(Template {
        source: t.source,
        bos: t.bos_token,
        eos: t.eos_token,
        model: path.file_stem().map(|s| s.to_string_lossy().into_owned()),
    })
}

pub async fn run(ctx: &Context, cmd: FormatsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        FormatsCommand::Infer { source } => {
            let t = load(source.template.as_deref(), source.model.as_deref())?;
            let f = infer_with(&t.source, &t.bos, &t.eos)?;
            if ctx.global.json {
                println!("{}", serde_json::to_string_pretty(&f)?);
            } else {
                print_description(&f);
            }
            Ok(ExitCode::SUCCESS)
        }
        FormatsCommand::Parse {
            format,
            source,
            tools,
            reasoning_open,
        } => {
            let mut opts = match &tools {
                Some(path) => DetectorOptions::for_tools(&read_tools(path)?),
                None => DetectorOptions::default(),
            };
            opts.reasoning_open = reasoning_open;
            let mut detector = detector(format.as_deref(), &source, &opts)?;
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("cannot read the model output from stdin")?;
            let mut events = detector.feed(&input);
            events.extend(detector.finish());
            println!("{}", serde_json::to_string_pretty(&normalize(events))?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn detector(
    format: Option<&str>,
    source: &OptionalSource,
    opts: &DetectorOptions,
) -> anyhow::Result<Box<dyn ToolCallDetector>> {
    if let Some(name) = format {
        let f: ToolFormat = name
            .parse()
            .map_err(|e: rkmcp_tool_formats::UnknownFormat| UsageError(e.to_string()))?;
        return Ok(f.detector_with(opts));
    }
    let t = load(source.template.as_deref(), source.model.as_deref())?;
    match choose_format(Some((&t.source, &t.bos, &t.eos)), t.model.as_deref()) {
        FormatChoice::Known(f) => {
            eprintln!("rkmcp: reading tool calls as `{f}` (a format module)");
            Ok(f.detector_with(opts))
        }
        FormatChoice::Inferred(f) => {
            eprintln!("rkmcp: reading tool calls in the format inferred from the template");
            Ok(f.detector(opts)?)
        }
        FormatChoice::Fallback { format, reason } => {
            eprintln!("rkmcp: {reason}; reading tool calls as `{format}`");
            Ok(format.detector_with(opts))
        }
    }
}

fn read_tools(path: &Path) -> anyhow::Result<Vec<ToolDef>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the tools file {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let list = value.get("tools").cloned().unwrap_or(value);
    serde_json::from_value(list).with_context(|| {
        format!(
            "{}: expected a JSON array of MCP tools ({{\"name\", \"inputSchema\"}}) or {{\"tools\": […]}}",
            path.display()
        )
    })
}

fn print_description(f: &InferredFormat) {
    let show = |label: &str, v: &str| {
        if !v.is_empty() {
            println!("{label:<16} {v:?}");
        }
    };
    show("message open", &f.message_open);
    show("section open", &f.section_open);
    show("section close", &f.section_close);
    show("call open", &f.call_open);
    show("call close", &f.call_close);
    show("call separator", &f.call_separator);
    println!(
        "{:<16} {}",
        "parallel calls",
        if f.parallel { "yes" } else { "no" }
    );
    if f.anchored {
        println!("{:<16} only at the start of a message", "calls");
    }
    println!(
        "{:<16} {}",
        "call syntax",
        serde_json::to_string(&f.call).unwrap_or_default()
    );
    if let Some(r) = &f.reasoning {
        println!("{:<16} {:?} … {:?}", "reasoning", r.open, r.close);
    }
    if !f.end_of_turn.is_empty() {
        println!("{:<16} {}", "end of turn", f.end_of_turn.join(" "));
    }
    let mut args = serde_json::Map::new();
    args.insert("city".into(), "Paris".into());
    println!("{:<16} {}", "example", f.example("get_weather", &args));
}
