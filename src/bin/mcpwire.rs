//! The `mcpwire` command-line tool: debugging aids for MCP wire traffic.
//!
//! Exit codes: 0 success, 1 the input or the peer was at fault, 2 usage error.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use mcpwire::sse;

const USAGE: &str = "\
mcpwire: a hand-written Model Context Protocol client

USAGE:
    mcpwire sse [FILE] [--chunk N] [--max-line-bytes N] [--max-event-bytes N]
    mcpwire --help | --version

COMMANDS:
    sse     Decode a raw text/event-stream body (FILE, or stdin when FILE is absent or -),
            feeding the decoder N bytes at a time (default 65536). Prints one JSON object
            per dispatched event, {\"event\":TYPE,\"data\":DATA,\"id\":LAST_EVENT_ID} (id is \"\"
            when none was set), then {\"retry\":MS} if a retry field was accepted. The output
            is the same for every N; comparing --chunk 1 with the default checks exactly that.
            Exits 1 if the stream breaks a limit (events before that are printed).

EXIT CODES:
    0 success   1 bad input   2 usage error
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
