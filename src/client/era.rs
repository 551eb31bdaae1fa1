//! The era verdicts a host keeps per endpoint, so that each server is probed once, and the
//! turn a connection takes to probe while others to the same endpoint wait for its verdict.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::mcp::{InitializeResult, ProtocolVersion};

/// What probing found out about each endpoint: its era (a stateless revision, or `None` for a
/// 2025-era server) and what it said of itself, so a long-lived host probes each endpoint
/// once (`2026-07-28/basic/versioning.mdx`: the verdict is cached per origin). Keyed by the
/// endpoint URL, which is finer than the spec's origin: two endpoints of one origin may be two
/// servers.
#[derive(Clone, Debug, Default)]
pub struct EraCache(
    Arc<std::sync::Mutex<HashMap<String, Verdict>>>,
    /// The endpoints being probed now, each with the lock its prober holds for writing.
    Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>>,
);

/// The right to probe an endpoint while other connections to it wait ([`EraCache::probe_turn`]).
/// Dropping it (after the verdict is put, or when the connection failed) lets them go on.
pub(super) struct ProbeTurn {
    probes: Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>>,
    key: String,
    _write: tokio::sync::OwnedRwLockWriteGuard<()>,
}

impl Drop for ProbeTurn {
    fn drop(&mut self) {
        // The entry goes first; the write guard (a field) is dropped after this body.
        if let Ok(mut probes) = self.probes.lock() {
            probes.remove(&self.key);
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Verdict {
    pub(super) modern: Option<ProtocolVersion>,
    pub(super) server: Option<Arc<InitializeResult>>,
}

/// How many endpoints an [`EraCache`] remembers; past that the oldest verdicts go (a host
/// that connects to ever new URLs cannot grow it).
const ERA_CACHE_ENTRIES: usize = 1024;

impl EraCache {
    /// The key of `url`: as [`HttpConfig::url`] prints it (`http://h` and `http://h/` are one
    /// endpoint).
    fn key(url: &str) -> String {
        url.parse::<http::Uri>()
            .map_or_else(|_| url.to_owned(), |uri| uri.to_string())
    }

    pub(super) fn get(&self, url: &str) -> Option<Verdict> {
        self.0.lock().ok()?.get(&Self::key(url)).cloned()
    }

    pub(super) fn put(&self, url: &str, verdict: Verdict) {
        let url = &Self::key(url);
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= ERA_CACHE_ENTRIES && !map.contains_key(url) {
                map.clear();
            }
            map.insert(url.to_owned(), verdict);
        }
    }

    /// Remembers a verdict found earlier (one a host persisted): `url` speaks stateless
    /// revision `modern`, or with `None` is a 2025-era server, so the next connection to it
    /// does not probe. A verdict that no longer holds is forgotten when a connection fails.
    pub fn remember(&self, url: &str, modern: Option<ProtocolVersion>) {
        self.put(
            url,
            Verdict {
                modern,
                server: None,
            },
        );
    }

    /// When no connection is probing `url`, makes this one its prober: the turn returned
    /// makes the connections that ask meanwhile wait until it is dropped, so a burst of first
    /// calls to one endpoint probes once, not once per call. Otherwise waits for the probe in
    /// progress to end, at most `limit` (a slow probe holds no one longer than probing
    /// themselves would), and returns `None`: the caller looks for the verdict again, and
    /// probes itself if there is still none.
    pub(super) async fn probe_turn(&self, url: &str, limit: Duration) -> Option<ProbeTurn> {
        let key = Self::key(url);
        let in_progress = {
            let mut probes = self.1.lock().ok()?;
            match probes.get(&key) {
                Some(lock) => lock.clone(),
                None => {
                    let lock = Arc::new(tokio::sync::RwLock::new(()));
                    // Taken before the lock is shared: no waiter can read it first.
                    let write = lock.clone().try_write_owned().ok()?;
                    probes.insert(key.clone(), lock);
                    return Some(ProbeTurn {
                        probes: self.1.clone(),
                        key,
                        _write: write,
                    });
                }
            }
        };
        let _ = tokio::time::timeout(limit, in_progress.read()).await;
        None
    }

    /// Forgets `url`'s verdict: the next connection probes again.
    pub(crate) fn forget(&self, url: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(&Self::key(url));
        }
    }

    /// The stateless revision `url` was found to speak, `Some(None)` for a 2025-era server,
    /// `None` when it was not probed.
    pub fn verdict(&self, url: &str) -> Option<Option<ProtocolVersion>> {
        self.get(url).map(|verdict| verdict.modern)
    }
}
