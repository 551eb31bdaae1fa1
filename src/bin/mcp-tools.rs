//! `mcp-tools`: discover a server's tools and print them as bindings.
//!
//! Exit codes: 0 success, 1 discovery failed, 2 usage error.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcpwire::auth::Secret;
use mcpwire::auth::{UnixTime, Url};
use mcpwire::binding::config::{AuthSettings, MAX_HEADER_ENV, ProxySetting, Server, TlsSettings};
use mcpwire::binding::discover::{Discovery, MAX_NAMED_TOOLS, discover};
use mcpwire::client::auth::store::{TokenStore, Unattended};
use mcpwire::client::auth::{Auth, AuthorizeFuture, Authorizer, OAuth};
use mcpwire::client::{Client, ClientOptions};
use mcpwire::mcp::ProtocolVersion;
use mcpwire::session::EraPolicy;
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
    mcp-tools -url URL -login -token-store PATH -tenant TENANT -tools NAME[,NAME...]
              [-client-id ID [-client-secret-env VAR | -client-secret-file PATH]]
              [-client-metadata-url URL] [-scope SCOPES] [-v]
              [-redirect-port PORT] [-login-timeout SECONDS] [the -url flags above]
    mcp-tools -url URL -auth JSON -tenant TENANT -tools NAME[,NAME...] [the -url flags above]
    mcp-tools -token-store PATH -refresh
    mcp-tools -token-store PATH -logout

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
    -login            with -url and -token-store: log in with OAuth (the authorization code
                      grant with PKCE) when the server asks for it (a 401): print the
                      authorization URL on stderr, wait for the browser to come back to
                      http://127.0.0.1:PORT/callback, keep the tokens in the token store,
                      then discover with them; the bindings get an `auth` block that points
                      at the store
    -token-store PATH the token store file (written with mode 0600, refused when others may
                      read it). Without -login: discover with its tokens (refreshed if due)
    -auth JSON        with -url: a binding `auth` block for a grant with nobody present
                      (client_credentials, jwt_bearer, enterprise_managed; \"dpop\": true for
                      DPoP-bound tokens), checked as a config's is: discover with it (its
                      secrets and tokens from the environment) and write it into the bindings.
                      Not with -token-env or -token-store.
    -client-id ID     with -login: a client registered with the authorization server
                      beforehand, used instead of dynamic registration (for servers that
                      offer none); its secret, if it has one, from -client-secret-env VAR or
                      -client-secret-file PATH (kept in the store, mode 0600, for refreshes)
    -client-metadata-url URL
                      with -login: this client's Client ID Metadata Document (an https URL
                      with a path), used as client_id where the server takes one
    -scope SCOPES     with -login: the scopes to ask for (space-separated) when the server's
                      challenge names none
    -v                the wire conversation on stderr, the login's OAuth requests included,
                      every credential redacted
    -redirect-port N  the loopback port to listen on for the redirect (default: any free one)
    -login-timeout S  how long to wait for the browser to come back (default 300)
    -refresh          use the store's refresh token now and write the new tokens back
    -logout           delete the token store (local only: the server is not told, and its
                      tokens stay valid there until they expire)
    -h, -help         this text

LOGGING IN, REFRESHING, LOGGING OUT:
    mcp-tools -url https://mcp.example.com/mcp -login -token-store ~/.mcp/example.json \\
              -tenant local -tools search
        prints the authorization URL: open it in a browser on this machine and approve;
        the browser comes back to the loopback listener, the tokens go in the store, and
        the bindings printed name it (\"auth\": {\"grant\": \"authorization_code\",
        \"token_store\": \"/abs/path\"}). A host (mcpwire call) then uses and refreshes the
        tokens with nobody present, writing rotated ones back; when they are spent, calls
        fail (unauthorized) saying to log in again.
    mcp-tools -token-store ~/.mcp/example.json -refresh     refresh now
    mcp-tools -token-store ~/.mcp/example.json -logout      forget the tokens

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
    login: bool,
    /// `-client-id`, `-client-secret-env`, `-client-secret-file`, `-client-metadata-url`,
    /// `-scope`: the login's client and scopes.
    client_id: Option<String>,
    client_secret_env: Option<String>,
    client_secret_file: Option<String>,
    client_metadata_url: Option<String>,
    scope: Option<String>,
    /// `-v`: the wire log on stderr.
    verbose: bool,
    /// `-auth`: a binding `auth` block.
    auth: Option<String>,
    refresh: bool,
    logout: bool,
    token_store: Option<String>,
    redirect_port: u16,
    login_timeout: Duration,
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
        login: false,
        client_id: None,
        client_secret_env: None,
        client_secret_file: None,
        client_metadata_url: None,
        scope: None,
        verbose: false,
        auth: None,
        refresh: false,
        logout: false,
        token_store: None,
        redirect_port: 0,
        login_timeout: Duration::from_secs(300),
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
        if matches!(flag, "login" | "refresh" | "logout" | "v") {
            if inline.is_some() {
                return Err(Failure::Usage(format!("-{flag} takes no value")));
            }
            match flag {
                "login" => options.login = true,
                "refresh" => options.refresh = true,
                "v" => options.verbose = true,
                _ => options.logout = true,
            }
            continue;
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
            "token-store" => options.token_store = Some(value),
            "auth" => options.auth = Some(value),
            "client-id" => options.client_id = Some(value),
            "client-secret-env" => options.client_secret_env = Some(value),
            "client-secret-file" => options.client_secret_file = Some(value),
            "client-metadata-url" => options.client_metadata_url = Some(value),
            "scope" => options.scope = Some(value),
            "redirect-port" => {
                options.redirect_port = value.parse().map_err(|_| {
                    Failure::Usage(format!(
                        "-redirect-port must be a port (0 to 65535), not {value:?}"
                    ))
                })?;
            }
            "login-timeout" => {
                let seconds: u64 = value
                    .parse()
                    .ok()
                    .filter(|s| (1..=3600).contains(s))
                    .ok_or_else(|| {
                        Failure::Usage(format!(
                            "-login-timeout must be 1 to 3600 seconds, not {value:?}"
                        ))
                    })?;
                options.login_timeout = Duration::from_secs(seconds);
            }
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
    if options.refresh || options.logout {
        if options.refresh && options.logout {
            return Err(Failure::Usage(
                "give -refresh or -logout, not both".to_owned(),
            ));
        }
        let what = if options.refresh { "refresh" } else { "logout" };
        if options.token_store.is_none() {
            return Err(Failure::Usage(format!("-{what} needs -token-store PATH")));
        }
        if options.login || options.url.is_some() || options.command.is_some() || tools_given {
            return Err(Failure::Usage(format!(
                "-{what} takes only -token-store (the store names its server)"
            )));
        }
        return Ok(Some(options));
    }
    let login_flags = [
        ("client-id", options.client_id.is_some()),
        ("client-secret-env", options.client_secret_env.is_some()),
        ("client-secret-file", options.client_secret_file.is_some()),
        ("client-metadata-url", options.client_metadata_url.is_some()),
        ("scope", options.scope.is_some()),
    ];
    if let Some((flag, _)) = login_flags
        .iter()
        .find(|(_, given)| *given && !options.login)
    {
        return Err(Failure::Usage(format!(
            "-{flag} applies to -login (the client and scopes of the login)"
        )));
    }
    if options.client_secret_env.is_some() && options.client_secret_file.is_some() {
        return Err(Failure::Usage(
            "give -client-secret-env or -client-secret-file, not both".to_owned(),
        ));
    }
    if (options.client_secret_env.is_some() || options.client_secret_file.is_some())
        && options.client_id.is_none()
    {
        return Err(Failure::Usage(
            "a client secret needs -client-id (the client it belongs to)".to_owned(),
        ));
    }
    if options.login && options.token_store.is_none() {
        return Err(Failure::Usage(
            "-login needs -token-store PATH (where the tokens are kept)".to_owned(),
        ));
    }
    if options.token_store.is_some() && options.url.is_none() {
        return Err(Failure::Usage(
            "-token-store applies to -url servers".to_owned(),
        ));
    }
    if options.auth.is_some() && (options.url.is_none() || options.token_store.is_some()) {
        return Err(Failure::Usage(
            "-auth applies to -url servers, and not with -token-store (give the store's \
             grant or -auth's, not both)"
                .to_owned(),
        ));
    }
    if options.token_store.is_some() && options.token_env.is_some() {
        return Err(Failure::Usage(
            "give -token-env (a static API key) or -token-store (OAuth), not both: both would \
             set the Authorization header"
                .to_owned(),
        ));
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
    if options.refresh || options.logout {
        let path = store_path(&options)?.unwrap_or_default();
        return if options.refresh {
            refresh(&path, options.timeout)
        } else {
            logout(&path)
        };
    }
    let token = match &options.token_env {
        Some(variable) => Some(Secret::new(std::env::var(variable).map_err(|_| {
            Failure::Failed(format!("the environment variable {variable} is not set"))
        })?)),
        None => None,
    };
    let mut headers = ExtraHeaders::default();
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
            let proxy = plain_proxy(&options);
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
            if let Some(path) = store_path(&options)? {
                server = server.with_auth(AuthSettings::authorization_code(path));
            }
            if let Some(auth) = &options.auth {
                server = server.with_auth(auth_flag(url, auth)?);
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
        d.headers = headers;
        d.timeout = options.timeout;
        d.on_warning = Some(Arc::new(|line: &str| {
            eprintln!("mcp-tools: warning: {line}")
        }));
        d
    };
    let mut discovery = discovery;
    if options.verbose {
        // The client redacts every credential it knows of before a line reaches the log.
        discovery.wire_log = Some(Arc::new(|line: &str| eprintln!("mcp-tools: {line}")));
    }
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
    let mut discovery = discovery;
    let bindings = runtime.block_on(async {
        let pool = HttpPool::with_proxy(&TlsOptions::default(), proxy)
            .map_err(|e| Failure::Failed(e.to_string()))?;
        if let Some(era) = options.era {
            discovery.era = match era {
                Some(version) => EraPolicy::Modern(version),
                None => EraPolicy::Legacy,
            };
        }
        let login = match (&options.url, store_path(&options)?) {
            (Some(url), Some(path)) => Some(start_login(&options, url, &path).await?),
            _ => None,
        };
        if let Some(login) = &login {
            discovery.auth = Some(Auth::oauth(login.oauth.clone()));
            // The person's approval happens inside discovery.
            if options.login {
                discovery.timeout += options.login_timeout;
            }
        }
        let found = discover(&pool, &discovery).await;
        let Some(login) = login else {
            return found.map_err(|e| Failure::Failed(discovery_failure(&e, &options)));
        };
        let written = login.store.save_from(&login.oauth);
        let bindings = found.map_err(|e| Failure::Failed(discovery_failure(&e, &options)))?;
        written.map_err(|e| Failure::Failed(e.to_string()))?;
        if login.store.token_count() == 0 {
            // Nothing asked for a token: bindings that point at an empty store would fail.
            eprintln!(
                "mcp-tools: the server did not ask for authorization; no token store written, \
                 and the bindings have no `auth`"
            );
            return Ok(bindings
                .into_iter()
                .map(|mut binding| {
                    if let Server::Http { auth, .. } = &mut binding.server {
                        *auth = None;
                    }
                    binding
                })
                .collect());
        }
        if options.login {
            eprintln!(
                "mcp-tools: logged in; the tokens are in {} (mode 0600)",
                login.store.path().display()
            );
        }
        Ok(bindings)
    })?;
    // Serializing the bindings themselves keeps the documented key order.
    let text = serde_json::to_string_pretty(&bindings)
        .map_err(|e| Failure::Failed(format!("cannot print the bindings: {e}")))?;
    println!("{text}");
    Ok(())
}

/// `-auth`'s block, checked by the config's own rules (a binding holding it is loaded):
/// the same members, refusals and messages as in a config file.
fn auth_flag(url: &str, text: &str) -> Result<AuthSettings, Failure> {
    let auth: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Failure::Usage(format!("-auth is not JSON: {e}")))?;
    if matches!(
        auth.get("grant").and_then(|g| g.as_str()),
        Some("authorization_code")
    ) {
        return Err(Failure::Usage(
            "-auth: the authorization_code grant is -login -token-store PATH".to_owned(),
        ));
    }
    let probe = serde_json::json!([{
        "name": "-auth", "description": "", "input_schema": {"type": "object"},
        "url": url, "mcp_tool": "-auth", "tenants": ["-auth"], "auth": auth,
    }]);
    let mut bindings = mcpwire::binding::config::load_config(&probe.to_string()).map_err(|e| {
        let field = e.field.as_deref().unwrap_or("auth");
        Failure::Usage(format!("-auth: {field}: {}", e.message))
    })?;
    match bindings.pop().map(|b| b.server) {
        Some(Server::Http {
            auth: Some(auth), ..
        }) => Ok(auth),
        _ => Err(Failure::Usage("-auth: not an auth block".to_owned())),
    }
}

/// The `proxy` of the bindings, from `-proxy`.
fn plain_proxy(options: &Options) -> Option<ProxySetting> {
    match options.proxy.as_deref() {
        None => None,
        Some("none") => Some(ProxySetting::Direct),
        Some(proxy) => Some(ProxySetting::Url(proxy.to_owned())),
    }
}

/// A failed discovery's line; a refusal without a token store says how to log in.
fn discovery_failure(error: &mcpwire::Error, options: &Options) -> String {
    let mut line = format!("{} ({})", error, error.kind());
    if error.kind() == mcpwire::ErrorKind::Unauthorized && options.token_store.is_none() {
        line.push_str(
            "; if the server takes OAuth, log in with -login -token-store PATH (see -help)",
        );
    }
    line
}

/// `-token-store`, made absolute (the bindings name it wherever the host runs).
fn store_path(options: &Options) -> Result<Option<PathBuf>, Failure> {
    options
        .token_store
        .as_deref()
        .map(|path| {
            if path.is_empty() {
                return Err(Failure::Usage("-token-store is empty".to_owned()));
            }
            std::path::absolute(path)
                .map_err(|e| Failure::Usage(format!("-token-store {path:?}: {e}")))
        })
        .transpose()
}

/// The OAuth of a discovery with a token store, and the store it writes to.
struct Login {
    store: Arc<TokenStore>,
    oauth: Arc<OAuth>,
}

/// With `-login`: a new store and the loopback listener for the person's approval. Without:
/// the existing store, used with nobody present.
async fn start_login(options: &Options, url: &str, path: &Path) -> Result<Login, Failure> {
    if !options.login {
        let store = Arc::new(
            TokenStore::load(path)
                .map_err(|e| Failure::Failed(format!("{e} (log in first with -login)")))?,
        );
        if store.server() != url {
            return Err(Failure::Failed(format!(
                "the token store {} holds tokens for another server than -url",
                path.display()
            )));
        }
        let oauth = store
            .oauth(Arc::new(Unattended::new(path)))
            .map_err(|e| Failure::Failed(e.to_string()))?;
        return Ok(Login {
            store,
            oauth: Arc::new(oauth),
        });
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.redirect_port))
        .await
        .map_err(|e| {
            Failure::Failed(format!(
                "cannot listen on 127.0.0.1:{} for the redirect: {e}",
                options.redirect_port
            ))
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| Failure::Failed(e.to_string()))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let store = Arc::new(TokenStore::create(path, url, &redirect));
    let mut config = store
        .config()
        .map_err(|e| Failure::Usage(format!("-url: {e}")))?;
    config.limits.authorize_timeout_secs = options.login_timeout.as_secs();
    login_client(options, &mut config)?;
    let authorizer = Arc::new(Loopback {
        listener: Arc::new(listener),
    });
    let oauth = store
        .oauth_with(config, authorizer)
        .map_err(|e| Failure::Failed(e.to_string()))?;
    Ok(Login {
        store,
        oauth: Arc::new(oauth),
    })
}

/// The login's client and scopes from the flags: a pre-registered client (its secret read
/// now from the variable or file), a Client ID Metadata Document URL, the scopes.
fn login_client(options: &Options, config: &mut mcpwire::auth::Config) -> Result<(), Failure> {
    if let Some(id) = &options.client_id {
        if id.is_empty() || id.chars().any(char::is_control) {
            return Err(Failure::Usage(
                "-client-id must be non-empty, without control characters".to_owned(),
            ));
        }
        let mut client = mcpwire::auth::PreRegistered::new(id.clone());
        let secret = match (&options.client_secret_env, &options.client_secret_file) {
            (Some(variable), _) => Some(std::env::var(variable).map_err(|_| {
                Failure::Failed(format!("the environment variable {variable} is not set"))
            })?),
            (None, Some(path)) => Some(std::fs::read_to_string(path).map_err(|e| {
                Failure::Failed(format!("-client-secret-file {path}: {}", e.kind()))
            })?),
            (None, None) => None,
        };
        if let Some(secret) = secret {
            let secret = secret.trim();
            if secret.is_empty() {
                return Err(Failure::Failed("the client secret is empty".to_owned()));
            }
            client.client_secret = Some(Secret::new(secret));
        }
        config.pre_registered = Some(client);
    }
    if let Some(url) = &options.client_metadata_url {
        let parsed = mcpwire::auth::Url::parse(url)
            .map_err(|e| Failure::Usage(format!("-client-metadata-url: {e}")))?;
        if !url.starts_with("https://") || matches!(parsed.path(), "" | "/") {
            return Err(Failure::Usage(
                "-client-metadata-url must be an https URL with a path".to_owned(),
            ));
        }
        config.metadata_document = Some(parsed);
    }
    if let Some(scope) = &options.scope {
        config.scope = Some(mcpwire::auth::Scopes::parse(scope).map_err(|_| {
            Failure::Usage(
                "-scope must be scope tokens separated by spaces (printable ASCII, no `\"` or \
                 `\\`)"
                    .to_owned(),
            )
        })?);
    }
    Ok(())
}

/// The person's part of a login: the authorization URL on stderr, then the browser's
/// request to the loopback redirect URI.
struct Loopback {
    listener: Arc<tokio::net::TcpListener>,
}

/// The most bytes of a request to the loopback listener read (its head is all it needs).
const MAX_CALLBACK_REQUEST_BYTES: usize = 8 * 1024;
/// How long one connection to the loopback listener may take to send its request.
const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);

impl Authorizer for Loopback {
    fn authorize(&self, url: &Url) -> AuthorizeFuture {
        // The URL holds no secret: the state and the PKCE challenge.
        eprintln!(
            "mcp-tools: to log in, open this URL in a browser on this machine and approve:\n{url}"
        );
        let listener = self.listener.clone();
        let state = query_param(url.query().unwrap_or_default(), "state").map(str::to_owned);
        // The flow's own deadline (-login-timeout) bounds the wait.
        Box::pin(async move {
            loop {
                let (stream, _) = listener.accept().await?;
                // Another request (a favicon, a callback for another state), a broken or slow
                // one: wait for the next, so a stray request cannot end the login.
                if let Ok(Ok(Some(target))) =
                    tokio::time::timeout(CALLBACK_READ_TIMEOUT, callback(stream, state.as_deref()))
                        .await
                {
                    return Ok(target);
                }
            }
        })
    }
}

/// The raw value of the query parameter `name` (the `state` mcpwire makes is base64url, which
/// needs no decoding).
fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// Reads one request (at most [`MAX_CALLBACK_REQUEST_BYTES`] of its head) and answers it:
/// `GET /callback?...` carrying `state` with a page saying to go back to the terminal (its
/// target returned), a callback with another state with 400, anything else with 404.
async fn callback(
    mut stream: tokio::net::TcpStream,
    state: Option<&str>,
) -> std::io::Result<Option<String>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_CALLBACK_REQUEST_BYTES {
            stream
                .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await?;
            return Ok(None);
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let is_callback = target == "/callback" || target.starts_with("/callback?");
    if method != "GET" || !is_callback {
        stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await?;
        return Ok(None);
    }
    let query = target.split_once('?').map_or("", |(_, q)| q);
    if state.is_some() && query_param(query, "state") != state {
        stream
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )
            .await?;
        return Ok(None);
    }
    let page = "<!doctype html><meta charset=\"utf-8\"><title>mcp-tools</title>\
                <p>mcp-tools has the authorization server's answer. You can close this \
                window and go back to the terminal.</p>";
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    stream.write_all(answer.as_bytes()).await?;
    let _ = stream.shutdown().await;
    Ok(Some(target.to_owned()))
}

/// `-refresh`: the store's refresh token used now (a session opened with the new token
/// checks it), the rotated tokens written back.
fn refresh(path: &Path, timeout: Duration) -> Result<(), Failure> {
    let store = Arc::new(TokenStore::load(path).map_err(|e| Failure::Failed(e.to_string()))?);
    if store.expire_for_refresh(now()) == 0 {
        return Err(Failure::Failed(format!(
            "the token store {} holds no refresh token: log in again with -login",
            path.display()
        )));
    }
    let server = store.server();
    let oauth = Arc::new(
        store
            .oauth(Arc::new(Unattended::new(path)))
            .map_err(|e| Failure::Failed(e.to_string()))?,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Failed(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let proxy = ProxyConfig::from_env().map_err(|e| Failure::Usage(e.to_string()))?;
        let pool = HttpPool::with_proxy(&TlsOptions::default(), proxy)
            .map_err(|e| Failure::Failed(e.to_string()))?;
        let config = HttpConfig::new(&server).map_err(|e| Failure::Failed(e.to_string()))?;
        let mut options = ClientOptions::default();
        options.request_timeout = timeout;
        options.auth = Some(Auth::oauth(oauth.clone()));
        let client = tokio::time::timeout(timeout, Client::connect_http(&pool, config, options))
            .await
            .map_err(|_| Failure::Failed(format!("no answer within {} s", timeout.as_secs())))?
            .map_err(|e| Failure::Failed(format!("{e} ({})", e.kind())))?;
        client.close().await;
        Ok::<(), Failure>(())
    })?;
    store
        .save_from(&oauth)
        .map_err(|e| Failure::Failed(e.to_string()))?;
    let left = store
        .expires_at()
        .map(|at| format!(" (it expires in {} s)", at.0.saturating_sub(now().0)))
        .unwrap_or_default();
    eprintln!(
        "mcp-tools: refreshed; {} holds the new token{left}",
        path.display()
    );
    Ok(())
}

/// `-logout`: the store deleted.
fn logout(path: &Path) -> Result<(), Failure> {
    let removed = TokenStore::remove(path).map_err(|e| Failure::Failed(e.to_string()))?;
    if removed {
        eprintln!(
            "mcp-tools: logged out: {} deleted (local only: the server was not told, and its \
             tokens stay valid there until they expire)",
            path.display()
        );
    } else {
        eprintln!("mcp-tools: no token store at {}", path.display());
    }
    Ok(())
}

#[allow(clippy::disallowed_methods, reason = "the CLI owns the wall clock")]
fn now() -> UnixTime {
    UnixTime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}
