//! `mcp-tools`: discover a server's tools and print them as bindings.
//!
//! Exit codes: 0 success, 1 discovery failed, 2 usage error.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use mcpwire::binding::config::{MAX_HEADER_ENV, ProxySetting, Server, TlsSettings};
use mcpwire::binding::discover::{Discovery, MAX_NAMED_TOOLS, discover};
use mcpwire::mcp::ProtocolVersion;
use mcpwire::transport::Secret;
use mcpwire::transport::http::{
    ClientCert, ExtraHeaders, HttpConfig, HttpPool, ProxyConfig, Roots, TlsOptions,
};

const USAGE: &str = "\
mcp-tools: turn an MCP server's tools into bindings (JSON for a host's config)

USAGE:
    mcp-tools -url URL [-token-env VAR] [-header NAME=VAR]... -tenant TENANT -tools NAME[,NAME...]
              [-timeout SECONDS] [-ca-file PEM | -roots webpki|platform]
              [-client-cert PEM -client-key PEM] [-proxy URL|none] [-era auto|2025|REVISION]
    mcp-tools -command \"PROGRAM ARGS...\" -tenant TENANT -tools NAME[,NAME...] [-timeout SECONDS]

FLAGS (a single or a double dash; `-flag value` or `-flag=value`):
    -url URL          the server's Streamable HTTP endpoint (http:// or https://)
    -command CMD      instead of -url: an installed stdio server, run as PROGRAM ARGS
                      (split on whitespace)
    -token-env VAR    environment variable holding the server's API key: used to connect,
                      and the bindings tell the host to send it as a bearer token
    -header NAME=VAR  with -url, repeatable: send header NAME with the value of environment
                      variable VAR, while discovering and (as the bindings' header_env) on
                      every call; the value is treated as a credential, never printed. NAME
                      may not be one the transport sets (Accept, Content-Type, Host,
                      Authorization: use -token-env, Mcp-*, Last-Event-ID, ...)
    -tenant TENANT    the tenant allowed to use the tools
    -tools LIST       comma-separated remote tool names to include (1 to 128), in output order
    -timeout SECONDS  how long discovery may take (default 30)
    -ca-file PEM      trust only the CAs of this PEM bundle (an https:// -url; a private CA)
    -roots NAME       webpki (the bundled roots, the default) or platform (the system's store)
    -client-cert PEM  a client certificate chain for mutual TLS, with -client-key PEM (its key)
    -proxy URL|none   an http://host:port proxy for the server, or none; without it,
                      HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply (CONNECT tunnels: the token
                      goes through the tunnel, never to the proxy)
    -era ERA          with -url: auto (the default) probes with server/discover and falls
                      back to initialize; 2025 opens with initialize at once; a stateless
                      revision such as 2026-07-28 is spoken at once (as mcpwire call --era)
    -h, -help         this text

The TLS and -proxy flags are used to connect and are written into the bindings (`tls`,
`proxy`), file paths made absolute.

It connects, reads the whole tool list (every page), and prints a JSON array with one
binding per named tool. It fails, with one line on stderr, when a named tool does not exist,
when discovery takes longer than the timeout, when the token or a header variable is unset, when the
server refuses the credentials (401/403, naming its WWW-Authenticate challenge), or when the
URL is invalid.

EXIT CODES:
    0 success   1 discovery failed   2 usage error
";

struct Options {
    url: Option<String>,
    command: Option<String>,
    token_env: Option<String>,
    /// `-header NAME=VAR`: each header's name and the variable holding its value.
    headers: BTreeMap<String, String>,
    tenant: Option<String>,
    tools: Vec<String>,
    timeout: Duration,
    ca_file: Option<String>,
    roots: Option<String>,
    client_cert: Option<String>,
    client_key: Option<String>,
    proxy: Option<String>,
    /// `-era`: `None` probes; `Some(None)` is a 2025-era server; `Some(Some(v))` a stateless
    /// revision.
    era: Option<Option<ProtocolVersion>>,
}

enum Failure {
    Usage(String),
    Failed(String),
}

fn parse(args: &[String]) -> Result<Option<Options>, Failure> {
    let mut options = Options {
        url: None,
        command: None,
        token_env: None,
        headers: BTreeMap::new(),
        tenant: None,
        tools: Vec::new(),
        timeout: Duration::from_secs(30),
        ca_file: None,
        roots: None,
        client_cert: None,
        client_key: None,
        proxy: None,
        era: None,
    };
    let mut tools_given = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(Failure::Usage(format!("unexpected argument {arg:?}")));
        };
        let (flag, inline) = match flag.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (flag, None),
        };
        if matches!(flag, "h" | "help") {
            return Ok(None);
        }
        let value = match inline {
            Some(value) => value,
            None => args
                .next()
                .cloned()
                .ok_or_else(|| Failure::Usage(format!("-{flag} needs a value")))?,
        };
        match flag {
            "url" => options.url = Some(value),
            "command" => options.command = Some(value),
            "token-env" => options.token_env = Some(value),
            "header" => {
                let (name, variable) = parse_header(&value)?;
                if options
                    .headers
                    .keys()
                    .any(|known| known.eq_ignore_ascii_case(&name))
                {
                    return Err(Failure::Usage(format!("-header names {name:?} twice")));
                }
                options.headers.insert(name, variable);
            }
            "tenant" => options.tenant = Some(value),
            "tools" => {
                tools_given = true;
                options.tools = value.split(',').map(|t| t.trim().to_owned()).collect();
            }
            "timeout" => {
                let seconds: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or_else(|| {
                        Failure::Usage(format!(
                            "-timeout must be a positive number of seconds, not {value:?}"
                        ))
                    })?;
                options.timeout = Duration::from_secs_f64(seconds);
            }
            "ca-file" => options.ca_file = Some(value),
            "roots" => options.roots = Some(value),
            "client-cert" => options.client_cert = Some(value),
            "client-key" => options.client_key = Some(value),
            "proxy" => options.proxy = Some(value),
            "era" => {
                options.era = match value.as_str() {
                    "auto" => None,
                    "2025" => Some(None),
                    other => match ProtocolVersion::parse(other) {
                        Some(version) if version.is_modern() => Some(Some(version)),
                        _ => {
                            return Err(Failure::Usage(format!(
                                "-era takes auto, 2025 or a stateless revision such as \
                                 2026-07-28, not {other:?}"
                            )));
                        }
                    },
                }
            }
            other => return Err(Failure::Usage(format!("unknown flag -{other}"))),
        }
    }
    match (&options.url, &options.command) {
        (None, None) => return Err(Failure::Usage("give -url or -command".to_owned())),
        (Some(_), Some(_)) => {
            return Err(Failure::Usage("give -url or -command, not both".to_owned()));
        }
        _ => {}
    }
    if options.tenant.as_deref().is_none_or(str::is_empty) {
        return Err(Failure::Usage("-tenant is required".to_owned()));
    }
    if !tools_given {
        return Err(Failure::Usage("-tools is required".to_owned()));
    }
    if options.tools.is_empty()
        || options.tools.len() > MAX_NAMED_TOOLS
        || options.tools.iter().any(String::is_empty)
    {
        return Err(Failure::Usage(format!(
            "-tools takes 1 to {MAX_NAMED_TOOLS} comma-separated, non-empty names"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(duplicate) = options.tools.iter().find(|t| !seen.insert(t.as_str())) {
        return Err(Failure::Usage(format!("-tools names {duplicate:?} twice")));
    }
    if options.token_env.is_some() && options.command.is_some() {
        return Err(Failure::Usage(
            "-token-env applies to -url servers; a stdio server gets no bearer token".to_owned(),
        ));
    }
    let http_only = [
        ("ca-file", options.ca_file.is_some()),
        ("roots", options.roots.is_some()),
        ("client-cert", options.client_cert.is_some()),
        ("client-key", options.client_key.is_some()),
        ("proxy", options.proxy.is_some()),
        ("era", options.era.is_some()),
    ];
    if options.command.is_some()
        && let Some((flag, _)) = http_only.iter().find(|(_, given)| *given)
    {
        return Err(Failure::Usage(format!(
            "-{flag} applies to -url servers, not to -command"
        )));
    }
    if !options.headers.is_empty() && options.command.is_some() {
        return Err(Failure::Usage(
            "-header applies to -url servers; a stdio server gets no HTTP headers".to_owned(),
        ));
    }
    if options.headers.len() > MAX_HEADER_ENV {
        return Err(Failure::Usage(format!(
            "-header is given {} times; a binding takes at most {MAX_HEADER_ENV} headers",
            options.headers.len()
        )));
    }
    Ok(Some(options))
}

/// The `tls` of the bindings, from the TLS flags; `None` when none was given.
fn tls_settings(options: &Options) -> Result<Option<TlsSettings>, Failure> {
    let absolute = |flag: &str, path: &str| {
        std::path::absolute(path).map_err(|e| Failure::Usage(format!("-{flag} {path:?}: {e}")))
    };
    let roots = match (options.ca_file.as_deref(), options.roots.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(Failure::Usage(
                "give -ca-file or -roots, not both (-ca-file replaces the roots)".to_owned(),
            ));
        }
        (Some(file), None) => Some(Roots::CaFile(absolute("ca-file", file)?)),
        (None, Some("webpki")) => Some(Roots::Webpki),
        (None, Some("platform")) => Some(Roots::Platform),
        (None, Some(other)) => {
            return Err(Failure::Usage(format!(
                "-roots takes webpki or platform, not {other:?}"
            )));
        }
        (None, None) => None,
    };
    let client_cert = match (
        options.client_cert.as_deref(),
        options.client_key.as_deref(),
    ) {
        (Some(cert), Some(key)) => Some(ClientCert::new(
            absolute("client-cert", cert)?,
            absolute("client-key", key)?,
        )),
        (None, None) => None,
        _ => {
            return Err(Failure::Usage(
                "-client-cert and -client-key go together".to_owned(),
            ));
        }
    };
    if roots.is_none() && client_cert.is_none() {
        return Ok(None);
    }
    let mut tls = TlsSettings::default();
    tls.roots = roots.unwrap_or_default();
    tls.client_cert = client_cert;
    Ok(Some(tls))
}

/// Reads `-header NAME=VAR`: a header name the transport does not set, and an environment
/// variable name. What follows `=` is never quoted back: it may be a value typed by mistake.
fn parse_header(value: &str) -> Result<(String, String), Failure> {
    let Some((name, variable)) = value.split_once('=') else {
        return Err(Failure::Usage(
            "-header takes NAME=VAR: a header name and the environment variable holding its \
             value"
                .to_owned(),
        ));
    };
    ExtraHeaders::check_name(name).map_err(|e| Failure::Usage(format!("-header {name:?}: {e}")))?;
    let mut bytes = variable.bytes();
    let valid_variable = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid_variable {
        return Err(Failure::Usage(format!(
            "-header {name:?}: after `=` comes the name of the environment variable holding the \
             value (a letter or `_`, then letters, digits or `_`), not the value itself"
        )));
    }
    Ok((name.to_owned(), variable.to_owned()))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("mcp-tools: {message}\nRun `mcp-tools -help` for usage.");
            ExitCode::from(2)
        }
        Err(Failure::Failed(message)) => {
            eprintln!("mcp-tools: {message}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &[String]) -> Result<(), Failure> {
    let Some(options) = parse(args)? else {
        print!("{USAGE}");
        return Ok(());
    };
    let token = match &options.token_env {
        Some(variable) => Some(Secret::new(std::env::var(variable).map_err(|_| {
            Failure::Failed(format!("the environment variable {variable} is not set"))
        })?)),
        None => None,
    };
    let mut headers = ExtraHeaders::new();
    for (name, variable) in &options.headers {
        let value = std::env::var(variable).map_err(|_| {
            Failure::Failed(format!(
                "the environment variable {variable} (for header {name}) is not set"
            ))
        })?;
        headers.insert(name, Secret::new(value)).map_err(|e| {
            Failure::Failed(format!(
                "header {name} (from the environment variable {variable}): {e}"
            ))
        })?;
    }
    let server = match (&options.url, &options.command) {
        (Some(url), _) => {
            HttpConfig::new(url).map_err(|e| Failure::Usage(e.to_string()))?;
            let proxy = match options.proxy.as_deref() {
                None => None,
                Some("none") => Some(ProxySetting::Direct),
                Some(proxy) => Some(ProxySetting::Url(proxy.to_owned())),
            };
            let mut server = Server::http(url.clone()).with_header_env(options.headers.clone());
            if let Some(name) = &options.token_env {
                server = server.with_token_env(name.clone());
            }
            if let Some(tls) = tls_settings(&options)? {
                server = server.with_tls(tls);
            }
            if let Some(proxy) = proxy {
                server = server.with_proxy(proxy);
            }
            server
        }
        (None, Some(command)) => {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words
                .next()
                .ok_or_else(|| Failure::Usage("-command is empty".to_owned()))?;
            Server::stdio(program, words.collect())
        }
        (None, None) => return Err(Failure::Usage("give -url or -command".to_owned())),
    };
    let discovery = {
        let mut d = Discovery::new(
            server,
            options.tenant.clone().unwrap_or_default(),
            options.tools.clone(),
        );
        d.token = token;
        d
    }
    .with_headers(headers)
    .with_timeout(options.timeout);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Failed(format!("cannot start the runtime: {e}")))?;
    // The bindings' own checks, before connecting (a relative path, a proxy URL with
    // credentials, `tls` on an http:// URL).
    let mut probe =
        mcpwire::binding::config::Binding::new("probe", "probe", discovery.server.clone());
    probe.tenants = vec![discovery.tenant.clone()];
    probe.timeout_seconds = 1;
    probe.max_output_bytes = 1;
    probe.validate().map_err(|e| {
        let field = e.field.as_deref().unwrap_or("a flag");
        Failure::Usage(format!("{field}: {}", e.message))
    })?;
    let proxy = ProxyConfig::from_env().map_err(|e| Failure::Usage(e.to_string()))?;
    let bindings = runtime.block_on(async {
        let pool = HttpPool::with_proxy(&TlsOptions::default(), proxy)
            .map_err(|e| Failure::Failed(e.to_string()))?;
        if let (Some(era), Server::Http { url, .. }) = (options.era, &discovery.server) {
            pool.era_cache().remember(url, era);
        }
        discover(&pool, &discovery)
            .await
            .map_err(|e| Failure::Failed(format!("{} ({})", e, e.kind())))
    })?;
    // Serializing the bindings themselves keeps the documented key order.
    let text = serde_json::to_string_pretty(&bindings)
        .map_err(|e| Failure::Failed(format!("cannot print the bindings: {e}")))?;
    println!("{text}");
    Ok(())
}
