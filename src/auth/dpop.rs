//! DPoP, sender-constrained tokens (RFC 9449, as the MCP extension
//! `io.modelcontextprotocol/auth/dpop` profiles it), for a client: the key ([`DpopKey`],
//! ES256, ES384 or EdDSA through ring, chosen by what the servers take), its public JWK and thumbprint (RFC 7638), the proof JWTs of token
//! requests and resource requests, server nonces (`DPoP-Nonce`, the `use_dpop_nonce` error of
//! the authorization server and of the resource server's `DPoP` challenge) kept per origin,
//! and the DPoP `WWW-Authenticate` challenge.
//!
//! Pure: the time (`iat`) and the randomness (`jti`) are inputs, as everywhere in [`auth`](super).
//! (The ECDSA signature itself takes ring's system generator, which ring lets no caller
//! replace; a signature verifies whatever its random part.)
//!
//! A proof (RFC 9449 section 4.2): header `{"typ":"dpop+jwt","alg":"ES256","jwk":{...}}`
//! (or `ES384`, `EdDSA`),
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
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P384_SHA384_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
};

/// The `DPoP` request header (RFC 9449 section 4.1) and the `DPoP-Nonce` response header
/// (section 8.1), lower case as `http` names them.
pub(crate) const DPOP: &str = "dpop";
/// The header a server sends its nonce in.
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";
/// The longest nonce taken (RFC 9449 sets none; a nonce is an opaque token of the server's).
pub(crate) const MAX_NONCE_BYTES: usize = 512;
/// How many origins' nonces a [`Nonces`] keeps (the oldest goes).
pub(crate) const MAX_NONCE_ORIGINS: usize = 16;
/// How many of a server's algorithm names an [`Error::DpopAlgorithm`](super::Error) shows.
const MAX_ALGS_SHOWN: usize = 16;

/// A JWS algorithm this client signs DPoP proofs with, each through ring (which makes no RSA
/// keys: no `RS*` or `PS*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alg {
    /// ECDSA on P-256 with SHA-256 (RFC 7518 section 3.4).
    Es256,
    /// ECDSA on P-384 with SHA-384 (RFC 7518 section 3.4).
    Es384,
    /// EdDSA with Ed25519 (RFC 8037 section 3.1).
    EdDsa,
}

impl Alg {
    /// The algorithms a key is made for, in the order preferred: the first one a server takes.
    pub(crate) const PREFERRED: [Alg; 3] = [Alg::Es256, Alg::Es384, Alg::EdDsa];

    /// The JWS `alg` name (case matters, RFC 7515 section 4.1.1).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Alg::Es256 => "ES256",
            Alg::Es384 => "ES384",
            Alg::EdDsa => "EdDSA",
        }
    }

    /// Whether `offered` (a server's list, absent when it named none) takes this algorithm.
    fn offered_by(self, offered: Option<&[String]>) -> bool {
        offered.is_none_or(|algs| algs.iter().any(|a| a == self.name()))
    }

    /// The algorithm of a new key for the authorization server's
    /// `dpop_signing_alg_values_supported` (RFC 9449 section 5.1) and the MCP server's
    /// `DPoP` challenge `algs` (section 7.1), each `None` when absent: the first of
    /// [`PREFERRED`](Alg::PREFERRED) both take, so ES256 when neither names any.
    ///
    /// # Errors
    ///
    /// The list that rules out every algorithm of ours (`true`: the MCP server's), cut short.
    pub(crate) fn choose(
        server: Option<&[String]>,
        resource: Option<&[String]>,
    ) -> Result<Alg, (bool, Vec<String>)> {
        Alg::PREFERRED
            .into_iter()
            .find(|alg| alg.offered_by(server) && alg.offered_by(resource))
            .ok_or_else(|| blame(Alg::PREFERRED.as_slice(), server, resource))
    }

    /// Whether a key of this algorithm (one the host gave) may sign for these servers (see
    /// [`choose`](Alg::choose)).
    ///
    /// # Errors
    ///
    /// As [`choose`](Alg::choose).
    pub(crate) fn check(
        self,
        server: Option<&[String]>,
        resource: Option<&[String]>,
    ) -> Result<(), (bool, Vec<String>)> {
        if self.offered_by(server) && self.offered_by(resource) {
            Ok(())
        } else {
            Err(blame(&[self], server, resource))
        }
    }
}

/// Which list ruled out all of `ours`: the authorization server's if it did, else the MCP
/// server's; its names cut short, at most [`MAX_ALGS_SHOWN`].
fn blame(
    ours: &[Alg],
    server: Option<&[String]>,
    resource: Option<&[String]>,
) -> (bool, Vec<String>) {
    let rules_out = |offered: Option<&[String]>| !ours.iter().any(|a| a.offered_by(offered));
    let (by_resource, list) = if rules_out(server) || resource.is_none() {
        (false, server)
    } else {
        (true, resource)
    };
    let shown = list
        .unwrap_or_default()
        .iter()
        .take(MAX_ALGS_SHOWN)
        .map(|a| super::token::clean_text(a, 40))
        .collect();
    (by_resource, shown)
}

/// DPoP for a flow ([`Config::dpop`](super::Config::dpop)): proofs of one key on every
/// token request and every MCP request made with the token.
///
/// The key: the one given ([`Dpop::new`]), or, with none ([`Dpop::default`]), one the flow
/// makes when it has the authorization server's metadata, of the first of ES256, ES384 and
/// EdDSA that the server's `dpop_signing_alg_values_supported` lists (ES256 when it lists
/// none) and that the MCP server's `DPoP` challenge `algs` lists, if it gave one (RFC 9449
/// sections 5.1 and 7.1). Either way the key stays for the life of the flow: its tokens and
/// refresh tokens are bound to it. A server that takes none of these (or not the given
/// key's) fails the flow ([`Error::DpopAlgorithm`](super::Error::DpopAlgorithm)), naming
/// what it takes: no proof is silently left out.
///
/// What a `Bearer` answer to a DPoP token request does: refused
/// ([`TokenResponseError::NotDpopBound`](super::TokenResponseError::NotDpopBound)) when
/// `required` is set, when the protected-resource metadata says
/// `dpop_bound_access_tokens_required`, or when the server's 401 offered only the `DPoP`
/// scheme; otherwise taken and sent as a bearer token (RFC 9449 section 5 lets an
/// authorization server that does not do DPoP answer so, and such a resource takes bearer
/// tokens).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Dpop {
    /// The key proofs are signed with, for the life of the flow; `None`: the flow makes one
    /// for the servers' algorithms.
    pub key: Option<Arc<DpopKey>>,
    /// Refuse a `Bearer` answer whatever the server says.
    pub required: bool,
}

impl Dpop {
    /// DPoP with `key`, not required beyond what the server says.
    pub fn new(key: Arc<DpopKey>) -> Dpop {
        Dpop {
            key: Some(key),
            required: false,
        }
    }
}

/// The ring key pair of a [`DpopKey`].
enum Pair {
    Es256(SigningKey),
    Es384(EcdsaKeyPair),
    EdDsa(Ed25519KeyPair),
}

/// A key for DPoP proofs: ES256, ES384 or EdDSA (Ed25519). Its `Debug` shows the algorithm
/// and the thumbprint only; the private key is never shown, written or logged.
pub struct DpopKey {
    pair: Pair,
    /// The public JWK: `{"crv","kty","x","y"}` (EC) or `{"crv","kty","x"}` (OKP).
    jwk: serde_json::Value,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("alg", &self.alg().name())
            .field("jkt", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new ES256 key from the system's randomness: kept in memory only (see the crate
    /// README on why DPoP-bound tokens are not written to a token store). A flow given no key
    /// makes one of the algorithm its servers take instead ([`Dpop`]).
    pub fn generate() -> Result<DpopKey, CryptoError> {
        DpopKey::generate_for(Alg::Es256)
    }

    /// A new key of `alg` from the system's randomness (ring's, which no caller replaces).
    pub(crate) fn generate_for(alg: Alg) -> Result<DpopKey, CryptoError> {
        let rng = SystemRandom::new();
        let pair = match alg {
            Alg::Es256 => Pair::Es256(SigningKey::generate(None)?.0),
            Alg::Es384 => {
                let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, &rng)
                    .map_err(|_| CryptoError::Key)?;
                let pair =
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, der.as_ref(), &rng)
                        .map_err(|_| CryptoError::Key)?;
                Pair::Es384(pair)
            }
            Alg::EdDsa => {
                let der = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| CryptoError::Key)?;
                let pair =
                    Ed25519KeyPair::from_pkcs8(der.as_ref()).map_err(|_| CryptoError::Key)?;
                Pair::EdDsa(pair)
            }
        };
        DpopKey::from_pair(pair)
    }

    /// A DPoP key from an ES256 signing key (one a host keeps, read with
    /// [`SigningKey::from_pkcs8_pem`]).
    pub fn from_signing_key(key: SigningKey) -> Result<DpopKey, CryptoError> {
        DpopKey::from_pair(Pair::Es256(key))
    }

    /// The public JWK and its RFC 7638 thumbprint for `pair`.
    fn from_pair(pair: Pair) -> Result<DpopKey, CryptoError> {
        // RFC 7638 section 3.2: the required members, lexicographic order, no whitespace.
        let (canonical, jwk) = match &pair {
            Pair::Es256(key) => ec_jwk("P-256", key.public_key(), 32)?,
            Pair::Es384(key) => ec_jwk("P-384", key.public_key().as_ref(), 48)?,
            Pair::EdDsa(key) => {
                // RFC 8037 section 2: `x` is the 32-byte public key.
                let public = key.public_key().as_ref();
                if public.len() != 32 {
                    return Err(CryptoError::Key);
                }
                let x = base64::encode(public, Flavor::UrlSafe);
                (
                    format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#),
                    serde_json::json!({"crv": "Ed25519", "kty": "OKP", "x": x}),
                )
            }
        };
        let thumbprint = base64::encode(&crypto::sha256(canonical.as_bytes()), Flavor::UrlSafe);
        Ok(DpopKey {
            pair,
            jwk,
            thumbprint,
        })
    }

    /// The algorithm its proofs are signed with.
    pub(crate) fn alg(&self) -> Alg {
        match self.pair {
            Pair::Es256(_) => Alg::Es256,
            Pair::Es384(_) => Alg::Es384,
            Pair::EdDsa(_) => Alg::EdDsa,
        }
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
        let alg = self.alg().name();
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": alg, "jwk": self.jwk});
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
        match &self.pair {
            Pair::Es256(key) => key.sign_jws(&header, &claims),
            // The FIXED encoding is `r || s`, 48 bytes each: JWS's ES384 form.
            Pair::Es384(key) => crypto::compact_jws(&header, &claims, |input| {
                key.sign(&SystemRandom::new(), input)
                    .map(|s| s.as_ref().to_vec())
                    .map_err(|_| CryptoError::Sign)
            }),
            Pair::EdDsa(key) => crypto::compact_jws(&header, &claims, |input| {
                Ok(key.sign(input).as_ref().to_vec())
            }),
        }
    }

    /// The public key as ring's verifier takes it: the uncompressed point (`04 || x || y`)
    /// of an EC key, the 32 bytes of an Ed25519 one.
    #[cfg(test)]
    pub(crate) fn public_key(&self) -> &[u8] {
        match &self.pair {
            Pair::Es256(key) => key.public_key(),
            Pair::Es384(key) => key.public_key().as_ref(),
            Pair::EdDsa(key) => key.public_key().as_ref(),
        }
    }
}

/// The RFC 7638 input and the JWK of an uncompressed EC point (`04 || x || y`, each
/// coordinate `size` bytes) on `crv`.
fn ec_jwk(
    crv: &str,
    point: &[u8],
    size: usize,
) -> Result<(String, serde_json::Value), CryptoError> {
    if point.len() != 1 + 2 * size || point[0] != 0x04 {
        return Err(CryptoError::Key);
    }
    let x = base64::encode(&point[1..=size], Flavor::UrlSafe);
    let y = base64::encode(&point[1 + size..], Flavor::UrlSafe);
    Ok((
        format!(r#"{{"crv":"{crv}","kty":"EC","x":"{x}","y":"{y}"}}"#),
        serde_json::json!({"crv": crv, "kty": "EC", "x": x, "y": y}),
    ))
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
    /// The `DPoP` challenge of a response's `WWW-Authenticate`, if any (and they parse).
    pub(crate) fn of(headers: &HeaderMap) -> Option<DpopChallenge> {
        let challenges = challenge::parse(
            headers
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .map(|v| v.as_bytes()),
        )
        .ok()?;
        DpopChallenge::find(&challenges)
    }

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
    let dpop = DpopChallenge::of(headers)?;
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

    /// base64url of the SHA-256 of `text`: an RFC 7638 thumbprint of its canonical JWK.
    fn digest_text(text: &str) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
        base64::encode(digest.as_ref(), Flavor::UrlSafe)
    }

    fn decode(part: &str) -> serde_json::Value {
        serde_json::from_slice(&base64::decode(part, Flavor::UrlSafe, Padding::Optional).unwrap())
            .unwrap()
    }

    /// The proof's header and claims, after checking its signature against the key's
    /// public key with ring's verifier for the key's algorithm.
    fn verified(key: &DpopKey, proof: &Secret) -> (serde_json::Value, serde_json::Value) {
        let parts: Vec<&str> = proof.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let signature = base64::decode(parts[2], Flavor::UrlSafe, Padding::Optional).unwrap();
        let (verifier, length): (&dyn signature::VerificationAlgorithm, usize) = match key.alg() {
            Alg::Es256 => (&signature::ECDSA_P256_SHA256_FIXED, 64),
            Alg::Es384 => (&signature::ECDSA_P384_SHA384_FIXED, 96),
            Alg::EdDsa => (&signature::ED25519, 64),
        };
        assert_eq!(signature.len(), length, "JWS's fixed-size signature form");
        let public = signature::UnparsedPublicKey::new(verifier, key.public_key());
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
        assert_eq!(key.thumbprint(), digest_text(&canonical));
        assert_eq!(key.thumbprint().len(), 43);
        // x and y are the point's coordinates.
        let x = base64::decode(
            jwk["x"].as_str().unwrap(),
            Flavor::UrlSafe,
            Padding::Optional,
        );
        assert_eq!(x.as_deref(), Some(&key.public_key()[1..33]));
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

    /// The proof's header `jwk`, rebuilt into what ring's verifier takes: the proof must
    /// verify with its own key (as a server checks it).
    fn verifies_with_its_jwk(proof: &Secret) -> serde_json::Value {
        let parts: Vec<&str> = proof.expose().split('.').collect();
        let header = decode(parts[0]);
        let jwk = &header["jwk"];
        let member = |name: &str| {
            base64::decode(
                jwk[name].as_str().unwrap(),
                Flavor::UrlSafe,
                Padding::Optional,
            )
            .unwrap()
        };
        let (verifier, public): (&dyn signature::VerificationAlgorithm, Vec<u8>) =
            match header["alg"].as_str().unwrap() {
                alg @ ("ES256" | "ES384") => {
                    let (crv, size, verifier): (_, _, &dyn signature::VerificationAlgorithm) =
                        if alg == "ES256" {
                            ("P-256", 32, &signature::ECDSA_P256_SHA256_FIXED)
                        } else {
                            ("P-384", 48, &signature::ECDSA_P384_SHA384_FIXED)
                        };
                    assert_eq!(jwk["kty"], "EC");
                    assert_eq!(jwk["crv"], crv);
                    let (x, y) = (member("x"), member("y"));
                    assert_eq!((x.len(), y.len()), (size, size));
                    (verifier, [&[0x04][..], &x, &y].concat())
                }
                "EdDSA" => {
                    assert_eq!(jwk["kty"], "OKP");
                    assert_eq!(jwk["crv"], "Ed25519");
                    assert!(jwk.get("y").is_none());
                    (&signature::ED25519, member("x"))
                }
                other => panic!("unexpected alg {other}"),
            };
        assert!(jwk.get("d").is_none(), "no private member");
        let signature = base64::decode(parts[2], Flavor::UrlSafe, Padding::Optional).unwrap();
        signature::UnparsedPublicKey::new(verifier, &public)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the proof verifies with its jwk");
        header
    }

    #[test]
    fn every_algorithm_signs_proofs_that_verify() {
        for alg in Alg::PREFERRED {
            let key = DpopKey::generate_for(alg).unwrap();
            assert_eq!(key.alg(), alg);
            let token = Secret::new("at-1");
            let request = ProofRequest {
                method: "POST",
                uri: "https://mcp.example.com/mcp?x",
                access_token: Some(&token),
                nonce: Some("n"),
            };
            let proof = key
                .proof(&request, 1_700_000_000, &SystemRandomness)
                .unwrap();
            let (header, claims) = verified(&key, &proof);
            assert_eq!(header["alg"], alg.name());
            assert_eq!(header["typ"], "dpop+jwt");
            assert_eq!(header["jwk"], key.jwk);
            assert_eq!(verifies_with_its_jwk(&proof), header);
            assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
            assert_eq!(claims["nonce"], "n");
            assert_eq!(claims["ath"], ath(&token));
            let shown = format!("{key:?}");
            assert!(shown.contains(alg.name()) && shown.contains(key.thumbprint()));
        }
    }

    #[test]
    fn thumbprints_follow_rfc_7638_for_each_key_type() {
        // RFC 7638 section 3.2: the required members only, in lexicographic order.
        let p384 = DpopKey::generate_for(Alg::Es384).unwrap();
        let jwk = &p384.jwk;
        let canonical = format!(
            r#"{{"crv":"P-384","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        assert_eq!(p384.thumbprint(), digest_text(&canonical));
        let point = p384.public_key();
        assert_eq!(point.len(), 97);
        assert_eq!(
            base64::decode(
                jwk["y"].as_str().unwrap(),
                Flavor::UrlSafe,
                Padding::Optional
            )
            .as_deref(),
            Some(&point[49..])
        );

        let ed = DpopKey::generate_for(Alg::EdDsa).unwrap();
        let x = ed.jwk["x"].as_str().unwrap();
        assert_eq!(
            ed.jwk,
            serde_json::json!({"crv": "Ed25519", "kty": "OKP", "x": x})
        );
        let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
        assert_eq!(ed.thumbprint(), digest_text(&canonical));
        assert_eq!(
            base64::decode(x, Flavor::UrlSafe, Padding::Optional).as_deref(),
            Some(ed.public_key())
        );
        // RFC 8037 appendix A.3's vector: the thumbprint of its Ed25519 public key.
        let canonical =
            r#"{"crv":"Ed25519","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
        assert_eq!(
            digest_text(canonical),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_algorithm_is_the_first_of_ours_both_servers_take() {
        let choose = |server: Option<&[&str]>, resource: Option<&[&str]>| {
            let (server, resource) = (server.map(list), resource.map(list));
            Alg::choose(server.as_deref(), resource.as_deref())
        };
        assert_eq!(choose(None, None), Ok(Alg::Es256), "absent: ES256");
        assert_eq!(choose(Some(&["ES384", "ES256"]), None), Ok(Alg::Es256));
        assert_eq!(choose(Some(&["RS256", "ES384"]), None), Ok(Alg::Es384));
        assert_eq!(choose(Some(&["EdDSA", "PS256"]), None), Ok(Alg::EdDsa));
        assert_eq!(choose(Some(&["ES384", "EdDSA"]), None), Ok(Alg::Es384));
        assert_eq!(
            choose(Some(&["ES256", "ES384"]), Some(&["ES384"])),
            Ok(Alg::Es384),
            "the MCP server's challenge narrows it"
        );
        assert_eq!(choose(None, Some(&["EdDSA"])), Ok(Alg::EdDsa));
        // Names are case-sensitive (RFC 7515 section 4.1.1).
        assert_eq!(
            choose(Some(&["es256", "RS256"]), None),
            Err((false, list(&["es256", "RS256"])))
        );
        assert_eq!(
            choose(Some(&["RS256", "PS256"]), None),
            Err((false, list(&["RS256", "PS256"])))
        );
        assert_eq!(choose(Some(&[]), None), Err((false, vec![])));
        assert_eq!(
            choose(Some(&["ES256"]), Some(&["PS256"])),
            Err((true, list(&["PS256"])))
        );
        // Both rule ours out: the authorization server's list is named.
        assert_eq!(
            choose(Some(&["RS256"]), Some(&["PS256"])),
            Err((false, list(&["RS256"])))
        );
        let long: Vec<String> = (0..40).map(|i| format!("X{i}")).collect();
        let (_, shown) = Alg::choose(Some(&long), None).unwrap_err();
        assert_eq!(shown.len(), MAX_ALGS_SHOWN);
    }

    #[test]
    fn a_given_key_is_checked_against_both_lists() {
        let server = list(&["ES384", "EdDSA"]);
        assert_eq!(Alg::Es384.check(Some(&server), None), Ok(()));
        assert_eq!(Alg::Es256.check(None, None), Ok(()));
        assert_eq!(
            Alg::Es256.check(Some(&server), None),
            Err((false, server.clone()))
        );
        let resource = list(&["ES256"]);
        assert_eq!(
            Alg::EdDsa.check(Some(&server), Some(&resource)),
            Err((true, resource))
        );
    }

    #[test]
    fn a_challenge_names_its_algorithms() {
        let h = headers(&[(
            "www-authenticate",
            r#"DPoP algs="ES384 EdDSA", error="invalid_token""#,
        )]);
        let found = DpopChallenge::of(&h).unwrap();
        assert_eq!(found.algs, Some(list(&["ES384", "EdDSA"])));
        assert_eq!(Alg::choose(None, found.algs.as_deref()), Ok(Alg::Es384));
        assert!(DpopChallenge::of(&HeaderMap::new()).is_none());
    }
}
