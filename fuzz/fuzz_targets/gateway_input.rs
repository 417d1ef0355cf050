//! The gateway's reading of a request body (`host/crates/gateway/src/request_check.rs`, compiled
//! in with `#[path]`): any bytes as the body of a JSON POST to `rkmcp serve --http`. No panic; nothing
//! the check passes is refused by serde_json's own parse (rmcp's), nothing it refuses as not
//! JSON is taken by that parse, and the `method` it admits a session by is the one that parse
//! reads. (Finding 1 of this target: the depth check never applied; finding 2: a body naming
//! `method` twice was admitted as one method and run as another.)
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../host/crates/gateway/src/request_check.rs"]
mod request_check;

use request_check::{BodyRefusal, check_json_body};

fuzz_target!(|data: &[u8]| {
    let checked = check_json_body(data);
    let parsed = serde_json::from_slice::<serde_json::Value>(data);
    match checked {
        Ok(method) => {
            let value = match parsed {
                Ok(value) => value,
                Err(e) => panic!("the gateway passed a body serde_json refuses: {e}"),
            };
            let theirs = value
                .as_object()
                .and_then(|o| o.get("method"))
                .and_then(|m| m.as_str());
            assert_eq!(method.as_deref(), theirs, "the gateway read another method");
        }
        Err(BodyRefusal::NotJson(e)) => {
            assert!(
                parsed.is_err(),
                "refused as not JSON ({e}) but serde_json parses it"
            );
        }
        Err(BodyRefusal::MethodTwice) => {
            let text = String::from_utf8_lossy(data);
            assert!(text.matches("method").count() >= 2 || text.contains('\\'));
        }
    }
});
