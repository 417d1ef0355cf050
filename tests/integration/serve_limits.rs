//! `rkmcp serve --http` against clients that hold too much or send too slowly (`[serve.limits]`,
//! set low here so the test is quick): a body nested 200,000 deep is a `400` JSON-RPC parse
//! error, a client at its session limit gets `429`, a client trickling its headers is cut off,
//! and a connection beyond the limit gets `503` — while well-behaved requests keep working.
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

    // Two sessions per client; the third initialize is refused, with a JSON-RPC error.
    for _ in 0..2 {
        let (status, head) = raw_initialize(gw.port, &[]);
        assert_eq!(status, 200, "{head}");
    }
    let (status, head) = raw_initialize(gw.port, &[]);
    assert_eq!(status, 429, "{head}");

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
