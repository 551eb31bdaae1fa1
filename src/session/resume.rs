//! When to resume a response stream that ended before its response, and when to give up.
//!
//! Streamable HTTP lets a server end an SSE response stream early (to free a connection, or
//! because it dropped) and the client resume it with a GET carrying `Last-Event-ID`
//! (`basic/transports.mdx`, "Resumability and Redelivery"). A stream can only be resumed once
//! an event id was seen; the server's `retry` field sets the wait; without it the wait grows
//! exponentially with jitter, up to a cap, for a bounded number of attempts. Attempts that
//! bring new events reset the count, so a long call polled by a server that closes streams
//! on purpose (SEP-1699) is not cut off.

use std::time::{Duration, Instant};

/// Bounds on resuming one response stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumePolicy {
    /// Attempts in a row that brought no new event before giving up.
    pub max_attempts: u32,
    /// The first wait when the server gave no `retry`.
    pub initial_delay: Duration,
    /// The longest wait, whatever `retry` or the backoff says.
    pub max_delay: Duration,
}

impl ResumePolicy {
    /// How long to wait before the next try: the server's `retry` when it gave one (capped at
    /// `max_delay`), else an exponential backoff from `initial_delay` after `failed_attempts`
    /// failures, capped, with "equal jitter" (half fixed, half random, so waits never collapse
    /// to zero). `jitter` is a number in `[0, 1)` from the driver.
    pub(crate) fn delay(
        &self,
        retry: Option<Duration>,
        failed_attempts: u32,
        jitter: f64,
    ) -> Duration {
        match retry {
            // The server said how long to wait: honour it exactly (clients are checked on it).
            Some(retry) => retry.min(self.max_delay),
            None => {
                let backoff = self
                    .initial_delay
                    .saturating_mul(1 << failed_attempts.min(16))
                    .min(self.max_delay);
                backoff / 2 + backoff.mul_f64(jitter.clamp(0.0, 1.0) / 2.0)
            }
        }
    }
}

impl Default for ResumePolicy {
    fn default() -> Self {
        ResumePolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(10),
        }
    }
}

/// The resumption state of one event stream: a request's response stream, or the standalone
/// GET stream (the same rules, except that the GET stream is reopened without an event id).
#[derive(Clone, Debug)]
pub(crate) struct Resumption {
    policy: ResumePolicy,
    last_event_id: String,
    retry: Option<Duration>,
    failed_attempts: u32,
    events_since_resume: bool,
    needs_event_id: bool,
}

impl Resumption {
    /// A response stream that has not been resumed yet. It can be resumed only once an event
    /// id was seen: a request's events are replayed from that id, never sent again.
    pub(crate) fn new(policy: ResumePolicy) -> Self {
        Resumption {
            policy,
            last_event_id: String::new(),
            retry: None,
            failed_attempts: 0,
            events_since_resume: false,
            needs_event_id: true,
        }
    }

    /// A stream that may be reopened with or without an event id (the standalone GET stream,
    /// which carries no request's response).
    pub(crate) fn reopening(policy: ResumePolicy) -> Self {
        Resumption {
            needs_event_id: false,
            ..Resumption::new(policy)
        }
    }

    /// An event arrived (with or without an id): the stream is alive, so the attempts count
    /// from zero again at the next end.
    pub(crate) fn heard(&mut self) {
        self.events_since_resume = true;
    }

    /// Records what the stream's decoder knows: its last event id and the server's
    /// reconnection time, if it set one. A new id counts as progress since the last resumption.
    pub(crate) fn observe(&mut self, last_event_id: &str, retry_ms: Option<u64>) {
        if self.last_event_id != last_event_id {
            self.last_event_id.clear();
            self.last_event_id.push_str(last_event_id);
            self.events_since_resume = true;
        }
        if let Some(ms) = retry_ms {
            self.retry = Some(Duration::from_millis(ms));
        }
    }

    /// The `Last-Event-ID` to resume with (`""` when none was seen).
    pub(crate) fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The stream ended without the response. Returns when to resume, or `None` to give up:
    /// no event id was ever seen (nothing to resume from) or the attempts are used up.
    /// `jitter` is a number in `[0, 1)` from the driver (randomness is an input too).
    pub(crate) fn next_attempt(&mut self, now: Instant, jitter: f64) -> Option<Instant> {
        if self.needs_event_id && self.last_event_id.is_empty() {
            return None;
        }
        if self.events_since_resume {
            self.failed_attempts = 0;
        }
        self.events_since_resume = false;
        if self.failed_attempts >= self.policy.max_attempts {
            return None;
        }
        let delay = self.policy.delay(self.retry, self.failed_attempts, jitter);
        self.failed_attempts += 1;
        Some(now + delay)
    }
}
