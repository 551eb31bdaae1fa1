//! The cryptography of OAuth for a client, all from `ring`: PKCE S256 (RFC 7636), random
//! `state` values and JWT ids, and ES256-signed client assertions (RFC 7523, RFC 7515 with the
//! algorithm of RFC 7518 section 3.4) for `private_key_jwt`.

use std::fmt;

use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, KeyPair};

use crate::base64::{self, Flavor, Padding};
use crate::secret::Secret;

/// The largest PEM private key read.
pub(crate) const MAX_KEY_PEM_BYTES: usize = 16 * 1024;

/// Why a cryptographic step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CryptoError {
    /// The system's random number generator failed.
    Random,
    /// The key is not a PEM `PRIVATE KEY` (PKCS#8) holding a P-256 key with its public part.
    Key,
    /// Signing failed.
    Sign,
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CryptoError::Random => "the system's random number generator failed",
            CryptoError::Key => {
                "the private key is not a PEM \"PRIVATE KEY\" (PKCS#8) P-256 key; convert a \
                 SEC1 \"EC PRIVATE KEY\" with `openssl pkcs8 -topk8 -nocrypt`"
            }
            CryptoError::Sign => "signing the client assertion failed",
        })
    }
}

impl std::error::Error for CryptoError {}

/// Where the OAuth core's random values come from: PKCE verifiers, `state` values and the JWT
/// ids of client assertions. Like time, randomness is an input: the system's generator
/// (through ring) unless the driver is given another (`Flow::with_randomness`,
/// `client::auth::OAuth::with_randomness`), such as a test's seeded one that makes a flow's
/// requests predictable. (The ECDSA signature of an assertion and a generated key take ring's
/// system generator, which ring lets no caller replace.)
pub trait Randomness: Send + Sync {
    /// Fills `bytes` with unpredictable bytes.
    ///
    /// # Errors
    ///
    /// [`CryptoError::Random`] when there are none to be had.
    fn fill(&self, bytes: &mut [u8]) -> Result<(), CryptoError>;
}

/// The operating system's random number generator, through ring: the default [`Randomness`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemRandomness;

impl Randomness for SystemRandomness {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), CryptoError> {
        SystemRandom::new()
            .fill(bytes)
            .map_err(|_| CryptoError::Random)
    }
}

/// `len` random bytes from `random`, base64url without padding.
pub(crate) fn random_text(random: &dyn Randomness, len: usize) -> Result<String, CryptoError> {
    let mut bytes = vec![0u8; len];
    random.fill(&mut bytes)?;
    Ok(base64::encode(&bytes, Flavor::UrlSafe))
}

/// SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// A PKCE pair (RFC 7636): the verifier stays with the client, the challenge goes in the
/// authorization URL.
pub(crate) struct Pkce {
    /// 32 random bytes, base64url: 43 characters of the unreserved set (section 4.1).
    pub(crate) verifier: Secret,
    /// `BASE64URL(SHA256(verifier))` (section 4.2, `S256`).
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn new(random: &dyn Randomness) -> Result<Pkce, CryptoError> {
        let verifier = random_text(random, 32)?;
        Ok(Pkce {
            challenge: s256_challenge(&verifier),
            verifier: Secret::new(verifier),
        })
    }
}

/// The `S256` code challenge of a verifier.
pub(crate) fn s256_challenge(verifier: &str) -> String {
    base64::encode(&sha256(verifier.as_bytes()), Flavor::UrlSafe)
}

/// An ES256 (ECDSA P-256 with SHA-256) key for signing client assertions. Its `Debug` shows
/// only the key id.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    key_id: Option<String>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &"ES256")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads a PEM `-----BEGIN PRIVATE KEY-----` (unencrypted PKCS#8 v1, P-256, with the
    /// public key inside, as OpenSSL and most tools write it). `key_id` goes in the JWT
    /// header as `kid` when given.
    pub fn from_pkcs8_pem(pem: &str, key_id: Option<String>) -> Result<SigningKey, CryptoError> {
        if pem.len() > MAX_KEY_PEM_BYTES {
            return Err(CryptoError::Key);
        }
        let der = pem_body(pem, "PRIVATE KEY").ok_or(CryptoError::Key)?;
        SigningKey::from_pkcs8_der(&der, key_id)
    }

    /// Reads an unencrypted PKCS#8 v1 P-256 key in DER.
    pub fn from_pkcs8_der(der: &[u8], key_id: Option<String>) -> Result<SigningKey, CryptoError> {
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            der,
            &SystemRandom::new(),
        )
        .map_err(|_| CryptoError::Key)?;
        Ok(SigningKey { pair, key_id })
    }

    /// A new key from the system's randomness, with its PKCS#8 DER (to store, and to read
    /// again with [`from_pkcs8_der`](SigningKey::from_pkcs8_der)).
    pub fn generate(key_id: Option<String>) -> Result<(SigningKey, Vec<u8>), CryptoError> {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| CryptoError::Key)?;
        let der = der.as_ref().to_vec();
        Ok((SigningKey::from_pkcs8_der(&der, key_id)?, der))
    }

    /// The uncompressed public point (`04 || x || y`), for a JWKS or for checking.
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// A compact JWS of `claims` (a JSON object), `alg` ES256, `typ` JWT.
    pub(crate) fn sign_jwt(&self, claims: &serde_json::Value) -> Result<Secret, CryptoError> {
        let mut header = serde_json::json!({"alg": "ES256", "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = serde_json::Value::String(kid.clone());
        }
        self.sign_jws(&header, claims)
    }

    /// A compact JWS of `claims` under `header` (which must name `alg` ES256).
    pub(crate) fn sign_jws(
        &self,
        header: &serde_json::Value,
        claims: &serde_json::Value,
    ) -> Result<Secret, CryptoError> {
        // The FIXED encoding is `r || s`, 32 bytes each: exactly JWS's ES256 form.
        compact_jws(header, claims, |input| {
            self.pair
                .sign(&SystemRandom::new(), input)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| CryptoError::Sign)
        })
    }
}

/// A compact JWS (RFC 7515 section 7.1) of `claims` under `header`: `sign` signs the
/// signing input (`BASE64URL(header) . BASE64URL(claims)`) and gives the signature in the
/// form the header's `alg` names.
pub(crate) fn compact_jws(
    header: &serde_json::Value,
    claims: &serde_json::Value,
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, CryptoError>,
) -> Result<Secret, CryptoError> {
    let mut text = base64::encode(header.to_string().as_bytes(), Flavor::UrlSafe);
    text.push('.');
    base64::encode_into(claims.to_string().as_bytes(), Flavor::UrlSafe, &mut text);
    let signature = sign(text.as_bytes())?;
    text.push('.');
    base64::encode_into(&signature, Flavor::UrlSafe, &mut text);
    Ok(Secret::new(text))
}

/// The base64 body of the first PEM block labelled `label`, decoded.
fn pem_body(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let body: String = pem[start..stop]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::decode(&body, Flavor::Standard, Padding::Required)
}

/// The claims of a `private_key_jwt` client assertion (RFC 7523 section 3): issued by and
/// about the client, for `audience` (the authorization server's issuer), valid from `now` for
/// [`ASSERTION_LIFETIME_SECS`], with a random `jti`.
pub(crate) fn assertion_claims(
    client_id: &str,
    audience: &str,
    now_unix: u64,
    random: &dyn Randomness,
) -> Result<serde_json::Value, CryptoError> {
    Ok(serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now_unix,
        "exp": now_unix + ASSERTION_LIFETIME_SECS,
        "jti": random_text(random, 16)?,
    }))
}

/// How long a client assertion is valid: long enough for clock skew, short against replay.
pub(crate) const ASSERTION_LIFETIME_SECS: u64 = 120;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A throwaway P-256 key made by ring itself, as PEM.
    pub(crate) fn test_key_pem() -> String {
        let der = EcdsaKeyPair::generate_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &SystemRandom::new(),
        )
        .unwrap();
        let body = base64::encode(der.as_ref(), Flavor::Standard);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn pkce_matches_rfc7636_appendix_b() {
        assert_eq!(
            s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let pkce = Pkce::new(&SystemRandomness).unwrap();
        assert_eq!(pkce.verifier.expose().len(), 43);
        assert!(
            pkce.verifier
                .expose()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(pkce.challenge, s256_challenge(pkce.verifier.expose()));
        assert_ne!(
            Pkce::new(&SystemRandomness).unwrap().challenge,
            pkce.challenge
        );
        assert_eq!(format!("{:?}", pkce.verifier), "Secret(<redacted>)");
    }

    #[test]
    fn sha256_vector() {
        let hex: String = sha256(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn es256_assertions_verify_with_the_public_key() {
        let key = SigningKey::from_pkcs8_pem(&test_key_pem(), Some("k1".into())).unwrap();
        let claims = assertion_claims(
            "client-1",
            "https://as.example.com",
            1_700_000_000,
            &SystemRandomness,
        )
        .unwrap();
        let jwt = key.sign_jwt(&claims).unwrap();
        let parts: Vec<&str> = jwt.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |p: &str| base64::decode(p, Flavor::UrlSafe, Padding::Optional).unwrap();
        let header: serde_json::Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        assert_eq!(
            header,
            serde_json::json!({"alg": "ES256", "typ": "JWT", "kid": "k1"})
        );
        let body: serde_json::Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!(body["iss"], "client-1");
        assert_eq!(body["sub"], "client-1");
        assert_eq!(body["aud"], "https://as.example.com");
        assert_eq!(body["exp"], 1_700_000_000 + ASSERTION_LIFETIME_SECS);
        assert_eq!(body["jti"].as_str().unwrap().len(), 22);
        let signature = decode(parts[2]);
        assert_eq!(signature.len(), 64);
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            key.public_key(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public.verify(signed.as_bytes(), &signature).unwrap();
        // A changed claim does not verify.
        let forged = format!("{}.{}x", parts[0], parts[1]);
        assert!(public.verify(forged.as_bytes(), &signature).is_err());
        assert!(!format!("{key:?}").contains("BEGIN"));
    }

    #[test]
    fn bad_keys_are_refused() {
        let pem = test_key_pem();
        for bad in [
            String::new(),
            pem.replace("PRIVATE KEY", "EC PRIVATE KEY"),
            pem.replace("-----END PRIVATE KEY-----", ""),
            pem.replacen('M', "!", 1),
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----".to_owned(),
            "x".repeat(MAX_KEY_PEM_BYTES + 1),
        ] {
            assert_eq!(
                SigningKey::from_pkcs8_pem(&bad, None).map(|_| ()),
                Err(CryptoError::Key)
            );
        }
    }
}
