#!/usr/bin/env python3
"""mcpwire's trace context test server, on the official Python SDK 2.x (`mcp` on PyPI).

The SDK's own `OpenTelemetryMiddleware` (on by default in `mcp` 2.x) reads the W3C trace context
of every incoming request from `params._meta` and opens a SERVER span under it. This server installs
the OpenTelemetry SDK (pinned by scripts/install-peers) with an in-memory exporter, so that span is
recorded, and its one tool says what the server saw: the trace id and parent of the span the SDK
made for the call, and the raw `_meta` trace members. Nothing here parses trace context itself.

    venv-v2/bin/python py_trace_server.py --port 8765     # Streamable HTTP at /mcp

Binds 127.0.0.1 only. Diagnostics go to stderr.
"""

import argparse
import json
import sys

from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)

server = MCPServer("mcpwire-py-trace-server", instructions="What trace context arrived.", version="1.0.0")


def hex_id(value: int, digits: int) -> str:
    return format(value, f"0{digits}x")


@server.tool(structured_output=False)
async def trace_seen(ctx: Context) -> str:
    """The trace context this call arrived with, as the SDK's server span has it, and the raw
    `_meta` trace members; then every finished server span's method, trace id and parent."""
    span = trace.get_current_span()
    context = span.get_span_context()
    parent = getattr(span, "parent", None)
    meta = dict(ctx.request_context.meta or {})
    finished = [
        {
            "name": s.name,
            "kind": str(s.kind),
            "trace_id": hex_id(s.context.trace_id, 32),
            "parent_id": hex_id(s.parent.span_id, 16) if s.parent else None,
        }
        for s in EXPORTER.get_finished_spans()
    ]
    return json.dumps(
        {
            "span_name": getattr(span, "name", None),
            "span_kind": str(getattr(span, "kind", None)),
            "recording": span.is_recording(),
            "trace_id": hex_id(context.trace_id, 32),
            "span_id": hex_id(context.span_id, 16),
            "parent_id": hex_id(parent.span_id, 16) if parent else None,
            "parent_remote": bool(parent.is_remote) if parent else None,
            "meta": {key: meta.get(key) for key in ("traceparent", "tracestate", "baggage")},
            "finished": finished,
        }
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1")
    args = p.parse_args()
    print(f"py_trace_server: listening on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    server.run(transport="streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
