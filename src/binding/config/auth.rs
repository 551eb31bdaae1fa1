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
        /// `dpop`: DPoP-bound tokens (RFC 9449).
        dpop: bool,
    },
    /// `"grant": "jwt_bearer"`: a workload's own token from its platform, traded with the
    /// JWT-bearer grant (RFC 7523; workload identity federation), no person.
    #[non_exhaustive]
    JwtBearer {
        /// `client_id`.
        client_id: String,
        /// Where the client's secret or key is, if the server authenticates it too.
        credential: Option<ClientCredential>,
        /// `workload_token_env` or `workload_token_file`: read again at each use.
        workload_token: SecretRef,
        /// `scope`, as written.
        scope: Option<String>,
        /// `token_endpoint_auth_method`, as written.
        token_endpoint_auth_method: Option<String>,
        /// `dpop`: DPoP-bound tokens (RFC 9449).
        dpop: bool,
    },
    /// `"grant": "enterprise_managed"`: the user's ID token traded at the enterprise IdP for
    /// an ID-JAG (RFC 8693), then the JWT-bearer grant with it at the MCP server's
    /// authorization server.
    #[non_exhaustive]
    EnterpriseManaged {
        /// `client_id`: this client at the MCP server's authorization server.
        client_id: String,
        /// Where that client's secret or key is, if it has one.
        credential: Option<ClientCredential>,
        /// `idp_token_endpoint`: the IdP's token endpoint (`https`, or loopback `http`).
        idp_token_endpoint: String,
        /// `idp_client_id`: this client at the IdP.
        idp_client_id: String,
        /// `idp_client_secret_env` or `idp_client_secret_file`, if the IdP wants a secret.
        idp_client_secret: Option<SecretRef>,
        /// `id_token_env` or `id_token_file`: the user's ID token, read at each use.
        id_token: SecretRef,
        /// `scope`, as written.
        scope: Option<String>,
        /// `token_endpoint_auth_method`, as written.
        token_endpoint_auth_method: Option<String>,
        /// `dpop`: DPoP-bound tokens (RFC 9449).
        dpop: bool,
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
    #[cfg(test)]
    pub(crate) fn client_credentials(
        client_id: impl Into<String>,
        credential: ClientCredential,
    ) -> Self {
        AuthSettings::ClientCredentials {
            client_id: client_id.into(),
            credential,
            scope: None,
            token_endpoint_auth_method: None,
            dpop: false,
        }
    }

    /// The authorization code grant with the tokens of the store at `token_store`.
    pub fn authorization_code(token_store: impl Into<PathBuf>) -> Self {
        AuthSettings::AuthorizationCode {
            token_store: token_store.into(),
        }
    }

    /// The JWT-bearer grant for `client_id` with the workload token at `workload_token`.
    #[cfg(test)]
    pub(crate) fn jwt_bearer(client_id: impl Into<String>, workload_token: SecretRef) -> Self {
        AuthSettings::JwtBearer {
            client_id: client_id.into(),
            credential: None,
            workload_token,
            scope: None,
            token_endpoint_auth_method: None,
            dpop: false,
        }
    }

    /// The `auth` object as the config has it.
    pub(crate) fn to_json(&self) -> Value {
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
                dpop,
            } => {
                put("grant", Value::from("client_credentials"));
                put("client_id", Value::from(client_id.as_str()));
                let (member, value) = credential.member();
                put(member, Value::from(value));
                put_client_tail(&mut put, scope, token_endpoint_auth_method, *dpop);
            }
            AuthSettings::JwtBearer {
                client_id,
                credential,
                workload_token,
                scope,
                token_endpoint_auth_method,
                dpop,
            } => {
                put("grant", Value::from("jwt_bearer"));
                put("client_id", Value::from(client_id.as_str()));
                if let Some(credential) = credential {
                    let (member, value) = credential.member();
                    put(member, Value::from(value));
                }
                let (member, value) = workload_token.member("workload_token");
                put(&member, Value::from(value));
                put_client_tail(&mut put, scope, token_endpoint_auth_method, *dpop);
            }
            AuthSettings::EnterpriseManaged {
                client_id,
                credential,
                idp_token_endpoint,
                idp_client_id,
                idp_client_secret,
                id_token,
                scope,
                token_endpoint_auth_method,
                dpop,
            } => {
                put("grant", Value::from("enterprise_managed"));
                put("client_id", Value::from(client_id.as_str()));
                if let Some(credential) = credential {
                    let (member, value) = credential.member();
                    put(member, Value::from(value));
                }
                put(
                    "idp_token_endpoint",
                    Value::from(idp_token_endpoint.as_str()),
                );
                put("idp_client_id", Value::from(idp_client_id.as_str()));
                if let Some(secret) = idp_client_secret {
                    let (member, value) = secret.member("idp_client_secret");
                    put(&member, Value::from(value));
                }
                let (member, value) = id_token.member("id_token");
                put(&member, Value::from(value));
                put_client_tail(&mut put, scope, token_endpoint_auth_method, *dpop);
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

/// The optional members every client grant ends with, in this order.
fn put_client_tail(
    put: &mut impl FnMut(&str, Value),
    scope: &Option<String>,
    method: &Option<String>,
    dpop: bool,
) {
    if let Some(scope) = scope {
        put("scope", Value::from(scope.as_str()));
    }
    if let Some(method) = method {
        put("token_endpoint_auth_method", Value::from(method.as_str()));
    }
    if dpop {
        put("dpop", Value::Bool(true));
    }
}

/// Where a token or secret of an `auth` block is (named, never inlined): `NAME_env` or
/// `NAME_file`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretRef {
    /// The environment variable holding it.
    Env(String),
    /// The file holding it (surrounding whitespace ignored).
    File(PathBuf),
}

impl SecretRef {
    /// The member that names it for `prefix` (`workload_token` gives `workload_token_env` or
    /// `workload_token_file`), and what it holds.
    pub(crate) fn member(&self, prefix: &str) -> (String, String) {
        match self {
            SecretRef::Env(v) => (format!("{prefix}_env"), v.clone()),
            SecretRef::File(p) => (format!("{prefix}_file"), p.display().to_string()),
        }
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
const AUTH_FIELDS: [&str; 18] = [
    "grant",
    "client_id",
    "client_secret_env",
    "client_secret_file",
    "private_key_env",
    "private_key_file",
    "workload_token_env",
    "workload_token_file",
    "idp_token_endpoint",
    "idp_client_id",
    "idp_client_secret_env",
    "idp_client_secret_file",
    "id_token_env",
    "id_token_file",
    "scope",
    "token_endpoint_auth_method",
    "dpop",
    "token_store",
];

/// The members each grant takes (beyond `grant`).
fn allowed(grant: &str) -> &'static [&'static str] {
    const CREDENTIALS: [&str; 4] = [
        "client_secret_env",
        "client_secret_file",
        "private_key_env",
        "private_key_file",
    ];
    match grant {
        "authorization_code" => &["token_store"],
        "client_credentials" => &[
            "client_id",
            CREDENTIALS[0],
            CREDENTIALS[1],
            CREDENTIALS[2],
            CREDENTIALS[3],
            "scope",
            "token_endpoint_auth_method",
            "dpop",
        ],
        "jwt_bearer" => &[
            "client_id",
            CREDENTIALS[0],
            CREDENTIALS[1],
            CREDENTIALS[2],
            CREDENTIALS[3],
            "workload_token_env",
            "workload_token_file",
            "scope",
            "token_endpoint_auth_method",
            "dpop",
        ],
        _ => &[
            "client_id",
            CREDENTIALS[0],
            CREDENTIALS[1],
            CREDENTIALS[2],
            CREDENTIALS[3],
            "idp_token_endpoint",
            "idp_client_id",
            "idp_client_secret_env",
            "idp_client_secret_file",
            "id_token_env",
            "id_token_file",
            "scope",
            "token_endpoint_auth_method",
            "dpop",
        ],
    }
}

const GRANTS: &str =
    "\"client_credentials\", \"authorization_code\", \"jwt_bearer\" or \"enterprise_managed\"";

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
    // `NAME_env` or `NAME_file`: at most one of the two.
    let secret_ref = |prefix: &str| -> Result<Option<SecretRef>, ConfigError> {
        let (env_member, file_member) = (format!("{prefix}_env"), format!("{prefix}_file"));
        match (env(&env_member)?, path(&file_member)?) {
            (Some(_), Some(_)) => Err(error(
                &file_member,
                format!("give one of {env_member} and {file_member}, not both"),
            )),
            (Some(v), None) => Ok(Some(SecretRef::Env(v))),
            (None, Some(p)) => Ok(Some(SecretRef::File(p))),
            (None, None) => Ok(None),
        }
    };
    let grant = match string("grant")? {
        Some(
            grant @ ("authorization_code" | "client_credentials" | "jwt_bearer"
            | "enterprise_managed"),
        ) => grant,
        Some(_) => return Err(error("grant", format!("must be {GRANTS}"))),
        None => return Err(error("grant", format!("missing: {GRANTS}"))),
    };
    let taken = allowed(grant);
    if let Some(member) = auth
        .keys()
        .find(|m| *m != "grant" && !taken.contains(&m.as_str()))
    {
        let why = match (member.as_str(), grant) {
            ("dpop", "authorization_code") => {
                " (DPoP-bound tokens are not kept in a token store, and this grant's tokens \
                 live there)"
            }
            _ => "",
        };
        return Err(error(
            member,
            format!("not with \"grant\": \"{grant}\"{why}"),
        ));
    }
    if grant == "authorization_code" {
        let token_store = path("token_store")?.ok_or_else(|| {
            error(
                "token_store",
                "missing: the absolute path of the token store `mcp-tools -login` wrote".to_owned(),
            )
        })?;
        return Ok(AuthSettings::AuthorizationCode { token_store });
    }
    let client_id = string("client_id")?
        .ok_or_else(|| error("client_id", "missing (the client's id)".to_owned()))?;
    check_client_id(client_id).map_err(|m| error("client_id", m))?;
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
        0 if grant == "client_credentials" => {
            return Err(error(
                "client_secret_env",
                "missing: name the client's secret or key with one of client_secret_env, \
                 client_secret_file, private_key_env, private_key_file"
                    .to_owned(),
            ));
        }
        0 => None,
        1 => Some(sources.remove(0).1),
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
        check_method(method, credential.as_ref(), grant == "client_credentials")
            .map_err(|m| error("token_endpoint_auth_method", m))?;
    }
    let dpop = match auth.get("dpop") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(error("dpop", "must be true or false".to_owned())),
    };
    match grant {
        "client_credentials" => Ok(AuthSettings::ClientCredentials {
            client_id: client_id.to_owned(),
            credential: credential.expect("checked above"),
            scope,
            token_endpoint_auth_method: method,
            dpop,
        }),
        "jwt_bearer" => {
            let workload_token = secret_ref("workload_token")?.ok_or_else(|| {
                error(
                    "workload_token_file",
                    "missing: name the workload token with workload_token_file (read again at \
                     each use) or workload_token_env"
                        .to_owned(),
                )
            })?;
            Ok(AuthSettings::JwtBearer {
                client_id: client_id.to_owned(),
                credential,
                workload_token,
                scope,
                token_endpoint_auth_method: method,
                dpop,
            })
        }
        _ => {
            let endpoint = string("idp_token_endpoint")?.ok_or_else(|| {
                error(
                    "idp_token_endpoint",
                    "missing (the enterprise IdP's token endpoint)".to_owned(),
                )
            })?;
            match crate::auth::Url::parse(endpoint) {
                Ok(url) if url.is_secure() => {}
                _ => {
                    return Err(error(
                        "idp_token_endpoint",
                        "must be an https URL (or http on a loopback address)".to_owned(),
                    ));
                }
            }
            let idp_client_id = string("idp_client_id")?.ok_or_else(|| {
                error(
                    "idp_client_id",
                    "missing (this client's id at the IdP)".to_owned(),
                )
            })?;
            check_client_id(idp_client_id).map_err(|m| error("idp_client_id", m))?;
            let id_token = secret_ref("id_token")?.ok_or_else(|| {
                error(
                    "id_token_file",
                    "missing: name the user's ID token with id_token_file or id_token_env"
                        .to_owned(),
                )
            })?;
            Ok(AuthSettings::EnterpriseManaged {
                client_id: client_id.to_owned(),
                credential,
                idp_token_endpoint: endpoint.to_owned(),
                idp_client_id: idp_client_id.to_owned(),
                idp_client_secret: secret_ref("idp_client_secret")?,
                id_token,
                scope,
                token_endpoint_auth_method: method,
                dpop,
            })
        }
    }
}

fn check_client_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.chars().any(char::is_control) {
        return Err("must be a non-empty string without control characters".to_owned());
    }
    Ok(())
}

/// `token_endpoint_auth_method` against the credential: a secret's methods with a secret,
/// `private_key_jwt` with a key, `none` (not for client credentials) with neither.
fn check_method(
    method: &str,
    credential: Option<&ClientCredential>,
    client_credentials: bool,
) -> Result<(), String> {
    let key = matches!(
        credential,
        Some(ClientCredential::PrivateKeyEnv(_) | ClientCredential::PrivateKeyFile(_))
    );
    let fits = match method {
        "client_secret_basic" | "client_secret_post" => credential.is_some() && !key,
        "private_key_jwt" => key,
        "none" if !client_credentials => credential.is_none(),
        _ if client_credentials => {
            return Err(
                "must be client_secret_basic, client_secret_post or private_key_jwt".to_owned(),
            );
        }
        _ => {
            return Err(
                "must be client_secret_basic, client_secret_post, private_key_jwt or none"
                    .to_owned(),
            );
        }
    };
    if fits {
        return Ok(());
    }
    Err(match credential {
        Some(credential) => format!("{method} does not go with {}", credential.member().0),
        None => format!("{method} needs a client secret or key"),
    })
}
