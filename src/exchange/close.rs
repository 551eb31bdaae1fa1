//! Ending the session: closing the streams, flushing the one-way queue, and the `DELETE`.

use std::time::Instant;

use http::{Method, StatusCode};

use super::request::ACCEPT_BOTH;
use super::{Closing, Exchange, Op, Output, StreamId};

impl Exchange {
    /// Ends the session: the standalone and legacy streams close, the one-way messages still
    /// queued go out (bounded by the close timeout), then a `DELETE` ends a session the server
    /// gave an id. [`Output::Closed`] says when it is over.
    pub(crate) fn close(&mut self, now: Instant) {
        if self.closing != Closing::Open {
            return;
        }
        self.held.clear();
        self.barrier_pending = false;
        self.waiting.clear();
        self.parked.clear();
        let streams: Vec<StreamId> = self
            .flights
            .iter()
            .filter(|(_, f)| !matches!(f.op, Op::OneWay { .. }))
            .map(|(stream, _)| *stream)
            .collect();
        for stream in streams {
            self.abort(stream);
        }
        let deadline = now + self.config.close_timeout;
        self.flights.change_each(|flight| match &mut flight.op {
            Op::OneWay { deadline: d, .. } if *d > deadline => {
                *d = deadline;
                true
            }
            _ => false,
        });
        let deleting = !self.is_legacy() && self.learned.session_id.is_some();
        self.closing = Closing::Flushing {
            deadline,
            deleting,
            status: None,
        };
        if deleting {
            self.send_delete(1, now);
        }
        self.advance_close(now);
    }

    /// Closing is over once the `DELETE` (if any) is done and the one-way queue is empty.
    pub(super) fn advance_close(&mut self, _now: Instant) {
        if let Closing::Flushing {
            deleting: false,
            status,
            ..
        } = self.closing
            && self.one_way_in_flight.is_none()
            && self.one_way.is_empty()
        {
            self.closed(status);
        }
    }

    pub(super) fn delete_done(&mut self, answer: Option<StatusCode>, now: Instant) {
        if let Closing::Flushing {
            deleting, status, ..
        } = &mut self.closing
        {
            *deleting = false;
            *status = answer;
        }
        self.advance_close(now);
    }

    pub(super) fn send_delete(&mut self, attempt: u8, now: Instant) {
        let request = self.build(
            Method::DELETE,
            self.config.url.clone(),
            Vec::new(),
            ACCEPT_BOTH,
            0,
        );
        self.log(|| format!("> DELETE {}", self.config.url));
        let deadline = now + self.config.close_timeout;
        self.issue(Op::Delete { attempt, deadline }, request);
    }

    pub(super) fn closed(&mut self, status: Option<StatusCode>) {
        if self.closing == Closing::Done {
            return;
        }
        self.closing = Closing::Done;
        for stream in self.flights.keys() {
            self.outputs.push_back(Output::Abort(*stream));
        }
        self.flights.clear();
        self.outputs.push_back(Output::Closed { status });
    }
}
