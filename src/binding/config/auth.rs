//! The binding `auth` block ([OAuth](super#oauth)): [`AuthSettings`], where a client's secret
//! or key is, and the checks on every member.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::ConfigError;
use super::read::{Fields, Nested, check_env_name};

/// A binding's `auth` member (see [OAuth](super#oauth)).
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
    pub(crate) fn member(&self) -> (&'static str, String) {
        match self {
            ClientCredential::SecretEnv(v) => ("client_secret_env", v.clone()),
            ClientCredential::SecretFile(p) => ("client_secret_file", p.display().to_string()),
            ClientCredential::PrivateKeyEnv(v) => ("private_key_env", v.clone()),
            ClientCredential::PrivateKeyFile(p) => ("private_key_file", p.display().to_string()),
        }
    }
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

/// Reads a binding's `auth` object, as [OAuth](super#oauth) says.
pub(super) fn parse_auth(fields: &Fields<'_>, value: &Value) -> Result<AuthSettings, ConfigError> {
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
