//! The deadlines of a machine's entries (the session's requests, the exchange's streams) in
//! time order, so that asking for the next one costs the same with one entry in flight as with
//! thousands: a machine is asked for its next deadline on every turn of its driver, and a scan
//! of every entry made a burst of n calls cost O(n²).
//!
//! The owner's map stays the truth. The queue is a min-heap of `(deadline, key)` with lazy
//! deletion: ending an entry or moving its deadline leaves its old heap entry behind, stale,
//! and a stale entry is dropped when it comes up (its key is gone, or names another deadline
//! now). The owner keeps two promises: it calls [`arm`](Deadlines::arm) whenever an entry gets
//! a deadline or its deadline moves, and [`prune`](Deadlines::prune) after it ends an entry or
//! moves a deadline; in return the earliest heap entry is never stale, so
//! [`next`](Deadlines::next) is a peek. The heap holds at most twice the owner's live entries
//! plus [`SLACK`] after every `arm` and `prune` (stale entries are swept out past that).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// How many stale entries beyond the live ones the heap may hold before it is swept: a sweep
/// costs O(live), so with the bound at twice the live entries it is paid for by the arms since
/// the last one.
pub(crate) const SLACK: usize = 32;

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Deadlines<K> {
    heap: BinaryHeap<Reverse<(Instant, K)>>,
}

impl<K> Default for Deadlines<K>
where
    K: Ord,
{
    fn default() -> Self {
        Deadlines {
            heap: BinaryHeap::new(),
        }
    }
}

impl<K: Ord + Clone> Deadlines<K> {
    /// The earliest deadline of a live entry.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// [`next`](Self::next), for an owner's `poll_timeout`. Under `cfg(test)` it is also
    /// checked against `scan`, the owner's own minimum over its entries, so that every test
    /// of the owner checks the queue; otherwise `scan` is never called.
    pub(crate) fn next_checked(&self, scan: impl FnOnce() -> Option<Instant>) -> Option<Instant> {
        let next = self.next();
        #[cfg(test)]
        assert_eq!(
            next,
            scan(),
            "the deadline queue and a scan of its owner disagree"
        );
        #[cfg(not(test))]
        let _ = scan;
        next
    }

    /// The owner gave `key` the deadline `at` (a new entry, or one whose deadline moved).
    /// `live` is how many entries the owner has (an upper bound on those with a deadline),
    /// `current` an entry's deadline now, or `None` once it is gone.
    pub(crate) fn arm(
        &mut self,
        at: Instant,
        key: K,
        live: usize,
        current: impl Fn(&K) -> Option<Instant>,
    ) {
        self.heap.push(Reverse((at, key)));
        self.prune(live, current);
    }

    /// Drops stale entries from the top, after the owner ended an entry or moved a deadline
    /// (`live` and `current` as for [`arm`](Self::arm)), and sweeps them all out when there are
    /// more than the bound allows.
    pub(crate) fn prune(&mut self, live: usize, current: impl Fn(&K) -> Option<Instant>) {
        if self.heap.len() > live.saturating_mul(2).saturating_add(SLACK) {
            self.sweep(&current);
        }
        while let Some(Reverse((at, key))) = self.heap.peek() {
            if current(key) == Some(*at) {
                return;
            }
            self.heap.pop();
        }
    }

    /// [`prune`](Self::prune) after the owner ended entry `key`: its heap entry, when on top,
    /// goes without asking the owner about it.
    pub(crate) fn prune_ended(
        &mut self,
        key: &K,
        live: usize,
        current: impl Fn(&K) -> Option<Instant>,
    ) {
        if self.heap.peek().is_some_and(|Reverse((_, top))| top == key) {
            self.heap.pop();
        }
        self.prune(live, current);
    }

    /// Takes out the keys of the live entries due at `now` (deadline at or before it), each
    /// once, in key order (`live` and `current` as for [`arm`](Self::arm)). The owner ends
    /// each of them or arms it again: their heap entries are gone.
    pub(crate) fn take_due(
        &mut self,
        now: Instant,
        live: usize,
        current: impl Fn(&K) -> Option<Instant>,
    ) -> Vec<K> {
        let mut due = Vec::new();
        while let Some(Reverse((at, _))) = self.heap.peek() {
            if *at > now {
                break;
            }
            if let Some(Reverse((at, key))) = self.heap.pop()
                && current(&key) == Some(at)
            {
                due.push(key);
            }
        }
        due.sort_unstable();
        // An entry armed twice at the same deadline has two heap entries, both live.
        due.dedup();
        self.prune(live, current);
        due
    }

    /// The owner ended every entry.
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }

    /// How many heap entries there are, stale ones included (for the size bound's tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Keeps only the live entries, one each.
    fn sweep(&mut self, current: &impl Fn(&K) -> Option<Instant>) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.retain(|Reverse((at, key))| current(key) == Some(*at));
        entries.sort_unstable();
        entries.dedup();
        self.heap = BinaryHeap::from(entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// An owner as the machines are: a map of entries and their deadlines, and the queue.
    struct Owner {
        base: Instant,
        entries: BTreeMap<u64, Instant>,
        deadlines: Deadlines<u64>,
    }

    impl Owner {
        fn new() -> Self {
            #[allow(clippy::disallowed_methods)] // Any instant will do as the origin.
            let base = Instant::now();
            Owner {
                base,
                entries: BTreeMap::new(),
                deadlines: Deadlines::default(),
            }
        }

        fn at(&self, secs: u64) -> Instant {
            self.base + Duration::from_secs(secs)
        }

        fn set(&mut self, key: u64, secs: u64) {
            let at = self.at(secs);
            self.entries.insert(key, at);
            let entries = &self.entries;
            self.deadlines
                .arm(at, key, entries.len(), |k| entries.get(k).copied());
        }

        fn end(&mut self, key: u64) {
            self.entries.remove(&key);
            let entries = &self.entries;
            self.deadlines
                .prune_ended(&key, entries.len(), |k| entries.get(k).copied());
        }

        fn due(&mut self, secs: u64) -> Vec<u64> {
            let now = self.at(secs);
            let entries = &self.entries;
            let due = self
                .deadlines
                .take_due(now, entries.len(), |k| entries.get(k).copied());
            for key in &due {
                self.entries.remove(key);
            }
            let entries = &self.entries;
            self.deadlines
                .prune(entries.len(), |k| entries.get(k).copied());
            due
        }

        /// The queue's answer is the scan's.
        fn check(&self) {
            assert_eq!(
                self.deadlines.next(),
                self.entries.values().min().copied(),
                "the next deadline"
            );
        }
    }

    #[test]
    fn the_next_deadline_is_the_earliest_live_one() {
        let mut owner = Owner::new();
        owner.check();
        owner.set(1, 30);
        owner.set(2, 10);
        owner.set(3, 20);
        assert_eq!(owner.deadlines.next(), Some(owner.at(10)));
        owner.check();
    }

    #[test]
    fn ending_the_earliest_entry_uncovers_the_next() {
        let mut owner = Owner::new();
        owner.set(1, 10);
        owner.set(2, 20);
        owner.end(1);
        assert_eq!(owner.deadlines.next(), Some(owner.at(20)));
        owner.end(2);
        assert_eq!(owner.deadlines.next(), None);
        assert_eq!(
            owner.deadlines.len(),
            0,
            "nothing stale is left on an empty owner"
        );
    }

    #[test]
    fn ending_a_later_entry_leaves_the_earliest() {
        let mut owner = Owner::new();
        owner.set(1, 10);
        owner.set(2, 20);
        owner.end(2);
        assert_eq!(owner.deadlines.next(), Some(owner.at(10)));
        // The stale entry of 2 is dropped once it comes up.
        owner.end(1);
        assert_eq!(owner.deadlines.next(), None);
        assert_eq!(owner.deadlines.len(), 0);
    }

    #[test]
    fn a_rearmed_deadline_replaces_the_old_one_later_or_sooner() {
        let mut owner = Owner::new();
        owner.set(1, 10);
        owner.set(2, 20);
        // Progress moves 1's idle deadline past 2's.
        owner.set(1, 30);
        assert_eq!(owner.deadlines.next(), Some(owner.at(20)));
        owner.check();
        // And back before it.
        owner.set(1, 5);
        assert_eq!(owner.deadlines.next(), Some(owner.at(5)));
        owner.check();
        assert_eq!(owner.due(25), vec![1, 2]);
        assert_eq!(owner.deadlines.next(), None);
    }

    #[test]
    fn a_key_rearmed_back_to_an_old_deadline_is_due_once() {
        let mut owner = Owner::new();
        owner.set(1, 10);
        owner.set(1, 20);
        owner.set(1, 10);
        owner.set(1, 10);
        assert_eq!(owner.due(10), vec![1]);
        owner.check();
        assert_eq!(owner.deadlines.len(), 0);
    }

    #[test]
    fn only_what_is_due_is_taken_in_key_order() {
        let mut owner = Owner::new();
        owner.set(5, 10);
        owner.set(3, 10);
        owner.set(4, 40);
        owner.set(1, 5);
        owner.set(2, 11);
        // 2's deadline moved past now: its old, due entry is stale.
        owner.set(2, 50);
        assert_eq!(owner.due(10), vec![1, 3, 5]);
        assert_eq!(owner.deadlines.next(), Some(owner.at(40)));
        owner.check();
        assert_eq!(owner.due(39), Vec::<u64>::new());
        assert_eq!(owner.due(60), vec![2, 4]);
        owner.check();
    }

    #[test]
    fn an_ended_entry_is_never_due() {
        let mut owner = Owner::new();
        owner.set(1, 10);
        owner.set(2, 10);
        owner.end(2);
        assert_eq!(owner.due(10), vec![1]);
    }

    #[test]
    fn stale_entries_are_bounded_by_the_live_ones() {
        let mut owner = Owner::new();
        // One long-lived entry whose deadline moves on every turn (a call with an idle
        // timeout and a stream of progress), beside a few that come and go.
        owner.set(0, 1_000_000);
        for turn in 1..10_000u64 {
            owner.set(1, turn + 100);
            owner.set(turn + 1, turn + 200);
            if turn > 3 {
                owner.end(turn - 2);
            }

            let live = owner.entries.len();
            assert!(
                owner.deadlines.len() <= 2 * live + SLACK,
                "{} heap entries for {live} live at turn {turn}",
                owner.deadlines.len()
            );
            if turn % 997 == 0 {
                owner.check();
            }
        }
        owner.check();
    }

    #[test]
    fn a_burst_ended_latest_first_is_swept_as_it_shrinks() {
        let mut owner = Owner::new();
        for key in 0..4_000 {
            owner.set(key, 10 + key);
        }
        assert_eq!(owner.deadlines.len(), 4_000);
        // Each end leaves a stale entry deep in the heap, under the earliest live one.
        for key in (1..4_000).rev() {
            owner.end(key);
            let live = owner.entries.len();
            assert!(
                owner.deadlines.len() <= 2 * live + SLACK,
                "{} heap entries for {live} live",
                owner.deadlines.len()
            );
        }
        owner.check();
        owner.end(0);
        assert_eq!(owner.deadlines.len(), 0);
    }

    #[test]
    fn many_entries_in_any_order_match_a_scan() {
        let mut owner = Owner::new();
        // A fixed pseudo-random walk of arms, re-arms, ends and expiries.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut now = 0;
        for _ in 0..5_000 {
            let key = next() % 64;
            match next() % 4 {
                0 | 1 => owner.set(key, now + 1 + next() % 100),
                2 => owner.end(key),
                _ => {
                    now += next() % 10;
                    let expected: Vec<u64> = owner
                        .entries
                        .iter()
                        .filter(|(_, at)| **at <= owner.at(now))
                        .map(|(key, _)| *key)
                        .collect();
                    assert_eq!(owner.due(now), expected);
                }
            }
            owner.check();
            assert!(owner.deadlines.len() <= 2 * owner.entries.len() + SLACK);
        }
    }
}
