//! Resumption and the standalone GET stream: a request's stream resumed with `Last-Event-ID`,
//! the server stream reopened, each after the policy's backoff with seeded jitter.

use std::time::{Duration, Instant};

use http::Method;
use http::header::{AUTHORIZATION, HeaderValue};

use crate::session::Resumption;
use crate::sse;

use super::request::{ACCEPT_EVENTS, LAST_EVENT_ID};
use super::{Closing, Exchange, Held, Op, RequestOp, lost};

impl Exchange {
    /// Opens the standalone GET stream, when the config asks for it
    /// ([`HttpConfig::server_stream`](super::HttpConfig::server_stream)) and the session is
    /// not a legacy one (whose event stream is already open). Called once the session is
    /// initialized; a second call does nothing.
    pub(crate) fn open_server_stream(&mut self, now: Instant) {
        if !self.config.server_stream
            || self.server_stream_opened
            || self.is_legacy()
            || self.learned.modern
            || self.closing != Closing::Open
        {
            return;
        }
        if self.barrier_pending {
            self.held.push_back(Held::ServerStream);
            return;
        }
        self.server_stream_opened = true;
        let op = Op::ServerStream(Box::new((
            sse::Decoder::new(self.config.limits.sse),
            Resumption::reopening(self.config.resume),
        )));
        self.reopen(op, now);
    }

    /// The request's stream ended before the session settled it: resume it after the wait
    /// the policy gives, or fail it.
    pub(super) fn schedule_resume(&mut self, mut op: Box<RequestOp>, why: &str, now: Instant) {
        if self.learned.modern {
            // 2026-07-28 has no resumption: the request is lost, and only its caller knows
            // whether it may be sent again.
            self.fail(
                op.id.clone(),
                lost(format!(
                    "the response stream {why} before the response (a stateless revision \
                     does not resume streams)"
                )),
            );
            return;
        }
        let jitter = self.next_jitter();
        match op.resumption.next_attempt(now, jitter) {
            Some(at) => {
                trace_info!(
                    delay_ms = at.saturating_duration_since(now).as_millis() as u64,
                    "the response stream ended before the response: resuming it with \
                     Last-Event-ID"
                );
                self.log(|| {
                    format!(
                        "< the response stream {why} before the response; resuming in {} ms",
                        at.saturating_duration_since(now).as_millis()
                    )
                });
                self.waiting.push((at, Op::Request(op)));
            }
            None => {
                let detail = format!(
                    "the response stream {why} before the response{}",
                    if op.resumption.last_event_id().is_empty() {
                        " (no event id to resume from)"
                    } else {
                        ", and resuming it failed"
                    }
                );
                self.fail(op.id.clone(), lost(detail));
            }
        }
    }

    /// The standalone stream ended: reopen it after the wait the policy gives (no sooner than
    /// `wait`, an overloaded server's `Retry-After`), or give up.
    pub(super) fn schedule_reopen(
        &mut self,
        mut op: Op,
        why: &str,
        wait: Option<Duration>,
        now: Instant,
    ) {
        let jitter = self.next_jitter();
        let Op::ServerStream(state) = &mut op else {
            return;
        };
        match state.1.next_attempt(now, jitter) {
            Some(at) if self.closing == Closing::Open => {
                let at = wait.map_or(at, |wait| at.max(now + wait));
                trace_debug!(
                    delay_ms = at.saturating_duration_since(now).as_millis() as u64,
                    "the server stream ended: reopening it"
                );
                self.log(|| {
                    format!(
                        "< server stream {why}; reopening in {} ms",
                        at.saturating_duration_since(now).as_millis()
                    )
                });
                self.waiting.push((at, op));
            }
            Some(_) => {}
            None => self.log(|| "< server stream given up after quiet tries".to_owned()),
        }
    }

    /// Issues the GET that resumes a request's stream or reopens the standalone one, or
    /// POSTs again a request whose wait after a 429 or 503 is over.
    pub(super) fn reopen(&mut self, mut op: Op, _now: Instant) {
        if let Op::Request(request) = &mut op
            && let Some(mut repost) = request.repost.take()
        {
            // With the token of now: it may have been renewed during the wait.
            repost.headers.remove(AUTHORIZATION);
            if let Some(value) = self.authorization() {
                repost.headers.insert(AUTHORIZATION, value);
            }
            request.sent_token = self.bearer.clone();
            request.retained = Some(repost.clone());
            let attempt = request.overloads + 1;
            self.log(|| {
                format!(
                    "> POST {} (attempt {attempt}, sent again after the server was overloaded)",
                    repost.uri
                )
            });
            self.issue(op, repost);
            return;
        }
        let (last_event_id, what) = match &mut op {
            Op::Request(request) => {
                request.resuming = true;
                (request.resumption.last_event_id().to_owned(), "")
            }
            Op::ServerStream(state) => (state.0.last_event_id().to_owned(), "server stream, "),
            _ => return,
        };
        let mut request = self.build(
            Method::GET,
            self.config.url.clone(),
            Vec::new(),
            ACCEPT_EVENTS,
            0,
        );
        if !last_event_id.is_empty()
            && let Ok(value) = HeaderValue::from_str(&last_event_id)
        {
            request.headers.insert(LAST_EVENT_ID, value);
        }
        self.log(|| {
            format!(
                "> GET {} ({what}Last-Event-ID: {})",
                self.config.url,
                self.snippet(last_event_id.as_bytes())
            )
        });
        self.issue(op, request);
    }

    pub(super) fn next_jitter(&mut self) -> f64 {
        self.jitter.next()
    }
}
