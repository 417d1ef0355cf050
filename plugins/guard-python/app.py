"""guard-python: an rkmcp approval guard written in Python (componentize-py).

A rule list from the plugin config decides each proposed tool call. Patterns are shell-style
globs (`fnmatch`) matched against both the tool name and `server/tool`:

    [plugins.grants.guard-python.config]
    deny = ["*delete*", "shell/*"]      # refused, with the matching pattern in the reason
    ask = ["*write*", "*move*"]          # the user is asked (denied when nobody can answer)
    allow = ["*read*", "*list*", "time/*"]
    default = "ask"                      # for calls no rule matched: allow | ask | deny

`deny` wins over `ask`, which wins over `allow`. A tool annotated read-only that no rule matched
is allowed whatever `default` says. A list value may also be one comma-separated string.
"""

import fnmatch
import json
import tomllib

from wit_world import exports
from wit_world.imports import host, types

DEFAULTS = ("allow", "ask", "deny")


class ConfigError(Exception):
    pass


def _patterns(key):
    raw = host.config_get(key)
    if raw is None or not raw.strip():
        return []
    raw = raw.strip()
    if raw.startswith("["):
        try:
            value = tomllib.loads("v = " + raw)["v"]
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config `{key}` is not a TOML array of strings: {e}")
        if not all(isinstance(p, str) for p in value):
            raise ConfigError(f"config `{key}` must hold only strings, got {raw}")
        return value
    return [p.strip() for p in raw.split(",") if p.strip()]


def _load_rules():
    rules = {key: _patterns(key) for key in ("deny", "ask", "allow")}
    default = (host.config_get("default") or "ask").strip().lower()
    if default not in DEFAULTS:
        raise ConfigError(f"config `default` must be one of {', '.join(DEFAULTS)}, got `{default}`")
    return rules, default


def _first_match(patterns, names):
    for p in patterns:
        if any(fnmatch.fnmatchcase(n, p) for n in names):
            return p
    return None


class ApprovalGuard(exports.ApprovalGuard):
    # Read once per instance: the host keeps one guard instance and rebuilds it after a fault.
    _rules = None

    def review(self, call: types.ProposedCall) -> types.Decision:
        if ApprovalGuard._rules is None:
            try:
                ApprovalGuard._rules = _load_rules()
            except ConfigError as e:
                host.log(types.LogLevel.WARN, str(e), [])
                ApprovalGuard._rules = e
        if isinstance(ApprovalGuard._rules, ConfigError):
            # A broken rule list must not fail open.
            return types.Decision_Deny(f"guard-python: {ApprovalGuard._rules}")
        rules, default = ApprovalGuard._rules

        names = (call.tool, f"{call.server}/{call.tool}")
        where = f"`{call.tool}` on server `{call.server}`"
        p = _first_match(rules["deny"], names)
        if p is not None:
            return types.Decision_Deny(f"{where} is denied by rule `{p}`")
        p = _first_match(rules["ask"], names)
        if p is not None:
            return types.Decision_Ask(f"Run {where} (rule `{p}`)? Arguments: {_short(call.arguments_json)}")
        p = _first_match(rules["allow"], names)
        if p is not None:
            return types.Decision_Allow()
        if call.annotations.read_only:
            return types.Decision_Allow()
        if default == "allow":
            return types.Decision_Allow()
        if default == "deny":
            return types.Decision_Deny(f"{where} matches no rule and the default is deny")
        return types.Decision_Ask(f"Run {where}? Arguments: {_short(call.arguments_json)}")


def _short(arguments_json, limit=200):
    try:
        text = json.dumps(json.loads(arguments_json), ensure_ascii=False)
    except ValueError:
        text = arguments_json
    return text if len(text) <= limit else text[:limit] + "…"
