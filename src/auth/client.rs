//! The OAuth client's identity and its requests: pre-registered clients, Client ID Metadata
//! Documents, dynamic client registration (RFC 7591), the token endpoint authentication
//! methods (RFC 6749 section 2.3.1, RFC 7523 section 2.2), and the HTTP requests of the token
//! and registration endpoints, built by hand.

use std::fmt;
use std::sync::Arc;

use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;

use super::assertion::{ID_JAG_TYPE, ID_TOKEN_TYPE, JWT_BEARER, TOKEN_EXCHANGE};
use super::crypto::{self, CryptoError, Randomness, SigningKey};
use super::metadata::{DocumentError, ServerMetadata, parse_json};
use super::scope::Scopes;
use super::token::{MAX_TOKEN_RESPONSE_BYTES, OAuthError};
use super::url::{Url, encode_component, encode_form};
use crate::base64::{self, Flavor};
use crate::secret::Secret;

/// The longest client id taken from a registration answer.
pub(crate) const MAX_CLIENT_ID_BYTES: usize = 1024;

/// How the client proves itself to the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthMethod {
    /// A public client: only `client_id` in the body.
    None,
    /// `Authorization: Basic` with the form-encoded id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// A JWT signed with the client's key (RFC 7523), ES256.
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The registered name (RFC 7591 section 2, `token_endpoint_auth_method`).
    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method a registered name stands for.
    pub(crate) fn from_name(name: &str) -> Option<AuthMethod> {
        [
            AuthMethod::None,
            AuthMethod::ClientSecretBasic,
            AuthMethod::ClientSecretPost,
            AuthMethod::PrivateKeyJwt,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// A client registered with an authorization server beforehand (the spec's first choice).
#[derive(Clone)]
pub struct PreRegistered {
    /// The client id.
    pub client_id: String,
    /// The client secret, for `client_secret_basic` or `client_secret_post`.
    pub client_secret: Option<Secret>,
    /// The key for `private_key_jwt`.
    pub signing_key: Option<Arc<SigningKey>>,
    /// The issuer this client belongs to. When set, the client is used with that
    /// authorization server only (the 2026-07-28 "Authorization Server Binding").
    pub issuer: Option<String>,
    /// The method to use; chosen from the server's metadata when `None`.
    pub auth_method: Option<AuthMethod>,
}

impl fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("signing_key", &self.signing_key)
            .field("issuer", &self.issuer)
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

impl PreRegistered {
    /// A client with an id only (a public client).
    pub fn new(client_id: impl Into<String>) -> PreRegistered {
        PreRegistered {
            client_id: client_id.into(),
            client_secret: None,
            signing_key: None,
            issuer: None,
            auth_method: None,
        }
    }
}

/// What kind of application registers (OpenID Connect Registration `application_type`,
/// which the 2026-07-28 revision requires in a registration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplicationType {
    /// A program on the user's machine with a loopback redirect URI.
    Native,
    /// A web application with an `https` redirect URI.
    Web,
}

/// How the client describes itself in a dynamic registration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientMetadata {
    /// `client_name`, shown to the user on the consent page.
    pub client_name: String,
    /// `client_uri`, if any.
    pub client_uri: Option<String>,
    /// `application_type`.
    pub application_type: ApplicationType,
}

/// The identity the flow uses with one authorization server.
#[derive(Clone)]
pub(crate) struct Identity {
    pub(crate) client_id: String,
    pub(crate) secret: Option<Secret>,
    pub(crate) key: Option<Arc<SigningKey>>,
    pub(crate) method: AuthMethod,
}

impl Identity {
    /// An identity with the method chosen for `server`: the registered or configured one if
    /// the client can do it, else `private_key_jwt` with a key the server takes with ES256,
    /// else with a secret `client_secret_basic`, then `client_secret_post`, then `none` as
    /// the server accepts them (`client_secret_basic` when it names none it takes), else `none`.
    pub(crate) fn new(
        client_id: String,
        secret: Option<Secret>,
        key: Option<Arc<SigningKey>>,
        registered: Option<AuthMethod>,
        server: &ServerMetadata,
    ) -> Identity {
        let can = |m: AuthMethod| match m {
            AuthMethod::None => true,
            AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost => secret.is_some(),
            AuthMethod::PrivateKeyJwt => key.is_some(),
        };
        let es256 = server
            .token_endpoint_auth_signing_alg_values_supported
            .as_ref()
            .is_none_or(|algs| algs.iter().any(|a| a == "ES256"));
        let method = registered.filter(|&m| can(m)).unwrap_or_else(|| {
            if key.is_some() && es256 && server.accepts_auth_method("private_key_jwt") {
                AuthMethod::PrivateKeyJwt
            } else if secret.is_some() {
                [
                    AuthMethod::ClientSecretBasic,
                    AuthMethod::ClientSecretPost,
                    AuthMethod::None,
                ]
                .into_iter()
                .find(|m| server.accepts_auth_method(m.name()))
                .unwrap_or(AuthMethod::ClientSecretBasic)
            } else {
                AuthMethod::None
            }
        });
        Identity {
            client_id,
            secret,
            key,
            method,
        }
    }
}

/// A token request's grant (OAuth 2.1 section 3.2.2 and 4).
pub(crate) enum Grant<'a> {
    AuthorizationCode {
        code: &'a Secret,
        redirect_uri: &'a str,
        verifier: &'a Secret,
    },
    RefreshToken {
        refresh_token: &'a Secret,
    },
    ClientCredentials {
        scope: Option<&'a Scopes>,
    },
    /// RFC 7523 section 2.1: a workload token or an ID-JAG as the grant.
    JwtBearer {
        assertion: &'a Secret,
        scope: Option<&'a Scopes>,
    },
    /// RFC 8693 section 2.1: the user's ID token for an ID-JAG for `audience` (the MCP
    /// server's authorization server's issuer).
    TokenExchange {
        subject_token: &'a Secret,
        audience: &'a str,
        scope: Option<&'a Scopes>,
    },
}

fn header(value: &str) -> Result<HeaderValue, CryptoError> {
    HeaderValue::from_str(value).map_err(|_| CryptoError::Sign)
}

/// A form POST to the token endpoint, with the client authenticated as its method says.
/// Returns the request and the assertion made for it (a secret to redact), if any.
pub(crate) fn token_request(
    endpoint: &Url,
    grant: Grant<'_>,
    resource: &str,
    client: &Identity,
    issuer: &str,
    now_unix: u64,
    random: &dyn Randomness,
) -> Result<(http::Request<Vec<u8>>, Option<Secret>), CryptoError> {
    let scope_text;
    let mut form: Vec<(&str, &str)> = Vec::new();
    match &grant {
        Grant::AuthorizationCode {
            code,
            redirect_uri,
            verifier,
        } => {
            form.push(("grant_type", "authorization_code"));
            form.push(("code", code.expose()));
            form.push(("redirect_uri", redirect_uri));
            form.push(("code_verifier", verifier.expose()));
        }
        Grant::RefreshToken { refresh_token } => {
            form.push(("grant_type", "refresh_token"));
            form.push(("refresh_token", refresh_token.expose()));
        }
        Grant::ClientCredentials { scope } => {
            form.push(("grant_type", "client_credentials"));
            if let Some(scope) = scope.filter(|s| !s.is_empty()) {
                scope_text = scope.to_string();
                form.push(("scope", &scope_text));
            }
        }
        Grant::JwtBearer { assertion, scope } => {
            form.push(("grant_type", JWT_BEARER));
            form.push(("assertion", assertion.expose()));
            if let Some(scope) = scope.filter(|s| !s.is_empty()) {
                scope_text = scope.to_string();
                form.push(("scope", &scope_text));
            }
        }
        Grant::TokenExchange {
            subject_token,
            audience,
            scope,
        } => {
            form.push(("grant_type", TOKEN_EXCHANGE));
            form.push(("requested_token_type", ID_JAG_TYPE));
            form.push(("subject_token", subject_token.expose()));
            form.push(("subject_token_type", ID_TOKEN_TYPE));
            form.push(("audience", audience));
            if let Some(scope) = scope.filter(|s| !s.is_empty()) {
                scope_text = scope.to_string();
                form.push(("scope", &scope_text));
            }
        }
    }
    // RFC 8707: the resource on every token request, refreshes included.
    form.push(("resource", resource));
    let mut basic = None;
    let mut assertion = None;
    match client.method {
        AuthMethod::None => form.push(("client_id", &client.client_id)),
        AuthMethod::ClientSecretPost => {
            form.push(("client_id", &client.client_id));
            if let Some(secret) = &client.secret {
                form.push(("client_secret", secret.expose()));
            }
        }
        AuthMethod::ClientSecretBasic => {
            // The id goes in the form too (not the secret: one authentication method per
            // request). RFC 6749 asks for it only from clients that do not authenticate, but
            // authorization servers may require it: the official Python SDK's refuses a token
            // request without it ("Missing client_id") whatever the method.
            form.push(("client_id", &client.client_id));
            let secret = client.secret.as_ref().map_or("", Secret::expose);
            let pair = format!(
                "{}:{}",
                encode_component(&client.client_id),
                encode_component(secret)
            );
            basic = Some(Secret::new(format!(
                "Basic {}",
                base64::encode(pair.as_bytes(), Flavor::Standard)
            )));
        }
        AuthMethod::PrivateKeyJwt => {
            let key = client.key.as_ref().ok_or(CryptoError::Key)?;
            let claims = crypto::assertion_claims(&client.client_id, issuer, now_unix, random)?;
            assertion = Some(key.sign_jwt(&claims)?);
        }
    }
    if let Some(assertion) = &assertion {
        form.push((
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ));
        form.push(("client_assertion", assertion.expose()));
    }
    let body = encode_form(&form).into_bytes();
    let mut request = post(endpoint, "application/x-www-form-urlencoded", body)?;
    if let Some(basic) = basic {
        let mut value = header(basic.expose())?;
        value.set_sensitive(true);
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    Ok((request, assertion))
}

fn post(
    endpoint: &Url,
    content_type: &'static str,
    body: Vec<u8>,
) -> Result<http::Request<Vec<u8>>, CryptoError> {
    let uri = endpoint.to_uri().map_err(|_| CryptoError::Sign)?;
    http::Request::post(uri)
        .header(CONTENT_TYPE, content_type)
        .header(ACCEPT, "application/json")
        .body(body)
        .map_err(|_| CryptoError::Sign)
}

/// A GET of a metadata document.
pub(crate) fn get(url: &Url) -> Option<http::Request<Vec<u8>>> {
    http::Request::get(url.to_uri().ok()?)
        .header(ACCEPT, "application/json")
        .body(Vec::new())
        .ok()
}

/// The RFC 7591 registration request: a native (or web) client using the authorization code
/// with refresh tokens, its redirect URI, the scopes it will ask for (`scope`, when there are
/// any), and the authentication method it asks for (`none` unless the server takes only
/// secrets).
pub(crate) fn registration_request(
    endpoint: &Url,
    metadata: &ClientMetadata,
    redirect_uri: &str,
    scope: Option<&str>,
    server: &ServerMetadata,
) -> Option<http::Request<Vec<u8>>> {
    let method = [
        AuthMethod::None,
        AuthMethod::ClientSecretBasic,
        AuthMethod::ClientSecretPost,
    ]
    .into_iter()
    .find(|m| {
        server.token_endpoint_auth_methods_supported.is_none() && *m == AuthMethod::None
            || server.accepts_auth_method(m.name())
    })
    .unwrap_or(AuthMethod::None);
    let mut body = serde_json::json!({
        "client_name": metadata.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method.name(),
        "application_type": match metadata.application_type {
            ApplicationType::Native => "native",
            ApplicationType::Web => "web",
        },
    });
    if let Some(uri) = &metadata.client_uri {
        body["client_uri"] = serde_json::Value::String(uri.clone());
    }
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        body["scope"] = serde_json::Value::String(scope.to_owned());
    }
    post(endpoint, "application/json", body.to_string().into_bytes()).ok()
}

/// What a registration endpoint answered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A success status with a body that is not a registration.
    Document(DocumentError),
    /// An OAuth error answer (`invalid_redirect_uri`, `invalid_client_metadata`...).
    Refused(OAuthError),
    /// Any other status.
    Status(u16),
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistrationError::Document(e) => e.fmt(f),
            RegistrationError::Refused(e) => write!(f, "refused: {e}"),
            RegistrationError::Status(s) => write!(f, "answered HTTP {s}"),
        }
    }
}

impl std::error::Error for RegistrationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegistrationError::Document(e) => Some(e),
            _ => None,
        }
    }
}

/// A registration answer (RFC 7591 section 3.2.1), the members the client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) auth_method: Option<AuthMethod>,
}

/// Parses a registration endpoint's answer.
pub(crate) fn parse_registration(
    status: u16,
    body: &[u8],
) -> Result<Registration, RegistrationError> {
    #[derive(Deserialize)]
    struct Raw {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    if !(200..300).contains(&status) {
        return Err(OAuthError::of_answer(status, body, &[400]).map_or(
            RegistrationError::Status(status),
            RegistrationError::Refused,
        ));
    }
    let raw: Raw =
        parse_json(body, MAX_TOKEN_RESPONSE_BYTES).map_err(RegistrationError::Document)?;
    let visible = |s: &str| s.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if raw.client_id.is_empty()
        || raw.client_id.len() > MAX_CLIENT_ID_BYTES
        || !visible(&raw.client_id)
    {
        return Err(RegistrationError::Document(DocumentError::Invalid(
            "client_id",
        )));
    }
    if raw
        .client_secret
        .as_deref()
        .is_some_and(|s| s.is_empty() || s.len() > MAX_CLIENT_ID_BYTES)
    {
        return Err(RegistrationError::Document(DocumentError::Invalid(
            "client_secret",
        )));
    }
    Ok(Registration {
        client_id: raw.client_id,
        client_secret: raw.client_secret.map(Secret::new),
        // A method this client does not know is left to the choice from the metadata.
        auth_method: raw
            .token_endpoint_auth_method
            .as_deref()
            .and_then(AuthMethod::from_name),
    })
}

/// Whether `url` can be a Client ID Metadata Document's `client_id`: `https` with a path.
pub(crate) fn valid_metadata_document_url(url: &Url) -> bool {
    url.is_https() && !matches!(url.path(), "" | "/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::crypto::tests::test_key_pem;
    use crate::auth::url::decode_form;

    fn server(methods: Option<&[&str]>) -> ServerMetadata {
        let mut meta =
            ServerMetadata::defaults_for(&Url::parse("https://as.example.com").unwrap()).unwrap();
        meta.token_endpoint_auth_methods_supported =
            methods.map(|m| m.iter().map(|s| s.to_string()).collect());
        meta
    }

    fn form(request: &http::Request<Vec<u8>>) -> Vec<(String, String)> {
        decode_form(std::str::from_utf8(request.body()).unwrap()).unwrap()
    }

    fn value<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
        form.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn method_choice() {
        let secret = Some(Secret::new("s3cret"));
        let key = Some(Arc::new(
            SigningKey::from_pkcs8_pem(&test_key_pem(), None).unwrap(),
        ));
        let pick = |secret: Option<Secret>, key, registered, methods| {
            Identity::new("c".into(), secret, key, registered, &server(methods)).method
        };
        assert_eq!(pick(None, None, None, Some(&["none"])), AuthMethod::None);
        assert_eq!(
            pick(secret.clone(), None, None, Some(&["client_secret_basic"])),
            AuthMethod::ClientSecretBasic
        );
        assert_eq!(
            pick(secret.clone(), None, None, Some(&["client_secret_post"])),
            AuthMethod::ClientSecretPost
        );
        assert_eq!(
            pick(secret.clone(), None, None, Some(&["none"])),
            AuthMethod::None
        );
        assert_eq!(
            pick(secret.clone(), None, None, None),
            AuthMethod::ClientSecretBasic
        );
        assert_eq!(
            pick(
                secret.clone(),
                key.clone(),
                None,
                Some(&["client_secret_basic", "private_key_jwt"])
            ),
            AuthMethod::PrivateKeyJwt
        );
        assert_eq!(
            pick(None, key.clone(), None, Some(&["none"])),
            AuthMethod::None
        );
        // What the registration says wins, if the client can do it.
        assert_eq!(
            pick(
                secret.clone(),
                None,
                Some(AuthMethod::ClientSecretPost),
                Some(&["none"])
            ),
            AuthMethod::ClientSecretPost
        );
        assert_eq!(
            pick(
                None,
                None,
                Some(AuthMethod::ClientSecretPost),
                Some(&["client_secret_post", "none"])
            ),
            AuthMethod::None
        );
        // A key is not used where the server signs with other algorithms only.
        let mut rs_only = server(Some(&["private_key_jwt"]));
        rs_only.token_endpoint_auth_signing_alg_values_supported = Some(vec!["RS256".into()]);
        let identity = Identity::new("c".into(), None, key, None, &rs_only);
        assert_eq!(identity.method, AuthMethod::None);
    }

    #[test]
    fn token_requests_per_method() {
        let endpoint = Url::parse("https://as.example.com/token").unwrap();
        let meta = server(None);
        let code = Secret::new("code-1");
        let verifier = Secret::new("verifier-1");
        let grant = || Grant::AuthorizationCode {
            code: &code,
            redirect_uri: "http://127.0.0.1:5000/callback",
            verifier: &verifier,
        };
        let mut identity = Identity::new(
            "client 1".into(),
            Some(Secret::new("p@ss:w")),
            None,
            Some(AuthMethod::ClientSecretBasic),
            &meta,
        );
        let (request, assertion) = token_request(
            &endpoint,
            grant(),
            "https://mcp.example.com/mcp",
            &identity,
            &meta.issuer,
            0,
            &crate::auth::crypto::SystemRandomness,
        )
        .unwrap();
        assert!(assertion.is_none());
        assert_eq!(request.method(), http::Method::POST);
        assert_eq!(request.uri(), "https://as.example.com/token");
        assert_eq!(
            request.headers()[CONTENT_TYPE],
            "application/x-www-form-urlencoded"
        );
        let auth = &request.headers()[AUTHORIZATION];
        assert!(auth.is_sensitive());
        assert_eq!(
            auth,
            &format!(
                "Basic {}",
                base64::encode(b"client%201:p%40ss%3Aw", Flavor::Standard)
            )
        );
        let body = form(&request);
        assert_eq!(value(&body, "grant_type"), Some("authorization_code"));
        assert_eq!(value(&body, "code"), Some("code-1"));
        assert_eq!(value(&body, "code_verifier"), Some("verifier-1"));
        assert_eq!(
            value(&body, "redirect_uri"),
            Some("http://127.0.0.1:5000/callback")
        );
        assert_eq!(
            value(&body, "resource"),
            Some("https://mcp.example.com/mcp")
        );
        // The id in the form too (authorization servers may require it); never the secret.
        assert_eq!(value(&body, "client_id"), Some("client 1"));
        assert_eq!(value(&body, "client_secret"), None);

        identity.method = AuthMethod::ClientSecretPost;
        let refresh = Secret::new("rt-1");
        let (request, _) = token_request(
            &endpoint,
            Grant::RefreshToken {
                refresh_token: &refresh,
            },
            "r",
            &identity,
            &meta.issuer,
            0,
            &crate::auth::crypto::SystemRandomness,
        )
        .unwrap();
        assert!(request.headers().get(AUTHORIZATION).is_none());
        let body = form(&request);
        assert_eq!(value(&body, "grant_type"), Some("refresh_token"));
        assert_eq!(value(&body, "refresh_token"), Some("rt-1"));
        assert_eq!(value(&body, "client_id"), Some("client 1"));
        assert_eq!(value(&body, "client_secret"), Some("p@ss:w"));
        assert_eq!(value(&body, "resource"), Some("r"));

        identity.method = AuthMethod::None;
        let (request, _) = token_request(
            &endpoint,
            grant(),
            "r",
            &identity,
            &meta.issuer,
            0,
            &crate::auth::crypto::SystemRandomness,
        )
        .unwrap();
        let body = form(&request);
        assert_eq!(value(&body, "client_id"), Some("client 1"));
        assert_eq!(value(&body, "client_secret"), None);

        let key = Arc::new(SigningKey::from_pkcs8_pem(&test_key_pem(), None).unwrap());
        let jwt_client = Identity::new(
            "cc".into(),
            None,
            Some(key),
            Some(AuthMethod::PrivateKeyJwt),
            &meta,
        );
        let scope = Scopes::parse("mcp:read").unwrap();
        let (request, assertion) = token_request(
            &endpoint,
            Grant::ClientCredentials {
                scope: Some(&scope),
            },
            "r",
            &jwt_client,
            "https://as.example.com",
            1_700_000_000,
            &crate::auth::crypto::SystemRandomness,
        )
        .unwrap();
        let body = form(&request);
        assert_eq!(value(&body, "grant_type"), Some("client_credentials"));
        assert_eq!(value(&body, "scope"), Some("mcp:read"));
        assert_eq!(value(&body, "client_id"), None);
        assert_eq!(
            value(&body, "client_assertion_type"),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        assert_eq!(
            value(&body, "client_assertion"),
            Some(assertion.unwrap().expose())
        );
    }

    #[test]
    fn a_registration_names_the_scopes_the_client_will_ask_for() {
        let endpoint = Url::parse("https://as.example.com/register").unwrap();
        let metadata = ClientMetadata {
            client_name: "mcpwire".into(),
            client_uri: None,
            application_type: ApplicationType::Native,
        };
        for (scope, expected) in [
            (
                Some("mcp:tools offline_access"),
                Some("mcp:tools offline_access"),
            ),
            (Some(""), None),
            (None, None),
        ] {
            let request = registration_request(
                &endpoint,
                &metadata,
                "http://127.0.0.1:1/cb",
                scope,
                &server(None),
            )
            .unwrap();
            let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
            assert_eq!(
                body.get("scope").and_then(|s| s.as_str()),
                expected,
                "{scope:?}"
            );
        }
    }

    #[test]
    fn registration_round() {
        let endpoint = Url::parse("https://as.example.com/register").unwrap();
        let metadata = ClientMetadata {
            client_name: "mcpwire".into(),
            client_uri: None,
            application_type: ApplicationType::Native,
        };
        for (methods, expected) in [
            (None, "none"),
            (Some(&["none", "client_secret_basic"][..]), "none"),
            (Some(&["client_secret_post"][..]), "client_secret_post"),
            (Some(&["client_secret_basic"][..]), "client_secret_basic"),
            (Some(&["private_key_jwt"][..]), "none"),
        ] {
            let request = registration_request(
                &endpoint,
                &metadata,
                "http://127.0.0.1:1/cb",
                None,
                &server(methods),
            )
            .unwrap();
            let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
            assert_eq!(body["token_endpoint_auth_method"], expected);
            assert!(body.get("scope").is_none(), "no scopes, no scope member");
            assert_eq!(body["application_type"], "native");
            assert_eq!(
                body["redirect_uris"],
                serde_json::json!(["http://127.0.0.1:1/cb"])
            );
            assert_eq!(
                body["grant_types"],
                serde_json::json!(["authorization_code", "refresh_token"])
            );
            assert_eq!(request.headers()[CONTENT_TYPE], "application/json");
        }

        let ok = parse_registration(201, br#"{"client_id":"c-1","client_secret":"s-1","token_endpoint_auth_method":"client_secret_post","redirect_uris":[]}"#).unwrap();
        assert_eq!(ok.client_id, "c-1");
        assert_eq!(ok.client_secret.unwrap().expose(), "s-1");
        assert_eq!(ok.auth_method, Some(AuthMethod::ClientSecretPost));
        let odd = parse_registration(
            200,
            br#"{"client_id":"c-1","token_endpoint_auth_method":"tls_client_auth"}"#,
        )
        .unwrap();
        assert_eq!(odd.auth_method, None);
        assert_eq!(
            parse_registration(400, br#"{"error":"invalid_redirect_uri"}"#),
            Err(RegistrationError::Refused(OAuthError {
                code: "invalid_redirect_uri".into(),
                description: None
            }))
        );
        assert_eq!(
            parse_registration(500, b""),
            Err(RegistrationError::Status(500))
        );
        for (bad, member) in [
            (r#"{"client_id":""}"#, "client_id"),
            (r#"{"client_id":"a b"}"#, "client_id"),
            (r#"{"client_id":"a","client_secret":""}"#, "client_secret"),
        ] {
            assert_eq!(
                parse_registration(201, bad.as_bytes()),
                Err(RegistrationError::Document(DocumentError::Invalid(member)))
            );
        }
        assert!(matches!(
            parse_registration(201, b"{}"),
            Err(RegistrationError::Document(DocumentError::Json { .. }))
        ));
    }

    #[test]
    fn metadata_document_urls() {
        for (text, ok) in [
            ("https://app.example.com/client.json", true),
            ("https://app.example.com/", false),
            ("https://app.example.com", false),
            ("http://app.example.com/client.json", false),
        ] {
            assert_eq!(
                valid_metadata_document_url(&Url::parse(text).unwrap()),
                ok,
                "{text}"
            );
        }
    }
}
