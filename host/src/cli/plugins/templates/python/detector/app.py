"""A tool-call detector in Python (componentize-py): reads the model's answer as it streams and
turns it into text and tool calls. This one recognises lines `CALL name {"json": "arguments"}`
(what the `converter` template of `rkmcp plugins new` teaches the model); everything else is
text. Chunks may split a line anywhere, so a line is only judged once it is complete (or the
answer ends).
"""

import json

from wit_world import exports
from wit_world.exports import detector
from wit_world.imports import types
from componentize_py_types import Err

FORMATS = ("", "call-lines")


class Detector(exports.Detector):
    def start_session(self, format):
        # "" is the default; an unknown format is refused with the ones this detector reads.
        if format not in FORMATS:
            raise Err(f"unknown format `{format}`: this detector reads \"call-lines\" (the default)")
        return Session()


class Session(detector.Session):
    def __init__(self):
        # The incomplete last line, held until its newline (or the end of the answer).
        self._pending = ""
        self._calls = 0

    def _line(self, line, out):
        text = line.rstrip()
        if not text.startswith("CALL "):
            out.append(types.Event_Text(line))
            return
        name, _, args = text[len("CALL ") :].strip().partition(" ")
        try:
            arguments = json.loads(args or "{}")
        except ValueError as e:
            out.append(types.Event_Malformed(types.MalformedCall(raw=line, error=f"arguments are not JSON: {e}")))
            return
        if not name or not isinstance(arguments, dict):
            error = "no tool name" if not name else "arguments must be a JSON object"
            out.append(types.Event_Malformed(types.MalformedCall(raw=line, error=error)))
            return
        self._calls += 1
        call = types.ToolCall(id=f"call-{self._calls}", name=name, arguments_json=json.dumps(arguments))
        out.append(types.Event_ToolCall(call))

    def feed(self, chunk):
        self._pending += chunk
        out = []
        while (end := self._pending.find("\n")) >= 0:
            line, self._pending = self._pending[: end + 1], self._pending[end + 1 :]
            self._line(line, out)
        return out

    def finish(self):
        out = []
        rest, self._pending = self._pending, ""
        if rest:
            self._line(rest, out)
        return out
