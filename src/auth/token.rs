//! Tokens: the token endpoint's answers (RFC 6749 section 5, OAuth 2.1 section 3.2.3) parsed
//! strictly within [`MAX_TOKEN_RESPONSE_BYTES`], OAuth error answers, the [`Token`] a client
//! holds (with refresh-token rotation), and a [`TokenCache`] keyed by issuer, client,
//! resource and scope.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;

use super::UnixTime;
use super::metadata::{DocumentError, parse_json};
use super::scope::Scopes;
use crate::secret::Secret;

/// The largest token endpoint answer read.
pub(crate) const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;
/// The longest access or refresh token taken.
pub(crate) const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The most characters of a server's `error_description` kept.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 200;

/// An OAuth error answer (RFC 6749 section 5.2, RFC 7591 section 3.2.2, or the `error` of an
/// authorization response): the code, and the description cut short and stripped of control
/// characters. The description is the server's text: the flow redacts its secrets from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthError {
    /// `invalid_grant`, `invalid_client`, `access_denied`...
    pub code: String,
    /// `error_description`, cleaned.
    pub description: Option<String>,
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)?;
        if let Some(description) = &self.description {
            write!(f, " ({description})")?;
        }
        Ok(())
    }
}

/// `text` as shown to people: control characters dropped, cut to `max` characters.
pub(crate) fn clean_text(text: &str, max: usize) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(max).collect();
    if text.chars().filter(|c| !c.is_control()).nth(max).is_some() {
        out.push('…');
    }
    out
}

fn valid_error_code(code: &str) -> bool {
    !code.is_empty()
        && code.len() <= 128
        && code.bytes().all(|b| {
            (0x20..=0x21).contains(&b) || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)
        })
}

impl OAuthError {
    /// An error from its two parameters, `None` when the code is not a valid error code.
    pub(crate) fn new(code: &str, description: Option<&str>) -> Option<OAuthError> {
        valid_error_code(code).then(|| OAuthError {
            code: code.to_owned(),
            description: description.map(|d| clean_text(d, MAX_DESCRIPTION_CHARS)),
        })
    }

    /// Parses an error body (`{"error": ..., "error_description": ...}`).
    pub(crate) fn parse(body: &[u8]) -> Option<OAuthError> {
        #[derive(Deserialize)]
        struct Raw {
            error: String,
            #[serde(default)]
            error_description: Option<String>,
        }
        let raw: Raw = parse_json(body, MAX_TOKEN_RESPONSE_BYTES).ok()?;
        OAuthError::new(&raw.error, raw.error_description.as_deref())
    }

    /// The error of a non-2xx answer with `status`: the OAuth error of its body when the
    /// status is one of `statuses` (where RFC 6749 and RFC 7591 put them), else `None`.
    pub(crate) fn of_answer(status: u16, body: &[u8], statuses: &[u16]) -> Option<OAuthError> {
        statuses
            .contains(&status)
            .then(|| OAuthError::parse(body))
            .flatten()
    }

    /// With every one of `secrets` redacted from the description.
    pub(crate) fn redacted(mut self, secrets: &[Secret]) -> OAuthError {
        self.description = self
            .description
            .map(|d| crate::secret::redact_all(secrets, &d));
        self
    }
}

/// An access token, with what came with it.
#[derive(Clone)]
pub struct Token {
    access_token: Secret,
    refresh_token: Option<Secret>,
    expires_at: Option<UnixTime>,
    scope: Option<Scopes>,
    /// Bound to a DPoP key (`token_type` `DPoP`): sent with `Authorization: DPoP` and a proof.
    dpop: bool,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("access_token", &self.access_token)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope.as_ref().map(ToString::to_string))
            .field("dpop", &self.dpop)
            .finish()
    }
}

impl Token {
    /// A token from its parts (for hosts that keep tokens in a store of their own).
    pub fn new(
        access_token: Secret,
        refresh_token: Option<Secret>,
        expires_at: Option<UnixTime>,
        scope: Option<Scopes>,
    ) -> Token {
        Token {
            access_token,
            refresh_token,
            expires_at,
            scope,
            dpop: false,
        }
    }

    /// Whether the token is bound to a DPoP key (RFC 9449: the server answered `token_type`
    /// `DPoP`): it is sent as `Authorization: DPoP` with a proof of that key, never as a
    /// bearer token, and it is not written to a token store (see the README).
    pub fn is_dpop(&self) -> bool {
        self.dpop
    }

    /// This token, bound to a DPoP key or not.
    pub(crate) fn bound(mut self, dpop: bool) -> Token {
        self.dpop = dpop;
        self
    }

    /// The access token, for `Authorization: Bearer`.
    pub fn access_token(&self) -> &Secret {
        &self.access_token
    }

    /// The refresh token, if the server gave one.
    pub fn refresh_token(&self) -> Option<&Secret> {
        self.refresh_token.as_ref()
    }

    /// When the access token expires, if the server said (`expires_in`).
    pub fn expires_at(&self) -> Option<UnixTime> {
        self.expires_at
    }

    /// The scopes granted (the server's `scope`, else those asked for).
    pub fn scope(&self) -> Option<&Scopes> {
        self.scope.as_ref()
    }

    /// Whether the access token has expired at `now`.
    pub(crate) fn is_expired(&self, now: UnixTime) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// When to refresh: `margin_secs` before expiry (never before the token was issued).
    pub(crate) fn refresh_at(&self, margin_secs: u64) -> Option<UnixTime> {
        self.expires_at
            .map(|at| UnixTime(at.0.saturating_sub(margin_secs)))
    }

    /// Every secret it holds.
    pub(crate) fn secrets(&self) -> impl Iterator<Item = &Secret> {
        std::iter::once(&self.access_token).chain(self.refresh_token.as_ref())
    }
}

/// What the token endpoint answered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenResponseError {
    /// A success status with a body that is not a valid token answer.
    Document(DocumentError),
    /// `token_type` is neither `Bearer` nor, when a DPoP proof was sent, `DPoP`.
    UnsupportedTokenType(String),
    /// A DPoP-bound token was asked for and the resource requires one (its metadata's
    /// `dpop_bound_access_tokens_required`, a challenge offering only `DPoP`, or the
    /// configuration), but the answer is a `Bearer` token: refused, not downgraded.
    NotDpopBound,
    /// An OAuth error answer (400 or 401 with `error`).
    Refused(OAuthError),
    /// Any other status.
    Status(u16),
}

impl fmt::Display for TokenResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenResponseError::Document(e) => e.fmt(f),
            TokenResponseError::UnsupportedTokenType(t) => {
                write!(
                    f,
                    "the token type {t:?} is not supported (only Bearer, and DPoP when asked for)"
                )
            }
            TokenResponseError::NotDpopBound => f.write_str(
                "the answer is a Bearer token, but a DPoP-bound one was asked for and is required",
            ),
            TokenResponseError::Refused(e) => write!(f, "refused: {e}"),
            TokenResponseError::Status(s) => write!(f, "answered HTTP {s}"),
        }
    }
}

impl std::error::Error for TokenResponseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenResponseError::Document(e) => Some(e),
            _ => None,
        }
    }
}

fn header_safe(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && token.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// The JSON of a token endpoint's 2xx answer (a token, or RFC 8693's token-exchange
/// answer); an error answer (400, 401) is the server's OAuth error, any other status itself.
pub(crate) fn token_endpoint_json<T: serde::de::DeserializeOwned>(
    status: u16,
    body: &[u8],
) -> Result<T, TokenResponseError> {
    if !(200..300).contains(&status) {
        return Err(OAuthError::of_answer(status, body, &[400, 401]).map_or(
            TokenResponseError::Status(status),
            TokenResponseError::Refused,
        ));
    }
    parse_json(body, MAX_TOKEN_RESPONSE_BYTES).map_err(TokenResponseError::Document)
}

/// Reads the token endpoint's answer to a request made at `now`. `requested` is the scope
/// asked for (what was granted when the answer names none); `previous` the token being
/// refreshed, whose refresh token is kept unless the answer brings a new one (rotation).
/// `dpop`: the request carried a DPoP proof, so `token_type` `DPoP` is taken (RFC 9449
/// section 5); otherwise only `Bearer` is.
pub(crate) fn parse_token_response(
    status: u16,
    body: &[u8],
    now: UnixTime,
    requested: Option<&Scopes>,
    previous: Option<&Token>,
    dpop: bool,
) -> Result<Token, TokenResponseError> {
    #[derive(Deserialize)]
    struct Raw {
        access_token: String,
        token_type: String,
        #[serde(default)]
        expires_in: Option<u64>,
        #[serde(default)]
        refresh_token: Option<String>,
        #[serde(default)]
        scope: Option<String>,
    }
    let raw: Raw = token_endpoint_json(status, body)?;
    if !header_safe(&raw.access_token) {
        return Err(TokenResponseError::Document(DocumentError::Invalid(
            "access_token",
        )));
    }
    let bound = dpop && raw.token_type.eq_ignore_ascii_case("dpop");
    if !bound && !raw.token_type.eq_ignore_ascii_case("bearer") {
        return Err(TokenResponseError::UnsupportedTokenType(clean_text(
            &raw.token_type,
            32,
        )));
    }
    let refresh_token = match raw.refresh_token {
        Some(t) if !header_safe(&t) => {
            return Err(TokenResponseError::Document(DocumentError::Invalid(
                "refresh_token",
            )));
        }
        Some(t) => Some(Secret::new(t)),
        None => previous.and_then(|p| p.refresh_token.clone()),
    };
    let scope = match raw.scope {
        Some(s) => Some(
            Scopes::parse(&s)
                .map_err(|_| TokenResponseError::Document(DocumentError::Invalid("scope")))?,
        ),
        None => requested.cloned(),
    };
    Ok(Token {
        access_token: Secret::new(raw.access_token),
        refresh_token,
        expires_at: raw.expires_in.map(|s| UnixTime(now.0.saturating_add(s))),
        scope,
        dpop: bound,
    })
}

/// What a token is for: the cache key the MCP spec's rules ask for (tokens are bound to their
/// authorization server, client and resource; a scope set is a different grant).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenKey {
    /// The authorization server's issuer.
    pub issuer: String,
    /// The client id the token was issued to.
    pub client_id: String,
    /// The `resource` parameter it was requested with.
    pub resource: String,
    /// The scopes asked for, space-separated in order (empty: none asked for).
    pub scope: String,
}

/// Tokens by [`TokenKey`], at most `capacity` of them (the one expiring first goes). A clone
/// is a snapshot (for a token store to keep).
#[derive(Clone, Debug)]
pub struct TokenCache {
    entries: HashMap<TokenKey, Token>,
    capacity: usize,
}

impl Default for TokenCache {
    fn default() -> Self {
        TokenCache::new(64)
    }
}

impl TokenCache {
    /// An empty cache holding up to `capacity` tokens (at least one).
    pub fn new(capacity: usize) -> TokenCache {
        TokenCache {
            entries: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The token for `key`, expired or not (an expired one may still be refreshed).
    pub fn get(&self, key: &TokenKey) -> Option<&Token> {
        self.entries.get(key)
    }

    /// Stores `token` for `key`, replacing what was there.
    pub fn insert(&mut self, key: TokenKey, token: Token) {
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            // Tokens without an expiry count as expiring last.
            let soonest = self
                .entries
                .iter()
                .min_by_key(|(_, t)| t.expires_at.map_or(u64::MAX, |at| at.0))
                .map(|(k, _)| k.clone());
            if let Some(soonest) = soonest {
                self.entries.remove(&soonest);
            }
        }
        self.entries.insert(key, token);
    }

    /// Every token with its key, in no particular order (for a token store to write).
    pub fn iter(&self) -> impl Iterator<Item = (&TokenKey, &Token)> {
        self.entries.iter()
    }

    /// Forgets the token for `key`.
    pub fn remove(&mut self, key: &TokenKey) -> Option<Token> {
        self.entries.remove(key)
    }

    /// How many tokens it holds.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn secrets(&self) -> impl Iterator<Item = &Secret> {
        self.entries.values().flat_map(Token::secrets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixTime = UnixTime(1_000_000);

    fn parse(body: &str) -> Result<Token, TokenResponseError> {
        parse_token_response(200, body.as_bytes(), NOW, None, None, false)
    }

    #[test]
    fn a_full_answer() {
        let token = parse(
            r#"{"access_token":"at-1","token_type":"bearer","expires_in":3600,"refresh_token":"rt-1","scope":"a b","id_token":"x"}"#,
        )
        .unwrap();
        assert_eq!(token.access_token().expose(), "at-1");
        assert_eq!(token.refresh_token().unwrap().expose(), "rt-1");
        assert_eq!(token.expires_at(), Some(UnixTime(1_003_600)));
        assert_eq!(token.scope().unwrap().to_string(), "a b");
        assert!(!token.is_expired(NOW));
        assert!(token.is_expired(UnixTime(1_003_600)));
        assert_eq!(token.refresh_at(60), Some(UnixTime(1_003_540)));
        let debug = format!("{token:?}");
        assert!(
            !debug.contains("at-1") && !debug.contains("rt-1"),
            "{debug}"
        );
    }

    #[test]
    fn dpop_is_taken_only_when_a_proof_was_sent() {
        let body = br#"{"access_token":"at","token_type":"DPoP","expires_in":60}"#;
        let bound = parse_token_response(200, body, NOW, None, None, true).unwrap();
        assert!(bound.is_dpop());
        assert!(format!("{bound:?}").contains("dpop: true"));
        assert_eq!(
            parse_token_response(200, body, NOW, None, None, false).map(|_| ()),
            Err(TokenResponseError::UnsupportedTokenType("DPoP".into()))
        );
        let bearer = br#"{"access_token":"at","token_type":"bearer"}"#;
        assert!(
            !parse_token_response(200, bearer, NOW, None, None, true)
                .unwrap()
                .is_dpop()
        );
        let other = br#"{"access_token":"at","token_type":"N_A"}"#;
        assert!(parse_token_response(200, other, NOW, None, None, true).is_err());
    }

    #[test]
    fn refresh_token_rotation_and_requested_scope() {
        let requested = Scopes::parse("mcp:basic").unwrap();
        let first = parse_token_response(
            200,
            br#"{"access_token":"at-1","token_type":"Bearer","refresh_token":"rt-1"}"#,
            NOW,
            Some(&requested),
            None,
            false,
        )
        .unwrap();
        assert_eq!(first.scope(), Some(&requested));
        assert_eq!(first.expires_at(), None);
        // No new refresh token: the old one stays.
        let kept = parse_token_response(
            200,
            br#"{"access_token":"at-2","token_type":"Bearer"}"#,
            NOW,
            None,
            Some(&first),
            false,
        )
        .unwrap();
        assert_eq!(kept.refresh_token().unwrap().expose(), "rt-1");
        // A new one replaces it.
        let rotated = parse_token_response(
            200,
            br#"{"access_token":"at-3","token_type":"Bearer","refresh_token":"rt-2"}"#,
            NOW,
            None,
            Some(&kept),
            false,
        )
        .unwrap();
        assert_eq!(rotated.refresh_token().unwrap().expose(), "rt-2");
    }

    #[test]
    fn strictness() {
        // Regression (auth_token_exchange fuzz target): invalid UTF-8 in a member the
        // parser does not use was accepted; JSON text is UTF-8 throughout (RFC 8259 8.1).
        let mut body = br#"{"access_token":"a","token_type":"Bearer","x":"#.to_vec();
        body.extend_from_slice(b"\"\xe1\x60\"}");
        assert_eq!(
            parse_token_response(200, &body, NOW, None, None, false).map(|_| ()),
            Err(TokenResponseError::Document(DocumentError::Json {
                line: 1,
                column: 48
            }))
        );
        let invalid = |m| Err(TokenResponseError::Document(DocumentError::Invalid(m)));
        assert_eq!(
            parse(r#"{"access_token":"","token_type":"Bearer"}"#).map(|_| ()),
            invalid("access_token")
        );
        assert_eq!(
            parse(r#"{"access_token":"a b","token_type":"Bearer"}"#).map(|_| ()),
            invalid("access_token")
        );
        assert_eq!(
            parse("{\"access_token\":\"a\\r\\nX: y\",\"token_type\":\"Bearer\"}").map(|_| ()),
            invalid("access_token")
        );
        assert_eq!(
            parse(r#"{"access_token":"a","token_type":"Bearer","refresh_token":""}"#).map(|_| ()),
            invalid("refresh_token")
        );
        assert_eq!(
            parse(r#"{"access_token":"a","token_type":"Bearer","scope":"a\tb"}"#).map(|_| ()),
            invalid("scope")
        );
        assert_eq!(
            parse(r#"{"access_token":"a","token_type":"DPoP"}"#).map(|_| ()),
            Err(TokenResponseError::UnsupportedTokenType("DPoP".into()))
        );
        for bad in [
            r#"{"token_type":"Bearer"}"#,
            r#"{"access_token":"a"}"#,
            r#"{"access_token":"a","token_type":"Bearer","expires_in":"3600"}"#,
            r#"{"access_token":"a","token_type":"Bearer","expires_in":-1}"#,
            r#"{"access_token":"a","token_type":"Bearer","expires_in":1.5}"#,
            r#"{"access_token":1,"token_type":"Bearer"}"#,
            r#"{"access_token":"a","access_token":"b","token_type":"Bearer"}"#,
            r#"["access_token"]"#,
            "",
        ] {
            assert!(
                matches!(
                    parse(bad),
                    Err(TokenResponseError::Document(DocumentError::Json { .. }))
                ),
                "{bad}"
            );
        }
        let huge = format!(
            r#"{{"access_token":"{}","token_type":"Bearer"}}"#,
            "a".repeat(MAX_TOKEN_RESPONSE_BYTES)
        );
        assert_eq!(
            parse(&huge).map(|_| ()),
            Err(TokenResponseError::Document(DocumentError::TooLarge))
        );
        let long = format!(
            r#"{{"access_token":"{}","token_type":"Bearer"}}"#,
            "a".repeat(MAX_TOKEN_BYTES + 1)
        );
        assert_eq!(parse(&long).map(|_| ()), invalid("access_token"));
        // An expiry past the end of time saturates rather than wraps.
        let far = parse(&format!(
            r#"{{"access_token":"a","token_type":"Bearer","expires_in":{}}}"#,
            u64::MAX
        ))
        .unwrap();
        assert_eq!(far.expires_at(), Some(UnixTime(u64::MAX)));
    }

    #[test]
    fn error_answers() {
        let refused = parse_token_response(
            400,
            br#"{"error":"invalid_grant","error_description":"code\nexpired\u0007 long ago"}"#,
            NOW,
            None,
            None,
            false,
        );
        assert_eq!(
            refused.map(|_| ()),
            Err(TokenResponseError::Refused(OAuthError {
                code: "invalid_grant".into(),
                description: Some("codeexpired long ago".into())
            }))
        );
        assert_eq!(
            parse_token_response(401, b"<html>no</html>", NOW, None, None, false).map(|_| ()),
            Err(TokenResponseError::Status(401))
        );
        assert_eq!(
            parse_token_response(500, br#"{"error":"server_error"}"#, NOW, None, None, false)
                .map(|_| ()),
            Err(TokenResponseError::Status(500))
        );
        assert_eq!(
            parse_token_response(400, br#"{"error":"bad\"code"}"#, NOW, None, None, false)
                .map(|_| ()),
            Err(TokenResponseError::Status(400))
        );
        let long = OAuthError::new("x", Some(&"d".repeat(500))).unwrap();
        assert_eq!(
            long.description.unwrap().chars().count(),
            MAX_DESCRIPTION_CHARS + 1
        );
        let secret = Secret::new("tok-secret-1");
        let echoed = OAuthError::new("x", Some("bad token tok-secret-1"))
            .unwrap()
            .redacted(&[secret]);
        assert_eq!(echoed.description.as_deref(), Some("bad token <redacted>"));
    }

    #[test]
    fn cache_keys_and_eviction() {
        let key = |scope: &str| TokenKey {
            issuer: "https://as".into(),
            client_id: "c".into(),
            resource: "https://mcp/mcp".into(),
            scope: scope.into(),
        };
        let token =
            |at: &str, exp: Option<u64>| Token::new(Secret::new(at), None, exp.map(UnixTime), None);
        let mut cache = TokenCache::new(2);
        cache.insert(key("a"), token("t-a", Some(10)));
        cache.insert(key("b"), token("t-b", None));
        assert_eq!(cache.get(&key("a")).unwrap().access_token().expose(), "t-a");
        assert!(cache.get(&key("c")).is_none());
        cache.insert(key("c"), token("t-c", Some(20)));
        assert_eq!(cache.len(), 2);
        assert!(
            cache.get(&key("a")).is_none(),
            "the soonest to expire goes first"
        );
        cache.insert(key("c"), token("t-c2", Some(30)));
        assert_eq!(cache.len(), 2);
        assert_eq!(
            cache.remove(&key("b")).unwrap().access_token().expose(),
            "t-b"
        );
        assert_eq!(cache.secrets().count(), 1);
    }
}
