//! The binding JSON of SPEC.md ("Tool bindings"): loading a host config, validating every
//! field of every binding, and printing a binding back in the shape `mcp-tools` prints.
//!
//! ## Where bindings are
//!
//! A config is either the bare JSON array `mcp-tools` prints, or a host config object whose
//! `tools` array holds the bindings; the object's other members belong to the host and are
//! ignored here ([`load_config`]).
//!
//! ## Fields
//!
//! | field | required | rule |
//! | --- | --- | --- |
//! | `name` | yes | 1 to 64 characters, each `A-Z a-z 0-9 _ -` (the tool-name rule of the model APIs hosts use); unique in the config (compared exactly) |
//! | `description` | yes | a string, possibly empty |
//! | `input_schema` | yes | a JSON object with `"type": "object"` that the binding layer's schema compiler accepts (bounded, no remote `$ref`) |
//! | `output_schema` | no | a JSON object that the schema compiler accepts |
//! | `url` | one of `url` / `command` | an absolute `http` or `https` URL with a host, no user info (`user:password@`: credentials go in `token_env`), no fragment, no spaces or control characters |
//! | `token_env` | no, only with `url` | an environment variable name: `[A-Za-z_][A-Za-z0-9_]*` |
//! | `auth` | no, only with `url`, not with `token_env` (both would set `Authorization`) | an object: OAuth instead of a static token, see [OAuth](#oauth) |
//! | `tls` | no, only with an `https` `url` (default: the webpki roots, no client certificate) | an object, see [TLS](#tls) |
//! | `proxy` | no, only with `url` (default: the environment's proxies) | `"none"` (connect directly) or an `http://host[:port]` URL without user info, see [Proxies](#proxies) |
//! | `header_env` | no, only with `url` (default `{}`) | an object of at most [`MAX_HEADER_ENV`] members, each a header name (an HTTP token, no two equal ignoring case, none of the headers the transport sets itself: `Accept`, `Content-Type`, `Content-Length`, `Host`, `Authorization` (the token goes in `token_env`), `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`, any `Mcp-*`, `Connection`, `Transfer-Encoding` and the other hop-by-hop headers) mapped to the name of the environment variable holding its value; sent on every request of every call, values treated as credentials |
//! | `command` | one of `url` / `command` | a non-empty string without NUL: the program of a stdio server |
//! | `args` | no, only with `command` (default `[]`) | an array of strings without NUL |
//! | `env` | no, only with `command` (default `[]`) | an array of distinct environment variable names, passed to the server |
//! | `mcp_tool` | yes | a non-empty string: the tool's name on the server |
//! | `tenants` | yes | a non-empty array of distinct non-empty strings |
//! | `timeout_seconds` | no (default 300) | an integer from 1 to `MAX_TIMEOUT_SECONDS` |
//! | `max_output_bytes` | no (default 1048576, 1 MiB) | an integer from 1 to `MAX_OUTPUT_BYTES_LIMIT` |
//! | `task_support` | no (default: absent, the tool forbids tasks) | `"optional"` or `"required"`: the tool's `execution.taskSupport`, which `mcp-tools` copies; a call then runs as a task at 2025-11-25 (see [`Caller::call`](super::call::Caller::call)) |
//!
//! Any other member is refused: `inspect_session` with its own message (SPEC.md: "A config that
//! sets `inspect_session` on an MCP binding is rejected"), anything else as an unknown field.
//! `null` is not "absent": a field that is present must have its type. Integers must be written
//! as integers (`300`, not `300.0` or `"300"`).
//!
//! ## TLS
//!
//! `tls` says what the server's certificate is checked against and which client certificate
//! to send; the files are named, never inlined, and are read when the bindings are prepared
//! ([`Caller::new`](super::call::Caller::new)), which fails naming the binding and the field
//! of a file that cannot be used. Every path is absolute and without NUL.
//!
//! | member | rule |
//! | --- | --- |
//! | `roots` | `"webpki"` (the default: the Mozilla roots bundled in the binary) or `"platform"` (the system's trust store); not with `ca_file` |
//! | `ca_file` | a PEM bundle: its certificates are the only roots (a private CA) |
//! | `extra_ca_file` | a PEM bundle trusted in addition to `roots`; not with `ca_file` (put every CA in it) |
//! | `client_cert_file` | a PEM certificate chain, leaf first, sent when the server asks (mutual TLS); only with `client_key_file` |
//! | `client_key_file` | the PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1; not encrypted); only with `client_cert_file` |
//!
//! `{}` means the defaults. Any other member is refused as ``tls.NAME``.
//!
//! ## OAuth
//!
//! `auth` gets the bearer token by OAuth (the MCP authorization spec) instead of from
//! `token_env`; the call pipeline keeps one OAuth per distinct server URL and `auth` object
//! for the [`Caller`](super::call::Caller)'s life, so tokens are cached (by issuer, client,
//! resource and scope) across calls and refreshed before they expire. A call refused with 401
//! or 403 before the tool ran is sent again with the new token; a 401 for a refreshed or new
//! token fails the call as `unauthorized` with `unknown_outcome: false`. Four grants:
//!
//! | member | rule |
//! | --- | --- |
//! | `grant` | required: `"client_credentials"` (a host with its own client, no person), `"authorization_code"` (an operator logged in once with `mcp-tools -login`), `"jwt_bearer"` (a workload's platform token, RFC 7523: workload identity federation) or `"enterprise_managed"` (a user's ID token traded at the enterprise IdP for an ID-JAG, RFC 8693, then the JWT-bearer grant) |
//! | `client_id` | all but `authorization_code`, required: a non-empty string without control characters |
//! | `client_secret_env` | the environment variable holding the client secret |
//! | `client_secret_file` | an absolute path to a file holding the client secret (surrounding whitespace is dropped) |
//! | `private_key_env` | the environment variable holding a PEM PKCS#8 P-256 key, for `private_key_jwt` (ES256) |
//! | `private_key_file` | an absolute path to that PEM key |
//! | `workload_token_file` | `jwt_bearer`: an absolute path to the workload token, read again at each use (platforms rotate it) |
//! | `workload_token_env` | `jwt_bearer`: the environment variable holding it, read at each use |
//! | `idp_token_endpoint` | `enterprise_managed`, required: the IdP's token endpoint (`https`, or `http` on a loopback address) |
//! | `idp_client_id` | `enterprise_managed`, required: this client's id at the IdP |
//! | `idp_client_secret_env`, `idp_client_secret_file` | `enterprise_managed`, optional: its secret there (`client_secret_basic`) |
//! | `id_token_file`, `id_token_env` | `enterprise_managed`, one required: the user's ID token, read at each use |
//! | `scope` | all but `authorization_code`, optional: the scopes to ask for (space-separated) when the server's challenge names none |
//! | `token_endpoint_auth_method` | all but `authorization_code`, optional: `client_secret_basic` or `client_secret_post` (with a secret), `private_key_jwt` (with a key), `none` (`jwt_bearer` and `enterprise_managed` without either); by default chosen from the server's metadata |
//! | `dpop` | all but `authorization_code`, optional: `true` for DPoP-bound tokens (RFC 9449): a key per server and block, in memory only, a proof on every token and MCP request; refused with `authorization_code`, since DPoP-bound tokens are not kept in a token store |
//! | `token_store` | `authorization_code` only, required: the absolute path of the token store `mcp-tools -login` wrote |
//!
//! A `client_credentials` block names exactly one of the four client secret sources;
//! `jwt_bearer` and `enterprise_managed` at most one (a public client names none), and one
//! workload token or ID token source. Secrets and keys are read when the first call is made,
//! never when the config is loaded; workload and ID tokens each time a grant needs one; none
//! appears in errors or logs. With `authorization_code` the store holds the client and its
//! tokens: the refresh token is used with nobody present and rotated tokens are written back
//! (a new file, mode 0600, renamed over the store); when no usable token or refresh token is
//! left, the call fails (`unauthorized`, `unknown_outcome: false`) saying to run
//! `mcp-tools -login` again. A member another grant takes is refused as ``auth.NAME`` (not
//! with that grant), and so is any other member.
//!
//! ## Proxies
//!
//! Without `proxy`, a binding's connections follow the environment when the bindings are
//! prepared: `HTTPS_PROXY`/`https_proxy` for an `https` URL, `HTTP_PROXY`/`http_proxy` for an
//! `http` one, except for hosts in `NO_PROXY`/`no_proxy` (see
//! [`ProxyConfig`]; loopback is not exempt unless
//! listed). `"proxy": "none"` connects directly whatever the environment says; a URL sends
//! every connection through that proxy. Connections through a proxy are CONNECT tunnels, so
//! the bearer token goes to the server inside the tunnel and never to the proxy. A proxy that
//! needs credentials is given in the environment (`http://user:password@host:port`): a
//! binding holds no secrets.
//!
//! ## Errors
//!
//! The first problem found stops loading, as a [`ConfigError`] naming the binding (by `name`, or
//! `#N` by its 0-based position in the array when it has no valid name) and the field. Checks run
//! in the order of the table above, after the name and the unknown members. Messages never quote
//! a `url`, `command` or `args` value (they may hold secrets), nor what a `header_env` header is
//! mapped to when it is not a variable name (it may be a value pasted in by mistake); they quote
//! names.
//!
//! ## Values from the environment
//!
//! A config holds no secrets: the bearer token and the extra headers' values are named by
//! environment variable (`token_env`, `header_env`) and read when a call is made
//! ([`Caller`](super::call::Caller), through its
//! [`TokenSource`](super::call::TokenSource)). A variable that is not set fails that call
//! before anything is sent (`missing_token`, `missing_header`); the values are redacted from
//! wire logs, errors and results wherever a server echoes them.
//!
//! ## Example
//!
//! ```
//! use mcpwire::binding::config::{Server, load_config};
//!
//! let bindings = load_config(r#"{"tools": [{
//!     "name": "docs_search", "description": "Search the knowledge base.",
//!     "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
//!     "url": "https://mcp.example.com/mcp", "mcp_tool": "search", "token_env": "MCP_API_KEY",
//!     "header_env": {"X-Tenant": "MCP_TENANT"}, "tenants": ["local"]
//! }], "model": "ignored by mcpwire"}"#)?;
//! assert_eq!(bindings[0].timeout_seconds, 300);
//! assert!(matches!(&bindings[0].server, Server::Http { token_env: Some(v), .. } if v == "MCP_API_KEY"));
//! assert!(matches!(&bindings[0].server, Server::Http { header_env, .. } if header_env["X-Tenant"] == "MCP_TENANT"));
//!
//! let error = load_config(r#"[{"name": "search", "description": "", "timeout_seconds": 0}]"#)
//!     .unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "binding `search`: field `input_schema`: missing (a JSON Schema object with \"type\": \"object\")",
//! );
//! # Ok::<(), mcpwire::binding::config::ConfigError>(())
//! ```
//!
//! [`ProxyConfig`]: crate::transport::http::ProxyConfig

mod auth;
mod proxy;
mod read;
mod tls;

pub use auth::{AuthSettings, ClientCredential, SecretRef};
pub use proxy::ProxySetting;
pub use tls::TlsSettings;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use read::{json_type, parse_binding};

/// `timeout_seconds` when a binding leaves it out.
pub(crate) const DEFAULT_TIMEOUT_SECONDS: u64 = 300;
/// The largest `timeout_seconds` accepted (one day).
pub(crate) const MAX_TIMEOUT_SECONDS: u64 = 86_400;
/// `max_output_bytes` when a binding leaves it out (1 MiB).
pub(crate) const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1_048_576;
/// The largest `max_output_bytes` accepted (1 GiB).
pub(crate) const MAX_OUTPUT_BYTES_LIMIT: u64 = 1_073_741_824;
/// The longest binding `name`, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 64;
/// The most headers a binding's `header_env` may name.
pub const MAX_HEADER_ENV: usize = 32;

/// One tool binding: what the model sees, and how to reach the tool on its MCP server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Binding {
    /// The tool's name as the model sees it (may differ from [`mcp_tool`](Self::mcp_tool)).
    pub name: String,
    /// The tool's description as the model sees it.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema that structured results must match, if any.
    pub output_schema: Option<Value>,
    /// How to reach the MCP server.
    pub server: Server,
    /// The tool's name on the server.
    pub mcp_tool: String,
    /// The tenants allowed to call the tool.
    pub tenants: Vec<String>,
    /// How long one call may take, in seconds.
    pub timeout_seconds: u64,
    /// The largest result accepted, in bytes.
    pub max_output_bytes: u64,
    /// The tool's `execution.taskSupport` when it allows or requires tasks (`optional`,
    /// `required`); `None` when it forbids them.
    pub task_support: Option<crate::mcp::TaskSupport>,
}

impl Binding {
    /// A binding named `name` of the tool `mcp_tool` on `server`, with SPEC.md's defaults
    /// (a 300-second timeout, 1 MiB of output), no tenants, an empty description and an input
    /// schema that takes any object; set the rest through the fields, then
    /// [`validate`](Self::validate) it.
    pub fn new(name: impl Into<String>, mcp_tool: impl Into<String>, server: Server) -> Self {
        Binding {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            server,
            mcp_tool: mcp_tool.into(),
            tenants: Vec::new(),
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            task_support: None,
        }
    }
}

/// How a binding reaches its MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a host holds a handful of bindings; boxing `auth` would only complicate matching"
)]
pub enum Server {
    /// A Streamable HTTP endpoint ([`Server::http`] makes one).
    #[non_exhaustive]
    Http {
        /// The endpoint URL.
        url: String,
        /// The name of the environment variable holding the bearer token, if any.
        token_env: Option<String>,
        /// The binding's `tls`: `None` for the host's defaults.
        tls: Option<TlsSettings>,
        /// The binding's `proxy`: `None` for the environment's proxies.
        proxy: Option<ProxySetting>,
        /// Extra headers sent on every request: each header's name (as written in the
        /// config) and the name of the environment variable holding its value.
        header_env: BTreeMap<String, String>,
        /// The binding's `auth`: OAuth instead of a static token.
        auth: Option<AuthSettings>,
    },
    /// An installed stdio server ([`Server::stdio`] makes one).
    #[non_exhaustive]
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The names of the environment variables passed to it.
        env: Vec<String>,
    },
}

impl Server {
    /// A Streamable HTTP endpoint: no token, the host's TLS and proxy defaults, no extra
    /// headers.
    pub fn http(url: impl Into<String>) -> Server {
        Server::Http {
            url: url.into(),
            token_env: None,
            tls: None,
            proxy: None,
            header_env: BTreeMap::new(),
            auth: None,
        }
    }

    /// A stdio server: `command` run with `args`, passed no environment variables.
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> Server {
        Server::Stdio {
            command: command.into(),
            args,
            env: Vec::new(),
        }
    }

    /// With the bearer token from the environment variable `name` (an HTTP server's; a stdio
    /// server has none, and is returned as it is).
    pub fn with_token_env(mut self, name: impl Into<String>) -> Server {
        if let Server::Http { token_env, .. } = &mut self {
            *token_env = Some(name.into());
        }
        self
    }

    /// With extra headers: each header's name and the environment variable holding its value
    /// (HTTP only).
    pub fn with_header_env(mut self, headers: BTreeMap<String, String>) -> Server {
        if let Server::Http { header_env, .. } = &mut self {
            *header_env = headers;
        }
        self
    }

    /// With the binding's own TLS settings (HTTP only).
    pub fn with_tls(mut self, settings: TlsSettings) -> Server {
        if let Server::Http { tls, .. } = &mut self {
            *tls = Some(settings);
        }
        self
    }

    /// With OAuth settings (HTTP only).
    pub fn with_auth(mut self, settings: AuthSettings) -> Server {
        if let Server::Http { auth, .. } = &mut self {
            *auth = Some(settings);
        }
        self
    }

    /// With the binding's own proxy setting (HTTP only).
    pub fn with_proxy(mut self, setting: ProxySetting) -> Server {
        if let Server::Http { proxy, .. } = &mut self {
            *proxy = Some(setting);
        }
        self
    }
}

/// Why a config was refused: which binding, which field, what is wrong.
///
/// Displayed as ``binding `search`: field `timeout_seconds`: must be between 1 and 86400``; the
/// binding and field parts are left out when unknown, and a binding without a valid name shows
/// as `binding #3` (its 0-based position).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The binding's name, or `#N` (its 0-based position in the array) when it has no valid
    /// name; `None` for a problem with the config as a whole.
    pub binding: Option<String>,
    /// The field, when the problem is with one.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn whole(field: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            binding: None,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.binding {
            Some(label) if label.starts_with('#') => write!(f, "binding {label}: ")?,
            Some(name) => write!(f, "binding `{name}`: ")?,
            None => {}
        }
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Loads the bindings of a config: the bare JSON array `mcp-tools` prints, or a host config
/// object whose `tools` array holds them (its other members are ignored). Every binding is
/// validated as the [module docs](self) say, and names must be unique.
///
/// # Errors
///
/// The first problem found: text that is not JSON, a config of the wrong shape, or a binding
/// field that breaks its rule.
pub fn load_config(text: &str) -> Result<Vec<Binding>, ConfigError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ConfigError::whole(None, format!("not valid JSON: {e}")))?;
    parse_config(&value)
}

/// [`load_config`] on a parsed JSON value.
fn parse_config(config: &Value) -> Result<Vec<Binding>, ConfigError> {
    let items = match config {
        Value::Array(items) => items,
        Value::Object(host) => match host.get("tools") {
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(ConfigError::whole(
                    Some("tools"),
                    format!("must be an array of bindings, not {}", json_type(other)),
                ));
            }
            None => {
                return Err(ConfigError::whole(
                    Some("tools"),
                    "missing: a config object holds its bindings in a `tools` array",
                ));
            }
        },
        other => {
            return Err(ConfigError::whole(
                None,
                format!(
                    "a config must be an array of bindings or an object with a `tools` array, not {}",
                    json_type(other)
                ),
            ));
        }
    };
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut bindings = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let binding = parse_binding(item, index)?;
        if let Some(first) = seen.insert(item_name(item), index) {
            return Err(ConfigError {
                binding: Some(binding.name.clone()),
                field: Some("name".to_owned()),
                message: format!(
                    "duplicate name: bindings #{first} and #{index} are both called `{}`",
                    binding.name
                ),
            });
        }
        bindings.push(binding);
    }
    Ok(bindings)
}

/// The `name` of a binding that [`parse_binding`] accepted.
fn item_name(item: &Value) -> &str {
    item.get("name").and_then(Value::as_str).unwrap_or_default()
}

impl Binding {
    /// Parses and validates one binding, as the [module docs](self) say; errors name the binding
    /// `#0` when it has no valid name.
    ///
    /// # Errors
    ///
    /// The first field that breaks its rule.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn from_json(value: &Value) -> Result<Self, ConfigError> {
        parse_binding(value, 0)
    }

    /// Checks a binding built in code (by discovery, say) against the same rules as a loaded
    /// one.
    ///
    /// # Errors
    ///
    /// The first field that breaks its rule.
    pub fn validate(&self) -> Result<(), ConfigError> {
        parse_binding(&self.to_json(), 0).map(drop)
    }

    /// The binding as JSON, in the shape SPEC.md shows and [`load_config`] reads back: `name`,
    /// `description`, `input_schema`, then `url` or `command`, `args`, `env` (a stdio binding
    /// always shows `args` and `env`), `mcp_tool`, `token_env`, `header_env`, `tls`, `proxy`
    /// (each only when set), `tenants`,
    /// `timeout_seconds`, `max_output_bytes` (always shown), `output_schema` and
    /// `task_support` (when set).
    ///
    /// Members are inserted in that order, but this crate builds serde_json without its
    /// `preserve_order` feature, so a [`Value`] object keeps its keys sorted. To print the
    /// members in this order, serialize the [`Binding`] itself (it implements [`Serialize`]):
    /// `serde_json::to_string_pretty(&binding)`. The schemas inside print with sorted keys
    /// either way.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        self.for_each_member(|key, value| {
            object.insert(key.to_owned(), value);
        });
        Value::Object(object)
    }

    /// Calls `member` for each member of [`to_json`](Self::to_json), in order.
    fn for_each_member(&self, mut member: impl FnMut(&'static str, Value)) {
        let strings = |items: &[String]| Value::from(items.to_vec());
        member("name", Value::from(self.name.as_str()));
        member("description", Value::from(self.description.as_str()));
        member("input_schema", self.input_schema.clone());
        let http = match &self.server {
            Server::Http {
                url,
                token_env,
                header_env,
                tls,
                proxy,
                auth,
            } => {
                member("url", Value::from(url.as_str()));
                Some((token_env, header_env, tls, proxy, auth))
            }
            Server::Stdio { command, args, env } => {
                member("command", Value::from(command.as_str()));
                member("args", strings(args));
                member("env", strings(env));
                None
            }
        };
        member("mcp_tool", Value::from(self.mcp_tool.as_str()));
        if let Some((token_env, header_env, tls, proxy, auth)) = http {
            if let Some(token_env) = token_env {
                member("token_env", Value::from(token_env.as_str()));
            }
            if let Some(auth) = auth {
                member("auth", auth.to_json());
            }
            if !header_env.is_empty() {
                let headers = header_env
                    .iter()
                    .map(|(name, variable)| (name.clone(), Value::from(variable.as_str())))
                    .collect();
                member("header_env", Value::Object(headers));
            }
            if let Some(tls) = tls {
                member("tls", tls.to_json());
            }
            match proxy {
                Some(ProxySetting::Direct) => member("proxy", Value::from("none")),
                Some(ProxySetting::Url(url)) => member("proxy", Value::from(url.as_str())),
                None => {}
            }
        }
        member("tenants", strings(&self.tenants));
        member("timeout_seconds", Value::from(self.timeout_seconds));
        member("max_output_bytes", Value::from(self.max_output_bytes));
        if let Some(output_schema) = &self.output_schema {
            member("output_schema", output_schema.clone());
        }
        if let Some(support) = &self.task_support {
            member("task_support", Value::from(support.as_str()));
        }
    }
}

impl Serialize for Binding {
    /// Writes the members of [`Binding::to_json`] in its documented order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut members = Vec::with_capacity(14);
        self.for_each_member(|key, value| members.push((key, value)));
        let mut map = serializer.serialize_map(Some(members.len()))?;
        for (key, value) in &members {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests;
