//! The bearer token each request carries, and what a refusal of it (401, 403) does: the
//! request held for a new token and sent again, or failed with the challenge described.

use std::time::Instant;

use http::header::{AUTHORIZATION, HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};

use crate::jsonrpc::Id;
use crate::secret::Secret;
use crate::session::Failure;

use super::{Exchange, HttpRequest, Op, Output, RequestOp};

/// How many times one request may be sent again after refusals of its credentials: once
/// after a 401, and the rest after 403 `insufficient_scope` (step-up); the token provider
/// keeps its own, lower, limit on step-ups.
pub(crate) const MAX_RESENDS: u8 = 3;
/// The header of a server's DPoP nonce (RFC 9449 section 8.1): a name made once, as a
/// lookup by `&str` parses the name again for every response.
const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");
/// The longest `DPoP-Nonce` passed on (a longer one is not a nonce the DPoP state takes).
const MAX_NONCE_HEADER_BYTES: usize = 1024;
/// How many `WWW-Authenticate` values a [`Refusal`] keeps, and how long each may be.
const MAX_CHALLENGE_VALUES: usize = 8;
const MAX_CHALLENGE_VALUE_BYTES: usize = 8 * 1024;

/// A request whose credentials the server refused with 401 or 403 before running it
/// ([`Output::Refused`]). The request did not run, so it may be sent again with a new token.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub(crate) struct Refusal {
    /// The refused request.
    pub id: Id,
    /// 401 or 403.
    pub status: StatusCode,
    /// The reply's `WWW-Authenticate` values (at most 8, each at most 8 KiB: longer ones are
    /// dropped; any credential of ours in them redacted) and its `DPoP-Nonce` (RFC 9449
    /// section 9: a 401 asking for a nonce in the next proof), if it sent one.
    pub challenges: HeaderMap,
    /// The bearer token the request carried.
    pub sent: Option<Secret>,
    /// How many times the request was sent again already.
    // Only the tests read it: the exchange itself bounds the resends.
    #[cfg_attr(not(test), allow(dead_code))]
    pub resends: u8,
}

/// A refused request waiting for the driver's [`Exchange::resend`] or [`Exchange::reject`].
#[derive(Debug)]
pub(super) struct Parked {
    op: Box<RequestOp>,
    /// The request as sent, for sending again with another `Authorization`.
    request: HttpRequest,
    status: StatusCode,
    /// The failure if the driver gives up.
    failure: Failure,
}

impl Exchange {
    /// How many bearer tokens set by [`Exchange::set_bearer`] are remembered for redaction.
    const MAX_REMEMBERED_TOKENS: usize = 32;

    /// Sends `token` as `Authorization: Bearer` from the next request on (a token provider's,
    /// replacing the config's), or no token. Every token set is remembered for redaction: a
    /// server echoing an old one is caught too.
    pub(crate) fn set_bearer(&mut self, token: Option<Secret>) {
        if let Some(token) = &token
            && !self.secrets.contains(token)
        {
            let fixed = self.config.secrets().len();
            if self.secrets.len() >= fixed + Self::MAX_REMEMBERED_TOKENS {
                self.secrets.remove(fixed);
            }
            self.secrets.push(token.clone());
        }
        self.bearer = token;
    }

    /// The bearer token requests carry now.
    pub(crate) fn bearer(&self) -> Option<&Secret> {
        self.bearer.as_ref()
    }

    /// With `true`, a request refused with 401 or 403 is not failed at once but handed to the
    /// driver as [`Output::Refused`], to be sent again with a new token: the server answered
    /// the credentials, so the request did not run. Each request is sent again at most
    /// [`MAX_RESENDS`] times, at most once after a 401 that refused a token (a 401 for a
    /// token obtained after such a 401 fails the request: nothing ran, and a third token
    /// would not be better; a 401 for a request sent with no token does not count), and never
    /// with the token it was refused with. Off by default: a static token's refusal is
    /// final. A request kept for sending again keeps its body until its reply's head.
    pub(crate) fn hold_refusals(&mut self, hold: bool) {
        self.hold_refusals = hold;
    }

    /// Whether refused requests wait for a new token ([`hold_refusals`](Self::hold_refusals)).
    pub(crate) fn holds_refusals(&self) -> bool {
        self.hold_refusals
    }

    /// Sends the refused request `id` again, with `token` (which also goes on every later
    /// request). A token that is the one the request was refused with fails the request
    /// instead; an `id` not waiting (settled meanwhile) is ignored.
    pub(crate) fn resend(&mut self, id: &Id, token: Option<Secret>, _now: Instant) {
        let Some(parked) = self.parked.remove(id) else {
            return;
        };
        let Parked {
            mut op,
            mut request,
            status,
            mut failure,
        } = parked;
        if token.is_none() || token == op.sent_token {
            failure.detail.push_str("; no other token to send it with");
            self.fail(op.id.clone(), failure);
            return;
        }
        self.set_bearer(token);
        op.resends += 1;
        // A 401 for a request that carried no token is the server's challenge, not a verdict
        // on a token: the first token sent after it may still be refused (a cached one in its
        // last second by the server's clock) and renewed once.
        op.resent_after_401 |= status == StatusCode::UNAUTHORIZED && op.sent_token.is_some();
        op.sent_token = self.bearer.clone();
        request.headers.remove(AUTHORIZATION);
        if let Some(value) = self.authorization() {
            request.headers.insert(AUTHORIZATION, value);
        }
        self.log(|| {
            format!(
                "> POST {} (sent again with a new token after {status})",
                request.uri
            )
        });
        op.retained = Some(request.clone());
        self.issue(Op::Request(op), request);
    }

    /// Sends the refused request `id` again with the same token, for a DPoP nonce: the
    /// server's 401 asked for a nonce in the proof (RFC 9449 section 9), which the transport
    /// makes afresh for each request. Once per request: `false` (and the request fails as
    /// refused) when it was already sent again so, or it is not waiting.
    pub(crate) fn resend_for_nonce(&mut self, id: &Id, _now: Instant) -> bool {
        let Some(parked) = self.parked.remove(id) else {
            return false;
        };
        let Parked {
            mut op,
            request,
            status,
            mut failure,
        } = parked;
        if op.nonce_resent {
            failure
                .detail
                .push_str("; the server asked for a new DPoP nonce again");
            self.fail(op.id.clone(), failure);
            return false;
        }
        op.nonce_resent = true;
        self.log(|| {
            format!(
                "> POST {} (sent again with the server's DPoP nonce after {status})",
                request.uri
            )
        });
        op.retained = Some(request.clone());
        self.issue(Op::Request(op), request);
        true
    }

    /// Gives up on the refused request `id`: it fails as refused (it did not run), with
    /// `reason` (why no new token came) after the server's challenge.
    #[cfg(test)]
    pub(crate) fn reject(&mut self, id: &Id, reason: &str) {
        self.reject_with(id, reason, None);
    }

    /// [`reject`](Self::reject), with the typed error that caused it as the failure's
    /// [`source`](std::error::Error::source).
    pub(crate) fn reject_with(
        &mut self,
        id: &Id,
        reason: &str,
        cause: Option<crate::session::Cause>,
    ) {
        let Some(Parked {
            op, mut failure, ..
        }) = self.parked.remove(id)
        else {
            return;
        };
        failure.detail = format!("{}; {}", failure.detail, self.redact(reason));
        self.fail(op.id.clone(), failure.with_cause(cause));
    }

    /// A request's credentials were refused (401, 403): park it for the driver, or fail it
    /// when it may not be sent again.
    pub(super) fn refused(
        &mut self,
        op: Box<RequestOp>,
        retained: Option<HttpRequest>,
        status: StatusCode,
        headers: &HeaderMap,
    ) {
        let Some(mut failure) = self.status_failure(status, headers, op.is_initialize) else {
            return;
        };
        // A 401 that brings a DPoP nonce may be answered once more, with the same token.
        let nonce = status == StatusCode::UNAUTHORIZED
            && !op.nonce_resent
            && headers.contains_key(&DPOP_NONCE);
        let again = status != StatusCode::UNAUTHORIZED || !op.resent_after_401 || nonce;
        let request = match retained {
            Some(request) if self.hold_refusals && again && op.resends < MAX_RESENDS => request,
            _ => {
                if op.resends > 0 {
                    failure.detail.push_str(&format!(
                        " (after the request was sent again with a new token {} time{})",
                        op.resends,
                        if op.resends == 1 { "" } else { "s" }
                    ));
                }
                self.fail(op.id.clone(), failure);
                return;
            }
        };
        let mut challenges = HeaderMap::new();
        for value in headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter(|v| v.len() <= MAX_CHALLENGE_VALUE_BYTES)
            .take(MAX_CHALLENGE_VALUES)
        {
            let value = match value.to_str() {
                Ok(text) if self.secrets.iter().any(|s| s.appears_in(text)) => {
                    match HeaderValue::from_str(&self.redact(text)) {
                        Ok(value) => value,
                        Err(_) => continue,
                    }
                }
                _ => value.clone(),
            };
            challenges.append(http::header::WWW_AUTHENTICATE, value);
        }
        if let Some(nonce) = headers
            .get(&DPOP_NONCE)
            .filter(|v| v.len() <= MAX_NONCE_HEADER_BYTES)
        {
            challenges.insert(DPOP_NONCE, nonce.clone());
        }
        let refusal = Refusal {
            id: op.id.clone(),
            status,
            challenges,
            sent: op.sent_token.clone(),
            resends: op.resends,
        };
        self.parked.insert(
            op.id.clone(),
            Parked {
                op,
                request,
                status,
                failure,
            },
        );
        self.outputs.push_back(Output::Refused(refusal));
    }

    /// `Authorization: Bearer` with the current token, marked sensitive.
    pub(super) fn authorization(&self) -> Option<HeaderValue> {
        let token = self.bearer.as_ref()?;
        let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
        value.set_sensitive(true);
        Some(value)
    }
}

/// Names the `WWW-Authenticate` challenge of a 401 or 403: scheme, `resource_metadata`,
/// `scope`, `error`. Each challenge goes through `redact` whole, before its parameters are
/// cut to length: a cut could split an echoed credential so that it no longer matches.
pub(super) fn describe_challenge(
    status: StatusCode,
    headers: &HeaderMap,
    redact: &dyn Fn(&str) -> String,
) -> String {
    let challenges: Vec<String> = headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(redact)
        .collect();
    if challenges.is_empty() {
        return format!(
            "the server refused the credentials with {status} and sent no WWW-Authenticate challenge"
        );
    }
    let mut described = Vec::new();
    for challenge in &challenges {
        let scheme = challenge.split_whitespace().next().unwrap_or("");
        let mut parts = vec![format!("scheme {scheme}")];
        for key in [
            "resource_metadata",
            "scope",
            "error",
            "error_description",
            "realm",
        ] {
            if let Some(value) = auth_param(challenge, key) {
                parts.push(format!("{key}={value:?}"));
            }
        }
        described.push(parts.join(", "));
    }
    format!(
        "the server refused the credentials with {status}; WWW-Authenticate: {}",
        described.join("; ")
    )
}

/// The value of one `key=value` or `key="value"` parameter of an auth challenge.
pub(crate) fn auth_param(challenge: &str, key: &str) -> Option<String> {
    let mut rest = challenge;
    while let Some(position) = rest.find(key) {
        let before_ok =
            position == 0 || matches!(rest.as_bytes()[position - 1], b' ' | b',' | b'\t');
        let after = rest[position + key.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let value = if let Some(quoted) = value.strip_prefix('"') {
                quoted.split('"').next().unwrap_or("")
            } else {
                value.split([',', ' ']).next().unwrap_or("")
            };
            return Some(value.chars().take(256).collect());
        }
        rest = &rest[position + key.len()..];
    }
    None
}

/// The reply's `DPoP-Nonce` (RFC 9449 sections 8.1 and 9), when it has exactly one of at most
/// [`MAX_NONCE_HEADER_BYTES`]: for [`Output::DpopNonce`].
pub(super) fn dpop_nonce(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut values = headers.get_all(&DPOP_NONCE).iter();
    let nonce = values.next()?;
    (values.next().is_none() && nonce.len() <= MAX_NONCE_HEADER_BYTES).then(|| nonce.clone())
}
