//! DPoP, sender-constrained tokens (RFC 9449, as the MCP extension
//! `io.modelcontextprotocol/auth/dpop` profiles it), for a client: the key ([`DpopKey`],
//! ES256 through ring), its public JWK and thumbprint (RFC 7638), the proof JWTs of token
//! requests and resource requests, server nonces (`DPoP-Nonce`, the `use_dpop_nonce` error of
//! the authorization server and of the resource server's `DPoP` challenge) kept per origin,
//! and the DPoP `WWW-Authenticate` challenge.
//!
//! Pure: the time (`iat`) and the randomness (`jti`) are inputs, as everywhere in [`auth`](super).
//! (The ECDSA signature itself takes ring's system generator, which ring lets no caller
//! replace; a signature verifies whatever its random part.)
//!
//! A proof (RFC 9449 section 4.2): header `{"typ":"dpop+jwt","alg":"ES256","jwk":{...}}`,
//! claims `jti` (16 random bytes, base64url), `htm` (the method), `htu` (the target URI
//! without query and fragment), `iat`, and `ath` (base64url SHA-256 of the access token,
//! section 4.1) on resource requests, `nonce` when the server gave one.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use http::HeaderMap;

use super::challenge::{self, Challenge};
use super::crypto::{self, CryptoError, Randomness, SigningKey};
use super::token::{MAX_TOKEN_RESPONSE_BYTES, OAuthError};
use super::url::{Origin, Url};
use crate::base64::{self, Flavor};
use crate::secret::Secret;

/// The `DPoP` request header (RFC 9449 section 4.1) and the `DPoP-Nonce` response header
/// (section 8.1), lower case as `http` names them.
pub(crate) const DPOP: &str = "dpop";
/// The header a server sends its nonce in.
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";
/// The only signing algorithm this client's proofs use.
pub(crate) const ALG: &str = "ES256";
/// The longest nonce taken (RFC 9449 sets none; a nonce is an opaque token of the server's).
pub(crate) const MAX_NONCE_BYTES: usize = 512;
/// How many origins' nonces a [`Nonces`] keeps (the oldest goes).
pub(crate) const MAX_NONCE_ORIGINS: usize = 16;

/// DPoP for a flow ([`Config::dpop`](super::Config::dpop)): proofs of `key` on every token
/// request and every MCP request made with the token.
///
/// What a `Bearer` answer to a DPoP token request does: refused
/// ([`TokenResponseError::NotDpopBound`](super::TokenResponseError::NotDpopBound)) when
/// `required` is set, when the protected-resource metadata says
/// `dpop_bound_access_tokens_required`, or when the server's 401 offered only the `DPoP`
/// scheme; otherwise taken and sent as a bearer token (RFC 9449 section 5 lets an
/// authorization server that does not do DPoP answer so, and such a resource takes bearer
/// tokens). An authorization server whose `dpop_signing_alg_values_supported` leaves out
/// ES256 gets no proof (and the same rule applies to its answer).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Dpop {
    /// The key proofs are signed with, for the life of the flow.
    pub key: Arc<DpopKey>,
    /// Refuse a `Bearer` answer whatever the server says.
    pub required: bool,
}

impl Dpop {
    /// DPoP with `key`, not required beyond what the server says.
    pub fn new(key: Arc<DpopKey>) -> Dpop {
        Dpop {
            key,
            required: false,
        }
    }
}

/// An ES256 key for DPoP proofs. Its `Debug` shows the thumbprint only; the private key is
/// never shown, written or logged.
pub struct DpopKey {
    key: SigningKey,
    /// `{"crv","kty","x","y"}`, the members RFC 7638 hashes, in that order.
    jwk: serde_json::Value,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("alg", &ALG)
            .field("jkt", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key from the system's randomness: kept in memory only (see the crate README on
    /// why DPoP-bound tokens are not written to a token store).
    pub fn generate() -> Result<DpopKey, CryptoError> {
        let (key, _der) = SigningKey::generate(None)?;
        DpopKey::from_signing_key(key)
    }

    /// A DPoP key from an ES256 signing key (one a host keeps, read with
    /// [`SigningKey::from_pkcs8_pem`]).
    pub fn from_signing_key(key: SigningKey) -> Result<DpopKey, CryptoError> {
        let point = key.public_key();
        // Uncompressed P-256 point: 0x04 || x (32 bytes) || y (32 bytes).
        if point.len() != 65 || point[0] != 0x04 {
            return Err(CryptoError::Key);
        }
        let x = base64::encode(&point[1..33], Flavor::UrlSafe);
        let y = base64::encode(&point[33..65], Flavor::UrlSafe);
        // RFC 7638 section 3.2: the required members, lexicographic order, no whitespace.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = base64::encode(&crypto::sha256(canonical.as_bytes()), Flavor::UrlSafe);
        let jwk = serde_json::json!({"crv": "P-256", "kty": "EC", "x": x, "y": y});
        Ok(DpopKey {
            key,
            jwk,
            thumbprint,
        })
    }

    /// The JWK SHA-256 thumbprint (RFC 7638) of the public key: what a DPoP-bound token's
    /// `cnf.jkt` names.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for one HTTP request at `now_unix` (seconds), its `jti` from `random`.
    pub(crate) fn proof(
        &self,
        request: &ProofRequest<'_>,
        now_unix: u64,
        random: &dyn Randomness,
    ) -> Result<Secret, CryptoError> {
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": ALG, "jwk": self.jwk});
        let mut claims = serde_json::json!({
            "jti": crypto::random_text(random, 16)?,
            "htm": request.method,
            "htu": htu(request.uri),
            "iat": now_unix,
        });
        if let Some(token) = request.access_token {
            claims["ath"] = serde_json::Value::String(ath(token));
        }
        if let Some(nonce) = request.nonce {
            claims["nonce"] = serde_json::Value::String(nonce.to_owned());
        }
        self.key.sign_jws(&header, &claims)
    }
}

/// What a proof is for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProofRequest<'a> {
    /// `htm`: the request's method.
    pub(crate) method: &'a str,
    /// The request's URI (absolute); `htu` is it without query and fragment.
    pub(crate) uri: &'a str,
    /// The access token the request carries (resource requests): `ath`.
    pub(crate) access_token: Option<&'a Secret>,
    /// The server's nonce for this origin, if it gave one.
    pub(crate) nonce: Option<&'a str>,
}

/// `htu` (RFC 9449 section 4.2): the target URI without its query and fragment.
pub(crate) fn htu(uri: &str) -> &str {
    let end = uri.find(['?', '#']).unwrap_or(uri.len());
    &uri[..end]
}

/// `ath` (RFC 9449 section 4.1): base64url (no padding) of the SHA-256 of the token's ASCII.
pub(crate) fn ath(token: &Secret) -> String {
    base64::encode(&crypto::sha256(token.expose().as_bytes()), Flavor::UrlSafe)
}

/// A `DPoP-Nonce` value (RFC 9449 section 8.1: `nonce = 1*NQCHAR`, `NQCHAR = %x21 /
/// %x23-5B / %x5D-7E`), at most [`MAX_NONCE_BYTES`]; `None` for anything else.
pub(crate) fn parse_nonce(value: &[u8]) -> Option<String> {
    let ok = !value.is_empty()
        && value.len() <= MAX_NONCE_BYTES
        && value
            .iter()
            .all(|&b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
    // Checked ASCII: the conversion cannot fail.
    ok.then(|| String::from_utf8_lossy(value).into_owned())
}

/// The one valid `DPoP-Nonce` of a response, if it has exactly one.
pub(crate) fn nonce_header(headers: &HeaderMap) -> Option<String> {
    let mut values = headers.get_all(DPOP_NONCE).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    parse_nonce(first.as_bytes())
}

/// What a `DPoP` challenge (RFC 9449 section 7.1) says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DpopChallenge {
    /// `algs`: the proof algorithms the resource accepts, space-separated in the challenge.
    pub(crate) algs: Option<Vec<String>>,
    /// `error`: `invalid_token`, `invalid_dpop_proof`, `use_dpop_nonce`...
    pub(crate) error: Option<String>,
    /// RFC 9728 section 5.1: where the protected-resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`.
    pub(crate) scope: Option<String>,
}

impl DpopChallenge {
    /// The `DPoP` challenge among `challenges` (the first, if several), if any.
    pub(crate) fn find(challenges: &[Challenge]) -> Option<DpopChallenge> {
        let dpop = challenges.iter().find(|c| c.is("DPoP"))?;
        let get = |name| dpop.param(name).map(str::to_owned);
        Some(DpopChallenge {
            algs: dpop.param("algs").map(|a| {
                a.split(' ')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            }),
            error: get("error"),
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
        })
    }
}

/// What a refusal's `WWW-Authenticate` says of DPoP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchemesOffered {
    /// A `Bearer` challenge is among them.
    pub(crate) bearer: bool,
    /// A `DPoP` challenge is among them.
    pub(crate) dpop: bool,
}

impl SchemesOffered {
    /// The schemes of a response's challenges (none when they do not parse).
    pub(crate) fn of(headers: &HeaderMap) -> SchemesOffered {
        let challenges = challenge::parse(
            headers
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .map(|v| v.as_bytes()),
        )
        .unwrap_or_default();
        SchemesOffered {
            bearer: challenges.iter().any(|c| c.is("Bearer")),
            dpop: challenges.iter().any(|c| c.is("DPoP")),
        }
    }

    /// Only DPoP: the resource takes no bearer token.
    pub(crate) fn dpop_only(self) -> bool {
        self.dpop && !self.bearer
    }
}

/// The nonce of a resource server's 401 that asks for one (RFC 9449 section 9): a `DPoP`
/// challenge with `error="use_dpop_nonce"` and one valid `DPoP-Nonce`.
pub(crate) fn resource_nonce(status: u16, headers: &HeaderMap) -> Option<String> {
    if status != 401 {
        return None;
    }
    let challenges = challenge::parse(
        headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .map(|v| v.as_bytes()),
    )
    .ok()?;
    let dpop = DpopChallenge::find(&challenges)?;
    if dpop.error.as_deref() != Some("use_dpop_nonce") {
        return None;
    }
    nonce_header(headers)
}

/// The nonce of an authorization server's answer that asks for one (RFC 9449 section 8): a
/// 400 with the OAuth error `use_dpop_nonce` and one valid `DPoP-Nonce`.
pub(crate) fn server_nonce(status: u16, headers: &HeaderMap, body: &[u8]) -> Option<String> {
    if status != 400 || body.len() > MAX_TOKEN_RESPONSE_BYTES {
        return None;
    }
    let error = OAuthError::parse(body)?;
    if error.code != "use_dpop_nonce" {
        return None;
    }
    nonce_header(headers)
}

/// The latest nonce each origin gave, for at most [`MAX_NONCE_ORIGINS`] origins.
#[derive(Clone, Debug, Default)]
pub(crate) struct Nonces {
    entries: VecDeque<(Origin, String)>,
}

impl Nonces {
    /// The nonce to put in a proof for `url`'s origin.
    pub(crate) fn get(&self, url: &Url) -> Option<&str> {
        let origin = url.origin();
        self.entries
            .iter()
            .find(|(o, _)| *o == origin)
            .map(|(_, n)| n.as_str())
    }

    /// `url`'s origin gave `nonce` (it replaces the one before).
    pub(crate) fn put(&mut self, url: &Url, nonce: String) {
        let origin = url.origin();
        self.entries.retain(|(o, _)| *o != origin);
        if self.entries.len() >= MAX_NONCE_ORIGINS {
            self.entries.pop_front();
        }
        self.entries.push_back((origin, nonce));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::crypto::SystemRandomness;
    use crate::base64::Padding;
    use ring::signature;

    /// Counts up from a seed: a predictable `Randomness` for the tests.
    struct Counting(std::sync::atomic::AtomicU8);

    impl Randomness for Counting {
        fn fill(&self, bytes: &mut [u8]) -> Result<(), CryptoError> {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            bytes.iter_mut().for_each(|b| *b = n);
            Ok(())
        }
    }

    fn decode(part: &str) -> serde_json::Value {
        serde_json::from_slice(&base64::decode(part, Flavor::UrlSafe, Padding::Optional).unwrap())
            .unwrap()
    }

    /// The proof's header and claims, after checking its ES256 signature against the key's
    /// public point with ring's verifier.
    fn verified(key: &DpopKey, proof: &Secret) -> (serde_json::Value, serde_json::Value) {
        let parts: Vec<&str> = proof.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let signature = base64::decode(parts[2], Flavor::UrlSafe, Padding::Optional).unwrap();
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            key.key.public_key(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public.verify(signed.as_bytes(), &signature).unwrap();
        assert!(
            public
                .verify(format!("{signed}x").as_bytes(), &signature)
                .is_err(),
            "a changed proof does not verify"
        );
        (decode(parts[0]), decode(parts[1]))
    }

    #[test]
    fn a_token_request_proof_has_the_rfc_9449_header_and_claims() {
        let key = DpopKey::generate().unwrap();
        let random = Counting(std::sync::atomic::AtomicU8::new(7));
        let request = ProofRequest {
            method: "POST",
            uri: "https://as.example.com/token?x=1#frag",
            access_token: None,
            nonce: None,
        };
        let proof = key.proof(&request, 1_700_000_000, &random).unwrap();
        let (header, claims) = verified(&key, &proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "no private member");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://as.example.com/token");
        assert_eq!(claims["iat"], 1_700_000_000u64);
        assert_eq!(claims["jti"], base64::encode(&[7u8; 16], Flavor::UrlSafe));
        assert!(claims.get("ath").is_none());
        assert!(claims.get("nonce").is_none());
        assert!(!format!("{key:?}").contains(proof.expose()));
    }

    #[test]
    fn a_resource_proof_binds_the_token_and_the_nonce() {
        let key = DpopKey::generate().unwrap();
        let token = Secret::new("eyJ.access.token");
        let request = ProofRequest {
            method: "GET",
            uri: "http://127.0.0.1:8080/mcp#x",
            access_token: Some(&token),
            nonce: Some("n-1"),
        };
        let proof = key.proof(&request, 5, &SystemRandomness).unwrap();
        let (_, claims) = verified(&key, &proof);
        assert_eq!(claims["htm"], "GET");
        assert_eq!(claims["htu"], "http://127.0.0.1:8080/mcp");
        assert_eq!(claims["nonce"], "n-1");
        // ath = base64url(SHA-256(token)), computed independently here.
        let digest = ring::digest::digest(&ring::digest::SHA256, b"eyJ.access.token");
        assert_eq!(
            claims["ath"],
            base64::encode(digest.as_ref(), Flavor::UrlSafe)
        );
    }

    #[test]
    fn every_proof_has_its_own_jti() {
        let key = DpopKey::generate().unwrap();
        let request = ProofRequest {
            method: "POST",
            uri: "https://mcp.example.com/mcp",
            access_token: None,
            nonce: None,
        };
        let jtis: std::collections::HashSet<String> = (0..32)
            .map(|_| {
                let proof = key.proof(&request, 1, &SystemRandomness).unwrap();
                verified(&key, &proof).1["jti"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(jtis.len(), 32);
    }

    #[test]
    fn htu_drops_query_and_fragment() {
        for (uri, expected) in [
            ("https://a.example/mcp", "https://a.example/mcp"),
            ("https://a.example/mcp?x=1", "https://a.example/mcp"),
            ("https://a.example/mcp#f", "https://a.example/mcp"),
            ("https://a.example/mcp?x=1#f", "https://a.example/mcp"),
            ("https://a.example/mcp#f?x", "https://a.example/mcp"),
            ("https://a.example", "https://a.example"),
        ] {
            assert_eq!(htu(uri), expected, "{uri}");
        }
    }

    #[test]
    fn the_thumbprint_is_rfc_7638_over_the_public_jwk() {
        let key = DpopKey::generate().unwrap();
        let jwk = &key.jwk;
        let canonical = format!(
            r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
            jwk["crv"].as_str().unwrap(),
            jwk["kty"].as_str().unwrap(),
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes());
        assert_eq!(
            key.thumbprint(),
            base64::encode(digest.as_ref(), Flavor::UrlSafe)
        );
        assert_eq!(key.thumbprint().len(), 43);
        // x and y are the point's coordinates.
        let x = base64::decode(
            jwk["x"].as_str().unwrap(),
            Flavor::UrlSafe,
            Padding::Optional,
        );
        assert_eq!(x.as_deref(), Some(&key.key.public_key()[1..33]));
    }

    #[test]
    fn nonces_follow_the_grammar() {
        assert_eq!(
            parse_nonce(b"eyJ7S_zG.eyJH0-Z.HX4w-7v"),
            Some("eyJ7S_zG.eyJH0-Z.HX4w-7v".into())
        );
        for bad in [&b""[..], b"a b", b"a\"b", b"a\\b", b"\x7f", "é".as_bytes()] {
            assert_eq!(parse_nonce(bad), None, "{bad:?}");
        }
        assert!(parse_nonce(&[b'a'; MAX_NONCE_BYTES]).is_some());
        assert!(parse_nonce(&[b'a'; MAX_NONCE_BYTES + 1]).is_none());
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn a_resource_server_asks_for_a_nonce_with_a_dpop_challenge() {
        let asks = headers(&[
            (
                "www-authenticate",
                r#"DPoP error="use_dpop_nonce", resource_metadata="https://m.example/.well-known/oauth-protected-resource/mcp""#,
            ),
            ("dpop-nonce", "rs-nonce-1"),
        ]);
        assert_eq!(resource_nonce(401, &asks), Some("rs-nonce-1".into()));
        assert_eq!(resource_nonce(403, &asks), None);
        let other_error = headers(&[
            ("www-authenticate", r#"DPoP error="invalid_token""#),
            ("dpop-nonce", "n"),
        ]);
        assert_eq!(resource_nonce(401, &other_error), None);
        let bearer = headers(&[
            ("www-authenticate", r#"Bearer error="use_dpop_nonce""#),
            ("dpop-nonce", "n"),
        ]);
        assert_eq!(resource_nonce(401, &bearer), None);
        let two = headers(&[
            ("www-authenticate", r#"DPoP error="use_dpop_nonce""#),
            ("dpop-nonce", "a"),
            ("dpop-nonce", "b"),
        ]);
        assert_eq!(resource_nonce(401, &two), None, "two nonces: neither");
        let none = headers(&[("www-authenticate", r#"DPoP error="use_dpop_nonce""#)]);
        assert_eq!(resource_nonce(401, &none), None);
    }

    #[test]
    fn an_authorization_server_asks_for_a_nonce_with_an_oauth_error() {
        let with = headers(&[("dpop-nonce", "as-nonce")]);
        let body = br#"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof"}"#;
        assert_eq!(server_nonce(400, &with, body), Some("as-nonce".into()));
        assert_eq!(server_nonce(401, &with, body), None);
        assert_eq!(
            server_nonce(400, &with, br#"{"error":"invalid_grant"}"#),
            None
        );
        assert_eq!(server_nonce(400, &HeaderMap::new(), body), None);
        assert_eq!(server_nonce(400, &with, b"not json"), None);
    }

    #[test]
    fn the_dpop_challenge_and_the_schemes() {
        let h = headers(&[(
            "www-authenticate",
            r#"Bearer realm="x", DPoP algs="ES256 PS256", error="invalid_token", scope="a b""#,
        )]);
        let challenges =
            challenge::parse(h.get_all("www-authenticate").iter().map(|v| v.as_bytes())).unwrap();
        let dpop = DpopChallenge::find(&challenges).unwrap();
        assert_eq!(dpop.algs, Some(vec!["ES256".into(), "PS256".into()]));
        assert_eq!(dpop.error.as_deref(), Some("invalid_token"));
        assert_eq!(dpop.scope.as_deref(), Some("a b"));
        let offered = SchemesOffered::of(&h);
        assert!(offered.bearer && offered.dpop && !offered.dpop_only());
        let only = headers(&[(
            "www-authenticate",
            r#"DPoP resource_metadata="https://m/x""#,
        )]);
        assert!(SchemesOffered::of(&only).dpop_only());
        assert!(!SchemesOffered::of(&HeaderMap::new()).dpop_only());
    }

    #[test]
    fn nonces_are_kept_per_origin() {
        let mut nonces = Nonces::default();
        let a = Url::parse("https://a.example/token").unwrap();
        let a2 = Url::parse("https://a.example/other?x").unwrap();
        let b = Url::parse("https://b.example/mcp").unwrap();
        nonces.put(&a, "n1".into());
        assert_eq!(nonces.get(&a2), Some("n1"));
        assert_eq!(nonces.get(&b), None);
        nonces.put(&a2, "n2".into());
        assert_eq!(nonces.get(&a), Some("n2"));
        for i in 0..MAX_NONCE_ORIGINS {
            let url = Url::parse(&format!("https://h{i}.example/")).unwrap();
            nonces.put(&url, format!("{i}"));
        }
        assert_eq!(nonces.entries.len(), MAX_NONCE_ORIGINS);
        assert_eq!(nonces.get(&a), None, "the oldest origin went");
    }
}
