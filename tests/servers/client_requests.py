#!/usr/bin/env python3
"""An MCP server (PyPI `mcp` 2.x, stdio) that asks its client for things, for rkmcp's tests of
elicitation and sampling (tests/integration/interactive.rs).

Tools:
- register(): an elicitation form with every field type the spec allows (string with the formats
  email, uri, date and date-time; number; integer; boolean; untitled, titled and legacy enums;
  untitled and titled multi-select), required fields, descriptions and defaults. Returns the
  client's answer as JSON: {"action": ..., "content": ...}.
- visit(): a URL-mode elicitation; after an accept it sends notifications/elicitation/complete.
- summarize(text): a sampling request (system prompt, maxTokens, temperature, stop sequences,
  includeContext "thisServer") and returns the client's result as JSON.
- describe_picture(): a sampling request with an image, which rkmcp must refuse.
- sample_with_tools(question): a sampling request that offers a `get_weather` tool with
  toolChoice "required"; returns the result (a tool_use block when the model calls it).

Usage: client_requests.py (speaks MCP over stdin/stdout).
"""

import json

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("client-requests")

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "As on your passport",
                 "minLength": 2, "default": "Ada Lovelace"},
        "email": {"type": "string", "format": "email", "title": "Email",
                  "default": "ada@example.org"},
        "homepage": {"type": "string", "format": "uri", "default": "https://example.org/ada"},
        "born": {"type": "string", "format": "date", "default": "1815-12-10"},
        "meeting": {"type": "string", "format": "date-time", "default": "2026-11-24T05:00:00Z"},
        "height": {"type": "number", "minimum": 0.5, "maximum": 2.5, "default": 1.65},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 36},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": False},
        "colour": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
        "size": {"type": "string", "title": "Size",
                 "oneOf": [{"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"},
                           {"const": "l", "title": "Large"}],
                 "default": "m"},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"],
                   "default": "a"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]},
                 "default": ["x", "z"]},
        "pets": {"type": "array", "title": "Pets",
                 "items": {"anyOf": [{"const": "cat", "title": "Cat"},
                                     {"const": "dog", "title": "Dog"}]},
                 "default": ["dog"]},
    },
    "required": ["name", "email", "age"],
}


@server.tool()
async def register(ctx: Context) -> str:
    """Asks the user to fill in a registration form."""
    result = await ctx.request_context.session.elicit_form(
        "Please register", FORM, related_request_id=ctx.request_id
    )
    return json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


@server.tool()
async def visit(ctx: Context) -> str:
    """Asks the user to open a page."""
    session = ctx.request_context.session
    result = await session.elicit_url(
        "Please sign in", "https://example.org/sign-in", "elicit-1",
        related_request_id=ctx.request_id,
    )
    if result.action == "accept":
        await session.send_elicit_complete("elicit-1", related_request_id=ctx.request_id)
    return json.dumps({"action": result.action})


def text(role, t):
    return types.SamplingMessage(role=role, content=types.TextContent(type="text", text=t))


@server.tool()
async def summarize(text_to_summarize: str, ctx: Context) -> str:
    """Asks the client's model to summarize a text."""
    result = await ctx.request_context.session.create_message(
        [text("user", f"Summarize in one sentence: {text_to_summarize}")],
        max_tokens=24,
        system_prompt="You write very short summaries.",
        temperature=0.0,
        stop_sequences=["\n\n"],
        include_context="thisServer",
        related_request_id=ctx.request_id,
    )
    return result.model_dump_json(by_alias=True, exclude_none=True)


@server.tool()
async def describe_picture(ctx: Context) -> str:
    """Asks the client's model about an image (a text-only model must refuse)."""
    image = types.SamplingMessage(
        role="user",
        content=types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
    )
    try:
        result = await ctx.request_context.session.create_message(
            [image], max_tokens=10, related_request_id=ctx.request_id
        )
    except Exception as e:  # the client's error, passed back as the tool's answer
        return f"refused: {e}"
    return result.model_dump_json(by_alias=True, exclude_none=True)


@server.tool()
async def sample_with_tools(question: str, ctx: Context) -> str:
    """Asks the client's model a question, offering it a weather tool."""
    weather = types.Tool(
        name="get_weather",
        description="Current weather for a city",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]},
    )
    result = await ctx.request_context.session.create_message(
        [text("user", question)],
        max_tokens=60,
        tools=[weather],
        tool_choice=types.ToolChoice(mode="required"),
        related_request_id=ctx.request_id,
    )
    return result.model_dump_json(by_alias=True, exclude_none=True)


if __name__ == "__main__":
    server.run()
