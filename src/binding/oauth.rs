//! The OAuth a binding's `auth` block makes: its client secrets and keys read at call time
//! (from a variable of the host's [`TokenSource`] or a file), its workload and ID tokens at
//! each use, its token store for the authorization-code grant.

use std::sync::Arc;

use super::call::TokenSource;
use super::config::{AuthSettings, ClientCredential, SecretRef};
use crate::client::auth::OAuth;
use crate::client::auth::store::{StoreError, TokenStore, Unattended};
use crate::error::ErrorKind;
use crate::secret::Secret;
use crate::transport::WireLog;

/// The most bytes read from a binding's `client_secret_file` or `private_key_file`.
const MAX_CREDENTIAL_FILE_BYTES: u64 = 64 * 1024;

/// Makes the OAuth of a binding's `auth` block (see [OAuth](super::config#oauth)): its
/// secrets and keys read now through `tokens` (a variable) or from their files, its
/// workload and ID tokens at each use. For the [`Caller`](super::call::Caller) and discovery.
pub(crate) struct OAuthMaker<'a> {
    pub(crate) tokens: &'a Arc<dyn TokenSource>,
    pub(crate) wire_log: Option<&'a WireLog>,
    /// The most seconds each of the flow's requests may take (a binding's timeout), if not
    /// the flow's default.
    pub(crate) timeout_secs: Option<u64>,
}

impl OAuthMaker<'_> {
    pub(crate) fn make(
        &self,
        url: &str,
        settings: &AuthSettings,
    ) -> Result<OAuth, (ErrorKind, String)> {
        let config_error = |message: String| (ErrorKind::Config, message);
        let made = |config: Result<crate::auth::Config, crate::auth::Error>| {
            config.map_err(|e| config_error(format!("auth: {e}")))
        };
        let finish = |mut config: crate::auth::Config, scope: &Option<String>, dpop: bool| {
            config.scope = scope
                .as_deref()
                .and_then(|s| crate::auth::Scopes::parse(s).ok());
            if let Some(secs) = self.timeout_secs {
                config.limits.request_timeout_secs = secs;
            }
            if dpop {
                // The flow makes the key, of an algorithm the servers take, once it has the
                // authorization server's metadata; in memory for the Caller's life.
                config.dpop = Some(crate::auth::Dpop::default());
            }
            OAuth::new(config, None).map_err(|e| config_error(format!("auth: {e}")))
        };
        match settings {
            AuthSettings::ClientCredentials {
                client_id,
                credential,
                scope,
                token_endpoint_auth_method,
                dpop,
            } => {
                let client =
                    self.client(client_id, Some(credential), token_endpoint_auth_method)?;
                finish(
                    made(crate::auth::Config::client_credentials(url, client))?,
                    scope,
                    *dpop,
                )
            }
            AuthSettings::JwtBearer {
                client_id,
                credential,
                workload_token,
                scope,
                token_endpoint_auth_method,
                dpop,
            } => {
                let client =
                    self.client(client_id, credential.as_ref(), token_endpoint_auth_method)?;
                let source = self.assertion_source(workload_token, "workload_token");
                let config = made(crate::auth::Config::jwt_bearer(url, client, source))?;
                finish(config, scope, *dpop)
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
                let client =
                    self.client(client_id, credential.as_ref(), token_endpoint_auth_method)?;
                let mut idp_client = crate::auth::PreRegistered::new(idp_client_id.clone());
                if let Some(secret) = idp_client_secret {
                    let (member, _) = secret.member("idp_client_secret");
                    let text = self.read_secret(secret, &member)?;
                    idp_client.client_secret = Some(Secret::new(text.expose().trim()));
                }
                let endpoint = crate::auth::Url::parse(idp_token_endpoint)
                    .map_err(|e| config_error(format!("auth.idp_token_endpoint: {e}")))?;
                let idp = crate::auth::EnterpriseIdp::new(
                    endpoint,
                    idp_client,
                    self.assertion_source(id_token, "id_token"),
                );
                let config = made(crate::auth::Config::enterprise_managed(url, client, idp))?;
                finish(config, scope, *dpop)
            }
            AuthSettings::AuthorizationCode { token_store } => {
                let store = TokenStore::load(token_store).map_err(|e| match &e {
                    StoreError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound => (
                        ErrorKind::Unauthorized,
                        format!(
                            "{e}: log in first with `mcp-tools -url URL -login -token-store {}`",
                            token_store.display()
                        ),
                    ),
                    _ => config_error(format!("auth.token_store: {e}")),
                })?;
                if store.server() != url {
                    return Err(config_error(format!(
                        "auth.token_store: {} holds tokens for another server than this \
                         binding's url",
                        token_store.display()
                    )));
                }
                if let Some(log) = self.wire_log {
                    store.set_error_sink(log.clone());
                }
                let store = Arc::new(store);
                let mut config = store
                    .config()
                    .map_err(|e| config_error(format!("auth.token_store: {e}")))?;
                if let Some(secs) = self.timeout_secs {
                    config.limits.request_timeout_secs = secs;
                }
                store
                    .oauth_with(config, Arc::new(Unattended::new(token_store)))
                    .map_err(|e| config_error(format!("auth.token_store: {e}")))
            }
        }
    }

    /// The client of an `auth` block: its id, and its secret or key read now (at the first
    /// call, never when the config is loaded).
    fn client(
        &self,
        client_id: &str,
        credential: Option<&ClientCredential>,
        method: &Option<String>,
    ) -> Result<crate::auth::PreRegistered, (ErrorKind, String)> {
        let mut client = crate::auth::PreRegistered::new(client_id);
        client.auth_method = method
            .as_deref()
            .and_then(crate::auth::AuthMethod::from_name);
        let Some(credential) = credential else {
            return Ok(client);
        };
        let (member, _) = credential.member();
        let reference = match credential {
            ClientCredential::SecretEnv(v) | ClientCredential::PrivateKeyEnv(v) => {
                SecretRef::Env(v.clone())
            }
            ClientCredential::SecretFile(p) | ClientCredential::PrivateKeyFile(p) => {
                SecretRef::File(p.clone())
            }
        };
        let text = self.read_secret(&reference, member)?;
        match credential {
            ClientCredential::SecretEnv(_) | ClientCredential::SecretFile(_) => {
                client.client_secret = Some(Secret::new(text.expose().trim()));
            }
            _ => {
                let key =
                    crate::auth::SigningKey::from_pkcs8_pem(text.expose(), None).map_err(|_| {
                        (
                            ErrorKind::Config,
                            format!(
                                "auth.{member}: not an unencrypted PEM PKCS#8 P-256 key \
                                 (-----BEGIN PRIVATE KEY-----)"
                            ),
                        )
                    })?;
                client.signing_key = Some(Arc::new(key));
            }
        }
        Ok(client)
    }

    /// A secret an `auth` member names, read now through the token source (a variable) or
    /// from its file; the error names the member and the variable or path, never the value.
    fn read_secret(
        &self,
        reference: &SecretRef,
        member: &str,
    ) -> Result<Secret, (ErrorKind, String)> {
        match reference {
            SecretRef::Env(variable) => self.tokens.token(variable).ok_or_else(|| {
                (
                    ErrorKind::MissingToken,
                    format!("the environment variable {variable} (auth.{member}) is not set"),
                )
            }),
            SecretRef::File(path) => read_credential_file(path).map_err(|why| {
                (
                    ErrorKind::MissingToken,
                    format!("auth.{member} {}: {why}", path.display()),
                )
            }),
        }
    }

    /// Where the flow reads a workload token or an ID token at each use: the file itself, or
    /// the variable through the host's token source.
    fn assertion_source(
        &self,
        reference: &SecretRef,
        prefix: &str,
    ) -> crate::auth::AssertionSource {
        match reference {
            SecretRef::File(path) => crate::auth::AssertionSource::File(path.clone()),
            SecretRef::Env(variable) => crate::auth::AssertionSource::Host(Arc::new(FromTokens {
                tokens: self.tokens.clone(),
                variable: variable.clone(),
                member: format!("{prefix}_env"),
            })),
        }
    }
}

/// An assertion read at each use from a variable of the host's token source.
struct FromTokens {
    tokens: Arc<dyn TokenSource>,
    variable: String,
    member: String,
}

impl crate::auth::AssertionProvider for FromTokens {
    fn assertion(&self) -> crate::auth::AssertionFuture {
        let read = self.tokens.token(&self.variable).ok_or_else(|| {
            format!(
                "the environment variable {} (auth.{}) is not set",
                self.variable, self.member
            )
        });
        Box::pin(async move { read })
    }
}

/// A client secret or key from a file: at most [`MAX_CREDENTIAL_FILE_BYTES`], UTF-8.
fn read_credential_file(path: &std::path::Path) -> Result<Secret, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_CREDENTIAL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_CREDENTIAL_FILE_BYTES {
        return Err(format!("larger than {MAX_CREDENTIAL_FILE_BYTES} bytes"));
    }
    String::from_utf8(bytes)
        .map(Secret::new)
        .map_err(|_| "not UTF-8 text".to_owned())
}
