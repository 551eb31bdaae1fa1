//! Discovery: connect to a server, read its whole tool list, and turn the named tools into
//! bindings (what `mcp-tools` prints).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::call::{EnvTokens, OAuthMaker, Pools, TokenSource};
use super::config::{AuthSettings, Binding, Server};
use crate::client::auth::Auth;
use crate::client::{Client, ClientOptions, ExcludedTool as Excluded, WarningSink};
use crate::error::{Error, ErrorKind};
use crate::mcp::Tool;
use crate::secret::Secret;
use crate::session::EraPolicy;
use crate::transport::WireLog;
use crate::transport::http::{ExtraHeaders, HttpConfig, HttpPool};
use crate::transport::stdio::StdioConfig;

/// The default `timeout_seconds` of a binding.
pub(crate) const DEFAULT_TIMEOUT_SECONDS: u64 = 300;
/// The default `max_output_bytes` of a binding.
pub(crate) const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// The most tools one discovery may name.
pub const MAX_NAMED_TOOLS: usize = 128;

/// What to discover.
#[derive(Clone)]
#[non_exhaustive]
pub struct Discovery {
    /// The server, as the bindings will name it.
    pub server: Server,
    /// The token used to connect (read by the caller from `token_env`).
    pub token: Option<Secret>,
    /// OAuth used to connect instead of a token (an operator's login).
    pub auth: Option<Auth>,
    /// The extra headers sent while discovering (their values read by the caller from the
    /// variables the server's `header_env` names).
    pub headers: ExtraHeaders,
    /// The tenant allowed to use the tools.
    pub tenant: String,
    /// The remote tool names to include, in output order.
    pub tools: Vec<String>,
    /// How long the whole discovery may take.
    pub timeout: Duration,
    /// The era to speak: [`EraPolicy::Auto`] probes the server (at 2026-07-28 first).
    pub era: EraPolicy,
    /// Receives a line for each listed tool the client leaves out, with the tool and the
    /// reason (see [`ClientOptions::on_warning`]).
    pub on_warning: Option<WarningSink>,
    /// Where the wire conversation goes, credentials redacted (the client's and an OAuth
    /// flow's requests alike), if anywhere.
    pub wire_log: Option<WireLog>,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery")
            .field("server", &self.server)
            .field("token", &self.token)
            .field("auth", &self.auth)
            .field("headers", &self.headers)
            .field("tenant", &self.tenant)
            .field("tools", &self.tools)
            .field("timeout", &self.timeout)
            .field("era", &self.era)
            .field("on_warning", &self.on_warning.is_some())
            .field("wire_log", &self.wire_log.is_some())
            .finish()
    }
}

impl Discovery {
    /// Discovery of `tools` on `server` for `tenant`: no token, no extra headers, and the
    /// 30 seconds SPEC.md gives discovery.
    pub fn new(server: Server, tenant: impl Into<String>, tools: Vec<String>) -> Self {
        Discovery {
            server,
            token: None,
            auth: None,
            headers: ExtraHeaders::default(),
            tenant: tenant.into(),
            tools,
            timeout: Duration::from_secs(30),
            era: EraPolicy::Auto,
            on_warning: None,
            wire_log: None,
        }
    }
}

/// Connects, lists every tool (all pages), and returns one binding per named tool in the order
/// named. A session that expires while pages are read is opened again, once.
///
/// Binds all or nothing: when any named tool cannot be bound, one error names each such tool
/// and why: named twice, not on the server, listed twice by the server, left out by the client
/// (its `x-mcp-header` annotations break the 2026-07-28 rules: the annotation's place and the
/// rule), or given the same binding name as another named tool. Fails too when the whole
/// discovery takes longer than its timeout.
///
/// An HTTP server is reached through `pool`; when the server names `tls` or `proxy`
/// settings that are not the pool's, through a pool made for them (`pool`'s settings filling
/// in what the server leaves out), whose TLS files are read first.
pub async fn discover(pool: &HttpPool, discovery: &Discovery) -> Result<Vec<Binding>, Error> {
    if discovery.tools.is_empty() || discovery.tools.len() > MAX_NAMED_TOOLS {
        return Err(Error::config(format!(
            "name between 1 and {MAX_NAMED_TOOLS} tools (got {})",
            discovery.tools.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    let twice: Vec<String> = discovery
        .tools
        .iter()
        .filter(|name| !seen.insert(name.as_str()))
        .map(|name| format!("{name:?} is named twice"))
        .collect();
    if !twice.is_empty() {
        return Err(Error::config(format!(
            "discovery binds no tool: {}",
            twice.join("; ")
        )));
    }
    let pool = match &discovery.server {
        Server::Http { tls, proxy, .. } => Pools::new(pool.clone()).get(
            tls.as_ref(),
            proxy.as_ref(),
            pool.proxy(),
            |field, message| Error::config(format!("{field}: {message}")),
        )?,
        Server::Stdio { .. } => pool.clone(),
    };
    let pool = &pool;
    let listing = async {
        match list_all(pool, discovery).await {
            Err(error) if error.kind() == ErrorKind::SessionExpired => {
                list_all(pool, discovery).await
            }
            other => other,
        }
    };
    let (tools, excluded) = tokio::time::timeout(discovery.timeout, listing)
        .await
        .map_err(|_| {
            Error::new(
                ErrorKind::Timeout,
                format!(
                    "discovery took longer than {} s",
                    discovery.timeout.as_secs_f64()
                ),
            )
        })??;
    bind_named(&tools, &excluded, discovery).map_err(Error::config)
}

/// One binding per named tool, or the message naming every named tool that cannot be bound.
fn bind_named(
    tools: &[Tool],
    excluded: &[Excluded],
    discovery: &Discovery,
) -> Result<Vec<Binding>, String> {
    let mut problems = Vec::new();
    let mut bindings = Vec::with_capacity(discovery.tools.len());
    let mut names: HashMap<String, &str> = HashMap::new();
    for name in &discovery.tools {
        let listed: Vec<&Tool> = tools.iter().filter(|t| &t.name == name).collect();
        let left_out: Vec<&Excluded> = excluded.iter().filter(|e| &e.name == name).collect();
        match (listed.as_slice(), left_out.as_slice()) {
            ([tool], []) => {
                let binding = binding_for(tool, discovery);
                match names.get(&binding.name) {
                    Some(other) => problems.push(format!(
                        "{name:?} would be bound as {:?}, as {other:?} is",
                        binding.name
                    )),
                    None => {
                        names.insert(binding.name.clone(), name);
                        bindings.push(binding);
                    }
                }
            }
            ([], []) => problems.push(format!("{name:?} is not on the server")),
            ([], [reason, ..]) => problems.push(format!(
                "{name:?} is on the server, but a 2026-07-28 client must leave it out: {}",
                reason.reason
            )),
            _ => problems.push(format!(
                "{name:?} is listed {} times by the server",
                listed.len() + left_out.len()
            )),
        }
    }
    if problems.is_empty() {
        return Ok(bindings);
    }
    let mut usable: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    usable.sort_unstable();
    usable.dedup();
    let usable = match usable.is_empty() {
        true => "none".to_owned(),
        false => usable.join(", "),
    };
    Err(format!(
        "discovery binds no tool: {} of the {} named cannot be bound: {} (the server's usable \
         tools: {usable})",
        problems.len(),
        discovery.tools.len(),
        problems.join("; ")
    ))
}

async fn list_all(
    pool: &HttpPool,
    discovery: &Discovery,
) -> Result<(Vec<Tool>, Vec<Excluded>), Error> {
    let mut options = ClientOptions {
        request_timeout: discovery.timeout,
        ..ClientOptions::default()
    };
    options.session.era = discovery.era.clone();
    // The discovery's deadline bounds the era probe and initialize with the authorization
    // they wait on (a person's login included). Over stdio the probe keeps its short limit:
    // there a silent probe means a 2025-era server.
    if let Server::Http { .. } = discovery.server {
        options.session.probe_timeout = discovery.timeout;
        options.session.initialize_timeout = discovery.timeout;
    }
    options.auth = match &discovery.auth {
        Some(auth) => Some(auth.clone()),
        None => settings_auth(&discovery.server, discovery.timeout)
            .map_err(|(kind, message)| Error::new(kind, message))?,
    };
    options.on_warning = discovery.on_warning.clone();
    let client = connect(
        pool,
        &discovery.server,
        discovery.token.clone(),
        discovery.headers.clone(),
        options,
        discovery.wire_log.clone(),
    )
    .await?;
    // At 2026-07-28 the server decides per call whether it makes a task (SEP-2663): a server
    // that declares the tasks extension may make one of any call, so its tools are bound as
    // allowing tasks (the binding then declares the extension).
    let tasks = client.protocol_version().is_modern()
        && client.server().is_some_and(|server| {
            server
                .capabilities
                .extra
                .get("extensions")
                .and_then(|extensions| extensions.get(crate::mcp::tasks::TASKS_EXTENSION))
                .is_some()
        });
    let tools = client
        .list_tools_and_exclusions()
        .await
        .map(|(mut tools, excluded)| {
            for tool in tools.iter_mut().filter(|_| tasks) {
                let execution = tool.execution.get_or_insert_with(Default::default);
                execution
                    .task_support
                    .get_or_insert(crate::mcp::TaskSupport::Optional);
            }
            (tools, excluded)
        });
    client.close().await;
    tools
}

/// The OAuth a server's `auth` block makes, for a discovery given no [`Auth`] of its own:
/// the grants with no person (client credentials, JWT-bearer, enterprise-managed), their
/// secrets and tokens from the environment. An `authorization_code` block's store is the
/// login's business (`mcp-tools -login`), not discovery's.
fn settings_auth(server: &Server, timeout: Duration) -> Result<Option<Auth>, (ErrorKind, String)> {
    let Server::Http {
        url,
        auth: Some(settings),
        ..
    } = server
    else {
        return Ok(None);
    };
    if matches!(settings, AuthSettings::AuthorizationCode { .. }) {
        return Ok(None);
    }
    let tokens: Arc<dyn TokenSource> = Arc::new(EnvTokens);
    let maker = OAuthMaker {
        tokens: &tokens,
        wire_log: None,
        timeout_secs: Some(timeout.as_secs().max(1)),
    };
    let oauth = maker.make(url, settings)?;
    Ok(Some(Auth::oauth(Arc::new(oauth))))
}

/// Opens a session with a binding's server (the token and headers go to an HTTP one).
pub(crate) async fn connect(
    pool: &HttpPool,
    server: &Server,
    token: Option<Secret>,
    headers: ExtraHeaders,
    options: ClientOptions,
    wire_log: Option<WireLog>,
) -> Result<Client, Error> {
    match server {
        Server::Http { url, .. } => {
            let mut config = HttpConfig::new(url)?;
            config.bearer_token = token;
            config.headers = headers;
            config.wire_log = wire_log;
            Client::connect_http(pool, config, options).await
        }
        Server::Stdio { command, args, env } => {
            let mut config = StdioConfig::new(command, args.clone());
            config.wire_log = wire_log.clone();
            config.stderr_log = wire_log;
            config.env = env
                .iter()
                .filter_map(|name| std::env::var(name).ok().map(|value| (name.clone(), value)))
                .collect();
            Client::connect_stdio(config, options).await
        }
    }
}

fn binding_for(tool: &Tool, discovery: &Discovery) -> Binding {
    Binding {
        name: binding_name(&tool.name),
        description: tool
            .description
            .clone()
            .or_else(|| tool.title.clone())
            .unwrap_or_default(),
        input_schema: tool.input_schema.clone(),
        output_schema: tool.output_schema.clone(),
        server: discovery.server.clone(),
        mcp_tool: tool.name.clone(),
        tenants: vec![discovery.tenant.clone()],
        timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        task_support: tool
            .execution
            .as_ref()
            .and_then(|execution| execution.task_support.clone())
            .filter(|support| {
                matches!(
                    support,
                    crate::mcp::TaskSupport::Optional | crate::mcp::TaskSupport::Required
                )
            }),
    }
}

/// A binding name from a remote tool name: characters outside `[A-Za-z0-9_-]` become `_`
/// and the result is cut to 64 characters (what a binding name allows).
pub(crate) fn binding_name(tool: &str) -> String {
    let name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "tool".to_owned()
    } else {
        name
    }
}
