#!/usr/bin/env python3
"""An MCP server (PyPI `mcp` 2.x, MCPServer over stdio) with a task-capable tool, for rkmcp's
tests of tasks (tests/integration/tasks.rs).

PyPI `mcp` 2.3 has the task types but serves no task methods, so this server serves them itself,
in a middleware, for both spec versions:

- 2025-11-25: `capabilities.tasks` (list, cancel, tools/call), `execution.taskSupport =
  "optional"` on `slow_count`; a `tools/call` with a `task` field answers `{"task": {...}}` at
  once and runs the count in the background; `tasks/get`, `tasks/result` (waits for the end),
  `tasks/list`, `tasks/cancel`.
- 2026-07-28: the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a `tools/call`
  from a client that declares the extension answers `resultType: "task"`; `tasks/get` carries
  the result (or error) inline; `tasks/cancel` is an empty acknowledgement.

Tools:
- slow_count(n, delay): counts to n, one step per `delay` seconds; the task's statusMessage says
  "step i of n". Its result is "counted to n". Task-capable.
- fail_count(): a task-capable tool that fails (its task ends `failed`).
- quick(text): echoes the text at once; not task-capable.

Options:
- --journal FILE: append one line per task event ("created ID", "cancelled ID", "completed ID",
  "failed ID", "seeded ID") so a test can see what reached the server.
- --seed: start with one finished task, id `seed-1` (result "seeded"), for `rkmcp tasks`.
"""

import asyncio
import datetime
import itertools
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TOOLS = {"slow_count", "fail_count"}
POLL_MS = 100
TTL_MS = 60_000
INVALID_PARAMS = -32602

journal_path = sys.argv[sys.argv.index("--journal") + 1] if "--journal" in sys.argv else None


def journal(line: str) -> None:
    if journal_path:
        with open(journal_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class TaskRecord:
    def __init__(self, task_id: str):
        self.task_id = task_id
        self.status = "working"
        self.status_message: str | None = None
        self.created_at = now()
        self.last_updated_at = self.created_at
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.done = asyncio.Event()
        self.runner: asyncio.Task | None = None

    def update(self, status: str, message: str | None = None) -> None:
        self.status = status
        if message is not None:
            self.status_message = message
        self.last_updated_at = now()
        if status in ("completed", "failed", "cancelled"):
            self.done.set()

    def legacy(self) -> dict[str, Any]:
        """The 2025-11-25 `Task`."""
        task = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttl": TTL_MS,
            "pollInterval": POLL_MS,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task

    def modern(self) -> dict[str, Any]:
        """The extension's `DetailedTask` (result or error inline)."""
        task = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_MS,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.status == "completed" and self.result is not None:
            task["result"] = self.result
        if self.status == "failed" and self.error is not None:
            task["error"] = self.error
        return task


tasks: dict[str, TaskRecord] = {}
ids = itertools.count(1)


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


async def count(n: int, delay: float, record: TaskRecord | None = None) -> str:
    for i in range(1, n + 1):
        if record is not None:
            record.update("working", f"step {i} of {n}")
        await asyncio.sleep(delay)
    return f"counted to {n}"


async def run_task(record: TaskRecord, name: str, args: dict[str, Any]) -> None:
    try:
        if name == "fail_count":
            await asyncio.sleep(0.2)
            record.error = {"code": -32603, "message": "the count failed on purpose"}
            record.update("failed", "the count failed on purpose")
            journal(f"failed {record.task_id}")
            return
        text = await count(int(args.get("n", 3)), float(args.get("delay", 0.3)), record)
        record.result = text_result(text)
        record.update("completed", "done")
        journal(f"completed {record.task_id}")
    except asyncio.CancelledError:
        # tasks/cancel (already recorded) or the server shutting down.
        raise


def create_task(name: str, args: dict[str, Any]) -> TaskRecord:
    record = TaskRecord(f"task-{next(ids)}")
    tasks[record.task_id] = record
    record.runner = asyncio.get_running_loop().create_task(run_task(record, name, args))
    journal(f"created {record.task_id} {name}")
    return record


def find(params: dict[str, Any]) -> TaskRecord:
    task_id = params.get("taskId")
    record = tasks.get(task_id) if isinstance(task_id, str) else None
    if record is None:
        raise MCPError(code=INVALID_PARAMS, message=f"unknown task {task_id!r}")
    return record


def cancel(record: TaskRecord) -> None:
    if record.done.is_set():
        raise MCPError(code=INVALID_PARAMS, message=f"task {record.task_id} already ended ({record.status})")
    if record.runner is not None:
        record.runner.cancel()
    record.update("cancelled", "cancelled by the client")
    journal(f"cancelled {record.task_id}")


def declared_extension(params: dict[str, Any]) -> bool:
    meta = params.get("_meta") or {}
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return EXTENSION in (caps.get("extensions") or {})


async def tasks_middleware(ctx, call_next):
    method = ctx.method
    params = dict(ctx.params or {})
    modern = str(ctx.protocol_version) >= "2026"
    if method == "initialize":
        result = await call_next(ctx)
        result.setdefault("capabilities", {})["tasks"] = {
            "list": {},
            "cancel": {},
            "requests": {"tools": {"call": {}}},
        }
        return result
    if method == "server/discover":
        result = await call_next(ctx)
        result.setdefault("capabilities", {}).setdefault("extensions", {})[EXTENSION] = {}
        return result
    if method == "tools/list" and not modern:
        result = await call_next(ctx)
        for tool in result.get("tools", []):
            if tool.get("name") in TASK_TOOLS:
                tool["execution"] = {"taskSupport": "optional"}
        return result
    if method == "tools/call" and params.get("name") in TASK_TOOLS:
        args = params.get("arguments") or {}
        if not modern and isinstance(params.get("task"), dict):
            return {"task": create_task(params["name"], args).legacy()}
        if modern and declared_extension(params):
            return {"resultType": "task", **create_task(params["name"], args).modern()}
    if method == "tasks/get":
        record = find(params)
        return {"resultType": "complete", **record.modern()} if modern else record.legacy()
    if method == "tasks/cancel":
        record = find(params)
        cancel(record)
        return {"resultType": "complete"} if modern else record.legacy()
    if method == "tasks/list" and not modern:
        return {"tasks": [t.legacy() for t in tasks.values()]}
    if method == "tasks/result" and not modern:
        record = find(params)
        await record.done.wait()
        if record.status == "completed" and record.result is not None:
            return {
                **record.result,
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": record.task_id}},
            }
        error = record.error or {"code": -32603, "message": f"task {record.task_id} was {record.status}"}
        raise MCPError(code=error["code"], message=error["message"])
    return await call_next(ctx)


server = MCPServer("rkmcp-tasks-test", middleware=[tasks_middleware])


@server.tool()
async def slow_count(n: int = 3, delay: float = 0.3) -> str:
    """Counts to n, one step every `delay` seconds (runs as a task where the client can)."""
    return await count(n, delay)


@server.tool()
async def fail_count() -> str:
    """A count that fails."""
    raise ValueError("the count failed on purpose")


@server.tool()
def quick(text: str) -> str:
    """Echoes the text at once."""
    return text


def seed() -> None:
    record = TaskRecord("seed-1")
    record.result = text_result("seeded")
    record.update("completed", "done")
    tasks[record.task_id] = record
    journal("seeded seed-1")


if __name__ == "__main__":
    if "--seed" in sys.argv:
        seed()
    server.run("stdio")
