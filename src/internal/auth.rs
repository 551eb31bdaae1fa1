//! The `auth_challenge` and `auth_documents` harnesses: the OAuth core's parsers
//! ([`crate::auth`]) on arbitrary input.

use crate::auth::challenge::{self, Challenge, MAX_CHALLENGE_BYTES, MAX_CHALLENGES, MAX_PARAMS};
use crate::auth::metadata::{MAX_METADATA_BYTES, ResourceMetadata, ServerMetadata};
use crate::auth::url::{MAX_URL_BYTES, decode_form, encode_form};
use crate::auth::{Scopes, UnixTime, Url};

/// The `auth_challenge` fuzz target. The input's lines are `WWW-Authenticate` fields. The
/// parser never panics; what it accepts stays within its limits, has token schemes,
/// lower-case unique parameter names, and written out again (every value quoted and
/// escaped) parses to the same challenges; the `Bearer` view agrees with the challenge.
pub(crate) fn fuzz_auth_challenge(data: &[u8]) {
    let fields: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let Ok(challenges) = challenge::parse(fields.iter().copied()) else {
        return;
    };
    assert!(data.len() <= MAX_CHALLENGE_BYTES + fields.len());
    assert!(challenges.len() <= MAX_CHALLENGES);
    for c in &challenges {
        assert!(
            !c.scheme().is_empty() && c.scheme().bytes().all(is_tchar),
            "{c:?}"
        );
        let names = param_names(c);
        assert!(names.len() <= MAX_PARAMS);
        for (i, name) in names.iter().enumerate() {
            assert!(!name.is_empty() && name.bytes().all(is_tchar));
            assert_eq!(*name, name.to_ascii_lowercase());
            assert!(!names[..i].contains(name), "duplicate {name}");
        }
        assert!(c.token68().is_none() || names.is_empty());
    }
    let written = write(&challenges);
    if written.len() <= MAX_CHALLENGE_BYTES {
        let again = challenge::parse([written.as_bytes()])
            .unwrap_or_else(|e| panic!("{written:?} does not parse again: {e}"));
        assert_eq!(again, challenges, "{written:?}");
    }
    if let Some(bearer) = challenge::BearerChallenge::find(&challenges) {
        // The first Bearer challenge, else the first DPoP one (RFC 9449 section 7.1).
        let first = challenges
            .iter()
            .find(|c| c.is("bearer"))
            .or_else(|| challenges.iter().find(|c| c.is("dpop")))
            .expect("a bearer or DPoP challenge");
        assert_eq!(bearer.scope.as_deref(), first.param("scope"));
        assert_eq!(
            bearer.resource_metadata.as_deref(),
            first.param("resource_metadata")
        );
        assert_eq!(bearer.error.as_deref(), first.param("error"));
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn param_names(c: &Challenge) -> Vec<String> {
    c.params().map(|(n, _)| n.to_owned()).collect()
}

/// The challenges as one field: every value a quoted string, `"` and `\` escaped.
fn write(challenges: &[Challenge]) -> String {
    let mut out = String::new();
    for (i, c) in challenges.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(c.scheme());
        if let Some(token68) = c.token68() {
            out.push(' ');
            out.push_str(token68);
        }
        for (j, (name, value)) in c.params().enumerate() {
            out.push_str(if j == 0 { " " } else { ", " });
            out.push_str(name);
            out.push_str("=\"");
            for ch in value.chars() {
                if ch == '"' || ch == '\\' {
                    out.push('\\');
                }
                out.push(ch);
            }
            out.push('"');
        }
    }
    out
}

/// The `auth_documents` fuzz target. The first byte picks a parser (protected-resource
/// metadata, authorization-server metadata, a token answer under one of several statuses, a
/// registration answer, a scope, a query string, a URL), the rest is its input. No parser
/// panics; a document accepted holds only secure URLs (and the issuer asked for), a token
/// accepted is header-safe and within its size, a query decoded encodes and decodes back to
/// the same pairs, and no error text or `Debug` output shows a token or secret the input
/// carried.
pub(crate) fn fuzz_auth_documents(data: &[u8]) {
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(input);
    match knob % 7 {
        0 => {
            if let Ok(meta) = ResourceMetadata::parse(input) {
                assert!(input.len() <= MAX_METADATA_BYTES);
                assert!(!meta.authorization_servers.is_empty());
                assert!(
                    meta.authorization_servers
                        .iter()
                        .all(|s| s.is_secure() && s.query().is_none())
                );
            }
        }
        1 => {
            // The issuer asked for is the document's own when it has one, so the checks
            // past the issuer comparison are reached.
            let issuer = serde_json::from_slice::<serde_json::Value>(input)
                .ok()
                .and_then(|v| v.get("issuer").and_then(|i| i.as_str()).map(str::to_owned))
                .unwrap_or_else(|| "https://as.example.com".to_owned());
            match ServerMetadata::parse(input, &issuer) {
                Ok(meta) => {
                    assert_eq!(meta.issuer, issuer);
                    assert!(meta.token_endpoint.is_secure());
                    assert!(
                        meta.authorization_endpoint
                            .iter()
                            .chain(&meta.registration_endpoint)
                            .all(Url::is_secure)
                    );
                    let _ = (meta.supports_s256(), meta.origins());
                }
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
        2 => {
            let secrets = carried_secrets(input);
            let status = [200, 201, 400, 401, 500][usize::from(knob / 7) % 5];
            match crate::auth::token::parse_token_response(
                status,
                input,
                UnixTime(1_000),
                None,
                None,
                knob & 1 == 1,
            ) {
                Ok(token) => {
                    let access = token.access_token().expose();
                    assert!(
                        !access.is_empty() && access.len() <= crate::auth::token::MAX_TOKEN_BYTES
                    );
                    assert!(access.bytes().all(|b| (0x21..=0x7e).contains(&b)));
                    // `Debug` does not depend on the secrets' values.
                    let blank = crate::auth::Token::new(
                        crate::auth::Secret::new("x"),
                        token.refresh_token().map(|_| crate::auth::Secret::new("y")),
                        token.expires_at(),
                        token.scope().cloned(),
                    )
                    .bound(token.is_dpop());
                    assert_eq!(format!("{token:?}"), format!("{blank:?}"));
                }
                Err(e) => {
                    let shown = format!("{e} {e:?}");
                    for secret in &secrets {
                        assert!(!shown.contains(secret.as_str()), "{secret:?} in {shown}");
                    }
                }
            }
        }
        3 => {
            let secrets = carried_secrets(input);
            let status = [200, 201, 400, 500][usize::from(knob / 7) % 4];
            if let Err(e) = crate::auth::client::parse_registration(status, input) {
                let shown = format!("{e} {e:?}");
                for secret in &secrets {
                    assert!(!shown.contains(secret.as_str()), "{secret:?} in {shown}");
                }
            }
        }
        4 => {
            if let Ok(scopes) = Scopes::parse(&text) {
                let printed = scopes.to_string();
                assert_eq!(Scopes::parse(&printed).as_ref(), Ok(&scopes));
                assert!(!printed.starts_with(' ') && !printed.contains("  "));
            }
        }
        5 => {
            if let Ok(pairs) = decode_form(&text) {
                assert!(text.len() <= MAX_URL_BYTES);
                let borrowed: Vec<(&str, &str)> = pairs
                    .iter()
                    .map(|(a, b)| (a.as_str(), b.as_str()))
                    .collect();
                let encoded = encode_form(&borrowed);
                if encoded.len() <= MAX_URL_BYTES {
                    let again = decode_form(&encoded).expect("an encoded form decodes");
                    assert_eq!(again, pairs);
                }
            }
        }
        _ => {
            if let Ok(url) = Url::parse(&text) {
                assert_eq!(url.as_str(), text);
                assert!(!text.contains('#') && !url.host().is_empty());
                assert!(url.path().is_empty() || url.path().starts_with('/'));
                assert_eq!(
                    Url::parse(url.origin_text()).map(|u| u.origin()),
                    Ok(url.origin())
                );
                let _ = url.to_uri();
            }
        }
    }
}

/// The string values of `access_token`, `refresh_token` and `client_secret` in a JSON input,
/// long enough to be told from ordinary text, and not also in its error members (a server's
/// own error text is shown, cleaned; the flow redacts the secrets it holds from it).
fn carried_secrets(input: &[u8]) -> Vec<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(input) else {
        return Vec::new();
    };
    let shown: String = ["error", "error_description"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(|v| v.as_str()))
        .collect::<Vec<_>>()
        .join(" ");
    ["access_token", "refresh_token", "client_secret"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(|v| v.as_str()))
        .filter(|s| s.len() >= 8 && !shown.contains(*s))
        .map(str::to_owned)
        .collect()
}

/// The `auth_dpop` fuzz target: the DPoP parsers (RFC 9449) on arbitrary input. The first
/// byte picks a status (401, 400, 403, 200) and how the rest is read; the rest is a
/// response's header lines (`name: value`, one a line) and, after an empty line, its body.
/// No parser panics; a `DPoP-Nonce` taken is the response's only one, byte for byte, 1 to
/// 512 characters of the RFC's NQCHAR set; a resource server's nonce is taken only from a
/// 401 with a `DPoP` challenge whose `error` is `use_dpop_nonce` (as read by the challenge
/// parser itself), an authorization server's only from a 400 whose OAuth error is
/// `use_dpop_nonce`; the schemes seen agree with the challenges; the `DPoP` challenge's view
/// agrees with the challenge; and an accepted nonce goes into a proof's `nonce` claim as it is.
pub(crate) fn fuzz_auth_dpop(data: &[u8]) {
    use crate::auth::dpop::{self, DpopChallenge, SchemesOffered};
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    let status = [401u16, 400, 403, 200][usize::from(knob & 3)];
    let split = input
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(input.len());
    let (head, body) = (&input[..split], input.get(split + 2..).unwrap_or(&[]));
    let mut headers = http::HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            http::header::HeaderName::from_bytes(&line[..colon]),
            http::HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    // A bare value.
    if let Some(nonce) = dpop::parse_nonce(head) {
        assert_eq!(nonce.as_bytes(), head);
        assert!(!nonce.is_empty() && nonce.len() <= dpop::MAX_NONCE_BYTES);
        assert!(
            nonce
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
        );
    }
    let nonces: Vec<&[u8]> = headers
        .get_all(dpop::DPOP_NONCE)
        .iter()
        .map(|v| v.as_bytes())
        .collect();
    let header_nonce = dpop::nonce_header(&headers);
    if let Some(nonce) = &header_nonce {
        assert_eq!(nonces, [nonce.as_bytes()], "the only one, as sent");
    }
    let parsed = challenge::parse(
        headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .map(|v| v.as_bytes()),
    );
    let offered = SchemesOffered::of(&headers);
    match &parsed {
        Ok(challenges) => {
            assert_eq!(offered.bearer, challenges.iter().any(|c| c.is("bearer")));
            assert_eq!(offered.dpop, challenges.iter().any(|c| c.is("dpop")));
            if let Some(view) = DpopChallenge::find(challenges) {
                let first = challenges
                    .iter()
                    .find(|c| c.is("dpop"))
                    .expect("a DPoP one");
                assert_eq!(view.error.as_deref(), first.param("error"));
                assert_eq!(view.scope.as_deref(), first.param("scope"));
                let algs: Option<Vec<&str>> = first
                    .param("algs")
                    .map(|a| a.split(' ').filter(|s| !s.is_empty()).collect());
                assert_eq!(
                    view.algs
                        .as_ref()
                        .map(|v| v.iter().map(String::as_str).collect()),
                    algs
                );
            }
        }
        Err(_) => assert_eq!(offered, SchemesOffered::default()),
    }
    match dpop::resource_nonce(status, &headers) {
        Some(nonce) => {
            assert_eq!(status, 401);
            assert_eq!(Some(&nonce), header_nonce.as_ref());
            let challenges = parsed.as_ref().expect("the challenges parsed");
            let first = challenges
                .iter()
                .find(|c| c.is("dpop"))
                .expect("a DPoP one");
            assert_eq!(first.param("error"), Some("use_dpop_nonce"));
        }
        None => assert!(
            status != 401
                || header_nonce.is_none()
                || parsed.as_ref().map_or(true, |c| c
                    .iter()
                    .find(|c| c.is("dpop"))
                    .and_then(|c| c.param("error"))
                    != Some("use_dpop_nonce")),
            "a nonce challenge missed"
        ),
    }
    match dpop::server_nonce(status, &headers, body) {
        Some(nonce) => {
            assert_eq!(status, 400);
            assert_eq!(Some(&nonce), header_nonce.as_ref());
            let error = crate::auth::token::OAuthError::parse(body).expect("an OAuth error");
            assert_eq!(error.code, "use_dpop_nonce");
        }
        None => assert!(
            status != 400
                || header_nonce.is_none()
                || crate::auth::token::OAuthError::parse(body)
                    .is_none_or(|e| e.code != "use_dpop_nonce"),
            "a nonce answer missed"
        ),
    }
    if let Some(nonce) = &header_nonce {
        let key = dpop_key();
        let request = dpop::ProofRequest {
            method: "POST",
            uri: "https://as.example.com/token",
            access_token: None,
            nonce: Some(nonce),
        };
        let proof = key
            .proof(&request, 1_700_000_000, &crate::auth::SystemRandomness)
            .expect("a proof");
        let claims = proof.expose().split('.').nth(1).expect("claims");
        let claims = crate::base64::decode(
            claims,
            crate::base64::Flavor::UrlSafe,
            crate::base64::Padding::Optional,
        )
        .expect("base64url");
        let claims: serde_json::Value = serde_json::from_slice(&claims).expect("JSON");
        assert_eq!(claims["nonce"].as_str(), Some(nonce.as_str()));
    }
}

/// One DPoP key for the whole run (making one per input would measure key generation).
fn dpop_key() -> &'static crate::auth::DpopKey {
    static KEY: std::sync::OnceLock<crate::auth::DpopKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| crate::auth::DpopKey::generate().expect("a key"))
}

/// The `auth_token_exchange` fuzz target: the token-exchange answer (RFC 8693 section 2.2)
/// that must carry an ID-JAG, and the token answer to a DPoP token request, on arbitrary
/// input. The first byte picks a status (200, 201, 400, 401, 500) and which reading; the rest
/// is the body. Neither panics; an ID-JAG taken is the body's `access_token`, visible ASCII
/// within 16 KiB, from a 2xx naming `issued_token_type` ID-JAG; a token taken is bound to
/// DPoP exactly when its `token_type` is `DPoP` (in any case); no error text or `Debug` shows
/// an `access_token`, `refresh_token` or `client_secret` the input carried (unless the
/// server's own error text repeats it).
pub(crate) fn fuzz_auth_token_exchange(data: &[u8]) {
    use crate::auth::assertion::{ID_JAG_TYPE, MAX_ASSERTION_BYTES, parse_id_jag_response};
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    let status = [200u16, 201, 400, 401, 500][usize::from(knob >> 1) % 5];
    let secrets = carried_secrets(input);
    let document = serde_json::from_slice::<serde_json::Value>(input).ok();
    let id_jag = knob & 1 == 0;
    // What the reading shows of `body`: the error's text and `Debug`, or the token's `Debug`.
    let shown = |body: &[u8]| -> String {
        if id_jag {
            match parse_id_jag_response(status, body) {
                Ok(secret) => format!("{secret:?}"),
                Err(e) => format!("{e} {e:?}"),
            }
        } else {
            match crate::auth::token::parse_token_response(
                status,
                body,
                UnixTime(1_000),
                None,
                None,
                true,
            ) {
                Ok(token) => format!("{token:?}"),
                Err(e) => format!("{e} {e:?}"),
            }
        }
    };
    let text = shown(input);
    for secret in &secrets {
        // A secret that shows may still be a coincidence (the fuzzer makes a "token" out of
        // the error's own words, `P 400 Status(400`): it leaked only if it is gone once its
        // bytes in the input are masked.
        if text.contains(secret.as_str()) {
            let masked = mask(input, secret.as_bytes());
            assert!(
                shown(&masked).contains(secret.as_str()),
                "{secret:?} leaked in {text}"
            );
        }
    }
    if id_jag {
        if let Ok(id_jag) = parse_id_jag_response(status, input) {
            assert!((200..300).contains(&status));
            let document = document.expect("JSON");
            assert_eq!(document["issued_token_type"].as_str(), Some(ID_JAG_TYPE));
            let text = id_jag.expose();
            assert_eq!(document["access_token"].as_str().map(str::trim), Some(text));
            assert!(!text.is_empty() && text.len() <= MAX_ASSERTION_BYTES);
            assert!(text.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        }
    } else if let Ok(token) =
        crate::auth::token::parse_token_response(status, input, UnixTime(1_000), None, None, true)
    {
        let token_type = document
            .as_ref()
            .and_then(|d| d["token_type"].as_str().map(str::to_owned))
            .expect("a token_type");
        assert_eq!(token.is_dpop(), token_type.eq_ignore_ascii_case("dpop"));
        assert!(token.is_dpop() || token_type.eq_ignore_ascii_case("bearer"));
    }
}

/// `input` with every occurrence of `secret` replaced by as many `x`.
fn mask(input: &[u8], secret: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if !secret.is_empty() && input[i..].starts_with(secret) {
            out.extend(std::iter::repeat_n(b'x', secret.len()));
            i += secret.len();
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    out
}
