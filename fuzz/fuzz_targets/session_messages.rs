//! Server input to the session layer: whatever bytes a server writes as one message are decoded
//! as rmcp's client-side JSON-RPC message (what the stdio and HTTP transports do with each
//! line or event). Decoding must never panic, and a decoded message must encode again and
//! decode to the same message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rmcp::model::ServerJsonRpcMessage;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = serde_json::from_slice::<ServerJsonRpcMessage>(data) else {
        return;
    };
    let text = serde_json::to_string(&message).expect("a decoded message encodes");
    let again: ServerJsonRpcMessage =
        serde_json::from_str(&text).expect("an encoded message decodes");
    assert_eq!(
        serde_json::to_value(&again).ok(),
        serde_json::to_value(&message).ok(),
        "round trip changed the message: {text}"
    );
});
