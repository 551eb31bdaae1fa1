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
//! | `input_schema` | yes | a JSON object with `"type": "object"` that [`compile`] accepts (bounded, no remote `$ref`) |
//! | `output_schema` | no | a JSON object that [`compile`] accepts |
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
//! | `timeout_seconds` | no (default [`DEFAULT_TIMEOUT_SECONDS`]) | an integer from 1 to [`MAX_TIMEOUT_SECONDS`] |
//! | `max_output_bytes` | no (default [`DEFAULT_MAX_OUTPUT_BYTES`]) | an integer from 1 to [`MAX_OUTPUT_BYTES_LIMIT`] |
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
//! token fails the call as `unauthorized` with `unknown_outcome: false`. Two grants:
//!
//! | member | rule |
//! | --- | --- |
//! | `grant` | required: `"client_credentials"` (a host with its own client, no person) or `"authorization_code"` (an operator logged in once with `mcp-tools -login`) |
//! | `client_id` | `client_credentials` only, required: a non-empty string without control characters |
//! | `client_secret_env` | `client_credentials`: the environment variable holding the client secret |
//! | `client_secret_file` | `client_credentials`: an absolute path to a file holding the client secret (surrounding whitespace is dropped) |
//! | `private_key_env` | `client_credentials`: the environment variable holding a PEM PKCS#8 P-256 key, for `private_key_jwt` (ES256) |
//! | `private_key_file` | `client_credentials`: an absolute path to that PEM key |
//! | `scope` | `client_credentials` only, optional: the scopes to ask for (space-separated) when the server's challenge names none |
//! | `token_endpoint_auth_method` | `client_credentials` only, optional: `client_secret_basic` or `client_secret_post` (with a secret), `private_key_jwt` (with a key); by default chosen from the server's metadata |
//! | `token_store` | `authorization_code` only, required: the absolute path of the token store `mcp-tools -login` wrote |
//!
//! A `client_credentials` block names exactly one of the four secret sources. Secrets and
//! keys are read when the first call is made, never when the config is loaded, and never
//! appear in errors or logs. With `authorization_code` the store holds the client and its
//! tokens: the refresh token is used with nobody present and rotated tokens are written back
//! (a new file, mode 0600, renamed over the store); when no usable token or refresh token is
//! left, the call fails (`unauthorized`, `unknown_outcome: false`) saying to run
//! `mcp-tools -login` again. Any other member is refused as ``auth.NAME``.
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
//! [`compile`]: super::schema::compile

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::schema::{self, truncate};
use crate::exchange::{ExtraHeaders, HeaderError};
use crate::transport::http::{ClientCert, ProxyConfig, Roots, TlsOptions};

/// `timeout_seconds` when a binding leaves it out.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;
/// The largest `timeout_seconds` accepted (one day).
pub const MAX_TIMEOUT_SECONDS: u64 = 86_400;
/// `max_output_bytes` when a binding leaves it out (1 MiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1_048_576;
/// The largest `max_output_bytes` accepted (1 GiB).
pub const MAX_OUTPUT_BYTES_LIMIT: u64 = 1_073_741_824;
/// The longest binding `name`, in characters.
pub const MAX_NAME_CHARS: usize = 64;
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

    /// With the names of the environment variables passed to a stdio server (stdio only).
    pub fn with_env(mut self, names: Vec<String>) -> Server {
        if let Server::Stdio { env, .. } = &mut self {
            *env = names;
        }
        self
    }
}

/// A binding's `tls` member (see [TLS](self#tls)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TlsSettings {
    /// `roots`, or `ca_file` as [`Roots::CaFile`].
    pub roots: Roots,
    /// `extra_ca_file`.
    pub extra_ca_file: Option<PathBuf>,
    /// `client_cert_file` and `client_key_file`.
    pub client_cert: Option<ClientCert>,
}

impl TlsSettings {
    /// The pool settings these stand for.
    pub fn to_options(&self) -> TlsOptions {
        TlsOptions {
            roots: self.roots.clone(),
            extra_ca_file: self.extra_ca_file.clone(),
            extra_roots: Vec::new(),
            client_cert: self.client_cert.clone(),
        }
    }

    /// The member that names `path`, for errors about that file.
    pub fn field_for(&self, path: &Path) -> &'static str {
        match &self.client_cert {
            Some(client) if client.cert_file == path => return "tls.client_cert_file",
            Some(client) if client.key_file == path => return "tls.client_key_file",
            _ => {}
        }
        match &self.roots {
            Roots::CaFile(file) if file == path => "tls.ca_file",
            _ if self.extra_ca_file.as_deref() == Some(path) => "tls.extra_ca_file",
            Roots::Platform => "tls.roots",
            _ => "tls",
        }
    }

    fn to_json(&self) -> Value {
        let path = |p: &Path| Value::from(p.display().to_string());
        let mut object = Map::new();
        match &self.roots {
            Roots::CaFile(file) => {
                object.insert("ca_file".to_owned(), path(file));
            }
            Roots::Platform => {
                object.insert("roots".to_owned(), Value::from("platform"));
            }
            _ => {
                object.insert("roots".to_owned(), Value::from("webpki"));
            }
        }
        if let Some(file) = &self.extra_ca_file {
            object.insert("extra_ca_file".to_owned(), path(file));
        }
        if let Some(client) = &self.client_cert {
            object.insert("client_cert_file".to_owned(), path(&client.cert_file));
            object.insert("client_key_file".to_owned(), path(&client.key_file));
        }
        Value::Object(object)
    }
}

/// A binding's `auth` member (see [OAuth](self#oauth)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthSettings {
    /// `"grant": "client_credentials"`: the host's own client, no person.
    #[non_exhaustive]
    ClientCredentials {
        /// `client_id`.
        client_id: String,
        /// Where its secret or key is.
        credential: ClientCredential,
        /// `scope`, as written.
        scope: Option<String>,
        /// `token_endpoint_auth_method`, as written.
        token_endpoint_auth_method: Option<String>,
    },
    /// `"grant": "authorization_code"`: tokens an operator's login left in a store.
    #[non_exhaustive]
    AuthorizationCode {
        /// `token_store`.
        token_store: PathBuf,
    },
}

impl AuthSettings {
    /// The client credentials grant for `client_id` with its secret or key at `credential`.
    pub fn client_credentials(client_id: impl Into<String>, credential: ClientCredential) -> Self {
        AuthSettings::ClientCredentials {
            client_id: client_id.into(),
            credential,
            scope: None,
            token_endpoint_auth_method: None,
        }
    }

    /// The authorization code grant with the tokens of the store at `token_store`.
    pub fn authorization_code(token_store: impl Into<PathBuf>) -> Self {
        AuthSettings::AuthorizationCode {
            token_store: token_store.into(),
        }
    }

    /// The `auth` object as the config has it.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        let mut put = |key: &str, value: Value| {
            object.insert(key.to_owned(), value);
        };
        match self {
            AuthSettings::ClientCredentials {
                client_id,
                credential,
                scope,
                token_endpoint_auth_method,
            } => {
                put("grant", Value::from("client_credentials"));
                put("client_id", Value::from(client_id.as_str()));
                let (member, value) = credential.member();
                put(member, Value::from(value));
                if let Some(scope) = scope {
                    put("scope", Value::from(scope.as_str()));
                }
                if let Some(method) = token_endpoint_auth_method {
                    put("token_endpoint_auth_method", Value::from(method.as_str()));
                }
            }
            AuthSettings::AuthorizationCode { token_store } => {
                put("grant", Value::from("authorization_code"));
                put(
                    "token_store",
                    Value::from(token_store.display().to_string()),
                );
            }
        }
        Value::Object(object)
    }
}

/// Where a client credentials grant's secret or key is (named, never inlined).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientCredential {
    /// `client_secret_env`: the variable holding the client secret.
    SecretEnv(String),
    /// `client_secret_file`: the file holding the client secret.
    SecretFile(PathBuf),
    /// `private_key_env`: the variable holding the PEM key.
    PrivateKeyEnv(String),
    /// `private_key_file`: the PEM key file.
    PrivateKeyFile(PathBuf),
}

impl ClientCredential {
    /// The `auth` member that names it, and what it holds (a variable name or a path).
    pub fn member(&self) -> (&'static str, String) {
        match self {
            ClientCredential::SecretEnv(v) => ("client_secret_env", v.clone()),
            ClientCredential::SecretFile(p) => ("client_secret_file", p.display().to_string()),
            ClientCredential::PrivateKeyEnv(v) => ("private_key_env", v.clone()),
            ClientCredential::PrivateKeyFile(p) => ("private_key_file", p.display().to_string()),
        }
    }
}

/// A binding's `proxy` member (see [Proxies](self#proxies)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProxySetting {
    /// `"none"`: connect directly.
    Direct,
    /// Every connection through this proxy (`http://host[:port]`, no credentials).
    Url(String),
}

impl ProxySetting {
    /// The pool's proxy settings this stands for ([`Direct`](Self::Direct) is
    /// [`ProxyConfig::none`]).
    ///
    /// # Errors
    ///
    /// A URL that [`ProxyConfig::all`] refuses (never for a loaded binding).
    pub fn to_config(&self) -> Result<ProxyConfig, crate::transport::http::ProxyError> {
        match self {
            ProxySetting::Direct => Ok(ProxyConfig::none()),
            ProxySetting::Url(url) => ProxyConfig::all(url),
        }
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
///
/// # Errors
///
/// As [`load_config`].
pub fn parse_config(config: &Value) -> Result<Vec<Binding>, ConfigError> {
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
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
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
    /// `timeout_seconds`, `max_output_bytes` (always shown), and `output_schema` (when set).
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

/// Every member a binding may have.
const KNOWN_FIELDS: [&str; 17] = [
    "name",
    "description",
    "input_schema",
    "output_schema",
    "url",
    "token_env",
    "auth",
    "tls",
    "proxy",
    "header_env",
    "command",
    "args",
    "env",
    "mcp_tool",
    "tenants",
    "timeout_seconds",
    "max_output_bytes",
];

/// Reads one binding at position `index`, checking every field.
fn parse_binding(value: &Value, index: usize) -> Result<Binding, ConfigError> {
    let Value::Object(object) = value else {
        return Err(ConfigError {
            binding: Some(format!("#{index}")),
            field: None,
            message: format!("a binding must be a JSON object, not {}", json_type(value)),
        });
    };
    let name = object
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| valid_name(n));
    let fields = Fields {
        object,
        label: name.map_or_else(|| format!("#{index}"), str::to_owned),
    };
    let Some(name) = name else {
        return Err(fields.error(
            "name",
            match object.get("name") {
                None => "missing".to_owned(),
                Some(Value::String(_)) => format!(
                    "must be 1 to {MAX_NAME_CHARS} characters, each a letter (A-Z, a-z), a digit, `_` or `-`"
                ),
                Some(other) => format!("must be a string, not {}", json_type(other)),
            },
        ));
    };

    if object.contains_key("inspect_session") {
        return Err(fields.error(
            "inspect_session",
            "not supported on an MCP binding: an MCP server's session cannot be inspected \
             (each call runs in a fresh MCP session); remove the field",
        ));
    }
    for key in object.keys() {
        if !KNOWN_FIELDS.contains(&key.as_str()) {
            return Err(ConfigError {
                binding: Some(fields.label.clone()),
                field: Some(truncate(&key.escape_debug().to_string(), MAX_NAME_CHARS)),
                message: format!(
                    "unknown field (a binding has only: {})",
                    KNOWN_FIELDS.join(", ")
                ),
            });
        }
    }

    let description = fields
        .string("description")?
        .ok_or_else(|| fields.error("description", "missing (a string; it may be empty)"))?;

    let input_schema = fields.schema("input_schema")?.ok_or_else(|| {
        fields.error(
            "input_schema",
            "missing (a JSON Schema object with \"type\": \"object\")",
        )
    })?;
    if input_schema.get("type") != Some(&Value::from("object")) {
        return Err(fields.error(
            "input_schema",
            "must have \"type\": \"object\" (tool arguments are a JSON object)",
        ));
    }
    let output_schema = fields.schema("output_schema")?;

    let server = match (object.get("url"), object.get("command")) {
        (Some(_), Some(_)) => {
            return Err(fields.error(
                "command",
                "a binding has either `url` (Streamable HTTP) or `command` (stdio), not both",
            ));
        }
        (None, None) => {
            return Err(fields.error(
                "url",
                "missing: a binding needs `url` (Streamable HTTP) or `command` (stdio)",
            ));
        }
        (Some(_), None) => {
            for stdio_only in ["args", "env"] {
                if object.contains_key(stdio_only) {
                    return Err(fields.error(
                        stdio_only,
                        "only allowed with `command` (a stdio server), not with `url`",
                    ));
                }
            }
            let url = fields.string("url")?.unwrap_or_default();
            check_url(&url).map_err(|m| fields.error("url", m))?;
            let token_env = fields.string("token_env")?;
            if let Some(token_env) = &token_env {
                check_env_name(token_env).map_err(|m| fields.error("token_env", m))?;
            }
            let auth = match object.get("auth") {
                None => None,
                Some(_) if token_env.is_some() => {
                    return Err(fields.error(
                        "auth",
                        "not with `token_env`: both would set the Authorization header (use \
                         `token_env` for a static API key, `auth` for OAuth)",
                    ));
                }
                Some(value) => Some(parse_auth(&fields, value)?),
            };
            let header_env = fields.header_env()?;
            let tls = match object.get("tls") {
                None => None,
                Some(_) if !has_scheme(&url, "https") => {
                    return Err(fields.error(
                        "tls",
                        "only allowed with an https:// `url` (TLS settings mean nothing to \
                         an http:// server)",
                    ));
                }
                Some(value) => Some(parse_tls(&fields, value)?),
            };
            let proxy = match fields.string("proxy")? {
                None => None,
                Some(value) if value == "none" => Some(ProxySetting::Direct),
                Some(value) => {
                    check_proxy_url(&value).map_err(|m| fields.error("proxy", m))?;
                    Some(ProxySetting::Url(value))
                }
            };
            Server::Http {
                url,
                token_env,
                header_env,
                tls,
                proxy,
                auth,
            }
        }
        (None, Some(_)) => {
            for http_only in ["token_env", "header_env"] {
                if object.contains_key(http_only) {
                    return Err(fields.error(
                        http_only,
                        "only allowed with `url`; a stdio server gets environment variables \
                         through `env`",
                    ));
                }
            }
            for http_only in ["tls", "proxy", "auth"] {
                if object.contains_key(http_only) {
                    return Err(fields.error(
                        http_only,
                        "only allowed with `url` (a Streamable HTTP server), not with `command`",
                    ));
                }
            }
            let command = fields.string("command")?.unwrap_or_default();
            if command.trim().is_empty() {
                return Err(fields.error("command", "must not be empty"));
            }
            if command.contains('\0') {
                return Err(fields.error("command", "must not contain NUL characters"));
            }
            let args = fields.strings("args")?.unwrap_or_default();
            if let Some(i) = args.iter().position(|a| a.contains('\0')) {
                return Err(
                    fields.error("args", format!("item {i} must not contain NUL characters"))
                );
            }
            let env = fields.strings("env")?.unwrap_or_default();
            for (i, name) in env.iter().enumerate() {
                check_env_name(name).map_err(|m| fields.error("env", format!("item {i} {m}")))?;
            }
            check_distinct(&env).map_err(|m| fields.error("env", m))?;
            Server::Stdio { command, args, env }
        }
    };

    let mcp_tool = fields
        .string("mcp_tool")?
        .ok_or_else(|| fields.error("mcp_tool", "missing (the tool's name on the server)"))?;
    if mcp_tool.is_empty() {
        return Err(fields.error("mcp_tool", "must not be empty"));
    }

    let tenants = fields.strings("tenants")?.ok_or_else(|| {
        fields.error(
            "tenants",
            "missing (an array of the tenants allowed to use the tool)",
        )
    })?;
    if tenants.is_empty() {
        return Err(fields.error("tenants", "must name at least one tenant"));
    }
    if let Some(i) = tenants.iter().position(String::is_empty) {
        return Err(fields.error("tenants", format!("item {i} must not be empty")));
    }
    check_distinct(&tenants).map_err(|m| fields.error("tenants", m))?;

    let timeout_seconds = fields
        .integer("timeout_seconds", MAX_TIMEOUT_SECONDS)?
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    let max_output_bytes = fields
        .integer("max_output_bytes", MAX_OUTPUT_BYTES_LIMIT)?
        .unwrap_or(DEFAULT_MAX_OUTPUT_BYTES);

    Ok(Binding {
        name: name.to_owned(),
        description,
        input_schema,
        output_schema,
        server,
        mcp_tool,
        tenants,
        timeout_seconds,
        max_output_bytes,
    })
}

/// The members of one binding, with its label for errors.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    label: String,
}

impl Fields<'_> {
    fn error(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            binding: Some(self.label.clone()),
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// A string member, `None` when absent.
    fn string(&self, field: &str) -> Result<Option<String>, ConfigError> {
        match self.object.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => {
                Err(self.error(field, format!("must be a string, not {}", json_type(other))))
            }
        }
    }

    /// An array-of-strings member, `None` when absent.
    fn strings(&self, field: &str) -> Result<Option<Vec<String>>, ConfigError> {
        let items = match self.object.get(field) {
            None => return Ok(None),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(self.error(
                    field,
                    format!("must be an array of strings, not {}", json_type(other)),
                ));
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.error(
                    field,
                    format!("item {i} must be a string, not {}", json_type(other)),
                )),
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// An integer member from 1 to `max`, `None` when absent.
    fn integer(&self, field: &str, max: u64) -> Result<Option<u64>, ConfigError> {
        let Some(value) = self.object.get(field) else {
            return Ok(None);
        };
        let range = || format!("must be between 1 and {max}");
        match value {
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(v), _) if (1..=max).contains(&v) => Ok(Some(v)),
                (Some(_), _) | (None, Some(_)) => Err(self.error(field, range())),
                (None, None) => Err(self.error(
                    field,
                    format!(
                        "must be an integer between 1 and {max}, written without a fraction \
                         or exponent"
                    ),
                )),
            },
            other => Err(self.error(
                field,
                format!("must be an integer, not {}", json_type(other)),
            )),
        }
    }

    /// The `header_env` member: header names, each mapped to the name of the environment
    /// variable holding its value. Empty when absent.
    fn header_env(&self) -> Result<BTreeMap<String, String>, ConfigError> {
        const FIELD: &str = "header_env";
        let entries = match self.object.get(FIELD) {
            None => return Ok(BTreeMap::new()),
            Some(Value::Object(entries)) => entries,
            Some(other) => {
                return Err(self.error(
                    FIELD,
                    format!(
                        "must be an object mapping header names to environment variable names, \
                         not {}",
                        json_type(other)
                    ),
                ));
            }
        };
        if entries.len() > MAX_HEADER_ENV {
            return Err(self.error(
                FIELD,
                format!(
                    "names {} headers; at most {MAX_HEADER_ENV} are allowed",
                    entries.len()
                ),
            ));
        }
        let mut seen = HashSet::with_capacity(entries.len());
        let mut headers = BTreeMap::new();
        for (name, variable) in entries {
            let header = || format!("header {:?}", truncate(name, MAX_NAME_CHARS));
            let canonical = ExtraHeaders::check_name(name).map_err(|e| {
                let hint = match e {
                    HeaderError::Authorization => "; name the variable in `token_env`",
                    _ => "",
                };
                self.error(FIELD, format!("{}: {e}{hint}", header()))
            })?;
            if !seen.insert(canonical) {
                return Err(self.error(
                    FIELD,
                    format!(
                        "{} appears more than once (header names are case-insensitive)",
                        header()
                    ),
                ));
            }
            let variable = match variable {
                Value::String(variable) if check_env_name(variable).is_ok() => variable,
                Value::String(_) => {
                    // Not quoted: it may be the value itself, pasted in by mistake.
                    return Err(self.error(
                        FIELD,
                        format!(
                            "{}: must be the name of the environment variable holding its value \
                             (a letter or `_`, then letters, digits or `_`); values never go \
                             in the config",
                            header()
                        ),
                    ));
                }
                other => {
                    return Err(self.error(
                        FIELD,
                        format!(
                            "{}: must be the name of an environment variable (a string), not {}",
                            header(),
                            json_type(other)
                        ),
                    ));
                }
            };
            headers.insert(name.clone(), variable.clone());
        }
        Ok(headers)
    }

    /// A JSON Schema member, which must be an object that [`schema::compile`] accepts; `None`
    /// when absent.
    fn schema(&self, field: &str) -> Result<Option<Value>, ConfigError> {
        match self.object.get(field) {
            None => Ok(None),
            Some(value @ Value::Object(_)) => {
                schema::compile(value).map_err(|e| self.error(field, e))?;
                Ok(Some(value.clone()))
            }
            Some(other) => Err(self.error(
                field,
                format!("must be a JSON Schema object, not {}", json_type(other)),
            )),
        }
    }
}

/// A member that is an object of its own (`tls`, `auth`): its members, named
/// ``parent.member`` in errors.
struct Nested<'a> {
    fields: &'a Fields<'a>,
    parent: &'static str,
    object: &'a Map<String, Value>,
}

impl<'a> Nested<'a> {
    /// `value` as the object `parent`, refusing members not in `known`.
    fn new(
        fields: &'a Fields<'a>,
        parent: &'static str,
        value: &'a Value,
        known: &[&str],
    ) -> Result<Self, ConfigError> {
        let Value::Object(object) = value else {
            return Err(fields.error(
                parent,
                format!("must be an object, not {}", json_type(value)),
            ));
        };
        if let Some(key) = object.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ConfigError {
                binding: Some(fields.label.clone()),
                field: Some(format!(
                    "{parent}.{}",
                    truncate(&key.escape_debug().to_string(), MAX_NAME_CHARS)
                )),
                message: format!("unknown field (`{parent}` has only: {})", known.join(", ")),
            });
        }
        Ok(Nested {
            fields,
            parent,
            object,
        })
    }

    /// A string member, `None` when absent.
    fn string(&self, member: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.object.get(member) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.fields.error(
                &format!("{}.{member}", self.parent),
                format!("must be a string, not {}", json_type(other)),
            )),
        }
    }

    /// An absolute path member (see [`check_path`]), `None` when absent.
    fn path(&self, member: &str) -> Result<Option<PathBuf>, ConfigError> {
        let Some(text) = self.string(member)? else {
            return Ok(None);
        };
        check_path(text).map_err(|m| self.fields.error(&format!("{}.{member}", self.parent), m))?;
        Ok(Some(PathBuf::from(text)))
    }
}

/// Every member a `tls` object may have.
const TLS_FIELDS: [&str; 5] = [
    "roots",
    "ca_file",
    "extra_ca_file",
    "client_cert_file",
    "client_key_file",
];

/// Reads a binding's `tls` object, as [TLS](self#tls) says.
fn parse_tls(fields: &Fields<'_>, value: &Value) -> Result<TlsSettings, ConfigError> {
    let tls = Nested::new(fields, "tls", value, &TLS_FIELDS)?;
    let string = |member: &str| tls.string(member);
    let path = |member: &str| tls.path(member);
    let roots = match (string("roots")?, path("ca_file")?) {
        (Some(_), Some(_)) => {
            return Err(fields.error(
                "tls.ca_file",
                "not with `roots`: `ca_file` replaces the roots (use `extra_ca_file` to add \
                 to them)",
            ));
        }
        (None, Some(file)) => Roots::CaFile(file),
        (None | Some("webpki"), None) => Roots::Webpki,
        (Some("platform"), None) => Roots::Platform,
        (Some(_), None) => {
            return Err(fields.error(
                "tls.roots",
                "must be \"webpki\" (the bundled roots) or \"platform\" (the system's trust \
                 store); for a CA bundle use `ca_file`",
            ));
        }
    };
    let extra_ca_file = path("extra_ca_file")?;
    if extra_ca_file.is_some() && matches!(roots, Roots::CaFile(_)) {
        return Err(fields.error(
            "tls.extra_ca_file",
            "not with `ca_file`: put every CA in the `ca_file` bundle",
        ));
    }
    let client_cert = match (path("client_cert_file")?, path("client_key_file")?) {
        (Some(cert_file), Some(key_file)) => Some(ClientCert {
            cert_file,
            key_file,
        }),
        (None, None) => None,
        (Some(_), None) => {
            return Err(fields.error(
                "tls.client_key_file",
                "missing: `client_cert_file` needs the key in `client_key_file`",
            ));
        }
        (None, Some(_)) => {
            return Err(fields.error(
                "tls.client_cert_file",
                "missing: `client_key_file` needs the certificate in `client_cert_file`",
            ));
        }
    };
    Ok(TlsSettings {
        roots,
        extra_ca_file,
        client_cert,
    })
}

/// Every member an `auth` object may have.
const AUTH_FIELDS: [&str; 9] = [
    "grant",
    "client_id",
    "client_secret_env",
    "client_secret_file",
    "private_key_env",
    "private_key_file",
    "scope",
    "token_endpoint_auth_method",
    "token_store",
];

/// Reads a binding's `auth` object, as [OAuth](self#oauth) says.
fn parse_auth(fields: &Fields<'_>, value: &Value) -> Result<AuthSettings, ConfigError> {
    let nested = Nested::new(fields, "auth", value, &AUTH_FIELDS)?;
    let auth = nested.object;
    let error = |member: &str, message: String| fields.error(&format!("auth.{member}"), message);
    let string = |member: &str| nested.string(member);
    let path = |member: &str| nested.path(member);
    let env = |member: &str| -> Result<Option<String>, ConfigError> {
        let Some(name) = string(member)? else {
            return Ok(None);
        };
        // Not quoted: it may be the secret itself, pasted in by mistake.
        if check_env_name(name).is_err() {
            return Err(error(
                member,
                "must be the name of an environment variable (a letter or `_`, then letters, \
                 digits or `_`); secrets never go in the config"
                    .to_owned(),
            ));
        }
        Ok(Some(name.to_owned()))
    };
    let only = |members: &[&str], grant: &str| -> Result<(), ConfigError> {
        match members.iter().find(|m| auth.contains_key(**m)) {
            Some(member) => Err(error(member, format!("not with \"grant\": \"{grant}\""))),
            None => Ok(()),
        }
    };
    const CLIENT_MEMBERS: [&str; 7] = [
        "client_id",
        "client_secret_env",
        "client_secret_file",
        "private_key_env",
        "private_key_file",
        "scope",
        "token_endpoint_auth_method",
    ];
    match string("grant")? {
        Some("authorization_code") => {
            only(&CLIENT_MEMBERS, "authorization_code")?;
            let token_store = path("token_store")?.ok_or_else(|| {
                error(
                    "token_store",
                    "missing: the absolute path of the token store `mcp-tools -login` wrote"
                        .to_owned(),
                )
            })?;
            Ok(AuthSettings::AuthorizationCode { token_store })
        }
        Some("client_credentials") => {
            only(&["token_store"], "client_credentials")?;
            let client_id = string("client_id")?
                .ok_or_else(|| error("client_id", "missing (the client's id)".to_owned()))?;
            if client_id.is_empty() || client_id.chars().any(char::is_control) {
                return Err(error(
                    "client_id",
                    "must be a non-empty string without control characters".to_owned(),
                ));
            }
            let mut sources = Vec::new();
            if let Some(v) = env("client_secret_env")? {
                sources.push(("client_secret_env", ClientCredential::SecretEnv(v)));
            }
            if let Some(p) = path("client_secret_file")? {
                sources.push(("client_secret_file", ClientCredential::SecretFile(p)));
            }
            if let Some(v) = env("private_key_env")? {
                sources.push(("private_key_env", ClientCredential::PrivateKeyEnv(v)));
            }
            if let Some(p) = path("private_key_file")? {
                sources.push(("private_key_file", ClientCredential::PrivateKeyFile(p)));
            }
            let credential = match sources.len() {
                0 => {
                    return Err(error(
                        "client_secret_env",
                        "missing: name the client's secret or key with one of \
                         client_secret_env, client_secret_file, private_key_env, \
                         private_key_file"
                            .to_owned(),
                    ));
                }
                1 => sources.remove(0).1,
                _ => {
                    let named: Vec<&str> = sources.iter().map(|(m, _)| *m).collect();
                    return Err(error(
                        named[1],
                        format!(
                            "give one secret source, not {} ({})",
                            named.len(),
                            named.join(", ")
                        ),
                    ));
                }
            };
            let scope = string("scope")?.map(str::to_owned);
            if let Some(scope) = &scope
                && crate::auth::Scopes::parse(scope).is_err()
            {
                return Err(error(
                    "scope",
                    "must be scope tokens separated by spaces (printable ASCII, no `\"` or `\\`)"
                        .to_owned(),
                ));
            }
            let method = string("token_endpoint_auth_method")?.map(str::to_owned);
            if let Some(method) = &method {
                let key = matches!(
                    credential,
                    ClientCredential::PrivateKeyEnv(_) | ClientCredential::PrivateKeyFile(_)
                );
                let fits = match method.as_str() {
                    "client_secret_basic" | "client_secret_post" => !key,
                    "private_key_jwt" => key,
                    _ => {
                        return Err(error(
                            "token_endpoint_auth_method",
                            "must be client_secret_basic, client_secret_post or \
                             private_key_jwt"
                                .to_owned(),
                        ));
                    }
                };
                if !fits {
                    return Err(error(
                        "token_endpoint_auth_method",
                        format!("{method} does not go with {}", credential.member().0),
                    ));
                }
            }
            Ok(AuthSettings::ClientCredentials {
                client_id: client_id.to_owned(),
                credential,
                scope,
                token_endpoint_auth_method: method,
            })
        }
        Some(_) => Err(error(
            "grant",
            "must be \"client_credentials\" or \"authorization_code\"".to_owned(),
        )),
        None => Err(error(
            "grant",
            "missing: \"client_credentials\" or \"authorization_code\"".to_owned(),
        )),
    }
}

/// Checks a file path: non-empty, absolute, without NUL. Paths are quoted in messages (they
/// name files, not secrets).
fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if path.contains('\0') {
        return Err("must not contain NUL characters".to_owned());
    }
    if !Path::new(path).is_absolute() {
        return Err(format!(
            "must be an absolute path (not relative to wherever the host runs), not {:?}",
            truncate(path, 200)
        ));
    }
    Ok(())
}

/// Checks a binding's proxy URL: what [`ProxyConfig::all`] accepts, with an `http://` scheme
/// and no user info. The URL itself never appears in the message.
fn check_proxy_url(url: &str) -> Result<(), String> {
    if !has_scheme(url, "http") {
        return Err(
            "must be \"none\" or an http:// proxy URL (`http://host:port`; TLS to the proxy \
             is not supported)"
                .to_owned(),
        );
    }
    let authority = url.split_once("://").map_or("", |(_, rest)| rest);
    if authority
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .contains('@')
    {
        return Err(
            "must not contain credentials (`user:password@`): give an authenticated proxy in \
             HTTPS_PROXY / HTTP_PROXY and leave `proxy` out"
                .to_owned(),
        );
    }
    ProxyConfig::all(url).map(drop).map_err(|e| match e {
        crate::transport::http::ProxyError::InvalidUrl { reason, .. }
        | crate::transport::http::ProxyError::Unsupported { reason, .. } => {
            format!("not a valid proxy URL: {reason}")
        }
    })
}

/// Whether `url` starts with `scheme://` (schemes are case-insensitive, RFC 3986 §3.1).
fn has_scheme(url: &str, scheme: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(s, _)| s.eq_ignore_ascii_case(scheme))
}

/// Whether `name` is 1 to [`MAX_NAME_CHARS`] characters of `A-Z a-z 0-9 _ -`.
fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks an environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn check_env_name(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(())
    } else {
        Err(format!(
            "must be an environment variable name (a letter or `_`, then letters, digits or `_`), not {:?}",
            truncate(name, MAX_NAME_CHARS)
        ))
    }
}

/// Refuses an item that appears twice.
fn check_distinct(items: &[String]) -> Result<(), String> {
    let mut seen = HashSet::with_capacity(items.len());
    match items.iter().find(|item| !seen.insert(item.as_str())) {
        None => Ok(()),
        Some(item) => Err(format!(
            "{:?} appears more than once",
            truncate(item, MAX_NAME_CHARS)
        )),
    }
}

/// Checks a server URL: absolute `http`/`https` with a host, no user info, no fragment, no
/// whitespace or control characters, and parseable by the HTTP transport. The URL itself never
/// appears in the message.
fn check_url(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".to_owned());
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("must be an absolute http:// or https:// URL".to_owned());
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err("must use the http or https scheme".to_owned());
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = rest.get(..authority_end).unwrap_or(rest);
    if authority.contains('@') {
        return Err(
            "must not contain credentials (`user:password@`); name the environment variable \
             holding the token in `token_env` instead"
                .to_owned(),
        );
    }
    if url.contains('#') {
        return Err("must not have a fragment (`#...`)".to_owned());
    }
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((ipv6, port)) => {
                if ipv6.parse::<std::net::Ipv6Addr>().is_err() {
                    return Err("has an invalid IPv6 address".to_owned());
                }
                check_port(port)?;
                ipv6
            }
            None => return Err("has an unclosed `[` in its host".to_owned()),
        },
        None => {
            let (host, port) = match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            };
            if let Some(port) = port {
                check_port(&format!(":{port}"))?;
            }
            if !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~' | b'%'))
            {
                return Err("has an invalid host".to_owned());
            }
            host
        }
    };
    if host.is_empty() {
        return Err("must name a host".to_owned());
    }
    if url.parse::<http::Uri>().is_err() {
        return Err("is not a valid URL".to_owned());
    }
    Ok(())
}

/// Checks what follows the host: nothing, or `:` and a port from 1 to 65535.
fn check_port(after_host: &str) -> Result<(), String> {
    match after_host.strip_prefix(':') {
        None if after_host.is_empty() => Ok(()),
        None => Err("has an invalid host".to_owned()),
        Some(port) => match port.parse::<u16>() {
            Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
            _ => Err("has an invalid port (1 to 65535)".to_owned()),
        },
    }
}

/// A JSON value's type, with its article, for messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "tests_config.rs"]
mod tests;
