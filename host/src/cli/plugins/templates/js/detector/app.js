// A tool-call detector: reads the model's answer as it streams and turns it into text and tool
// calls. This one recognises lines `CALL name {"json": "arguments"}`; everything else is text.
// Chunks may split a line anywhere, so a line is only judged once it is complete.
//
// componentize-js runs the module's top level at build time: call the host (`log`, `configGet`)
// only from the functions below.
import { log } from "rkmcp:plugin/host@0.2.0";

// One model response. The host calls `feed` per chunk and `finish` once at the end.
class Session {
  constructor() {
    // The incomplete last line, held until its newline (or the end of the answer).
    this.pending = "";
    this.calls = 0;
  }

  feed(chunk) {
    this.pending += chunk;
    const out = [];
    let end;
    while ((end = this.pending.indexOf("\n")) >= 0) {
      this.line(this.pending.slice(0, end + 1), out);
      this.pending = this.pending.slice(end + 1);
    }
    return out;
  }

  finish() {
    const out = [];
    if (this.pending !== "") this.line(this.pending, out);
    this.pending = "";
    return out;
  }

  line(line, out) {
    const trimmed = line.trimEnd();
    if (!trimmed.startsWith("CALL ")) {
      out.push({ tag: "text", val: line });
      return;
    }
    const rest = trimmed.slice("CALL ".length);
    const space = rest.indexOf(" ");
    const name = space < 0 ? rest : rest.slice(0, space);
    const args = space < 0 ? "{}" : rest.slice(space + 1);
    let parsed;
    try {
      parsed = JSON.parse(args);
    } catch (e) {
      out.push({ tag: "malformed", val: { raw: line, error: `arguments are not JSON: ${e.message}` } });
      return;
    }
    this.calls += 1;
    const id = `call-${this.calls}`;
    log("debug", "tool call", [["name", name], ["id", id]]);
    out.push({ tag: "tool-call", val: { id, name, argumentsJson: JSON.stringify(parsed) } });
  }
}

export const detector = {
  Session,
  // `format` picks a dialect when a detector knows several; this one has only its own.
  startSession(format) {
    return new Session();
  },
};
