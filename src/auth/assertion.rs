//! Grants by assertion: the JWT-bearer grant (RFC 7523 section 2.1) with a workload's token
//! (workload identity federation, the `io.modelcontextprotocol/auth/wif` extension) or with an
//! identity assertion JWT authorization grant (ID-JAG) that an enterprise IdP gave for a
//! user's ID token by token exchange (RFC 8693; the
//! `io.modelcontextprotocol/enterprise-managed-authorization` extension); where those
//! assertions come from ([`AssertionSource`]); and the token-exchange answer.
//!
//! The flow never reads a file or a variable: it asks its driver for an assertion
//! ([`Output::Assertion`](super::Output::Assertion)) each time it needs one, and the driver
//! reads the source then (a platform rotates a workload token on disk, as Kubernetes does with
//! projected service-account tokens, so it is read again at each use).

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;

use super::client::PreRegistered;
use super::metadata::DocumentError;
use super::token::{MAX_TOKEN_BYTES, TokenResponseError, token_endpoint_json};
use super::url::Url;
use crate::secret::Secret;

/// `grant_type` of the JWT-bearer grant (RFC 7523 section 2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693 section 2.1).
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OpenID Connect ID token (RFC 8693 section 3).
pub(crate) const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion JWT authorization grant.
pub(crate) const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// The largest assertion (a workload token, an ID token) read from a source.
pub(crate) const MAX_ASSERTION_BYTES: usize = MAX_TOKEN_BYTES;

/// What an [`AssertionProvider`] comes back with.
pub type AssertionFuture = Pin<Box<dyn Future<Output = Result<Secret, String>> + Send>>;

/// A host that hands out assertions itself (a user's ID token from its own sign-in, a
/// workload token from a platform API). The error is a text for people, with no secret.
pub trait AssertionProvider: Send + Sync {
    /// The assertion to use now.
    fn assertion(&self) -> AssertionFuture;
}

/// Where an assertion is read, each time one is needed.
#[derive(Clone)]
#[non_exhaustive]
pub enum AssertionSource {
    /// A file holding the token (surrounding whitespace ignored), read again at each use.
    File(PathBuf),
    /// An environment variable holding the token, read at each use.
    Env(String),
    /// A host's provider.
    Host(Arc<dyn AssertionProvider>),
}

impl fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssertionSource::File(path) => f.debug_tuple("File").field(path).finish(),
            AssertionSource::Env(name) => f.debug_tuple("Env").field(name).finish(),
            AssertionSource::Host(_) => f.write_str("Host(..)"),
        }
    }
}

impl fmt::Display for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssertionSource::File(path) => write!(f, "the file {}", path.display()),
            AssertionSource::Env(name) => write!(f, "the environment variable {name}"),
            AssertionSource::Host(_) => f.write_str("the host's assertion provider"),
        }
    }
}

/// An assertion as read from a file or a variable: surrounding whitespace trimmed, then it
/// must be one line of visible ASCII, at most [`MAX_ASSERTION_BYTES`]. The error says what
/// is wrong, never what was read.
pub(crate) fn clean_assertion(text: &str) -> Result<Secret, &'static str> {
    let text = text.trim();
    if text.is_empty() {
        return Err("it is empty");
    }
    if text.len() > MAX_ASSERTION_BYTES {
        return Err("it is longer than 16 KiB");
    }
    if !text.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err("it holds characters a token cannot (spaces, control characters or non-ASCII)");
    }
    Ok(Secret::new(text))
}

/// The enterprise IdP of enterprise-managed authorization: where the user's ID token is
/// traded for an ID-JAG.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EnterpriseIdp {
    /// The IdP's token endpoint (`https`, or loopback `http`).
    pub token_endpoint: Url,
    /// This client as the IdP knows it: its id, and a secret if it has one
    /// (`client_secret_basic` then, else the id alone in the form).
    pub client: PreRegistered,
    /// Where the user's ID token is read.
    pub id_token: AssertionSource,
}

impl EnterpriseIdp {
    /// An IdP at `token_endpoint` for the client `client`, with the ID token from `id_token`.
    pub fn new(token_endpoint: Url, client: PreRegistered, id_token: AssertionSource) -> Self {
        EnterpriseIdp {
            token_endpoint,
            client,
            id_token,
        }
    }
}

/// Reads a token-exchange answer (RFC 8693 section 2.2) that must carry an ID-JAG: a 2xx
/// with `access_token` (the ID-JAG), `issued_token_type` [`ID_JAG_TYPE`] and a `token_type`
/// (`N_A` as the extension says; any is taken, since the ID-JAG is not sent as a token). An
/// error answer (400, 401) is the server's OAuth error.
pub(crate) fn parse_id_jag_response(
    status: u16,
    body: &[u8],
) -> Result<Secret, TokenResponseError> {
    #[derive(Deserialize)]
    struct Raw {
        access_token: String,
        issued_token_type: String,
        #[allow(dead_code)]
        token_type: String,
    }
    let raw: Raw = token_endpoint_json(status, body)?;
    if raw.issued_token_type != ID_JAG_TYPE {
        return Err(TokenResponseError::Document(DocumentError::Invalid(
            "issued_token_type",
        )));
    }
    clean_assertion(&raw.access_token)
        .map_err(|_| TokenResponseError::Document(DocumentError::Invalid("access_token")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_are_trimmed_and_checked() {
        assert_eq!(clean_assertion("  a.b.c\n").unwrap().expose(), "a.b.c");
        assert!(clean_assertion(" \n").is_err());
        assert!(clean_assertion("a b").is_err());
        assert!(clean_assertion("a\u{e9}").is_err());
        assert!(clean_assertion(&"a".repeat(MAX_ASSERTION_BYTES)).is_ok());
        assert!(clean_assertion(&"a".repeat(MAX_ASSERTION_BYTES + 1)).is_err());
        // The error never holds what was read.
        let secret = "eyJsecret part";
        let error = clean_assertion(secret).unwrap_err();
        assert!(!error.contains("eyJ"));
    }

    #[test]
    fn an_id_jag_answer() {
        let ok = br#"{"access_token":"eyJ.jag.sig","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A","expires_in":300}"#;
        assert_eq!(
            parse_id_jag_response(200, ok).unwrap().expose(),
            "eyJ.jag.sig"
        );
        let wrong_type = br#"{"access_token":"x","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}"#;
        assert_eq!(
            parse_id_jag_response(200, wrong_type).unwrap_err(),
            TokenResponseError::Document(DocumentError::Invalid("issued_token_type"))
        );
        let refused = br#"{"error":"invalid_grant","error_description":"Invalid ID token"}"#;
        assert!(matches!(
            parse_id_jag_response(400, refused),
            Err(TokenResponseError::Refused(e)) if e.code == "invalid_grant"
        ));
        assert_eq!(
            parse_id_jag_response(503, b""),
            Err(TokenResponseError::Status(503))
        );
        assert!(matches!(
            parse_id_jag_response(200, br#"{"access_token":"x"}"#),
            Err(TokenResponseError::Document(_))
        ));
        let spaced = br#"{"access_token":"a b","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#;
        assert_eq!(
            parse_id_jag_response(200, spaced).unwrap_err(),
            TokenResponseError::Document(DocumentError::Invalid("access_token"))
        );
    }

    #[test]
    fn a_source_shows_where_not_what() {
        let file = AssertionSource::File("/var/run/secrets/token".into());
        assert_eq!(file.to_string(), "the file /var/run/secrets/token");
        let env = AssertionSource::Env("WORKLOAD_TOKEN".into());
        assert_eq!(format!("{env:?}"), r#"Env("WORKLOAD_TOKEN")"#);
    }
}
