//! Signing in at the terminal when a server asks (`chat`, `ask`, `tools call` and the other
//! inspection commands): the reason is shown, the person says yes or no (`inquire`, as the
//! other prompts), and yes runs the same sign-in as `rkmcp auth login` — the browser opened
//! where there is one, the URL printed always. A "no" is remembered for the server, so one
//! refusal does not bring the question back on every request.
//!
//! The redirect is only received on the loopback listener here, not pasted: a paste would read
//! stdin from a thread that outlives the sign-in and would swallow the next chat line. On a
//! machine without a browser the person declines and runs `rkmcp auth login --device`.
use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use super::approve_prompt::printable;
use crate::config::ServerConfig;
use crate::mcp::auth::AuthFailure;
use crate::mcp::auth::login::{LoginOptions, LoginUi, login};
use crate::mcp::auth::on_demand::{Person, SignInNeed};

/// How long the sign-in waits for the browser before giving up.
const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct TerminalSignIn {
    declined: Mutex<HashSet<String>>,
}

/// Installs the terminal as the person who signs in, when stdin and stderr are a terminal.
pub fn install_if_terminal() {
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        crate::mcp::auth::on_demand::ask_person_to_sign_in(Arc::new(TerminalSignIn::default()));
    }
}

struct Stderr;

impl LoginUi for Stderr {
    fn say(&mut self, line: &str) {
        let _ = writeln!(std::io::stderr(), "{}", printable(line));
    }
}

impl Person for TerminalSignIn {
    fn sign_in<'a>(
        &'a self,
        config: &'a ServerConfig,
        need: &'a SignInNeed,
    ) -> BoxFuture<'a, Result<bool, AuthFailure>> {
        Box::pin(async move {
            let server = config.name.clone();
            if self
                .declined
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&server)
            {
                return Ok(false);
            }
            let reason = printable(&need.describe(&server));
            let agreed = tokio::task::spawn_blocking(move || {
                let _ = writeln!(std::io::stderr(), "\nrkmcp: {reason}.");
                matches!(
                    inquire::Confirm::new("Sign in now?")
                        .with_default(true)
                        .prompt_skippable(),
                    Ok(Some(true))
                )
            })
            .await
            .unwrap_or(false);
            if !agreed {
                self.declined
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(server);
                return Ok(false);
            }
            let options = LoginOptions {
                scopes: need.scopes(),
                open_browser: true,
                accept_paste: false,
                timeout: SIGN_IN_TIMEOUT,
            };
            let signed_in = login(config, &options, &mut Stderr).await?;
            let _ = writeln!(
                std::io::stderr(),
                "Signed in to `{}`{}; going on.",
                printable(&signed_in.server),
                if signed_in.scopes.is_empty() {
                    String::new()
                } else {
                    format!(" (scopes: {})", printable(&signed_in.scopes.join(" ")))
                }
            );
            Ok(true)
        })
    }
}
