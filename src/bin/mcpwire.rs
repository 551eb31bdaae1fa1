//! The `mcpwire` command-line tool: debugging aids for MCP wire traffic.
//!
//! Exit codes: 0 success, 1 the input or the peer was at fault, 2 usage error.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use mcpwire::binding::call::{CallContext, CallEvent, Caller, EnvTokens, Progress, ToolResult};
use mcpwire::binding::config::{Server, load_config};
use mcpwire::binding::discover::{Discovery, discover};
use mcpwire::client::{CancelToken, Client, ClientOptions};
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::mcp::{ProtocolVersion, TraceContext, TraceContextError};
use mcpwire::sse;
use mcpwire::transport::http::{HttpConfig, HttpPool, ProxyConfig, TlsOptions};

const USAGE: &str = "\
mcpwire: a hand-written Model Context Protocol client

USAGE:
    mcpwire demo [--era both|2025|2026]
    mcpwire demo-server [--stdio] [--era both|2025|2026]
    mcpwire call --bindings FILE --tool NAME --tenant TENANT --args JSON
                 [--session-id S] [--call-id C] [--era auto|2025|2026-07-28] [-v]
                 [--traceparent TP] [--tracestate TS] [--baggage B]
    mcpwire sse [FILE] [--chunk N] [--max-line-bytes N] [--max-event-bytes N]
    mcpwire record --upstream URL --out DIR [--listen ADDR] [--mode TEXT] [--command TEXT]
                   [--notes TEXT] [--idle-ms N] [--once] [--drop-after N] [--cut-poll N]
    mcpwire replay --fixtures DIR [--listen ADDR] [--speed X] [--split recorded|bytes]
                   [--once] [--idle-ms N]
    mcpwire probe URL [--json] [--token-env VAR] [--timeout-seconds N]
    mcpwire --help | --version

COMMANDS:
    demo    Start an MCP server on a loopback port inside this process, connect to it (the
            era probe: protocol 2026-07-28 is negotiated), discover its tools into bindings
            (as mcp-tools does), call them (progress, an image, structured output checked
            against its output schema, a refused tenant) and print the bindings, every
            event and a summary line {\"type\":\"demo.summary\",\"protocol_version\",...}.
            Needs no setup and no network. --era 2025 runs a server that speaks only the
            2025 revisions, so the client falls back to initialize and sessions; --era 2026
            one that speaks only 2026-07-28; the default, both, a dual-era server.
    demo-server
            Run only the demo server: print its URL (a loopback port) on stdout and serve
            until interrupted. Handy for trying mcp-tools and mcpwire call by hand, and as
            the fast local server of the client benchmarks. With --stdio, serve the same
            tools as a stdio MCP server instead (newline-delimited JSON-RPC on stdin and
            stdout) until stdin ends: mcp-tools -command \"mcpwire demo-server --stdio\".
            --era picks the protocol eras served: both (the default: 2026-07-28 for requests
            carrying its _meta envelope, 2025 with initialize and sessions for the rest),
            2025 (2025 only, as an older server: clients fall back to initialize) or 2026
            (2026-07-28 only: 2025 requests get error -32022).
    call    Call one tool through a bindings file (the JSON array mcp-tools prints, or a
            host config whose `tools` array holds bindings). Prints JSON lines on stdout:
            {\"type\":\"tool.progress\",\"call_id\",\"progress\",\"total\"?,\"message\"?} as progress
            arrives, then one {\"type\":\"tool.result\",\"call_id\",\"is_error\",...}; a failure
            has \"unknown_outcome\" and \"error\":{\"kind\",\"message\"}. The tenant and the
            arguments are checked before anything is sent; each call opens its own MCP
            session and closes it. Ctrl-C cancels the call on the wire. When stderr is a
            terminal a live progress line is drawn there. -v logs the wire conversation to
            stderr, with tokens and header values redacted. A binding's token_env and
            header_env variables are read from the environment at each call; one that is
            unset fails the call before anything is sent. A binding's `auth` gets the token
            by OAuth: client credentials (its secret or key read at the call), or the token
            store `mcp-tools -login` wrote (refreshed when due, rotated tokens written back;
            when spent, the call fails as unauthorized saying to log in again). Call ids
            default to a fresh unique id; the session
            id (the caller's, sent in _meta) defaults to \"cli\". HTTPS_PROXY, HTTP_PROXY
            and NO_PROXY apply to bindings without a `proxy` of their own (CONNECT tunnels;
            the bearer token never goes to the proxy); a binding's `tls` names its CA file
            or client certificate. Trace context: every request of the call carries the W3C
            traceparent, tracestate and baggage in _meta (SEP-414) from --traceparent,
            --tracestate and --baggage, else from the TRACEPARENT, TRACESTATE and BAGGAGE
            environment variables (OpenTelemetry's convention for processes; TRACESTATE
            only with TRACEPARENT). A malformed flag is a usage error; a malformed
            variable is left out with a warning on stderr. Neither is ever sent.
    sse     Decode a raw text/event-stream body (FILE, or stdin when FILE is absent or -),
            feeding the decoder N bytes at a time (default 65536). Prints one JSON object
            per dispatched event, {\"event\":TYPE,\"data\":DATA,\"id\":LAST_EVENT_ID} (id is \"\"
            when none was set), then {\"retry\":MS} if a retry field was accepted. The output
            is the same for every N; comparing --chunk 1 with the default checks exactly that.
            Exits 1 if the stream breaks a limit (events before that are printed).

    record  A recording proxy: listens on ADDR (default 127.0.0.1:0), prints its endpoint URL
            (ADDR plus the upstream URL's path) on stdout, forwards every HTTP/1.1 request
            byte for byte to the upstream (plain http://, one upstream connection per client
            connection) and every response byte back as it arrives. On Ctrl-C (or SIGTERM),
            after --idle-ms N of silence once something was recorded, or with --once when the
            first client has gone and no connection is open, it writes DIR/exchanges.jsonl and
            DIR/provenance.json (server name and version from the initialize answer, --mode,
            the date, --command or its own command line). Format: fixtures/README.md.
            --drop-after N cuts the first tools/call answered with an event stream after
            its N-th event (both connections closed), so the client's resumption is recorded.
            --cut-poll N closes the connection of the N-th tasks/get when it arrives (never
            sent upstream), so a task polled across a cut connection is recorded.
    replay  Serve a recorded fixture: prints its endpoint URL on stdout, answers each request
            that matches the next unused recorded one (method, path, the MCP headers, the
            JSON-RPC body with ids normalised) with the recorded bytes, chunks and gaps (gaps
            divided by --speed; --split bytes writes one byte at a time), and closes or resets
            connections where the recording did. A request that matches nothing gets a 500
            whose body is the diff, also printed to stderr. Stops on Ctrl-C, after --idle-ms
            N of silence, or with --once when every exchange was served and no connection is
            open; then prints a report and exits 1 if any request mismatched or any recorded
            exchange was never requested.
    probe   Connect to a server as discovery would and report what to know before binding
            it: the protocol eras and revisions it speaks (server/discover for 2026-07-28,
            initialize offering 2025-11-25, 2025-06-18 and 2025-03-26, the HTTP+SSE
            fallback), how its replies are framed (JSON or SSE, line endings, priming
            events, retry), how it answers a made-up or missing session id (the spec says
            404 and 400), whether it needs credentials (the WWW-Authenticate challenge and
            the protected-resource metadata, fetched without the token), its tools with any
            schema problem (a schema that does not compile, no outputSchema, an invalid
            x-mcp-header annotation, a name breaking the name rule), and every deviation
            from the spec seen on the wire with the rule it breaks. Never calls a tool.
            --json prints the report as JSON. --token-env VAR sends $VAR as a bearer token
            (to the endpoint's origin only; it never appears in the output).
            --timeout-seconds N bounds the whole probe (default 30). Exits 0 when the probe
            completed, deviations or not; 1 when the server could not be reached or the
            deadline cut the probe short.

EXIT CODES:
    0 success   1 the call failed, the input was bad, or the server could not be probed
    2 usage or config error
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("-V" | "--version") => {
            println!("mcpwire {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("sse") => sse_command(&args[1..]),
        Some("call") => return call_command(&args[1..]),
        Some("demo") => demo_command(&args[1..]),
        Some("demo-server") => demo_server_command(&args[1..]),
        Some("record") => record_command(&args[1..]),
        Some("replay") => replay_command(&args[1..]),
        Some("probe") => probe_command(&args[1..]),
        Some(other) => Err(Failure::Usage(format!("unknown command `{other}`"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("mcpwire: {message}\nRun `mcpwire --help` for usage.");
            ExitCode::from(2)
        }
        Err(Failure::Input(message)) => {
            eprintln!("mcpwire: {message}");
            ExitCode::from(1)
        }
    }
}

/// Why a command did not succeed, which decides the exit code.
enum Failure {
    Usage(String),
    Input(String),
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Failure::Input(error.to_string())
    }
}

/// Options of `mcpwire sse`.
struct SseOptions {
    file: Option<String>,
    chunk: usize,
    limits: sse::Limits,
}

fn parse_sse_options(args: &[String]) -> Result<SseOptions, Failure> {
    let mut options = SseOptions {
        file: None,
        chunk: 64 * 1024,
        limits: sse::Limits::default(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut number = |name: &str| -> Result<usize, Failure> {
            let value = inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| Failure::Usage(format!("{name} needs a value")))?;
            match value.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(Failure::Usage(format!(
                    "{name} must be a positive integer, not `{value}`"
                ))),
            }
        };
        match flag {
            "--chunk" => options.chunk = number("--chunk")?,
            "--max-line-bytes" => options.limits.max_line_bytes = number("--max-line-bytes")?,
            "--max-event-bytes" => options.limits.max_event_bytes = number("--max-event-bytes")?,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            "-" => options.file = None,
            flag if flag.starts_with('-') => {
                return Err(Failure::Usage(format!("unknown option `{flag}` for sse")));
            }
            file if options.file.is_none() => options.file = Some(file.to_owned()),
            extra => return Err(Failure::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    Ok(options)
}

fn sse_command(args: &[String]) -> Result<(), Failure> {
    let options = parse_sse_options(args)?;
    let mut input: Box<dyn Read> = match &options.file {
        Some(path) => Box::new(
            std::fs::File::open(path)
                .map_err(|e| Failure::Input(format!("cannot open {path}: {e}")))?,
        ),
        None => Box::new(io::stdin().lock()),
    };
    let stdout = io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    let mut decoder = sse::Decoder::new(options.limits);
    let mut chunk = vec![0u8; options.chunk];
    let outcome = (|| -> Result<(), Failure> {
        loop {
            let filled = fill(&mut input, &mut chunk)?;
            if filled == 0 {
                break;
            }
            decoder.push(&chunk[..filled]);
            while let Some(event) = decoder
                .next_event()
                .map_err(|e| Failure::Input(format!("stream refused: {e}")))?
            {
                write_event(&mut out, &event)?;
            }
        }
        Ok(())
    })();
    if let Some(ms) = decoder.retry_ms() {
        writeln!(out, "{{\"retry\":{ms}}}")?;
    }
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        other => other?,
    }
    outcome
}

/// Reads until `buf` is full or the input ends, so the decoder sees exactly `--chunk` bytes at
/// a time whatever sizes the operating system hands back.
fn fill(input: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn write_event(out: &mut impl Write, event: &sse::Event) -> io::Result<()> {
    // Written by hand to keep the documented key order.
    out.write_all(b"{\"event\":")?;
    serde_json::to_writer(&mut *out, event.event_type())?;
    out.write_all(b",\"data\":")?;
    serde_json::to_writer(&mut *out, event.data())?;
    out.write_all(b",\"id\":")?;
    serde_json::to_writer(&mut *out, event.last_event_id())?;
    out.write_all(b"}\n")
}

/// Options of `mcpwire call`.
struct CallArgs {
    bindings: String,
    tool: String,
    tenant: String,
    arguments: serde_json::Value,
    session_id: String,
    call_id: String,
    verbose: bool,
    /// The era the HTTP servers are known to speak: `None` probes; `Some(None)` is a
    /// 2025-era server; `Some(Some(v))` a stateless revision.
    era: Option<Option<ProtocolVersion>>,
    /// The W3C trace context of every request of the call.
    trace_context: Option<TraceContext>,
}

/// `--era`'s value: `auto` probes, `2025` opens with initialize, a stateless revision is
/// spoken at once.
fn parse_era(text: &str) -> Result<Option<Option<ProtocolVersion>>, Failure> {
    match text {
        "auto" => Ok(None),
        "2025" => Ok(Some(None)),
        other => match ProtocolVersion::parse(other) {
            Some(version) if version.is_modern() => Ok(Some(Some(version))),
            _ => Err(Failure::Usage(format!(
                "--era must be auto, 2025 or a stateless revision such as 2026-07-28, not `{other}`"
            ))),
        },
    }
}

fn parse_call_args(args: &[String]) -> Result<CallArgs, Failure> {
    let (mut bindings, mut tool, mut tenant, mut arguments) = (None, None, None, None);
    let mut session_id = "cli".to_owned();
    let mut call_id = fresh_call_id();
    let mut verbose = false;
    let mut era = None;
    let mut trace = (None, None, None);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        if matches!(flag, "-v" | "--verbose") {
            verbose = true;
            continue;
        }
        if matches!(flag, "-h" | "--help") {
            print!("{USAGE}");
            std::process::exit(0);
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| Failure::Usage(format!("{flag} needs a value")))
        };
        match flag {
            "--bindings" => bindings = Some(value()?),
            "--tool" => tool = Some(value()?),
            "--tenant" => tenant = Some(value()?),
            "--args" => {
                let text = value()?;
                arguments = Some(
                    serde_json::from_str(&text)
                        .map_err(|e| Failure::Usage(format!("--args is not valid JSON: {e}")))?,
                );
            }
            "--session-id" => session_id = value()?,
            "--call-id" => call_id = value()?,
            "--era" => era = parse_era(&value()?)?,
            "--traceparent" => trace.0 = Some(value()?),
            "--tracestate" => trace.1 = Some(value()?),
            "--baggage" => trace.2 = Some(value()?),
            other => return Err(Failure::Usage(format!("unknown option `{other}` for call"))),
        }
    }
    let missing = |name: &str| Failure::Usage(format!("call needs {name}"));
    Ok(CallArgs {
        bindings: bindings.ok_or_else(|| missing("--bindings FILE"))?,
        tool: tool.ok_or_else(|| missing("--tool NAME"))?,
        tenant: tenant.ok_or_else(|| missing("--tenant TENANT"))?,
        arguments: arguments.ok_or_else(|| missing("--args JSON"))?,
        session_id,
        call_id,
        verbose,
        era,
        trace_context: call_trace(
            trace,
            |name| std::env::var(name).ok(),
            |warning| {
                eprintln!("mcpwire: {warning}");
            },
        )?,
    })
}

/// The trace context of `mcpwire call`: each of `flags` (`--traceparent`, `--tracestate`,
/// `--baggage`), else its environment variable (`TRACEPARENT`, `TRACESTATE` only with
/// `TRACEPARENT`, `BAGGAGE`). A malformed flag is a usage error; a malformed variable is
/// left out with a warning (a malformed TRACEPARENT leaves out the whole context).
fn call_trace(
    flags: (Option<String>, Option<String>, Option<String>),
    env: impl Fn(&str) -> Option<String>,
    mut warn: impl FnMut(String),
) -> Result<Option<TraceContext>, Failure> {
    let (traceparent, tracestate, baggage) = flags;
    let refused = |flag: &str, error: TraceContextError| {
        Failure::Usage(format!("{flag} is malformed ({error}); nothing was sent"))
    };
    let dropped = |variable: &str, error: TraceContextError| {
        format!("{variable} is malformed ({error}): it is not sent")
    };
    let (context, from_env) = match traceparent {
        Some(flag) => (
            TraceContext::parse(&flag).map_err(|e| refused("--traceparent", e))?,
            false,
        ),
        None => match env("TRACEPARENT").filter(|value| !value.is_empty()) {
            Some(variable) => match TraceContext::parse(&variable) {
                Ok(context) => (context, true),
                Err(error) => {
                    warn(format!(
                        "{} (nor TRACESTATE, BAGGAGE)",
                        dropped("TRACEPARENT", error)
                    ));
                    return no_orphans(tracestate, baggage);
                }
            },
            None => return no_orphans(tracestate, baggage),
        },
    };
    type With = fn(TraceContext, &str) -> Result<TraceContext, TraceContextError>;
    // A flag's member replaces, or a malformed one refuses; a variable's is left out when
    // malformed.
    let mut add = |context: TraceContext,
                   (flag, name): (Option<String>, &str),
                   variable: Option<(&str, String)>,
                   with: With| match (flag, variable) {
        (Some(flag), _) => with(context, &flag).map_err(|e| refused(name, e)),
        (None, Some((variable, value))) => Ok(with(context.clone(), &value).unwrap_or_else(|e| {
            warn(dropped(variable, e));
            context
        })),
        (None, None) => Ok(context),
    };
    let tracestate_variable = from_env
        .then(|| env("TRACESTATE"))
        .flatten()
        .map(|value| ("TRACESTATE", value));
    let context = add(
        context,
        (tracestate, "--tracestate"),
        tracestate_variable,
        |context, value| context.with_tracestate(value),
    )?;
    let baggage_variable = env("BAGGAGE").map(|value| ("BAGGAGE", value));
    let context = add(
        context,
        (baggage, "--baggage"),
        baggage_variable,
        |context, value| context.with_baggage(value),
    )?;
    Ok(Some(context))
}

/// No traceparent: a `--tracestate` or `--baggage` flag has nothing to go with.
fn no_orphans(
    tracestate: Option<String>,
    baggage: Option<String>,
) -> Result<Option<TraceContext>, Failure> {
    match (tracestate, baggage) {
        (None, None) => Ok(None),
        _ => Err(Failure::Usage(
            "--tracestate and --baggage go with a traceparent (--traceparent or TRACEPARENT)"
                .to_owned(),
        )),
    }
}

/// The wall clock: the time since the Unix epoch, `None` before it.
#[allow(
    clippy::disallowed_methods,
    reason = "the command-line tool is a driver: it owns the clock"
)]
fn since_epoch() -> Option<Duration> {
    std::time::SystemTime::UNIX_EPOCH.elapsed().ok()
}

/// The monotonic clock (tokio's).
#[allow(
    clippy::disallowed_methods,
    reason = "the command-line tool is a driver: it owns the clock"
)]
fn instant_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// A call id unique to this process and moment.
fn fresh_call_id() -> String {
    let nanos = since_epoch().map_or(0, |d| d.as_nanos());
    format!("call-{:x}-{:x}", nanos, std::process::id())
}

fn call_command(args: &[String]) -> ExitCode {
    let result = (|| -> Result<ToolResult, Failure> {
        let args = parse_call_args(args)?;
        let text = std::fs::read_to_string(&args.bindings).map_err(|e| {
            Failure::Usage(format!(
                "cannot read the bindings file {}: {e}",
                args.bindings
            ))
        })?;
        let bindings =
            load_config(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.bindings)))?;
        let runtime = runtime()?;
        runtime.block_on(async move {
            // Proxies from HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as Caller::new reads them
            // for bindings without `proxy` (so the pool is shared with those bindings).
            let proxy = ProxyConfig::from_env().map_err(|e| Failure::Usage(e.to_string()))?;
            let pool = HttpPool::with_proxy(&TlsOptions::default(), proxy)
                .map_err(|e| Failure::Input(e.to_string()))?;
            let urls: Vec<String> = bindings
                .iter()
                .filter_map(|binding| match &binding.server {
                    Server::Http { url, .. } => Some(url.clone()),
                    _ => None,
                })
                .collect();
            let mut caller = Caller::new(pool, bindings, Arc::new(EnvTokens))
                .map_err(|e| Failure::Usage(format!("{}: {e}", args.bindings)))?;
            if let Some(era) = args.era {
                for url in &urls {
                    caller.era_cache().remember(url, era);
                }
            }
            if args.verbose {
                caller.set_wire_log(Arc::new(|line: &str| eprintln!("mcpwire: {line}")));
            }
            let cancel = CancelToken::default();
            let on_interrupt = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_interrupt.cancel();
                }
            });
            let mut context = CallContext::new(args.tenant, args.session_id, args.call_id);
            context.trace_context = args.trace_context;
            let live_line = io::stderr().is_terminal();
            let result = caller
                .call_events(
                    &args.tool,
                    &context,
                    &args.arguments,
                    move |event| match event {
                        CallEvent::Progress(progress) => print_progress(&progress, live_line),
                        event => print_event(&event),
                    },
                    Some(cancel),
                )
                .await;
            if live_line {
                eprint!("\r\x1b[2K");
            }
            Ok(result)
        })
    })();
    match result {
        Ok(result) => {
            println!("{}", result.to_json_line());
            match result.error_kind() {
                None => ExitCode::SUCCESS,
                // A binding the host configured wrongly (a token store others may read, a
                // TLS file that cannot be used, ...): a config error, as --help says.
                Some(mcpwire::ErrorKind::Config) => ExitCode::from(2),
                Some(_) => ExitCode::from(1),
            }
        }
        Err(Failure::Usage(message)) => {
            eprintln!("mcpwire: {message}\nRun `mcpwire --help` for usage.");
            ExitCode::from(2)
        }
        Err(Failure::Input(message)) => {
            eprintln!("mcpwire: {message}");
            ExitCode::from(1)
        }
    }
}

/// A `tool.task` event (or any other but progress): one line on stdout.
fn print_event(event: &CallEvent) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{}", event.to_json_line());
    let _ = out.flush();
}

fn print_progress(progress: &Progress, live_line: bool) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{}", progress.to_json_line());
    let _ = out.flush();
    if live_line {
        let total = progress.total.map(|t| format!("/{t}")).unwrap_or_default();
        let message = progress.message.as_deref().unwrap_or("");
        eprint!(
            "\r\x1b[2K{}: {}{} {}",
            progress.call_id, progress.progress, total, message
        );
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(format!("cannot start the async runtime: {e}")))
}

/// The `--era` option of `demo` and `demo-server` (`--era X` or `--era=X`), and what else
/// `args` hold.
fn era_option<'a>(command: &str, args: &'a [String]) -> Result<(Era, Vec<&'a str>), Failure> {
    let mut era = Era::default();
    let mut rest = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = match arg.split_once('=') {
            Some(("--era", value)) => value.to_owned(),
            _ if arg == "--era" => args
                .next()
                .cloned()
                .ok_or_else(|| Failure::Usage("--era needs a value".to_owned()))?,
            _ => {
                rest.push(arg.as_str());
                continue;
            }
        };
        era = Era::parse(&value).ok_or_else(|| {
            Failure::Usage(format!(
                "--era of {command} takes both, 2025 or 2026, not `{value}`"
            ))
        })?;
    }
    Ok((era, rest))
}

/// What a demo server speaking `era` is, for the demo's first line.
fn era_description(era: Era) -> &'static str {
    match era {
        Era::Legacy => "protocol 2025-11-25 only, as a server written before 2026-07-28",
        Era::Modern => "protocol 2026-07-28 only",
        _ => "dual-era: 2026-07-28, and 2025-11-25 for clients that initialize",
    }
}

fn demo_command(args: &[String]) -> Result<(), Failure> {
    let (era, rest) = era_option("demo", args)?;
    match rest.as_slice() {
        [] => {}
        ["-h" | "--help"] => {
            print!("{USAGE}");
            return Ok(());
        }
        [other, ..] => {
            return Err(Failure::Usage(format!("unknown option `{other}` for demo")));
        }
    }
    runtime()?.block_on(async {
        let mut options = DemoOptions::default();
        options.era = era;
        let server = DemoServer::start_with_options(options)
            .await
            .map_err(|e| Failure::Input(format!("cannot start the demo server: {e}")))?;
        let url = server.url();
        let pool =
            HttpPool::new(&TlsOptions::default()).map_err(|e| Failure::Input(e.to_string()))?;
        let tools = ["progress_report", "tiny_image", "weather"];
        eprintln!(
            "# an MCP server is listening on {url} (loopback, inside this process; {})",
            era_description(era)
        );
        // Connecting is the era probe: server/discover, and initialize if the server does not
        // know it. The pool keeps the verdict, so discovery and the calls below reuse it.
        let config = HttpConfig::new(&url).map_err(|e| Failure::Input(e.to_string()))?;
        let client = Client::connect_http(&pool, config, ClientOptions::default())
            .await
            .map_err(|e| Failure::Input(format!("cannot connect to the demo server: {e}")))?;
        let version = client.protocol_version();
        eprintln!(
            "# the client probed with server/discover: protocol {version} negotiated ({})",
            if client.protocol_version().is_modern() {
                "stateless: no MCP session, each request its own POST"
            } else {
                "the server does not know server/discover: initialize and an MCP session"
            }
        );
        client.close().await;
        eprintln!(
            "# mcp-tools -url {url} -tenant local -tools {}",
            tools.join(",")
        );
        let mut discovery = Discovery::new(Server::http(url.clone()), "local".to_owned(), tools.iter().map(|t| (*t).to_owned()).collect());
        discovery.timeout = Duration::from_secs(30);
        let bindings = discover(&pool, &discovery)
            .await
            .map_err(|e| Failure::Input(format!("discovery failed: {e}")))?;
        println!(
            "{}",
            serde_json::to_string_pretty(&bindings).map_err(|e| Failure::Input(e.to_string()))?
        );
        // The demo server is on loopback, inside this process: no proxy, whatever the
        // environment says (Caller::new would read HTTPS_PROXY and HTTP_PROXY).
        let caller = Caller::with_default_proxy(
            pool.clone(),
            bindings,
            Arc::new(EnvTokens),
            ProxyConfig::default(),
        )
        .map_err(|e| Failure::Input(format!("the discovered bindings are invalid: {e}")))?;
        let calls = [
            (
                "progress_report",
                "local",
                serde_json::json!({"steps": 3, "delay_ms": 150}),
            ),
            ("tiny_image", "local", serde_json::json!({})),
            ("weather", "local", serde_json::json!({"city": "Lisbon"})),
            (
                "weather",
                "someone-else",
                serde_json::json!({"city": "Lisbon"}),
            ),
            ("weather", "local", serde_json::json!({"town": "Lisbon"})),
        ];
        for (number, (tool, tenant, arguments)) in calls.into_iter().enumerate() {
            eprintln!("# mcpwire call --tool {tool} --tenant {tenant} --args '{arguments}'");
            let context = CallContext::new(
                tenant.to_owned(),
                "demo",
                format!("demo-{}", number + 1),
            );
            let result = caller
                .call(
                    tool,
                    &context,
                    &arguments,
                    |p| print_progress(&p, false),
                    None,
                )
                .await;
            println!("{}", result.to_json_line());
        }
        let stats = server.stats();
        if version.is_modern() {
            eprintln!(
                "# protocol {version}: {} HTTP requests, each its own POST, no MCP session, \
                 over {} pooled connection(s)",
                stats.requests,
                pool.connections_opened()
            );
        } else {
            eprintln!(
                "# protocol {version}: {} MCP sessions opened and {} closed with DELETE, {} \
                 HTTP requests over {} pooled connection(s)",
                stats.sessions_opened,
                stats.sessions_deleted,
                stats.requests,
                pool.connections_opened()
            );
        }
        // Written by hand to keep the key order of the other lines ("type" first).
        println!(
            "{{\"type\":\"demo.summary\",\"protocol_version\":\"{version}\",\"server_era\":\"{era}\",\
             \"http_requests\":{},\"modern_requests\":{},\"mcp_sessions_opened\":{},\
             \"mcp_sessions_deleted\":{}}}",
            stats.requests, stats.modern_requests, stats.sessions_opened, stats.sessions_deleted
        );
        Ok(())
    })
}

fn demo_server_command(args: &[String]) -> Result<(), Failure> {
    let (era, rest) = era_option("demo-server", args)?;
    match rest.as_slice() {
        [] => {}
        ["--stdio"] => {
            return runtime()?.block_on(async {
                mcpwire::demo::serve_stdio(tokio::io::stdin(), tokio::io::stdout(), era)
                    .await
                    .map_err(|e| Failure::Input(format!("the stdio demo server stopped: {e}")))
            });
        }
        ["-h" | "--help"] => {
            print!("{USAGE}");
            return Ok(());
        }
        [other, ..] => {
            return Err(Failure::Usage(format!(
                "unknown option `{other}` for demo-server"
            )));
        }
    }
    runtime()?.block_on(async {
        let mut options = DemoOptions::default();
        options.era = era;
        let server = DemoServer::start_with_options(options)
            .await
            .map_err(|e| Failure::Input(format!("cannot start the demo server: {e}")))?;
        println!("{}", server.url());
        io::stdout().flush()?;
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| Failure::Input(format!("cannot wait for Ctrl-C: {e}")))?;
        Ok(())
    })
}

/// `--flag value` / `--flag=value` options of `record` and `replay`: (flag, value) pairs, and
/// the value-less flags in `switches`.
fn flag_pairs(
    command: &str,
    args: &[String],
    switches: &[&str],
) -> Result<Vec<(String, String)>, Failure> {
    let mut pairs = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if matches!(arg.as_str(), "-h" | "--help") {
            print!("{USAGE}");
            std::process::exit(0);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        if !flag.starts_with("--") {
            return Err(Failure::Usage(format!(
                "unexpected argument `{flag}` for {command}"
            )));
        }
        if switches.contains(&flag) {
            pairs.push((flag.to_owned(), String::new()));
            continue;
        }
        let value = inline
            .or_else(|| args.next().cloned())
            .ok_or_else(|| Failure::Usage(format!("{flag} needs a value")))?;
        pairs.push((flag.to_owned(), value));
    }
    Ok(pairs)
}

fn listen_addr(value: &str) -> Result<std::net::SocketAddr, Failure> {
    value
        .parse()
        .map_err(|_| Failure::Usage(format!("--listen takes HOST:PORT, not `{value}`")))
}

fn millis(flag: &str, value: &str) -> Result<Duration, Failure> {
    value
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| Failure::Usage(format!("{flag} takes milliseconds, not `{value}`")))
}

/// Resolves when the process gets SIGINT or SIGTERM (scripts stop the recorder with either).
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn record_command(args: &[String]) -> Result<(), Failure> {
    use mcpwire::fixture::record::{RecordOptions, Recorder};
    use mcpwire::fixture::{
        Provenance, ServerInfo, civil_date, client_protocol, server_info, write_fixture,
    };

    let (mut upstream, mut out, mut listen) = (None, None, "127.0.0.1:0".to_owned());
    let (mut mode, mut command, mut notes) = (String::new(), None, String::new());
    let (mut idle, mut once, mut drop_after, mut cut_poll) = (None, false, None, None);
    for (flag, value) in flag_pairs("record", args, &["--once"])? {
        match flag.as_str() {
            "--upstream" => upstream = Some(value),
            "--out" => out = Some(value),
            "--listen" => listen = value,
            "--mode" => mode = value,
            "--command" => command = Some(value),
            "--notes" => notes = value,
            "--idle-ms" => idle = Some(millis("--idle-ms", &value)?),
            "--once" => once = true,
            "--cut-poll" => {
                cut_poll = Some(value.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(
                    || Failure::Usage(format!("--cut-poll takes a positive count, not `{value}`")),
                )?);
            }
            "--drop-after" => {
                drop_after = Some(value.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(
                    || {
                        Failure::Usage(format!(
                            "--drop-after takes a positive count, not `{value}`"
                        ))
                    },
                )?);
            }
            other => {
                return Err(Failure::Usage(format!(
                    "unknown option `{other}` for record"
                )));
            }
        }
    }
    let upstream = upstream.ok_or_else(|| Failure::Usage("record needs --upstream URL".into()))?;
    let out = out.ok_or_else(|| Failure::Usage("record needs --out DIR".into()))?;
    let mut options =
        RecordOptions::new(&upstream, listen_addr(&listen)?).map_err(Failure::Usage)?;
    options.drop_after = drop_after;
    options.cut_poll = cut_poll;
    let path = upstream
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("/")
        .to_owned();
    let command = command.unwrap_or_else(|| {
        std::iter::once("mcpwire".to_owned())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" ")
    });
    let exchanges = runtime()?.block_on(async {
        let recorder = Recorder::start(options)
            .await
            .map_err(|e| Failure::Input(format!("cannot listen on {listen}: {e}")))?;
        println!("http://{}{path}", recorder.local_addr());
        io::stdout().flush()?;
        let stop = interrupted();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            let (opened, closed) = recorder.connections();
            if once && opened > 0 && opened == closed {
                break;
            }
            if let Some(idle) = idle
                && recorder.exchange_count() > 0
                && recorder.idle_for() >= idle
            {
                break;
            }
        }
        Ok::<_, Failure>(recorder.finish())
    })?;
    let days = since_epoch().map_or(0, |d| d.as_secs() / 86_400);
    let provenance = Provenance {
        server: server_info(&exchanges).unwrap_or_else(|| ServerInfo {
            name: "(no initialize or server/discover answer recorded)".into(),
            version: String::new(),
        }),
        mode,
        date: civil_date(i64::try_from(days).unwrap_or(0)),
        command,
        recorder: format!("mcpwire {}", env!("CARGO_PKG_VERSION")),
        constructed: false,
        protocol: client_protocol(&exchanges),
        notes,
    };
    write_fixture(std::path::Path::new(&out), &exchanges, &provenance)
        .map_err(|e| Failure::Input(format!("cannot write the fixture into {out}: {e}")))?;
    eprintln!(
        "mcpwire: recorded {} exchange(s) into {out}",
        exchanges.len()
    );
    Ok(())
}

fn replay_command(args: &[String]) -> Result<(), Failure> {
    use mcpwire::fixture::load_exchanges;
    use mcpwire::fixture::replay::{ReplayOptions, ReplayServer, Split};

    let mut options = ReplayOptions::default();
    let (mut dir, mut idle, mut once) = (None, None, false);
    for (flag, value) in flag_pairs("replay", args, &["--once"])? {
        match flag.as_str() {
            "--fixtures" => dir = Some(value),
            "--listen" => options.listen = listen_addr(&value)?,
            "--speed" => {
                options.speed = match value.parse::<f64>() {
                    Ok(speed) if speed > 0.0 => speed,
                    _ => {
                        return Err(Failure::Usage(format!(
                            "--speed takes a positive number (inf: no gaps), not `{value}`"
                        )));
                    }
                }
            }
            "--split" => {
                options.split = match value.as_str() {
                    "recorded" => Split::Recorded,
                    "bytes" => Split::EveryByte,
                    _ => {
                        return Err(Failure::Usage(format!(
                            "--split is `recorded` or `bytes`, not `{value}`"
                        )));
                    }
                }
            }
            "--idle-ms" => idle = Some(millis("--idle-ms", &value)?),
            "--once" => once = true,
            other => {
                return Err(Failure::Usage(format!(
                    "unknown option `{other}` for replay"
                )));
            }
        }
    }
    let dir = dir.ok_or_else(|| Failure::Usage("replay needs --fixtures DIR".into()))?;
    let exchanges = load_exchanges(std::path::Path::new(&dir)).map_err(Failure::Usage)?;
    let report = runtime()?.block_on(async {
        let sink: mcpwire::fixture::replay::MismatchSink =
            Arc::new(|message: &str| eprintln!("mcpwire replay: {message}"));
        let server = ReplayServer::start(exchanges, options, Some(sink))
            .await
            .map_err(|e| Failure::Input(format!("cannot listen: {e}")))?;
        println!("{}", server.url());
        io::stdout().flush()?;
        let stop = interrupted();
        tokio::pin!(stop);
        let mut last = (0usize, 0usize);
        let mut quiet_since = instant_now();
        loop {
            tokio::select! {
                () = &mut stop => break,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            let report = server.report();
            let now = (
                report.served + report.mismatches.len(),
                server.open_connections(),
            );
            if now != last {
                last = now;
                quiet_since = instant_now();
            }
            if once && report.unused.is_empty() && server.open_connections() == 0 {
                break;
            }
            if idle.is_some_and(|idle| now.0 > 0 && instant_now() - quiet_since >= idle) {
                break;
            }
        }
        let report = server.report();
        eprint!("mcpwire replay: {}", report.describe(server.exchanges()));
        Ok::<_, Failure>(report)
    })?;
    if report.is_ok() {
        Ok(())
    } else {
        Err(Failure::Input("the replay failed (see above)".into()))
    }
}

/// Options of `mcpwire probe`.
struct ProbeArgs {
    url: String,
    json: bool,
    token_env: Option<String>,
    timeout: Duration,
}

fn parse_probe_args(args: &[String]) -> Result<ProbeArgs, Failure> {
    let (mut url, mut json, mut token_env, mut timeout) = (None, false, None, 30.0);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        // `-flag` and `--flag`, as mcp-tools takes them.
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            if url.is_some() {
                return Err(Failure::Usage(format!(
                    "unexpected argument `{arg}` for probe"
                )));
            }
            url = Some(arg.clone());
            continue;
        };
        let (flag, inline) = match flag.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (flag, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| Failure::Usage(format!("--{flag} needs a value")))
        };
        match flag {
            "h" | "help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            "json" => json = true,
            "token-env" => token_env = Some(value()?),
            "timeout-seconds" => {
                let text = value()?;
                timeout = text
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && s.is_finite() && *s <= 86_400.0)
                    .ok_or_else(|| {
                        Failure::Usage(format!(
                            "--timeout-seconds must be a positive number of seconds, not `{text}`"
                        ))
                    })?;
            }
            other => {
                return Err(Failure::Usage(format!(
                    "unknown option `-{other}` for probe"
                )));
            }
        }
    }
    Ok(ProbeArgs {
        url: url.ok_or_else(|| Failure::Usage("probe needs a URL".to_owned()))?,
        json,
        token_env,
        timeout: Duration::from_secs_f64(timeout),
    })
}

fn probe_command(args: &[String]) -> Result<(), Failure> {
    use mcpwire::auth::Secret;
    use mcpwire::probe::{ProbeOptions, probe};

    let args = parse_probe_args(args)?;
    let mut options = ProbeOptions::new(&args.url);
    options.timeout = args.timeout;
    options.request_timeout = options.request_timeout.min(args.timeout);
    if let Some(name) = &args.token_env {
        let token = std::env::var(name).map_err(|_| {
            Failure::Usage(format!(
                "--token-env {name}: the variable is not set (or not UTF-8)"
            ))
        })?;
        if token.is_empty() {
            return Err(Failure::Usage(format!(
                "--token-env {name}: the variable is empty"
            )));
        }
        options.token = Some(Secret::new(token));
    }
    let report = runtime()?.block_on(async {
        // Proxies from HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as the other commands.
        let proxy = ProxyConfig::from_env().map_err(|e| Failure::Usage(e.to_string()))?;
        let pool = HttpPool::with_proxy(&TlsOptions::default(), proxy)
            .map_err(|e| Failure::Input(e.to_string()))?;
        probe(&pool, &options).await.map_err(Failure::Usage)
    })?;
    let text = if args.json {
        report.to_json() + "\n"
    } else {
        report.render()
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    if !report.reachable {
        Err(Failure::Input(format!("{} could not be probed", args.url)))
    } else if !report.completed {
        Err(Failure::Input(
            "the probe did not finish (see Notes)".to_owned(),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const FLAG_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /// `call_trace` with these flags and variables: the context, or the usage error's text,
    /// and the warnings.
    fn resolve(
        flags: [Option<&str>; 3],
        env: &[(&str, &str)],
    ) -> (Result<Option<TraceContext>, String>, Vec<String>) {
        let mut warnings = Vec::new();
        let [traceparent, tracestate, baggage] = flags.map(|flag| flag.map(str::to_owned));
        let result = call_trace(
            (traceparent, tracestate, baggage),
            |name| {
                env.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            },
            |warning| warnings.push(warning),
        )
        .map_err(|failure| match failure {
            Failure::Usage(message) | Failure::Input(message) => message,
        });
        (result, warnings)
    }

    #[test]
    fn the_environment_gives_the_trace_context_and_flags_win() {
        let env = [
            ("TRACEPARENT", ENV_PARENT),
            ("TRACESTATE", "env=1"),
            ("BAGGAGE", "user=env"),
        ];
        let (context, warnings) = resolve([None, None, None], &env);
        let context = context.unwrap().unwrap();
        assert_eq!(context.traceparent(), ENV_PARENT);
        assert_eq!(context.tracestate(), Some("env=1"));
        assert_eq!(context.baggage(), Some("user=env"));
        assert!(warnings.is_empty());
        // A flag's traceparent takes no TRACESTATE (it belongs to TRACEPARENT); BAGGAGE stays.
        let (context, _) = resolve([Some(FLAG_PARENT), None, None], &env);
        let context = context.unwrap().unwrap();
        assert_eq!(context.traceparent(), FLAG_PARENT);
        assert_eq!(context.tracestate(), None);
        assert_eq!(context.baggage(), Some("user=env"));
        let (context, _) = resolve([None, Some("flag=1"), Some("user=flag")], &env);
        let context = context.unwrap().unwrap();
        assert_eq!(context.traceparent(), ENV_PARENT);
        assert_eq!(context.tracestate(), Some("flag=1"));
        assert_eq!(context.baggage(), Some("user=flag"));
        assert_eq!(resolve([None, None, None], &[]).0, Ok(None));
    }

    #[test]
    fn a_malformed_variable_is_dropped_with_a_warning_and_a_malformed_flag_refused() {
        let (context, warnings) = resolve(
            [None, None, None],
            &[("TRACEPARENT", "00-abc-def-01"), ("TRACESTATE", "a=1")],
        );
        assert_eq!(context, Ok(None));
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("TRACEPARENT is malformed"),
            "{warnings:?}"
        );
        let (context, warnings) = resolve(
            [None, None, None],
            &[
                ("TRACEPARENT", ENV_PARENT),
                ("TRACESTATE", "A=1"),
                ("BAGGAGE", "no value"),
            ],
        );
        let context = context.unwrap().unwrap();
        assert_eq!((context.tracestate(), context.baggage()), (None, None));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        let ff = "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let (refused, _) = resolve([Some(ff), None, None], &[("TRACEPARENT", ENV_PARENT)]);
        assert!(
            refused
                .unwrap_err()
                .starts_with("--traceparent is malformed")
        );
        let (refused, _) = resolve([Some(FLAG_PARENT), Some("a=1,a=2"), None], &[]);
        assert!(
            refused
                .unwrap_err()
                .starts_with("--tracestate is malformed")
        );
        let (refused, _) = resolve([None, None, Some("x=1")], &[]);
        assert!(refused.unwrap_err().contains("go with a traceparent"));
    }
}
