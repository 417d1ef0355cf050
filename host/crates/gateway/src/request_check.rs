//! The gateway's reading of a JSON-RPC body before rmcp parses it: the body must be JSON that
//! rmcp's own parse would take (nested no deeper than serde_json's 128 levels, numbers an `f64`
//! holds), and the `method` the front door admits sessions by must be the one rmcp acts on.
//!
//! Pure (serde and serde_json only), so the fuzz target `gateway_input` compiles this file in
//! and checks it against serde_json's own parse.
//!
//! Why not `serde::de::IgnoredAny`: serde_json skips an ignored value without recursing, so its
//! depth limit never applies and a body 200,000 levels deep passed the check. [`Skip`] walks the
//! value through `deserialize_any`, where the limit holds, and builds nothing.
//!
//! Why refuse a second `method`: the front door reads `method` to decide whether a request opens
//! a session (and so counts against the client's session limit), while rmcp's parse keeps the
//! last of two equal keys. A body naming `method` twice could be admitted as one thing and run
//! as another; no client has a reason to send one.
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Why a body was refused.
#[derive(Debug)]
pub enum BodyRefusal {
    /// Not JSON, or JSON rmcp's parse would not take (too deep, a number out of range).
    NotJson(serde_json::Error),
    /// The top-level object names `method` more than once.
    MethodTwice,
}

impl fmt::Display for BodyRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyRefusal::NotJson(err) => write!(f, "the request body is not JSON: {err}"),
            BodyRefusal::MethodTwice => {
                f.write_str("the request names `method` twice; a JSON-RPC request has one method")
            }
        }
    }
}

impl std::error::Error for BodyRefusal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyRefusal::NotJson(err) => Some(err),
            BodyRefusal::MethodTwice => None,
        }
    }
}

/// Checks a JSON POST body and returns its top-level `method` when it is a string (`None` for
/// a response, a batch, or a `method` of another type, which rmcp refuses itself).
pub fn check_json_body(bytes: &[u8]) -> Result<Option<String>, BodyRefusal> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let top = deserializer
        .deserialize_any(TopLevel)
        .map_err(BodyRefusal::NotJson)?;
    deserializer.end().map_err(BodyRefusal::NotJson)?;
    match top {
        Methods::Twice => Err(BodyRefusal::MethodTwice),
        Methods::Once(method) => Ok(method),
    }
}

/// What the top level said about `method`.
enum Methods {
    /// At most once; the string, if it was one.
    Once(Option<String>),
    Twice,
}

struct TopLevel;

impl<'de> Visitor<'de> for TopLevel {
    type Value = Methods;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Methods, A::Error> {
        let mut seen = 0u32;
        let mut method = None;
        while let Some(is_method) = map.next_key_seed(KeyIsMethod)? {
            if is_method {
                seen += 1;
                method = map.next_value::<MethodValue>()?.0;
            } else {
                map.next_value::<Skip>()?;
            }
        }
        Ok(if seen > 1 {
            Methods::Twice
        } else {
            Methods::Once(method)
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Methods, A::Error> {
        SkipVisitor.visit_seq(seq)?;
        Ok(Methods::Once(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Methods, E> {
        Ok(Methods::Once(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Methods, E> {
        Ok(Methods::Once(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Methods, E> {
        Ok(Methods::Once(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Methods, E> {
        Ok(Methods::Once(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Methods, E> {
        Ok(Methods::Once(None))
    }
    fn visit_unit<E>(self) -> Result<Methods, E> {
        Ok(Methods::Once(None))
    }
}

/// Reads an object key as "is it `method`?", without keeping it.
struct KeyIsMethod;

impl<'de> DeserializeSeed<'de> for KeyIsMethod {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIsMethod {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == "method")
    }
}

/// A `method` value: the string, or `None` for any other (walked like [`Skip`]).
struct MethodValue(Option<String>);

impl<'de> de::Deserialize<'de> for MethodValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MethodValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a method name")
            }
            fn visit_str<E>(self, s: &str) -> Result<MethodValue, E> {
                Ok(MethodValue(Some(s.to_owned())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MethodValue, A::Error> {
                SkipVisitor.visit_map(map).map(|()| MethodValue(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MethodValue, A::Error> {
                SkipVisitor.visit_seq(seq).map(|()| MethodValue(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<MethodValue, E> {
                Ok(MethodValue(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<MethodValue, E> {
                Ok(MethodValue(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<MethodValue, E> {
                Ok(MethodValue(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<MethodValue, E> {
                Ok(MethodValue(None))
            }
            fn visit_unit<E>(self) -> Result<MethodValue, E> {
                Ok(MethodValue(None))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// Any JSON value, walked (so serde_json's depth limit applies) and dropped.
struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor).map(|()| Skip)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn the_method_of_a_request_is_read() {
        let body =
            br#"{"jsonrpc":"2.0","id":1,"params":{"method":"x"},"method":"initi\u0061lize"}"#;
        assert_eq!(
            check_json_body(body).unwrap().as_deref(),
            Some("initialize")
        );
        assert_eq!(
            check_json_body(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap(),
            None
        );
        assert_eq!(
            check_json_body(br#"[{"method":"initialize"}]"#).unwrap(),
            None
        );
        assert_eq!(check_json_body(br#"{"method":7}"#).unwrap(), None);
    }

    #[test]
    fn nesting_stops_where_serde_json_stops() {
        // The depth serde_json's own parse (rmcp's) takes, and one more.
        assert!(serde_json::from_str::<serde_json::Value>(&nested(127)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&nested(128)).is_err());
        assert!(check_json_body(nested(127).as_bytes()).is_ok());
        for depth in [128, 200_000] {
            let refused = check_json_body(nested(depth).as_bytes()).unwrap_err();
            assert!(refused.to_string().contains("recursion limit"), "{refused}");
        }
        let deep_params = format!(r#"{{"method":"tools/call","params":{}}}"#, nested(200));
        assert!(check_json_body(deep_params.as_bytes()).is_err());
        let deep_method = format!(r#"{{"method":{}}}"#, nested(200));
        assert!(check_json_body(deep_method.as_bytes()).is_err());
    }

    #[test]
    fn a_second_method_is_refused() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize"}"#;
        assert!(matches!(
            check_json_body(body),
            Err(BodyRefusal::MethodTwice)
        ));
        // Only the top level counts: params may well hold a key named `method`.
        let nested = br#"{"method":"tools/call","params":{"method":1,"arguments":{"method":2}}}"#;
        assert_eq!(
            check_json_body(nested).unwrap().as_deref(),
            Some("tools/call")
        );
    }

    #[test]
    fn what_serde_json_would_not_parse_is_refused() {
        for body in [
            &b"{\"method\":\"x\""[..],
            b"{\"a\":1e400}",
            b"{} {}",
            b"",
            b"\xff",
        ] {
            assert!(
                check_json_body(body).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
            assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
        }
    }
}
