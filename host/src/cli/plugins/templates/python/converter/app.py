"""A schema converter in Python (componentize-py): turns the MCP servers' tools into the
system-prompt section that teaches the model the tools and the call format, and formats tool
results for the model. This one lists the tools and teaches `CALL name {json arguments}` lines
(what the `detector` template of `rkmcp plugins new` reads).
"""

import json

from wit_world import exports
from wit_world.exports import schema_converter
from componentize_py_types import Err


class SchemaConverter(exports.SchemaConverter):
    def convert(self, tools_json):
        try:
            tools = json.loads(tools_json)
        except ValueError as e:
            raise Err(f"tools are not JSON: {e}")
        if not isinstance(tools, list):
            raise Err("tools are not a JSON array")
        lines = ["You can call these tools:"]
        for tool in tools:
            if not isinstance(tool, dict):
                continue
            name = tool.get("name") or "?"
            about = tool.get("description") or ""
            schema = json.dumps(tool.get("inputSchema", {}), separators=(",", ":"))
            lines.append(f"- {name}: {about} (arguments: {schema})")
        lines.append('To call one, write a line: CALL name {"argument": "value"}')
        # No grammar or JSON schema: the model is free to write; the detector finds the calls.
        return schema_converter.Conversion(system_prompt="\n".join(lines) + "\n", grammar=None, json_schema=None)

    def format_result(self, call, result_json):
        return f"RESULT {call.name} {result_json}\n"
