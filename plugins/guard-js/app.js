// guard-js: an rkmcp approval guard written in JavaScript (componentize-js).
//
// Rules from the plugin config decide each proposed tool call. Patterns are shell-style globs
// (`*` any text, `?` one character, `[abc]` / `[!abc]` a set), matched case-sensitively:
//
//   [plugins.grants.guard-js.config]
//   deny = ["*delete*", "shell/*"]          # tool or server/tool: refused, naming the rule
//   deny_arguments = ["*../*", "/etc/*"]    # any string in the arguments, at any depth: refused,
//                                           # naming the argument (e.g. `files[2]`) and the rule
//   ask = ["*write*", "*move*"]             # the user is asked (denied when nobody can answer)
//   allow = ["*read*", "*list*", "time/*"]
//   default = "ask"                         # for calls no rule matched: allow | ask | deny
//
// Order: `deny`, then `deny_arguments`, then `ask`, then `allow`. A tool annotated read-only that
// no rule matched is allowed whatever `default` says. A list may also be one comma-separated
// string. A broken config denies every call (with the reason) instead of failing open.
//
// componentize-js runs this module's top level at build time (the engine is snapshotted), so
// nothing here may call the host before the first `review`.
import { log, configGet } from "rkmcp:plugin/host@0.2.0";

const NAME = "guard-js";
const DEFAULTS = ["allow", "ask", "deny"];
const LISTS = ["deny", "deny_arguments", "ask", "allow"];

class ConfigError extends Error {}

// ---- config ----------------------------------------------------------------------------------

// A list value reaches the plugin as TOML text (`["a", 'b']`); a string as it is.
function patterns(key) {
  const raw = configGet(key);
  if (raw === undefined || raw === null || raw.trim() === "") return [];
  const text = raw.trim();
  if (text.startsWith("[")) return tomlStrings(key, text);
  return text.split(",").map((p) => p.trim()).filter((p) => p !== "");
}

// A TOML array of single-line strings: what the host sends for a list (no TOML library exists
// inside the engine, and a full TOML parser is far more than a rule list needs).
function tomlStrings(key, text) {
  let i = 0;
  const fail = (why) => {
    throw new ConfigError(`config \`${key}\` is not a TOML array of strings (${why}): ${text}`);
  };
  const skip = () => {
    for (;;) {
      while (i < text.length && " \t\r\n".includes(text[i])) i++;
      if (text[i] !== "#") return;
      while (i < text.length && text[i] !== "\n") i++;
    }
  };
  const escapes = { b: "\b", t: "\t", n: "\n", f: "\f", r: "\r", e: "\x1b", '"': '"', "\\": "\\" };
  const string = () => {
    if (text.startsWith("'''", i) || text.startsWith('"""', i)) fail("multi-line strings are not supported");
    const quote = text[i];
    if (quote !== '"' && quote !== "'") fail(`element at offset ${i} is not a string`);
    let out = "";
    for (i++; i < text.length && text[i] !== quote; i++) {
      const c = text[i];
      if (c === "\n") break;
      if (quote === "'" || c !== "\\") {
        out += c;
        continue;
      }
      const e = text[++i];
      if (e in escapes) {
        out += escapes[e];
      } else if (e === "u" || e === "U") {
        const hex = text.slice(i + 1, i + 1 + (e === "u" ? 4 : 8));
        const code = /^[0-9a-fA-F]+$/.test(hex) ? parseInt(hex, 16) : NaN;
        if (hex.length !== (e === "u" ? 4 : 8) || !(code <= 0x10ffff)) fail(`bad escape \\${e}${hex}`);
        out += String.fromCodePoint(code);
        i += hex.length;
      } else {
        fail(`bad escape \\${e ?? ""}`);
      }
    }
    if (text[i] !== quote) fail("unterminated string");
    i++;
    return out;
  };
  const out = [];
  i++; // the opening [
  for (;;) {
    skip();
    if (text[i] === "]") break;
    out.push(string());
    skip();
    if (text[i] === ",") {
      i++;
      continue;
    }
    if (text[i] !== "]") fail(`expected , or ] at offset ${i}`);
    break;
  }
  i++;
  skip();
  if (i < text.length) fail("text after the closing ]");
  return out;
}

function loadRules() {
  const rules = {};
  for (const key of LISTS) rules[key] = patterns(key).map((p) => ({ text: p, re: glob(key, p) }));
  const raw = configGet("default");
  const fallback = (raw === undefined || raw === null ? "ask" : raw).trim().toLowerCase();
  if (!DEFAULTS.includes(fallback)) {
    throw new ConfigError(`config \`default\` must be one of ${DEFAULTS.join(", ")}, got \`${fallback}\``);
  }
  rules.default = fallback;
  return rules;
}

// ---- matching --------------------------------------------------------------------------------

// Python's fnmatch rules, so a rule list means the same in guard-python and guard-js: `*` crosses
// `/`, a `[` without its `]` is a literal.
function glob(key, pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") re += "[\\s\\S]*";
    else if (c === "?") re += "[\\s\\S]";
    else if (c === "[") {
      let j = i + 1;
      if (pattern[j] === "!") j++;
      if (pattern[j] === "]") j++;
      while (j < pattern.length && pattern[j] !== "]") j++;
      if (j >= pattern.length) {
        re += "\\[";
        continue;
      }
      let set = pattern.slice(i + 1, j).replace(/\\/g, "\\\\");
      if (set.startsWith("!")) set = "^" + set.slice(1);
      else if (set.startsWith("^")) set = "\\" + set;
      re += `[${set}]`;
      i = j;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  try {
    return new RegExp(`^${re}$`, "u");
  } catch (e) {
    // e.g. `[z-a]`: name the rule rather than trap.
    throw new ConfigError(`config \`${key}\`: pattern \`${pattern}\` is not a valid glob (${e.message})`);
  }
}

function firstMatch(rules, texts) {
  return rules.find((r) => texts.some((t) => r.re.test(t)));
}

// Every string in the arguments with where it sits (`path`, `files[2]`, `opts.target`). An
// explicit stack, not recursion: a deeply nested object from the model must not exhaust the
// engine's stack.
function stringsIn(value) {
  const found = [];
  const stack = [["", value]];
  while (stack.length > 0) {
    const [where, v] = stack.pop();
    if (typeof v === "string") found.push([where || "(the arguments)", v]);
    else if (Array.isArray(v)) v.forEach((x, k) => stack.push([`${where}[${k}]`, x]));
    else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) stack.push([where ? `${where}.${k}` : k, x]);
    }
  }
  return found;
}

// At most `limit` characters (code points: never half a surrogate pair).
function clip(text, limit) {
  const chars = Array.from(text);
  return chars.length <= limit ? text : chars.slice(0, limit).join("") + "…";
}

function short(argumentsJson) {
  try {
    return clip(JSON.stringify(JSON.parse(argumentsJson)), 200);
  } catch {
    return clip(argumentsJson, 200);
  }
}

// ---- the guard -------------------------------------------------------------------------------

// Read once per instance: the host keeps one guard instance and rebuilds it after a fault.
let rules = null;

const allow = () => ({ tag: "allow" });
const deny = (reason) => ({ tag: "deny", val: reason });
const ask = (question) => ({ tag: "ask", val: question });

function review(call) {
  if (rules === null) {
    try {
      rules = loadRules();
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      log("warn", e.message, []);
      rules = e;
    }
  }
  if (rules instanceof ConfigError) return deny(`${NAME}: ${rules.message}`);

  const names = [call.tool, `${call.server}/${call.tool}`];
  const where = `\`${call.tool}\` on server \`${call.server}\``;
  let r = firstMatch(rules.deny, names);
  if (r) return deny(`${where} is denied by rule \`${r.text}\``);
  if (rules.deny_arguments.length > 0) {
    let args;
    try {
      args = JSON.parse(call.argumentsJson);
    } catch (e) {
      return deny(`${where}: its arguments are not JSON (${e.message}), so \`deny_arguments\` cannot check them`);
    }
    for (const [path, value] of stringsIn(args)) {
      r = firstMatch(rules.deny_arguments, [value]);
      if (r) return deny(`${where}: argument \`${clip(path, 80)}\` (${clip(JSON.stringify(value), 80)}) matches denied pattern \`${r.text}\``);
    }
  }
  r = firstMatch(rules.ask, names);
  if (r) return ask(`Run ${where} (rule \`${r.text}\`)? Arguments: ${short(call.argumentsJson)}`);
  if (firstMatch(rules.allow, names)) return allow();
  if (call.annotations.readOnly === true) return allow();
  if (rules.default === "allow") return allow();
  if (rules.default === "deny") return deny(`${where} matches no rule and the default is deny`);
  return ask(`Run ${where}? Arguments: ${short(call.argumentsJson)}`);
}

export const approvalGuard = { review };
