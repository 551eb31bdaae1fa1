"""The Python SDK side of the comparison: runs one workload on the official client, PyPI
`mcp` 2.3.0 (`mcp.Client` on a URL: Streamable HTTP over httpx2, asyncio), and exits, so the
driver can take this process's CPU time from `wait4`.

    python bench_py.py URL WORKLOAD N [2025|2026] [WAIT_MS]

Run with the venv of scripts/install-peers (component python: $MCPWIRE_PEERS_DIR/venv-v2).
The workloads are those of ../mcpwire (session, concurrent, big, progress, list, inflight,
connect), done the way the SDK's documentation shows: `async with Client(url) as client`,
`call_tool`, `list_tools`; leaving the block ends the session (DELETE at 2025). Two take the
transport's settings a host wanting them would give: `inflight` an httpx2 client without the
default pool's cap of 100 connections, `big` SSE events of up to 16 MiB (the default is 1 MiB). `2025` is
`mode="legacy"` (the initialize handshake); `2026` is the SDK's default `mode="auto"`
(`server/discover`, then 2026-07-28 stateless POSTs with the `_meta` envelope). The negotiated
revision and every result are checked; a wrong one exits with status 1. Prints the keys of
../../common (bench_common::Meter): wall_us, cpu_us (getrusage, every thread), hwm_kib and
rss0_kib (/proc/self/status), timed, p50_us, p99_us, max_us; no allocation count.
"""

import asyncio
import math
import resource
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOOLS = 100


def status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line[len(field):].split()[0])
    return 0


def cpu_us() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return int((usage.ru_utime + usage.ru_stime) * 1_000_000)


latencies: list[int] = []


async def timed(awaitable):
    started = time.perf_counter_ns()
    out = await awaitable
    latencies.append((time.perf_counter_ns() - started) // 1000)
    return out


def only_text(result) -> str:
    content = result.content
    if result.is_error or len(content) != 1 or content[0].type != "text":
        raise RuntimeError(f"not one text block: {result!r:.200}")
    return content[0].text


async def echo(client: Client) -> None:
    text = only_text(await timed(client.call_tool("echo", {"message": "hello"})))
    if text != "Echo: hello":
        raise RuntimeError(f"echo said {text!r}")


async def wait_call(client: Client, wait: int) -> None:
    text = only_text(await timed(client.call_tool("wait", {"ms": wait}, read_timeout_seconds=120)))
    if text != f"waited {wait} ms":
        raise RuntimeError(f"wait said {text!r}")


# The SDK's own HTTP client settings (mcp.shared._httpx_utils.create_mcp_http_client): 30 s
# to connect, write and wait for the pool, 300 s to read.
CONNECT_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 300.0
# What a host wanting the 10 MiB result sets: the SDK's SSE events are limited to 1 MiB by
# default, and the text of the result is one event (the Caller's binding allows 16 MiB).
BIG_EVENT_BYTES = 16 << 20


async def run(url: str, workload: str, n: int, modern: bool, wait: int) -> None:
    mode = "auto" if modern else "legacy"
    if workload == "inflight":
        # What a host wanting N calls in flight sets: httpx2's default pool holds 100
        # connections (Limits(max_connections=100)), so 10,000 calls of a 1 s tool would queue
        # for 100 s. HTTP/1.1 holds one call per connection: no cap, keep-alive as by default.
        async with httpx2.AsyncClient(
            timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=20),
        ) as http:
            await calls(
                Client(streamable_http_client(url, http_client=http), mode=mode),
                workload,
                n,
                modern,
                wait,
            )
    elif workload == "big":
        await calls(
            Client(streamable_http_client(url, max_sse_event_size=BIG_EVENT_BYTES), mode=mode),
            workload,
            n,
            modern,
            wait,
        )
    else:
        await calls(Client(url, mode=mode), workload, n, modern, wait)


async def calls(client: Client, workload: str, n: int, modern: bool, wait: int) -> None:
    async with client:
        spoken = client.protocol_version
        if (spoken == "2026-07-28") != modern:
            raise RuntimeError(f"the SDK speaks {spoken}")
        if workload not in ("list", "connect"):
            # Every page of the server's listing once, as a host does before it calls: the SDK
            # validates a result against the tool's output schema, and for a tool it has not
            # seen it lists the tools again (one page) on every call and logs a warning. The
            # demo server lists two tools a page, `echo` not on the first.
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                cursor = page.next_cursor
                if not cursor:
                    break
        if workload == "session":
            for _ in range(n):
                await echo(client)
        elif workload == "concurrent":
            await asyncio.gather(*(echo(client) for _ in range(n)))
        elif workload == "inflight":
            await asyncio.gather(*(wait_call(client, wait) for _ in range(n)))
        elif workload == "big":
            text = only_text(await timed(client.call_tool("big_text", {"bytes": n})))
            if len(text) != n or not text.startswith("abc"):
                raise RuntimeError(f"big_text gave {len(text)} bytes")
        elif workload == "progress":
            seen = 0

            async def on_progress(progress, total, message):
                nonlocal seen
                seen += 1

            result = await timed(client.call_tool("progress_burst", {"steps": n}, progress_callback=on_progress))
            text = only_text(result)
            if text != f"done after {n} steps" or seen != n:
                raise RuntimeError(f"{seen} progress notifications, then {text!r}")
        elif workload == "list":
            for _ in range(n):
                listing = await timed(client.list_tools())
                if len(listing.tools) != TOOLS:
                    raise RuntimeError(f"tools/list gave {len(listing.tools)} tools")
        elif workload != "connect":
            raise RuntimeError(f"unknown workload {workload}")


def percentile(values: list[int], p: float) -> int:
    if not values:
        return 0
    rank = math.ceil(p / 100 * len(values))
    return values[min(len(values), max(1, rank)) - 1]


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 3 or (len(args) > 3 and args[3] not in ("2025", "2026")):
        print("usage: python bench_py.py URL WORKLOAD N [2025|2026] [WAIT_MS]", file=sys.stderr)
        sys.exit(2)
    url, workload, n = args[0], args[1], int(args[2])
    modern = len(args) > 3 and args[3] == "2026"
    wait = int(args[4]) if len(args) > 4 else 1000
    rss0 = status_kib("VmRSS:")
    cpu0 = cpu_us()
    started = time.perf_counter_ns()
    try:
        asyncio.run(run(url, workload, n, modern, wait))
    except BaseException as e:  # noqa: BLE001 - any failure fails the run
        print(f"bench-py {workload} {n}: {e!r}", file=sys.stderr)
        sys.exit(1)
    wall = (time.perf_counter_ns() - started) // 1000
    cpu = cpu_us() - cpu0
    latencies.sort()
    print(
        f"wall_us={wall} cpu_us={cpu} hwm_kib={status_kib('VmHWM:')} rss0_kib={rss0} "
        f"timed={len(latencies)} p50_us={percentile(latencies, 50)} p99_us={percentile(latencies, 99)} "
        f"max_us={latencies[-1] if latencies else 0}"
    )


if __name__ == "__main__":
    main()
