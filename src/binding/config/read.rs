//! Reading one binding: each member's type and rule, checked in the order the
//! [module docs](super) give, and the messages that name what is wrong.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::binding::schema::{self, truncate};
use crate::exchange::config::{ExtraHeaders, HeaderError};

use super::auth::parse_auth;
use super::proxy::{ProxySetting, check_proxy_url};
use super::tls::parse_tls;
use super::{
    Binding, ConfigError, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_SECONDS, MAX_HEADER_ENV,
    MAX_NAME_CHARS, MAX_OUTPUT_BYTES_LIMIT, MAX_TIMEOUT_SECONDS, Server,
};

/// Every member a binding may have.
const KNOWN_FIELDS: [&str; 18] = [
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
    "task_support",
];

/// Reads one binding at position `index`, checking every field.
pub(super) fn parse_binding(value: &Value, index: usize) -> Result<Binding, ConfigError> {
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
    let task_support = match fields.string("task_support")?.as_deref() {
        None => None,
        Some("optional") => Some(crate::mcp::TaskSupport::Optional),
        Some("required") => Some(crate::mcp::TaskSupport::Required),
        Some(_) => {
            return Err(fields.error(
                "task_support",
                "must be \"optional\" or \"required\" (leave it out for a tool that forbids tasks)",
            ));
        }
    };

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
        task_support,
    })
}

/// The members of one binding, with its label for errors.
pub(super) struct Fields<'a> {
    object: &'a Map<String, Value>,
    label: String,
}

impl Fields<'_> {
    pub(super) fn error(&self, field: &str, message: impl Into<String>) -> ConfigError {
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
pub(super) struct Nested<'a> {
    fields: &'a Fields<'a>,
    parent: &'static str,
    pub(super) object: &'a Map<String, Value>,
}

impl<'a> Nested<'a> {
    /// `value` as the object `parent`, refusing members not in `known`.
    pub(super) fn new(
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
    pub(super) fn string(&self, member: &str) -> Result<Option<&'a str>, ConfigError> {
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
    pub(super) fn path(&self, member: &str) -> Result<Option<PathBuf>, ConfigError> {
        let Some(text) = self.string(member)? else {
            return Ok(None);
        };
        check_path(text).map_err(|m| self.fields.error(&format!("{}.{member}", self.parent), m))?;
        Ok(Some(PathBuf::from(text)))
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

/// Whether `url` starts with `scheme://` (schemes are case-insensitive, RFC 3986 §3.1).
pub(super) fn has_scheme(url: &str, scheme: &str) -> bool {
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
pub(super) fn check_env_name(name: &str) -> Result<(), String> {
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
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
