//! The seam between the client and whatever supplies its tokens: a static API key, a host's
//! own token store, or an OAuth [`Flow`](super::Flow) behind a driver. The synchronous shape
//! of what the client asks; the async glue that runs a flow's requests lives with the drivers.

use http::{HeaderMap, StatusCode};

use super::UnixTime;
use crate::secret::Secret;

/// What the client should do after the server refused a request's token.
#[derive(Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// Send the request again with this token (the server refused before the request
    /// ran: a 401 or a 403 is an answer to the credentials, not to the call).
    Retry(Secret),
    /// Wait: a token is being obtained (a person approving in a browser, requests to the
    /// authorization server); ask again with [`TokenProvider::token`] when it is ready.
    Pending,
    /// Give up with this reason; the request did not run.
    Fail(String),
}

/// Supplies the bearer token for requests to one MCP server.
pub trait TokenProvider: Send + Sync {
    /// The token for the next request at `now`, or `None` to send the request without one.
    fn token(&self, now: UnixTime) -> Option<Secret>;

    /// The server refused a request made with `sent` (`status` 401 or 403, its headers with
    /// the `WWW-Authenticate` challenge).
    fn refused(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<&Secret>,
        now: UnixTime,
    ) -> Refusal;

    /// The server accepted a request made with the current token.
    fn accepted(&self) {}
}

/// A fixed token (the `token_env` API key of a binding): always the same, and a refusal is
/// final.
#[derive(Debug, Clone)]
pub struct StaticToken(pub Secret);

impl TokenProvider for StaticToken {
    fn token(&self, _now: UnixTime) -> Option<Secret> {
        Some(self.0.clone())
    }

    fn refused(
        &self,
        status: StatusCode,
        _headers: &HeaderMap,
        _sent: Option<&Secret>,
        _now: UnixTime,
    ) -> Refusal {
        Refusal::Fail(format!(
            "the server refused the configured token ({status})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_token_never_changes_and_a_refusal_is_final() {
        let provider: &dyn TokenProvider = &StaticToken(Secret::new("api-key-1"));
        assert_eq!(provider.token(UnixTime(0)).unwrap().expose(), "api-key-1");
        let refusal = provider.refused(
            StatusCode::UNAUTHORIZED,
            &HeaderMap::new(),
            None,
            UnixTime(0),
        );
        match refusal {
            Refusal::Fail(reason) => {
                assert!(
                    reason.contains("401") && !reason.contains("api-key-1"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
