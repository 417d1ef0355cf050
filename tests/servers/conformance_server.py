"""The server the official MCP conformance suite's server scenarios expect, on PyPI `mcp` 2.x.

The suite (@modelcontextprotocol/conformance) tests a server it is pointed at against scenarios
that name the tools, resources and prompts the server must have (`test_simple_text`,
`test://static-text`, `test_prompt_with_arguments`, ...); each SDK ships an "everything server"
written to those descriptions (the TypeScript SDK's is the suite's reference). None is published
on npm or PyPI, so this is ours, written from the scenario descriptions
(`conformance list --server` and the scenario texts). scripts/check.d/75-conformance-serve.sh
runs the scenarios against it directly (over HTTP) and through `rkmcp serve` (this server behind
the gateway over stdio), and every scenario that passes directly must pass through the gateway.

Usage: conformance_server.py            (stdio)
       conformance_server.py --http PORT (streamable HTTP at http://127.0.0.1:PORT/mcp)
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage

# A 1x1 red PNG and a tiny silent WAV.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

server = MCPServer("rkmcp-conformance-server")


def text(t: str) -> types.TextContent:
    return types.TextContent(type="text", text=t)


@server.tool()
def test_simple_text() -> str:
    """Returns simple text content."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[types.ContentBlock]:
    """Returns image content."""
    return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list[types.ContentBlock]:
    """Returns audio content."""
    return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list[types.ContentBlock]:
    """Returns an embedded resource."""
    return [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )
    ]


@server.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Returns text, an image and a resource."""
    return [
        text("Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
def test_error_handling() -> types.CallToolResult:
    """Always fails."""
    return types.CallToolResult(
        is_error=True, content=[text("This tool intentionally returns an error for testing")]
    )


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100)
    return "Tool with progress executed successfully"


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model."""
    result = await ctx.request_context.session.create_message(
        [types.SamplingMessage(role="user", content=text(prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    content = result.content
    answer = getattr(content, "text", None) or json.dumps(
        content.model_dump(by_alias=True, exclude_none=True)
    )
    return f"LLM response: {answer}"


async def elicit(ctx: Context, message: str, schema: dict) -> types.ElicitResult:
    return await ctx.request_context.session.elicit_form(
        message, schema, related_request_id=ctx.request_id
    )


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email."""
    result = await elicit(
        ctx,
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """A form with a default for every primitive type."""
    result = await elicit(
        ctx,
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": True},
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """A form with all five enum variants."""
    result = await elicit(
        ctx,
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.resource("test://static-text", mime_type="text/plain", description="A static text resource")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png", description="A static binary resource")
def static_binary() -> bytes:
    import base64

    return base64.b64decode(PNG)


@server.resource("test://watched-resource", mime_type="text/plain", description="A resource to watch")
def watched() -> str:
    return "Watched resource content."


@server.resource(
    "test://template/{id}/data", mime_type="application/json", description="A templated resource"
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt(description="A simple prompt without arguments")
def test_simple_prompt() -> list[UserMessage]:
    return [UserMessage(content=text("This is a simple prompt for testing."))]


@server.prompt(description="A prompt with two arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    return [
        UserMessage(content=text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))
    ]


@server.prompt(description="A prompt with an embedded resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    return [
        UserMessage(
            content=types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
                ),
            ),
        ),
        UserMessage(content=text("Please process the embedded resource above.")),
    ]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[UserMessage]:
    return [
        UserMessage(content=types.ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage(content=text("Please analyze the image above.")),
    ]


@server.completion()
async def complete(ref, argument, context):
    words = ["paris", "park", "party"]
    return types.Completion(
        values=[w for w in words if w.startswith(argument.value or "")], total=3, has_more=False
    )


# Logging levels and resource subscriptions (legacy, before 2026-07-28): accepted and recorded;
# MCPServer has no decorator for them, so they go to the low-level server.
SUBSCRIBED: set[str] = set()


async def set_level(ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.discard(str(params.uri))
    return types.EmptyResult()


low = server._lowlevel_server
low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)

if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run(transport="streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
