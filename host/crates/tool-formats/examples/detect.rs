//! Prints the normalized events a format's detector finds in a file or stdin:
//! `cargo run --release -p rkmcp-tool-formats --example detect -- FORMAT [FILE]`.

use std::io::Read;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let format: rkmcp_tool_formats::ToolFormat =
        args.next().ok_or("usage: detect FORMAT [FILE]")?.parse()?;
    let text = match args.next() {
        Some(path) => std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?,
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    for ev in rkmcp_tool_formats::detect_all(format, &text) {
        println!("{}", serde_json::to_string(&ev)?);
    }
    Ok(())
}
