//! The chat loop: from a user's message to the model's answer, with MCP tool calls in between.
//!
//! Data flows in module order: [`settings`] (the `[chat]` table) → [`shortlist`] (the tools that
//! fit the message, for small models; [`named`]: the tools the user named, which the first round
//! calls) → [`prompt`] (system prompt, tool
//! section, grammar per round; [`convert`] when a converter plugin writes them) → the model (rkmcp-llm) → [`detect`] (the built-in detector of
//! rkmcp-tool-formats or a detector plugin) →
//! [`validate`] (arguments against the tool's schema) → [`triage`] (rejected / duplicate / repeat /
//! fresh, and why the turn stops) → [`approval`] (policy, guard plugins, the user) → [`execute`]
//! (MCP sessions behind [`execute::ToolRunner`]) → results fed back (by the format or the converter
//! plugin). [`engine`] runs that loop for `rkmcp chat` and `ask` (reporting it as [`events`]), each round planned by [`round`]
//! (grammar, temperature) and streamed by [`generation`], or written a piece at a time by
//! [`steps`] (`argument_steps`).
//! [`sampling`] serves servers' `sampling/createMessage` on the same model, prompt and detector path,
//! as a conversation of its own. [`remembered`] keeps the tool list of the last run, so `ask`
//! starts its first round while the servers start. [`reload`] puts new versions of the chat's plugins in place
//! between turns when their files change (`rkmcp chat`).
pub mod approval;
pub mod budget;
pub mod client;
pub mod convert;
pub mod detect;
pub mod engine;
pub mod events;
pub mod execute;
pub mod generation;
pub mod named;
pub mod prompt;
pub mod reload;
pub mod remembered;
pub mod round;
pub mod sampling;
pub mod settings;
pub mod shortlist;
pub mod start;
pub mod steps;
pub mod transcript;
pub mod triage;
pub mod validate;

pub use engine::{ChatEngine, TurnOutcome};
pub use events::ChatEvent;
pub use settings::ChatSettings;
pub use start::{ChatOptions, StartedChat, start_chat};
