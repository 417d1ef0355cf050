//! Grounded values under the real llguidance parser (byte-level vocabulary): with a
//! [`Grounding`], open strings are whole-word spans of the message (or of a tool result),
//! numbers are the message's, other values keep their schema, and escaped parameters stay free.

use std::sync::{Arc, OnceLock};

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie, TokenId};
use llguidance::{Matcher, ParserFactory};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{GrammarMode, Grounding, ToolDef, lark_grammar_grounded};
use serde_json::{Value, json};

fn factory() -> &'static ParserFactory {
    static F: OnceLock<ParserFactory> = OnceLock::new();
    F.get_or_init(|| {
        let mut words: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut eos = vec![TokTrie::SPECIAL_TOKEN_MARKER];
        eos.extend_from_slice(b"<|eos|>");
        words.push(eos);
        let info = TokRxInfo::new(words.len() as u32, words.len() as u32 - 1);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(TokTrie::from(&info, &words)));
        let mut f = ParserFactory::new_simple(&env).expect("parser factory");
        f.quiet();
        f
    })
}

/// Whether `grammar` accepts all of `text` and may end there.
fn accepts(grammar: &str, text: &str) -> Result<(), String> {
    let parser = factory().create_parser(TopLevelGrammar::from_lark(grammar.to_string()));
    let mut m = Matcher::new(parser);
    if let Some(e) = m.get_error() {
        return Err(format!("does not compile: {e}"));
    }
    let toks: Vec<TokenId> = text.bytes().map(TokenId::from).collect();
    let n = m.try_consume_tokens(&toks).map_err(|e| e.to_string())?;
    if n < toks.len() {
        return Err(format!("rejected after {:?}", &text[..n]));
    }
    if !m.is_accepting().map_err(|e| e.to_string())? {
        return Err("accepted as a prefix only".into());
    }
    Ok(())
}

fn tools() -> Vec<ToolDef> {
    let tool = |name: &str, description: &str, schema: Value| ToolDef {
        name: name.into(),
        description: Some(description.into()),
        input_schema: schema,
        annotations: None,
    };
    vec![
        tool(
            "book_table",
            "Book a table at a restaurant. date is YYYY-MM-DD; seating is indoor or outdoor.",
            json!({"type": "object", "properties": {
                "restaurant": {"type": "string"},
                "people": {"type": "integer"},
                "date": {"type": "string"},
                "time": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                "seating": {"type": "string", "enum": ["indoor", "outdoor"]},
                "budget": {"type": "number"}
            }, "required": ["restaurant", "people", "date"]}),
        ),
        tool(
            "add_tags",
            "Add tags to an item.",
            json!({"type": "object", "properties": {
                "item": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}}
            }, "required": ["item", "tags"]}),
        ),
        tool(
            "ping",
            "No arguments.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

const MESSAGE: &str =
    "Book \"Luigi's\" for 4 on 2026-12-24, budget $1,000; tag beach.jpg with summer, sea";

fn grammar(g: &Grounding) -> String {
    lark_grammar_grounded(
        ToolFormat::ToolCallJson,
        &tools(),
        GrammarMode::CallOrAnswer,
        Some(g),
    )
    .expect("a grammar")
}

fn call(name: &str, args: Value) -> String {
    format!(
        "[TOOL_CALL]{}[END_TOOL_CALL]",
        json!({"name": name, "arguments": args})
    )
}

fn spans() -> Grounding {
    Grounding {
        message: MESSAGE.into(),
        spans: true,
        ..Grounding::default()
    }
}

#[test]
fn open_strings_are_whole_word_spans_of_the_message() {
    let g = grammar(&spans());
    let ok = [
        call(
            "book_table",
            json!({"restaurant": "\"Luigi's\"", "people": 4, "date": "2026-12-24"}),
        ),
        call(
            "book_table",
            json!({"restaurant": "Luigi's", "people": 17, "date": "2026-12-24", "time": null, "seating": "outdoor", "budget": 3.5}),
        ),
        call(
            "book_table",
            json!({"restaurant": "Book \"Luigi's\" for", "people": 4, "date": "2026", "time": "on 2026-12-24"}),
        ),
        call(
            "add_tags",
            json!({"item": "beach.jpg", "tags": ["summer", "sea"]}),
        ),
        call("add_tags", json!({"item": "beach.jpg", "tags": []})),
        call("ping", json!({})),
        "A plain answer.".to_string(),
    ];
    for text in &ok {
        accepts(&g, text).unwrap_or_else(|e| panic!("{text}: {e}\n{g}"));
    }
    // Pretty JSON, as a model may write it.
    let pretty = "[TOOL_CALL] {\"name\": \"add_tags\", \"arguments\": {\"item\": \"sea\", \"tags\": [ \"summer\" ]}} [END_TOOL_CALL]";
    accepts(&g, pretty).unwrap_or_else(|e| panic!("{pretty}: {e}\n{g}"));
    let bad = [
        // Invented, cut inside a word, with an edge space, empty.
        call(
            "book_table",
            json!({"restaurant": "Mario's", "people": 4, "date": "2026-12-24"}),
        ),
        call(
            "book_table",
            json!({"restaurant": "Luig", "people": 4, "date": "2026-12-24"}),
        ),
        call(
            "book_table",
            json!({"restaurant": "Luigi's\" ", "people": 4, "date": "2026-12-24"}),
        ),
        call(
            "book_table",
            json!({"restaurant": "", "people": 4, "date": "2026-12-24"}),
        ),
        // Still held to the schema: required keys, enums, types, no extra keys.
        call("book_table", json!({"restaurant": "Luigi's", "people": 4})),
        call(
            "book_table",
            json!({"restaurant": "Luigi's", "people": 4, "date": "2026", "seating": "roof"}),
        ),
        call(
            "book_table",
            json!({"restaurant": "Luigi's", "people": "4", "date": "2026"}),
        ),
        call(
            "add_tags",
            json!({"item": "sea", "tags": ["summer"], "x": 1}),
        ),
        call("add_tags", json!({"item": "sea", "tags": ["winter"]})),
        call("ping", json!({"x": 1})),
    ];
    for text in &bad {
        assert!(accepts(&g, text).is_err(), "accepted {text}\n{g}");
    }
}

#[test]
fn numbers_are_the_messages_when_asked() {
    let g = grammar(&Grounding {
        numbers: true,
        ..spans()
    });
    for (people, budget, ok) in [
        (json!(4), json!(1000), true),
        (json!(2026), json!(24), true),
        (json!(100), json!(1000), false),
        (json!(4), json!(100), false),
    ] {
        let text = call(
            "book_table",
            json!({"restaurant": "Luigi's", "people": people, "date": "2026-12-24", "budget": budget}),
        );
        assert_eq!(accepts(&g, &text).is_ok(), ok, "{text}\n{g}");
    }
    // Numbers alone: strings stay free.
    let g = grammar(&Grounding {
        message: MESSAGE.into(),
        numbers: true,
        ..Grounding::default()
    });
    let text = call(
        "book_table",
        json!({"restaurant": "Mario's", "people": 4, "date": "tomorrow"}),
    );
    accepts(&g, &text).unwrap_or_else(|e| panic!("{text}: {e}\n{g}"));
    let text = call(
        "book_table",
        json!({"restaurant": "Mario's", "people": 5, "date": "tomorrow"}),
    );
    assert!(accepts(&g, &text).is_err(), "{g}");
}

#[test]
fn escaped_parameters_stay_free_and_results_are_spans_too() {
    let message = "Book Luigi's for 4 on December 24";
    let free_date = call(
        "book_table",
        json!({"restaurant": "Luigi's", "people": 4, "date": "2026-12-24"}),
    );
    let g = grammar(&Grounding {
        message: message.into(),
        spans: true,
        ..Grounding::default()
    });
    assert!(accepts(&g, &free_date).is_err(), "{g}");
    let g = grammar(&Grounding {
        message: message.into(),
        spans: true,
        escape: true,
        ..Grounding::default()
    });
    accepts(&g, &free_date).unwrap_or_else(|e| panic!("{e}\n{g}"));
    let invented = call(
        "book_table",
        json!({"restaurant": "Mario's", "people": 4, "date": "2026-12-24"}),
    );
    assert!(accepts(&g, &invented).is_err(), "{g}");
    // A tool result's words are spans as well.
    let g = grammar(&Grounding {
        message: message.into(),
        results: vec!["Open: Chez Marie, Blue Lagoon".into()],
        spans: true,
        escape: true,
        ..Grounding::default()
    });
    let from_result = call(
        "book_table",
        json!({"restaurant": "Blue Lagoon", "people": 4, "date": "2026-12-24"}),
    );
    accepts(&g, &from_result).unwrap_or_else(|e| panic!("{e}\n{g}"));
}

#[test]
fn an_inactive_grounding_changes_nothing() {
    let plain = lark_grammar_grounded(ToolFormat::Hermes, &tools(), GrammarMode::CallOnly, None);
    let inactive = lark_grammar_grounded(
        ToolFormat::Hermes,
        &tools(),
        GrammarMode::CallOnly,
        Some(&Grounding {
            message: MESSAGE.into(),
            ..Grounding::default()
        }),
    );
    assert_eq!(plain, inactive);
    let g = lark_grammar_grounded(
        ToolFormat::Hermes,
        &tools(),
        GrammarMode::CallOnly,
        Some(&spans()),
    )
    .unwrap();
    let text = "<tool_call>\n{\"name\": \"add_tags\", \"arguments\": {\"item\": \"sea\", \"tags\": [\"summer\"]}}\n</tool_call>";
    accepts(&g, text).unwrap_or_else(|e| panic!("{e}\n{g}"));
    let invented = text.replace("\"sea\"", "\"ocean\"");
    assert!(accepts(&g, &invented).is_err(), "{g}");
    assert!(accepts(&g, "A plain answer.").is_err());
}

#[test]
fn one_value_alone_is_held_to_its_schema_or_to_the_message() {
    use rkmcp_tool_formats::convert::value_grammar;
    let people = json!({"type": "integer"});
    let seating = json!({"type": "string", "enum": ["indoor", "outdoor"]});
    let restaurant = json!({"type": "string"});
    let desc = "Book a table at a restaurant.";
    // Held to the schema: any integer, only the enum's values, any string.
    let g = value_grammar("people", &people, desc, None, &[]);
    accepts(&g, "12").unwrap_or_else(|e| panic!("{e}\n{g}"));
    accepts(&g, " 12").unwrap_or_else(|e| panic!("{e}\n{g}"));
    assert!(accepts(&g, "\"12\"").is_err(), "{g}");
    assert!(
        accepts(&g, "12,").is_err(),
        "a value ends where it ends: {g}"
    );
    // With followers, a value may end the way it would inside a call, once.
    let g = value_grammar("people", &people, desc, None, &[",", "}"]);
    for text in ["12", " 12,", "12 }"] {
        accepts(&g, text).unwrap_or_else(|e| panic!("{text:?}: {e}\n{g}"));
    }
    assert!(accepts(&g, "12,,").is_err(), "{g}");
    assert!(accepts(&g, "12, \"x\"").is_err(), "{g}");
    let g = value_grammar("seating", &seating, desc, Some(&spans()), &[]);
    accepts(&g, "\"outdoor\"").unwrap_or_else(|e| panic!("{e}\n{g}"));
    assert!(accepts(&g, "\"garden\"").is_err(), "{g}");
    let g = value_grammar("restaurant", &restaurant, desc, None, &[]);
    accepts(&g, "\"The Ocean\"").unwrap_or_else(|e| panic!("{e}\n{g}"));
    // Grounded: a span of the message's words, not an invented name.
    let g = value_grammar("restaurant", &restaurant, desc, Some(&spans()), &[","]);
    accepts(&g, "\"sea\"").unwrap_or_else(|e| panic!("{e}\n{g}"));
    assert!(accepts(&g, "\"The Ocean\"").is_err(), "{g}");
    // References resolve against the value's schema, where the caller put the tool's $defs.
    let with_ref = json!({"$ref": "#/$defs/Unit", "$defs": {"Unit": {"enum": ["c", "f"]}}});
    let g = value_grammar("unit", &with_ref, desc, None, &[]);
    accepts(&g, "\"f\"").unwrap_or_else(|e| panic!("{e}\n{g}"));
    assert!(accepts(&g, "\"k\"").is_err(), "{g}");
}
