//! The seam between the client and whatever supplies its tokens: a static API key, a host's
//! own token store, or an OAuth [`Flow`](super::Flow) behind a driver. The synchronous shape
//! of what the client asks; the async glue that runs a flow's requests lives with the drivers.

use std::task::Waker;

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
    /// authorization server); ask again with [`TokenProvider::token`] when it is ready. The
    /// client asks when the provider wakes it ([`TokenProvider::wake_when_ready`]).
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

    /// After [`refused`](Self::refused) answered [`Refusal::Pending`]: keeps `waker` and wakes
    /// it once [`token`](Self::token) may give a new token, and answers true; a provider that
    /// cannot tell answers false (the default, which keeps nothing).
    ///
    /// The client asks [`token`](Self::token), registers its waker here, asks again (so a
    /// token that came in between is not missed), and then asks only when woken, until a token
    /// other than the refused one comes or its wait (5 minutes) ends. A provider may be asked
    /// to register more than once, and must wake every waker it holds (then drop them) when its
    /// token changes; waking one nobody waits on any more is harmless. A provider that answers
    /// false is asked for its token every 200 ms instead, as before this method existed.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use std::task::Waker;
    /// use mcpwire::auth::{HeaderMap, Refusal, Secret, StatusCode, TokenProvider, UnixTime};
    ///
    /// /// A token that a person's login elsewhere replaces.
    /// struct Store {
    ///     token: Mutex<Option<Secret>>,
    ///     waiting: Mutex<Vec<Waker>>,
    /// }
    ///
    /// impl Store {
    ///     /// The login finished: the new token, and everyone waiting for it woken.
    ///     fn replace(&self, token: Secret) {
    ///         *self.token.lock().unwrap() = Some(token);
    ///         self.waiting.lock().unwrap().drain(..).for_each(Waker::wake);
    ///     }
    /// }
    ///
    /// impl TokenProvider for Store {
    ///     fn token(&self, _now: UnixTime) -> Option<Secret> {
    ///         self.token.lock().unwrap().clone()
    ///     }
    ///
    ///     fn refused(&self, _: StatusCode, _: &HeaderMap, _: Option<&Secret>, _: UnixTime) -> Refusal {
    ///         Refusal::Pending // a person is asked to log in again
    ///     }
    ///
    ///     fn wake_when_ready(&self, waker: &Waker) -> bool {
    ///         self.waiting.lock().unwrap().push(waker.clone());
    ///         true
    ///     }
    /// }
    /// # let store = Store { token: Mutex::new(None), waiting: Mutex::new(Vec::new()) };
    /// # assert!(store.wake_when_ready(std::task::Waker::noop()));
    /// # store.replace(Secret::new("t"));
    /// # assert!(store.waiting.lock().unwrap().is_empty());
    /// ```
    fn wake_when_ready(&self, waker: &Waker) -> bool {
        let _ = waker;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed token (the `token_env` API key of a binding): always the same, and a refusal is
    /// final.
    #[derive(Debug, Clone)]
    struct StaticToken(Secret);

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
