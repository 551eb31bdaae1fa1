#!/usr/bin/env python3
"""A fake MCP stdio server for tests/stdio.rs: newline-delimited JSON-RPC on stdin/stdout,
standard library only. The first argument picks a misbehaviour:

  polite           a plain server; exits at stdin EOF
  chatty           prints a banner, a non-JSON line and a JSON line that is not JSON-RPC on
                   stdout, and log lines on stderr, around correct answers; exits at stdin EOF
  stubborn         ignores stdin EOF and SIGTERM and starts a child (`sleep`) that inherits
                   its stdout, stderr and ignored SIGTERM; reports "pid=P child=C" on stderr
  ignores-eof      ignores stdin EOF only (SIGTERM ends it); reports "pid=P" on stderr
  huge             answers tools/call with a 2 MiB line with no newline, written in 64 KiB
                   chunks; reports "huge: pipe broke after N bytes" (or "huge: wrote all N
                   bytes") on stderr; exits at stdin EOF
  huge-lingers     the same, but ignores stdin EOF (SIGTERM ends it)
  closes-stdout    closes its stdout when tools/call arrives and sleeps on (SIGTERM ends it)
  exit-on-call     exits without answering when tools/call arrives
  exit-after-init  exits right after answering initialize
  exit-before-init exits when any request but initialize comes first (as some 2025-era
                   servers do with the 2026-07-28 era probe); reports "exit-before-init:
                   exiting on M" on stderr
  silent-before-init
                   ignores every request until initialize (no answer to the era probe)

Tools: `echo` {message} -> "Echo: <message>"; `env` -> the environment the process was
started with (from /proc/self/environ, before the interpreter changes anything) as a JSON
object in a text block.
"""

import json
import os
import signal
import subprocess
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "polite"

TOOLS = [
    {
        "name": "echo",
        "description": "Returns the message.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {
        "name": "env",
        "description": "Returns the environment the process started with.",
        "inputSchema": {"type": "object"},
    },
]


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def out_raw(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message, end=b"\n"):
    out_raw(json.dumps(message).encode() + end)


def start_environment():
    with open("/proc/self/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if item]
    return {k.decode(): v.decode() for k, v in pairs}


def text_result(text, is_error=False):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def write_huge_line():
    chunk = b"x" * (64 * 1024)
    total = 2 * 1024 * 1024
    written = 0
    try:
        while written < total:
            written += os.write(sys.stdout.fileno(), chunk)
    except OSError:
        log("huge: pipe broke after %d bytes" % written)
        return
    log("huge: wrote all %d bytes" % written)


def answer(request):
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-stdio-" + MODE, "version": "0.0.1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "echo":
            return text_result("Echo: %s" % arguments.get("message", ""))
        if name == "env":
            return text_result(json.dumps(start_environment(), sort_keys=True))
        return text_result("Unknown tool: %s" % name, True)
    return None


def main():
    if MODE in ("stubborn", "ignores-eof"):
        if MODE == "stubborn":
            # Ignored signals stay ignored across exec, so the child ignores SIGTERM too.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            child = subprocess.Popen(["sleep", "600"])
            log("pid=%d child=%d" % (os.getpid(), child.pid))
        else:
            log("pid=%d" % os.getpid())
    if MODE == "chatty":
        out_raw(b"fake-stdio-server 0.0.1 starting up\n")
        out_raw(b"\n")
        out_raw(b"WARNING: this line is not JSON {\n")
        log("chatty: started")
    initialized = False
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            log("%s: bad input line" % MODE)
            continue
        if "method" not in message or "id" not in message:
            continue  # a notification or a response: nothing to answer
        method = message["method"]
        if MODE in ("exit-before-init", "silent-before-init") and not initialized:
            if method != "initialize":
                if MODE == "exit-before-init":
                    log("exit-before-init: exiting on %s" % method)
                    os._exit(3)
                continue
            initialized = True
        if MODE == "chatty":
            log("chatty: got %s" % method)
        if method == "tools/call" and MODE == "exit-on-call":
            log("exit-on-call: exiting")
            os._exit(0)
        if method == "tools/call" and MODE in ("huge", "huge-lingers"):
            write_huge_line()
            continue
        if method == "tools/call" and MODE == "closes-stdout":
            sys.stdout.flush()
            os.close(sys.stdout.fileno())
            log("closes-stdout: stdout closed, sleeping on")
            while True:
                time.sleep(3600)
        result = answer(message)
        if MODE == "chatty" and method == "tools/list":
            out_raw(b'{"hello": "a JSON line that is not JSON-RPC"}\n')
            # CRLF line ends are accepted too.
            send({"jsonrpc": "2.0", "id": message["id"], "result": result}, b"\r\n")
            continue
        if result is None:
            send({"jsonrpc": "2.0", "id": message["id"],
                  "error": {"code": -32601, "message": "Method not found: %s" % method}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        if method == "initialize" and MODE == "exit-after-init":
            log("exit-after-init: exiting")
            os._exit(0)
    # stdin is at EOF.
    if MODE in ("stubborn", "ignores-eof", "huge-lingers"):
        log("%s: stdin closed, sleeping on" % MODE)
        while True:
            time.sleep(3600)
    log("%s: stdin closed, exiting" % MODE)


if __name__ == "__main__":
    main()
