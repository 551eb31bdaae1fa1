#!/usr/bin/env python3
"""mcpwire's MCP test server, built on the official Python SDK (`mcp` on PyPI).

The interop tests run mcpwire against it to meet a server that somebody else wrote the protocol
code for. It runs unchanged on mcp 2.x (`mcp.server.mcpserver.MCPServer`) and mcp 1.x
(`mcp.server.fastmcp.FastMCP`, the same class before its rename); which one is picked at import.
Every tool is tiny and deterministic, and each exists to exercise one thing the client must handle:
content types, structured output, tool errors, progress, logging, cancellation, server-to-client
requests and output size.

    venv-v2/bin/python py_server.py --port 8765                      # Streamable HTTP at /mcp
    venv-v2/bin/python py_server.py --port 8765 --json-response      # POSTs answered as one JSON body
    venv-v2/bin/python py_server.py --port 8765 --stateless          # no Mcp-Session-Id
    venv-v2/bin/python py_server.py --port 8765 --event-store --retry-ms 500 --drop-stream-after 2
    venv-v2/bin/python py_server.py --port 8765 --page-size 3        # tools/list in pages of 3
    venv-v2/bin/python py_server.py --port 8765 --transport sse      # legacy HTTP+SSE (GET /sse)
    venv-v2/bin/python py_server.py --transport stdio                # newline-delimited JSON on stdin/stdout

HTTP transports bind 127.0.0.1 only. Diagnostics go to stderr, never to stdout.
"""

import argparse
import base64
import importlib.metadata
import itertools
import struct
import sys
import time
import warnings
import zlib
from typing import Any

import anyio
import mcp.types as types
from pydantic import BaseModel, Field

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError as ProtocolError

    SDK_MAJOR = 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as Server
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.shared.exceptions import McpError as ProtocolError

    SDK_MAJOR = 1

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

# 2.x marks logging as deprecated for the 2026-07-28 revision; the older revisions still use it.
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, help="TCP port on 127.0.0.1 (required for HTTP transports)")
    p.add_argument("--transport", choices=["streamable-http", "sse", "stdio"], default="streamable-http")
    p.add_argument("--json-response", action="store_true", help="answer POSTs with application/json")
    p.add_argument("--stateless", action="store_true", help="no sessions: no Mcp-Session-Id, no GET stream")
    p.add_argument("--event-store", action="store_true", help="SSE event ids and resumption by Last-Event-ID")
    p.add_argument("--retry-ms", type=int, help="`retry:` sent in the priming event (with --event-store)")
    p.add_argument("--page-size", type=int, help="tools/list returns pages of N tools with nextCursor")
    p.add_argument(
        "--drop-stream-after",
        type=int,
        metavar="N",
        help="close a tools/call SSE stream after the tool sent N notifications (0: at once); "
        "the client must resume with GET + Last-Event-ID. Needs --event-store and protocol >= 2025-11-25",
    )
    args = p.parse_args(argv)
    if args.transport != "stdio" and args.port is None:
        p.error(f"--port is required for --transport {args.transport}")
    if args.drop_stream_after is not None and not args.event_store:
        p.error("--drop-stream-after needs --event-store (the dropped events must be replayable)")
    if args.transport != "streamable-http" and (
        args.json_response or args.stateless or args.event_store or args.drop_stream_after is not None
    ):
        p.error("--json-response, --stateless, --event-store and --drop-stream-after need streamable-http")
    if args.page_size is not None and args.page_size < 1:
        p.error("--page-size must be at least 1")
    return args


ARGS = parse_args()


def log(msg: str) -> None:
    print(f"py_server: {msg}", file=sys.stderr, flush=True)


class MemoryEventStore(EventStore):
    """Keeps every SSE event of this process in order, so a dropped stream can be replayed.

    Event ids are `<counter>`; they are unique across streams, so one id is enough to find the
    stream it belongs to. The oldest events are forgotten past `limit`.
    """

    def __init__(self, limit: int = 10_000) -> None:
        self.events: list[tuple[str, str, Any]] = []  # (event id, stream id, message or None)
        self.counter = itertools.count(1)
        self.limit = limit

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(next(self.counter))
        self.events.append((event_id, stream_id, message))
        del self.events[: max(0, len(self.events) - self.limit)]
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if index is None:
            log(f"replay: unknown Last-Event-ID {last_event_id!r}")
            return None
        stream_id = self.events[index][1]
        replayed = 0
        for event_id, sid, message in self.events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
                replayed += 1
        log(f"replay: {replayed} event(s) of stream {stream_id!r} after {last_event_id!r}")
        return stream_id


def build_server() -> Server:
    name, instructions = "mcpwire-py-test-server", "Test tools for mcpwire interop tests."
    if SDK_MAJOR == 2:
        return Server(name, instructions=instructions, version="1.0.0")
    # 1.x takes the HTTP settings in the constructor (2.x takes them in run()).
    return Server(
        name,
        instructions=instructions,
        host="127.0.0.1",
        port=ARGS.port or 8000,
        json_response=ARGS.json_response,
        stateless_http=ARGS.stateless,
        event_store=MemoryEventStore() if ARGS.event_store else None,
        retry_interval=ARGS.retry_ms,
    )


server = build_server()


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one solid colour (8-bit RGB, no interlace)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width  # filter byte 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(row * height)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


TINY_PNG_B64 = base64.b64encode(png(2, 2, (0x2E, 0x86, 0xC1))).decode("ascii")


def image_block() -> types.ImageContent:
    return types.ImageContent(type="image", data=TINY_PNG_B64, mimeType="image/png")


def wants_progress(ctx: Context) -> bool:
    """Whether the call carries `_meta.progressToken` (2.x keeps `_meta` as a dict, 1.x as a model)."""
    meta = ctx.request_context.meta
    if isinstance(meta, dict):
        return meta.get("progress_token", meta.get("progressToken")) is not None
    return getattr(meta, "progressToken", None) is not None


async def sent_notification(ctx: Context, sent: int) -> None:
    """Called after the tool sent its `sent`-th notification: --drop-stream-after closes the stream."""
    if ARGS.drop_stream_after is not None and sent == ARGS.drop_stream_after:
        await anyio.sleep(0.1)  # let the last notification reach the wire first (not a guarantee)
        log(f"closing the SSE stream of request {ctx.request_id} after {sent} notification(s)")
        await ctx.close_sse_stream()  # a no-op unless event store + protocol >= 2025-11-25


# --- tools ---------------------------------------------------------------------------------------


@server.tool(structured_output=False)
def echo_text(text: str) -> str:
    """Returns the text unchanged."""
    return text


@server.tool(structured_output=False)
def square(n: int) -> str:
    """Squares an integer. A non-integer argument gives the SDK's validation error (isError)."""
    return f"{n}^2 = {n * n}"


@server.tool()
def tiny_image():
    """Returns one image block: a 2x2 PNG."""
    return [image_block()]


@server.tool()
def mixed_content():
    """Returns a text block, an image block and an embedded text resource."""
    note = types.TextResourceContents(
        uri="mcpwire-test://note.txt", mimeType="text/plain", text="an embedded note"
    )
    return [
        types.TextContent(type="text", text="three blocks follow: text, image, resource"),
        image_block(),
        types.EmbeddedResource(type="resource", resource=note),
    ]


@server.tool()
def resource_links():
    """Returns a text block and two resource_link blocks."""
    return [
        types.TextContent(type="text", text="two links follow"),
        types.ResourceLink(
            type="resource_link", uri="mcpwire-test://a.txt", name="a.txt", mimeType="text/plain"
        ),
        types.ResourceLink(
            type="resource_link",
            uri="mcpwire-test://b.png",
            name="b.png",
            mimeType="image/png",
            description="a picture",
        ),
    ]


class Weather(BaseModel):
    city: str
    temperature_c: float = Field(description="temperature in degrees Celsius")
    conditions: str
    humidity: int = Field(description="relative humidity in percent")


@server.tool()
def weather(city: str) -> Weather:
    """Structured output with an output schema: made-up weather for a city."""
    return Weather(city=city, temperature_c=21.5, conditions="partly cloudy", humidity=40 + len(city) % 50)


@server.tool()
def fail(message: str = "boom") -> str:
    """Always fails: the result has isError true and the message in its text."""
    raise ToolError(message)


@server.tool(structured_output=False)
async def progress(ctx: Context, steps: int = 5, delay: float = 0.05) -> str:
    """Sends notifications/progress once per step (if the call has a progressToken), then answers."""
    await sent_notification(ctx, 0)
    for i in range(1, steps + 1):
        await anyio.sleep(delay)
        if wants_progress(ctx):
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
            await sent_notification(ctx, i)
    return f"done after {steps} steps"


@server.tool(structured_output=False)
async def log_messages(ctx: Context, count: int = 3) -> str:
    """Sends notifications/message `count` times on the call's stream, then answers."""
    await sent_notification(ctx, 0)
    for i in range(1, count + 1):
        await ctx.log("info", f"log message {i} of {count}")
        await sent_notification(ctx, i)
    return f"sent {count} log messages"


@server.tool(structured_output=False)
async def slow(ctx: Context, seconds: float = 35) -> str:
    """Sleeps, with progress every 0.5 s if a progressToken is given; stops at cancellation."""
    start = time.monotonic()
    sent = 0
    await sent_notification(ctx, 0)
    try:
        while (left := seconds - (time.monotonic() - start)) > 0:
            await anyio.sleep(min(0.5, left))
            if wants_progress(ctx):
                sent += 1
                await ctx.report_progress(round(time.monotonic() - start, 1), seconds, "sleeping")
                await sent_notification(ctx, sent)
    except anyio.get_cancelled_exc_class():
        log(f"slow: cancelled after {time.monotonic() - start:.1f} s")
        raise
    return f"slept {seconds} s"


ASK_TIMEOUT_S = 10


async def ask_client(what: str, request, describe) -> str:
    """Awaits a server-to-client request and describes its outcome in one line of text."""
    try:
        with anyio.fail_after(ASK_TIMEOUT_S):
            result = await request
    except ProtocolError as e:
        return f"{what}: client answered error {e.error.code}: {e.error.message}"
    except TimeoutError:
        return f"{what}: no answer from the client within {ASK_TIMEOUT_S} s"
    except Exception as e:  # e.g. no back channel in stateless mode, content not matching the schema
        return f"{what}: failed: {type(e).__name__}: {e}"
    return f"{what}: client answered: {describe(result)}"


@server.tool(structured_output=False)
async def ask_sampling(ctx: Context) -> str:
    """Sends sampling/createMessage to the client mid-call; says whether the client answered."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Say hello."))
    request = ctx.session.create_message(
        messages=[message], max_tokens=16, related_request_id=ctx.request_context.request_id
    )
    return await ask_client(
        "sampling", request, lambda r: f"model={r.model} text={getattr(r.content, 'text', None)!r}"
    )


class Contact(BaseModel):
    name: str = Field(description="your name")
    age: int = Field(default=30, description="your age")


@server.tool(structured_output=False)
async def ask_elicitation(ctx: Context) -> str:
    """Sends elicitation/create (a form) to the client mid-call; returns the outcome."""
    request = ctx.elicit("Who are you?", schema=Contact)
    return await ask_client(
        "elicitation",
        request,
        lambda r: f"action={r.action}" + (f" content={r.data.model_dump()}" if r.action == "accept" else ""),
    )


@server.tool(structured_output=False)
def big_text(bytes: int) -> str:
    """Returns one text block of exactly `bytes` ASCII bytes."""
    return ("0123456789abcdef" * (bytes // 16 + 1))[:bytes]


# --- tools/list pagination ---------------------------------------------------------------------


def cursor_for(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset={offset}".encode()).decode()


def offset_of(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        key, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition("=")
        if key == "offset" and value.isdigit():
            return int(value)
    except ValueError:
        pass
    raise invalid_params(f"invalid cursor: {cursor!r}")


def invalid_params(message: str) -> Exception:
    if SDK_MAJOR == 2:
        return ProtocolError(types.INVALID_PARAMS, message)
    return ProtocolError(types.ErrorData(code=types.INVALID_PARAMS, message=message))


async def tools_page(cursor: str | None) -> types.ListToolsResult:
    tools = await server.list_tools()
    start = offset_of(cursor)
    end = start + ARGS.page_size
    if start > len(tools):
        raise invalid_params(f"invalid cursor: {cursor!r}")
    next_cursor = cursor_for(end) if end < len(tools) else None
    return types.ListToolsResult(tools=tools[start:end], nextCursor=next_cursor)


if ARGS.page_size is not None:
    if SDK_MAJOR == 2:

        async def list_tools_v2(ctx: Any, params: types.PaginatedRequestParams) -> types.ListToolsResult:
            return await tools_page(params.cursor if params else None)

        server._lowlevel_server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools_v2)
    else:

        async def list_tools_v1(request: types.ListToolsRequest) -> types.ListToolsResult:
            if request is None:  # 1.x refreshes its tool cache with request=None: give it every tool
                return types.ListToolsResult(tools=await server.list_tools())
            return await tools_page(request.params.cursor if request.params else None)

        server._mcp_server.list_tools()(list_tools_v1)


def main() -> None:
    log(f"mcp {importlib.metadata.version('mcp')} (SDK {SDK_MAJOR}.x), options {vars(ARGS)}")
    if ARGS.transport == "stdio":
        server.run("stdio")
    elif SDK_MAJOR == 1:
        server.run(ARGS.transport)
    elif ARGS.transport == "sse":
        server.run("sse", host="127.0.0.1", port=ARGS.port)
    else:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=ARGS.port,
            json_response=ARGS.json_response,
            stateless_http=ARGS.stateless,
            event_store=MemoryEventStore() if ARGS.event_store else None,
            retry_interval=ARGS.retry_ms,
        )


if __name__ == "__main__":
    main()
