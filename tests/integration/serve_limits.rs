//! `rkmcp serve --http` against clients that hold too much or send too slowly (`[serve.limits]`,
//! set low here so the test is quick): a body nested too deep or naming `method` twice is a
//! `400` JSON-RPC parse error, a client at its session limit gets `429`, a client trickling its
//! headers is cut off, a connection beyond the limit gets `503`, a client with as many
//! requests in flight as it may have gets `429`, and each wrong token waits longer — while
//! well-behaved requests keep working.
//! (Sessions bound to the client that opened them: `serve::an_oauth_gateway_…`.)
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::serve::{http_gateway, raw_http, raw_initialize, two_servers};

/// Opens a connection and starts a request whose headers never finish.
fn slow_client(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    stream
}

/// Whether the gateway closed `stream` (or answered it) within `within`, while the client keeps
/// trickling a byte every 200 ms.
fn cut_off_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 512];
    while started.elapsed() < within {
        if stream.write_all(b"a").is_err() {
            return true;
        }
        match stream.read(&mut buf) {
            Ok(_) => return true, // EOF, or a 408 before closing
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn hostile_clients_meet_the_limits_and_others_are_served() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(
        home.path(),
        "\n[serve.limits]\nmax_connections = 4\nmax_sessions_per_client = 2\nheader_timeout = \"1s\"\nbody_timeout = \"2s\"\n",
    );
    let gw = http_gateway(home.path(), &config, &[]);
    let json = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];

    // Deep JSON is a parse error (rmcp alone answered 415), and the gateway goes on.
    let (status, head, body) = raw_http(gw.port, "POST /mcp", &json, &"[".repeat(200_000));
    assert_eq!(status, 400, "{head}\n{body}");
    assert!(body.contains("-32700"), "{body}");
    let (status, _, body) = raw_http(gw.port, "POST /mcp", &json, "{\"jsonrpc\": ");
    assert_eq!(status, 400, "{body}");
    // Well-formed but deeper than rmcp's parse takes: refused by the gateway's check too (its
    // depth check once skipped the value without counting levels and let this through).
    let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
    let (status, head, body) = raw_http(gw.port, "POST /mcp", &json, &deep);
    assert_eq!(status, 400, "{head}\n{body}");
    assert!(body.contains("recursion limit"), "{body}");

    // Two sessions per client; the third initialize is refused, with a JSON-RPC error.
    for _ in 0..2 {
        let (status, head) = raw_initialize(gw.port, &[]);
        assert_eq!(status, 200, "{head}");
    }
    let (status, head) = raw_initialize(gw.port, &[]);
    assert_eq!(status, 429, "{head}");
    // Nor does an initialize that names `method` twice slip past the count (the session check
    // read no method from it, so it was not counted as opening a session).
    let twice = r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let (status, head, body) = raw_http(gw.port, "POST /mcp", &json, twice);
    assert_eq!(status, 400, "{head}\n{body}");
    assert!(body.contains("`method` twice"), "{body}");

    // A client that trickles its headers is cut off after the header timeout.
    let mut slow = slow_client(gw.port);
    assert!(
        cut_off_within(&mut slow, Duration::from_secs(10)),
        "a slow-loris connection stayed open"
    );

    // Four connections held open: a fifth is refused at once, with 503 and Retry-After.
    let held: Vec<TcpStream> = (0..4).map(|_| slow_client(gw.port)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let (status, head, body) = raw_http(gw.port, "POST /mcp", &json, "{}");
    assert_eq!(status, 503, "{head}\n{body}");
    assert!(head.to_ascii_lowercase().contains("retry-after"), "{head}");
    // Once the held connections are cut off (header timeout), there is room again.
    drop(held);
    std::thread::sleep(Duration::from_millis(1500));
    let (status, head, _) = raw_http(
        gw.port,
        "POST /mcp",
        &json,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
    );
    assert_ne!(status, 503, "{head}");
    assert_ne!(status, 0, "no answer: {head}");
}

/// The `mcp-session-id` of a response head.
pub(crate) fn session_id(head: &str) -> String {
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {head}"))
}

/// A JSON-RPC message posted in session `session`; returns the status, head and body.
fn post_in_session(
    port: u16,
    session: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    raw_http(port, "POST /mcp", &headers, body)
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[test]
fn requests_in_flight_are_limited_per_client() {
    let home = tempfile::tempdir().unwrap();
    let (node, mut args) = rkmcp_tests::everything_cmd();
    args.push("stdio".into());
    let config = rkmcp_tests::write(
        home.path(),
        "rkmcp.toml",
        &format!(
            "{}\n[chat.approval]\nauto_approve = [\"everything/*\"]\n[serve.limits]\nmax_requests_per_client = 2\n",
            rkmcp_tests::stdio_entry("everything", &node, &args, "")
        ),
    )
    .display()
    .to_string();
    let gw = http_gateway(home.path(), &config, &[]);
    let (status, head) = raw_initialize(gw.port, &[]);
    assert_eq!(status, 200, "{head}");
    let session = session_id(&head);
    let (status, head, _) = post_in_session(gw.port, &session, &[], INITIALIZED);
    assert_eq!(status, 202, "{head}");

    let slow_call = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"everything__trigger-long-running-operation","arguments":{{"duration":4,"steps":2}}}}}}"#
        )
    };
    // Two slow calls in flight (their SSE answers stay open until the operation ends).
    let port = gw.port;
    let running: Vec<_> = (1..=2)
        .map(|id| {
            let session = session.clone();
            let body = slow_call(id);
            std::thread::spawn(move || post_in_session(port, &session, &[], &body))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let (status, head, body) = post_in_session(gw.port, &session, &[], &slow_call(3));
    assert_eq!(status, 429, "{head}\n{body}");
    assert!(body.contains("max_requests_per_client"), "{body}");
    for call in running {
        let (status, head, body) = call.join().unwrap();
        assert_eq!(status, 200, "{head}\n{body}");
        assert!(body.contains("Long running operation completed"), "{body}");
    }
    // Their places are given back once their streams end.
    let (status, head, body) = post_in_session(
        gw.port,
        &session,
        &[],
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    );
    assert_eq!(status, 200, "{head}\n{body}");
}

#[test]
fn wrong_tokens_wait_longer_each_time_and_the_right_one_does_not() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(
        home.path(),
        "\n[serve.auth]\nbearer_token_env = \"RKMCP_TEST_SERVE_TOKEN\"\n",
    );
    let gw = http_gateway(
        home.path(),
        &config,
        &[("RKMCP_TEST_SERVE_TOKEN", "s3cret-token")],
    );
    // 250 ms, 500 ms, 1 s, 2 s: the fourth guess alone waits at least 2 s.
    for _ in 0..3 {
        let (status, head) = raw_initialize(gw.port, &[("Authorization", "Bearer guess")]);
        assert_eq!(status, 401, "{head}");
    }
    let started = Instant::now();
    let (status, head) = raw_initialize(gw.port, &[("Authorization", "Bearer guess")]);
    assert_eq!(status, 401, "{head}");
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "the fourth wrong token was answered after {:?}",
        started.elapsed()
    );
    let (status, head) = raw_initialize(gw.port, &[("Authorization", "Bearer s3cret-token")]);
    assert_eq!(status, 200, "{head}");
    // A success starts the count afresh: the next wrong token waits the first delay again.
    let started = Instant::now();
    let (status, _) = raw_initialize(gw.port, &[("Authorization", "Bearer guess")]);
    assert_eq!(status, 401);
    let first_again = started.elapsed();
    // Without the reset this fifth wrong token would wait 4 s.
    assert!(
        first_again >= Duration::from_millis(200) && first_again < Duration::from_secs(3),
        "{first_again:?}"
    );
}
