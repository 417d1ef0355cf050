//! The integration tests: one binary, a module per area (as ripgrep does), so wasmtime, llama.cpp
//! and rkmcp are linked once instead of once per test file. Filter by area with
//! `cargo test --release -p rkmcp-tests --test integration -- plugin_sandbox::`.
//!
//! Areas follow the data flow: MCP sessions against real servers, plugins in the real host, the
//! chat loop, the CLI.
mod audit_log;
mod mcp_hostile_servers;
mod mcp_negotiation;
mod mcp_protocol;
mod mcp_real_servers;
mod mcp_session_behaviour;
mod oauth_hostile_servers;
mod remote;
mod remote_sign_in_on_demand;
// rkmcp as an MCP server: the gateway with real clients in front and real servers behind.
mod serve;
mod serve_limits;
// Server health and restart, elicitation forms, sampling on the local model.
mod elicitation;
mod health;
mod sampling;
// MCP skills (SEP-2640): listing, loading and verifying.
mod skills;
mod subscriptions;
mod tasks;

mod plugin_contract_versions;
mod plugin_default_plugins;
mod plugin_detector_native_equals_component;
mod plugin_hardening;
mod plugin_host;
mod plugin_js_guard;
mod plugin_lock;
mod plugin_python_guard;
mod plugin_sandbox;
mod plugin_scaffold;
mod plugin_scaffold_js;
mod plugin_transport_python;
mod plugin_transport_websocket;

mod chat_approval_guards;
mod chat_argument_steps;
mod chat_converter_plugins;
mod chat_detector_plugins;
mod chat_early_round;
mod chat_loop_transcripts;
mod chat_named_tool;
mod chat_plugin_reload;
mod chat_real_model;
// The tool-calling evaluation's data (tests/eval), checked without a model.
mod eval_data;

mod cli_config_errors;
mod cli_formats;
mod cli_stderr;
mod first_run;
