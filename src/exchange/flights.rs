//! The exchange's HTTP requests in flight, by stream, with the deadlines some of them run to
//! (a one-way POST's, a `DELETE`'s, a drain's) kept in time order: the exchange is asked for
//! its next deadline on every turn of the driver, and most flights (requests waiting for their
//! answer) have none of their own.

use std::time::Instant;

use super::reply::Read;
use super::{Flight, Op, StreamId};
use crate::deadlines::Deadlines;
use crate::idmap::IdMap;

impl Flight {
    /// When the exchange gives up on this flight (or on draining it).
    fn deadline(&self) -> Option<Instant> {
        match (&self.op, &self.read) {
            (_, Read::Drain { deadline, .. }) => Some(*deadline),
            (Op::OneWay { deadline, .. } | Op::Delete { deadline, .. }, _) => Some(*deadline),
            _ => None,
        }
    }
}

/// The flights, and their deadlines in time order.
#[derive(Default)]
pub(super) struct Flights {
    by_stream: IdMap<StreamId, Flight>,
    deadlines: Deadlines<StreamId>,
}

/// A flight's deadline now, as [`Deadlines`] asks for it.
fn deadline_in(flights: &IdMap<StreamId, Flight>) -> impl Fn(&StreamId) -> Option<Instant> + '_ {
    |stream| flights.get(stream).and_then(Flight::deadline)
}

impl Flights {
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

    pub(super) fn remove(&mut self, stream: &StreamId) -> Option<Flight> {
        let flight = self.by_stream.remove(stream)?;
        self.deadlines
            .prune(self.by_stream.len(), deadline_in(&self.by_stream));
        Some(flight)
    }

    pub(super) fn get(&self, stream: &StreamId) -> Option<&Flight> {
        self.by_stream.get(stream)
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
        if let Some(mut flight) = self.remove(&stream) {
            flight.read = read;
            self.insert(stream, flight);
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
    }

    /// The earliest deadline of a flight.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let next = self.deadlines.next();
        #[cfg(test)]
        assert_eq!(
            next,
            self.by_stream.values().filter_map(Flight::deadline).min(),
            "the deadline queue and a scan of the flights disagree"
        );
        next
    }

    /// Takes out the streams of the flights due at `now`, in stream order: the caller ends
    /// each of them.
    pub(super) fn take_due(&mut self, now: Instant) -> Vec<StreamId> {
        self.deadlines
            .take_due(now, self.by_stream.len(), deadline_in(&self.by_stream))
    }
}
