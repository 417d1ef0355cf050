//! Elicitation at the terminal (`rkmcp chat`): a server's form as a sequence of prompts with the
//! schema's defaults filled in, then "send it?"; or a URL to open.
//!
//! The prompts come from `inquire` (crossterm back end, already in the dependency tree): it has
//! every widget a form needs — text with validation and an editable initial value, yes/no,
//! single and multi-select with defaults — and Esc on any of them returns "skipped", which is
//! what cancelling a form means. `dialoguer` has the same widgets but its text input cannot be
//! abandoned with Esc. Answers are checked with the field's own schema
//! ([`crate::mcp::elicitation::Field::parse`]) as they are typed.
//!
//! Everything a server sends (message, labels, descriptions, URL) is shown with control
//! characters escaped.
use std::io::Write;

use inquire::validator::Validation;
use serde_json::{Map, Value};

use super::approve_prompt::{printable, printable_lines};
use crate::mcp::elicitation::{Field, FieldKind, Form, FormOutcome};

/// The terminal as a [`FormAsker`].
pub struct TerminalForms;

impl crate::chat::client::FormAsker for TerminalForms {
    fn fill(&self, server: &str, form: &Form) -> FormOutcome {
        fill(server, form)
    }

    fn open_url(&self, server: &str, message: &str, url: &str) -> FormOutcome {
        open_url(server, message, url)
    }

    fn url_finished(&self, server: &str, url: &str, confirmed: bool) {
        let line = if confirmed {
            format!(
                "[server `{}` confirms the visit to {} is complete]",
                printable(server),
                printable(url)
            )
        } else {
            format!(
                "[server `{}` never confirmed the visit to {}]",
                printable(server),
                printable(url)
            )
        };
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// Asks for `form` from `server`. Blocking: run it on a blocking thread.
pub fn fill(server: &str, form: &Form) -> FormOutcome {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "\n── server `{}` asks for input ──\n{}",
        printable(server),
        printable_lines(&form.message)
    );
    let start = inquire::Select::new("Answer it?", vec!["fill in the form", "decline", "cancel"])
        .with_help_message("Esc at any question cancels")
        .prompt_skippable();
    match start {
        Ok(Some("fill in the form")) => {}
        Ok(Some("decline")) => return FormOutcome::Decline,
        _ => return FormOutcome::Cancel,
    }
    let mut content = Map::new();
    for field in &form.fields {
        match ask(field) {
            Ok(Some(value)) => {
                content.insert(field.name.clone(), value);
            }
            Ok(None) => {}
            Err(()) => return FormOutcome::Cancel,
        }
    }
    let summary = serde_json::to_string_pretty(&content).unwrap_or_default();
    let _ = writeln!(err, "{}", printable_lines(&summary));
    match inquire::Select::new(
        &format!("Send this to `{}`?", printable(server)),
        vec!["send", "decline", "cancel"],
    )
    .prompt_skippable()
    {
        Ok(Some("send")) => FormOutcome::Accept(content),
        Ok(Some("decline")) => FormOutcome::Decline,
        _ => FormOutcome::Cancel,
    }
}

/// URL mode: shows where the URL really goes and asks whether to open it; accepting means the
/// user goes there (the server confirms completion with a notification later, waited for by the
/// caller). A URL that is not a web page (`javascript:`, `file:`, a custom scheme) or not a URL
/// is declined without asking.
pub fn open_url(server: &str, message: &str, url: &str) -> FormOutcome {
    let page = match PageToOpen::read(url) {
        Ok(page) => page,
        Err(why) => {
            let _ = writeln!(
                std::io::stderr(),
                "\n── server `{}` asked you to open {}: declined, {why} ──",
                printable(server),
                printable(url)
            );
            return FormOutcome::Decline;
        }
    };
    let _ = writeln!(
        std::io::stderr(),
        "\n── server `{}` asks you to open a page ──\n{}\n{}",
        printable(server),
        printable_lines(message),
        page.describe()
    );
    let choice = inquire::Select::new(
        "Go there?",
        vec![
            "open it in the browser",
            "I'll open it myself",
            "decline",
            "cancel",
        ],
    )
    .prompt_skippable();
    match choice {
        Ok(Some("open it in the browser")) => {
            if let Err(e) = open_in_browser(&page.url) {
                let _ = writeln!(
                    std::io::stderr(),
                    "could not start a browser ({e}); open the URL above yourself"
                );
            }
            FormOutcome::Accept(Map::new())
        }
        Ok(Some("I'll open it myself")) => FormOutcome::Accept(Map::new()),
        Ok(Some("decline")) => FormOutcome::Decline,
        _ => FormOutcome::Cancel,
    }
}

/// Where a URL from a server really leads, as a person must see it before going there.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PageToOpen {
    /// The URL as the browser gets it: parsed and written out again, the host in its ASCII
    /// (punycode) form, so what is shown is what is opened.
    url: String,
    /// `https://host[:port]`, the host in ASCII.
    site: String,
    /// Things about the URL that can mislead (an internationalised host name, a user name
    /// before the host, no encryption).
    warnings: Vec<String>,
}

impl PageToOpen {
    fn read(raw: &str) -> Result<Self, String> {
        let url =
            url::Url::parse(raw.trim()).map_err(|e| format!("it is not a valid URL ({e})"))?;
        let scheme = url.scheme();
        if scheme != "https" && scheme != "http" {
            return Err(format!(
                "it is a `{scheme}:` URL, not a web page (only https and http pages are opened)"
            ));
        }
        let Some(host) = url.host_str() else {
            return Err("it names no host".into());
        };
        let mut warnings = Vec::new();
        if host.split('.').any(|label| label.starts_with("xn--")) {
            let unicode = url::quirks::domain_to_unicode(host);
            warnings.push(format!(
                "the host is an internationalised name, written `{}` in its own letters: such \
                 names can imitate another site's; the site is the ASCII name above",
                printable(&unicode)
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            warnings.push(format!(
                "the URL puts `{}@` before the host: that is a user name, not the site; the site \
                 is {host}",
                printable(url.username())
            ));
        }
        if scheme == "http" {
            warnings.push("the page is not encrypted (http, not https)".into());
        }
        let site = match url.port() {
            Some(port) => format!("{scheme}://{host}:{port}"),
            None => format!("{scheme}://{host}"),
        };
        Ok(Self {
            url: url.to_string(),
            site,
            warnings,
        })
    }

    fn describe(&self) -> String {
        let mut text = format!(
            "  site: {}\n  page: {}",
            printable(&self.site),
            printable(&self.url)
        );
        for warning in &self.warnings {
            text.push_str("\n  note: ");
            text.push_str(warning);
        }
        text
    }
}

fn open_in_browser(url: &str) -> std::io::Result<()> {
    // Only web URLs are handed to the desktop: a `file:` or custom-scheme URL from a server
    // could start something else. (`PageToOpen::read` refused those already; this stays as the
    // last line before a process is started.)
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(std::io::Error::other("only http(s) URLs are opened"));
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|_| ())
}

/// One field. `Err(())`: the user pressed Esc (cancel the form). `Ok(None)`: left out.
fn ask(field: &Field) -> Result<Option<Value>, ()> {
    let label = format!(
        "{}{}",
        printable(field.label()),
        if field.required { " *" } else { "" }
    );
    let help = field.description.as_deref().map(printable);
    let hint = match &field.kind {
        FieldKind::Text {
            format: Some(format),
        } => Some(format!("format: {format}")),
        _ => None,
    };
    let help = match (help, hint) {
        (Some(h), Some(f)) => Some(format!("{h} ({f})")),
        (h, f) => h.or(f),
    };
    let result = match &field.kind {
        FieldKind::Boolean => {
            let mut confirm = inquire::Confirm::new(&label);
            if let Some(Value::Bool(b)) = field.default {
                confirm = confirm.with_default(b);
            }
            if let Some(h) = &help {
                confirm = confirm.with_help_message(h);
            }
            confirm
                .prompt_skippable()
                .map(|b| b.map(|b| Some(Value::Bool(b))))
        }
        FieldKind::Select { options } => {
            let labels: Vec<String> = options.iter().map(|(_, l)| printable(l)).collect();
            let start = field
                .default
                .as_ref()
                .and_then(Value::as_str)
                .and_then(|d| options.iter().position(|(v, _)| v == d))
                .unwrap_or(0);
            let mut select =
                inquire::Select::new(&label, labels.clone()).with_starting_cursor(start);
            if let Some(h) = &help {
                select = select.with_help_message(h);
            }
            select.prompt_skippable().map(|chosen| {
                chosen.map(|c| {
                    let i = labels.iter().position(|l| *l == c)?;
                    Some(Value::String(options[i].0.clone()))
                })
            })
        }
        FieldKind::MultiSelect { options } => {
            let labels: Vec<String> = options.iter().map(|(_, l)| printable(l)).collect();
            let defaults: Vec<usize> = field
                .default
                .as_ref()
                .and_then(Value::as_array)
                .map(|d| {
                    d.iter()
                        .filter_map(Value::as_str)
                        .filter_map(|d| options.iter().position(|(v, _)| v == d))
                        .collect()
                })
                .unwrap_or_default();
            let checked = field.clone();
            let values: Vec<String> = options.iter().map(|(v, _)| v.clone()).collect();
            let check_values = values.clone();
            let mut multi = inquire::MultiSelect::new(&label, labels.clone())
                .with_default(&defaults)
                .with_validator(
                    move |chosen: &[inquire::list_option::ListOption<&String>]| {
                        let picked = Value::Array(
                            chosen
                                .iter()
                                .map(|o| Value::String(check_values[o.index].clone()))
                                .collect(),
                        );
                        Ok(match checked.check(&picked) {
                            Ok(()) => Validation::Valid,
                            Err(e) => Validation::Invalid(e.into()),
                        })
                    },
                );
            if let Some(h) = &help {
                multi = multi.with_help_message(h);
            }
            let required = field.required;
            multi.raw_prompt_skippable().map(|chosen| {
                chosen.map(|c| {
                    // Nothing chosen in an optional field: leave it out.
                    (required || !c.is_empty()).then(|| {
                        Value::Array(
                            c.iter()
                                .map(|o| Value::String(values[o.index].clone()))
                                .collect(),
                        )
                    })
                })
            })
        }
        FieldKind::Text { .. } | FieldKind::Number { .. } => {
            let initial = match &field.default {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let checked = field.clone();
            let mut text = inquire::Text::new(&label)
                .with_initial_value(&initial)
                .with_validator(move |input: &str| {
                    Ok(match checked.parse(input) {
                        Ok(_) => Validation::Valid,
                        Err(e) => Validation::Invalid(e.into()),
                    })
                });
            if let Some(h) = &help {
                text = text.with_help_message(h);
            }
            // Validated as typed, so parsing again cannot fail; empty means "left out".
            text.prompt_skippable()
                .map(|input| input.map(|i| field.parse(&i).ok().flatten()))
        }
    };
    match result {
        Ok(Some(v)) => Ok(v),
        // Esc (or Ctrl-C, or a terminal error) on any question cancels the whole form.
        Ok(None) | Err(_) => Err(()),
    }
}

#[cfg(test)]
mod page_tests {
    use super::PageToOpen;

    #[test]
    fn an_internationalised_host_is_shown_in_ascii_and_named_as_such() {
        // "pаypal" with a Cyrillic а.
        let page = PageToOpen::read("https://p\u{430}ypal.com/login").unwrap();
        assert!(page.site.starts_with("https://xn--"), "{page:?}");
        assert!(page.url.starts_with(&page.site), "{page:?}");
        let text = page.describe();
        assert!(text.contains("internationalised name"), "{text}");
        assert!(text.contains("p\u{430}ypal.com"), "{text}");
        let plain = PageToOpen::read("https://example.com/a?b=c").unwrap();
        assert_eq!(plain.site, "https://example.com");
        assert!(plain.warnings.is_empty(), "{plain:?}");
    }

    #[test]
    fn a_user_name_before_the_host_is_not_taken_for_the_site() {
        let page = PageToOpen::read("https://accounts.google.com@evil.example:8443/x").unwrap();
        assert_eq!(page.site, "https://evil.example:8443");
        let text = page.describe();
        assert!(
            text.contains("`accounts.google.com@` before the host"),
            "{text}"
        );
        assert!(text.contains("the site is evil.example"), "{text}");
    }

    #[test]
    fn only_web_pages_are_offered() {
        for url in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "vscode://x/y",
            "data:text/html,hi",
            "not a url",
        ] {
            assert!(PageToOpen::read(url).is_err(), "{url}");
        }
        let http = PageToOpen::read("http://127.0.0.1:8080/cb").unwrap();
        assert!(http.describe().contains("not encrypted"), "{http:?}");
    }

    #[test]
    fn control_and_bidi_characters_in_the_url_are_escaped() {
        let page = PageToOpen::read("https://example.com/\u{202e}fdp.exe").unwrap();
        assert!(!page.describe().contains('\u{202e}'), "{page:?}");
    }
}
