"""A real MCP client (PyPI `mcp` 2.x `Client`) for the `rkmcp serve` tests.

It connects to the gateway over stdio (`--stdio CMD ARG...`) or streamable HTTP (`--url URL`),
lists the tools, resources and prompts, makes the calls in the JSON plan, and prints one JSON
document with what it saw. As a client it declares elicitation and sampling:

- an elicitation whose form has a `decision` field is rkmcp asking whether a call may run; it is
  answered with the plan's `approve` (`allow_once`, `allow_session`, `deny`, or `decline`);
- any other form (a server behind the gateway asking) is accepted with `{"name": "Ada"}`;
- a sampling request is answered with the text `sampled by the test client`;
- with `roots` in the plan, it declares roots (those directories) and answers `roots/list`;
- with `set_level`, it sends `logging/setLevel` first; with `log_level`, every request asks for
  that level in `_meta` (2026-07-28); log messages it gets are in `logs`.

Usage: python serve_client.py PLAN_JSON (--stdio CMD ARG... | --url URL)
PLAN_JSON: {"mode": "legacy"|"auto", "approve": "...", "calls": [{"name": ..., "arguments": {...},
            "until": TEXT (repeat the call, up to 15 s, until its text contains TEXT)}],
            "read": ["uri", ...], "prompts": [{"name": ..., "arguments": {...}}],
            "roots": ["/abs/dir", ...], "set_level": "debug", "log_level": "error"}
"""

import asyncio
import json
import sys
import time
from pathlib import Path

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def texts(blocks):
    return "\n".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")


async def main() -> None:
    plan = json.loads(sys.argv[1])
    if sys.argv[2] == "--url":
        server = sys.argv[3]
    else:
        server = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], env=plan.get("env"))
    seen = {"elicitations": [], "sampling": []}

    async def on_elicit(context, params):
        dumped = params.model_dump(by_alias=True, exclude_none=True)
        props = (dumped.get("requestedSchema") or {}).get("properties") or {}
        seen["elicitations"].append({"message": params.message, "fields": sorted(props)})
        if "decision" in props:
            answer = plan.get("approve", "deny")
            if answer == "decline":
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content={"decision": answer})
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context, params):
        seen["sampling"].append(getattr(params.messages[0].content, "text", str(params.messages[0].content)))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the test client"),
            model="test-client",
        )

    logs = []

    async def on_log(params):
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    extra = {}
    if "roots" in plan:

        async def on_roots(context):
            return types.ListRootsResult(
                roots=[types.Root(uri=Path(p).as_uri(), name=Path(p).name) for p in plan["roots"]]
            )

        extra["list_roots_callback"] = on_roots

    out = {}
    async with Client(
        server,
        mode=plan.get("mode", "auto"),
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        logging_callback=on_log,
        log_level=plan.get("log_level"),
        read_timeout_seconds=120,
        **extra,
    ) as client:
        out["protocol_version"] = client.protocol_version
        if "set_level" in plan:
            await client.set_logging_level(plan["set_level"])
        tools = await client.list_tools()
        out["tools"] = [t.name for t in tools.tools]
        caps = client.server_capabilities
        if caps.resources is not None:
            out["resources"] = [r.uri for r in (await client.list_resources()).resources]
            out["templates"] = [
                t.uri_template for t in (await client.list_resource_templates()).resource_templates
            ]
        if caps.prompts is not None:
            out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
        out["calls"] = []
        for call in plan.get("calls", []):
            try:
                result = await client.call_tool(call["name"], call.get("arguments", {}))
                deadline = time.monotonic() + 15
                while "until" in call and call["until"] not in texts(result.content) and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                    result = await client.call_tool(call["name"], call.get("arguments", {}))
                out["calls"].append(
                    {"name": call["name"], "is_error": bool(result.is_error), "text": texts(result.content)}
                )
            except Exception as err:  # a JSON-RPC error: recorded, the plan goes on
                out["calls"].append({"name": call["name"], "error": str(err)})
        out["reads"] = []
        for uri in plan.get("read", []):
            try:
                result = await client.read_resource(uri)
                out["reads"].append(
                    {"uri": uri, "contents": [c.model_dump(by_alias=True, exclude_none=True) for c in result.contents]}
                )
            except Exception as err:
                out["reads"].append({"uri": uri, "error": str(err)})
        out["prompt_results"] = []
        for p in plan.get("prompts", []):
            try:
                result = await client.get_prompt(p["name"], p.get("arguments"))
                out["prompt_results"].append(
                    {"name": p["name"], "messages": [m.model_dump(by_alias=True, exclude_none=True) for m in result.messages]}
                )
            except Exception as err:
                out["prompt_results"].append({"name": p["name"], "error": str(err)})
    out.update(seen)
    out["logs"] = logs
    print(json.dumps(out, default=str))


asyncio.run(main())
