//! The exchange's HTTP requests in flight, by stream, with the deadlines some of them run to
//! (a one-way POST's, a `DELETE`'s, a drain's) kept in time order, and the stream each
//! request of the session's was last issued on: the exchange is asked for its next deadline on
//! every turn of the driver and for a request's stream each time the session settles one, and
//! with thousands in flight neither may be a scan of them all. Most flights (requests waiting
//! for their answer) have no deadline of their own.

use std::time::Instant;

use super::reply::Read;
use super::{Flight, Op, StreamId};
use crate::deadlines::{Deadlines, SLACK};
use crate::idmap::IdMap;
use crate::jsonrpc::Id;

impl Flight {
    /// When the exchange gives up on this flight (or on draining it).
    fn deadline(&self) -> Option<Instant> {
        match (&self.op, &self.read) {
            (_, Read::Drain { deadline, .. }) => Some(*deadline),
            (Op::OneWay { deadline, .. } | Op::Delete { deadline, .. }, _) => Some(*deadline),
            _ => None,
        }
    }

    /// The request of the session's this flight carries, if any.
    fn request_id(&self) -> Option<&Id> {
        match &self.op {
            Op::Request(request) => Some(&request.id),
            Op::Legacy(legacy) => legacy.1.as_ref(),
            _ => None,
        }
    }
}

/// The flights, and their deadlines in time order.
#[derive(Default)]
pub(super) struct Flights {
    by_stream: IdMap<StreamId, Flight>,
    deadlines: Deadlines<StreamId>,
    /// The stream each request was last issued on, until it is settled. A request moves to a
    /// new stream only by being issued again (a resuming GET, a POST after a refusal or a
    /// 429), so its latest stream is the only one that may carry it.
    by_request: IdMap<Id, StreamId>,
}

/// A flight's deadline now, as [`Deadlines`] asks for it.
fn deadline_in(flights: &IdMap<StreamId, Flight>) -> impl Fn(&StreamId) -> Option<Instant> + '_ {
    |stream| flights.get(stream).and_then(Flight::deadline)
}

impl Flights {
    /// Flight `stream` is a new HTTP request.
    pub(super) fn issue(&mut self, stream: StreamId, flight: Flight) {
        if let Some(id) = flight.request_id() {
            self.by_request.insert(id.clone(), stream);
        }
        self.insert(stream, flight);
        if self.by_request.len() > self.by_stream.len().saturating_mul(2) + SLACK {
            // Requests the session never settled (it closed, say): their notes are kept only
            // while their flight is.
            let flights = &self.by_stream;
            self.by_request.retain(|id, stream| {
                flights
                    .get(stream)
                    .is_some_and(|flight| flight.request_id() == Some(id))
            });
        }
    }

    /// The stream of the flight carrying request `id`, which is settled: its note goes.
    pub(super) fn take_stream_of(&mut self, id: &Id) -> Option<StreamId> {
        let stream = self.by_request.remove(id)?;
        (self.by_stream.get(&stream)?.request_id() == Some(id)).then_some(stream)
    }

    #[inline]
    pub(super) fn insert(&mut self, stream: StreamId, flight: Flight) {
        let at = flight.deadline();
        self.by_stream.insert(stream, flight);
        if let Some(at) = at {
            self.deadlines.arm(
                at,
                stream,
                self.by_stream.len(),
                deadline_in(&self.by_stream),
            );
        }
    }

    #[inline]
    pub(super) fn remove(&mut self, stream: &StreamId) -> Option<Flight> {
        let flight = self.by_stream.remove(stream)?;
        // A flight with no deadline has no heap entry to leave stale (most of them: this runs
        // on every frame).
        if flight.deadline().is_some() {
            self.deadlines
                .prune_ended(stream, self.by_stream.len(), deadline_in(&self.by_stream));
        }
        Some(flight)
    }

    pub(super) fn get(&self, stream: &StreamId) -> Option<&Flight> {
        self.by_stream.get(stream)
    }

    /// Flight `stream`, for a change that leaves its deadline as it is (the deadline queue is
    /// not told; under `cfg(test)` every `next_deadline` checks it against a scan).
    pub(super) fn get_mut(&mut self, stream: &StreamId) -> Option<&mut Flight> {
        self.by_stream.get_mut(stream)
    }

    /// Changes flights in place (`change` says whether it changed one), their deadlines
    /// with them.
    pub(super) fn change_each(&mut self, mut change: impl FnMut(&mut Flight) -> bool) {
        let mut moved = Vec::new();
        for (stream, flight) in &mut self.by_stream {
            if change(flight)
                && let Some(at) = flight.deadline()
            {
                moved.push((*stream, at));
            }
        }
        for (stream, at) in moved {
            self.deadlines.arm(
                at,
                stream,
                self.by_stream.len(),
                deadline_in(&self.by_stream),
            );
        }
        self.deadlines
            .prune(self.by_stream.len(), deadline_in(&self.by_stream));
    }

    /// Reads flight `stream`'s rest as `read` (a drain), its deadline with it.
    pub(super) fn set_read(&mut self, stream: StreamId, read: Read) {
        let Some(flight) = self.by_stream.get_mut(&stream) else {
            return;
        };
        flight.read = read;
        if let Some(at) = flight.deadline() {
            self.deadlines.arm(
                at,
                stream,
                self.by_stream.len(),
                deadline_in(&self.by_stream),
            );
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&StreamId, &Flight)> {
        self.by_stream.iter()
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &StreamId> {
        self.by_stream.keys()
    }

    pub(super) fn len(&self) -> usize {
        self.by_stream.len()
    }

    pub(super) fn clear(&mut self) {
        self.by_stream.clear();
        self.deadlines.clear();
        self.by_request.clear();
    }

    /// How many requests have a note of their stream (for the bound's tests).
    #[cfg(test)]
    pub(super) fn noted_requests(&self) -> usize {
        self.by_request.len()
    }

    /// The earliest deadline of a flight.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines
            .next_checked(|| self.by_stream.values().filter_map(Flight::deadline).min())
    }

    /// Takes out the streams of the flights due at `now`, in stream order: the caller ends
    /// each of them.
    pub(super) fn take_due(&mut self, now: Instant) -> Vec<StreamId> {
        self.deadlines
            .take_due(now, self.by_stream.len(), deadline_in(&self.by_stream))
    }
}
