//! One request's way to the client's driver and back to the call waiting for it: the request
//! itself, then the progress reported on it, in order, then its answer.
//!
//! One shared slot per request, where a box for the request, a channel for the progress and
//! another for the answer would each allocate and synchronize on their own: a call makes one
//! of these with its request in it, the driver takes the request out and fills the slot.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::mcp::{ProgressNotificationParams, TaskUpdate};

/// What the driver reports on a request before its answer.
#[derive(Debug)]
pub(super) enum Event {
    /// A progress notification.
    Progress(ProgressNotificationParams),
    /// The call became a task, or its task's status changed.
    Task(TaskUpdate),
}

/// How many progress notifications may wait for a slow caller; past it the newest are
/// dropped (later progress supersedes earlier anyway).
const MAX_WAITING_PROGRESS: usize = 1024;

/// A new slot holding `request`: the driver's end and the caller's. `progress`: whether the
/// caller reads progress (when not, the driver's progress is dropped at once).
pub(super) fn slot<Q, A>(request: Q, progress: bool) -> (ReplySender<Q, A>, ReplyReceiver<Q, A>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State {
            request: Some(request),
            progress: VecDeque::new(),
            answer: None,
            closed: false,
            waker: None,
        }),
        progress,
    });
    (ReplySender { slot: slot.clone() }, ReplyReceiver { slot })
}

struct Slot<Q, A> {
    state: Mutex<State<Q, A>>,
    progress: bool,
}

struct State<Q, A> {
    /// The request, until the driver takes it.
    request: Option<Q>,
    progress: VecDeque<Event>,
    answer: Option<A>,
    /// The sender is gone: no answer will come unless one is there.
    closed: bool,
    waker: Option<Waker>,
}

impl<Q, A> Slot<Q, A> {
    fn lock(&self) -> MutexGuard<'_, State<Q, A>> {
        // Nothing panics while holding it; a poisoned slot is still a slot.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The driver's end of a slot. Dropped without an answer, the caller sees the slot closed.
pub(super) struct ReplySender<Q, A> {
    slot: Arc<Slot<Q, A>>,
}

impl<Q, A> ReplySender<Q, A> {
    /// The request, taken out (`None` once taken).
    pub(super) fn take_request(&self) -> Option<Q> {
        self.slot.lock().request.take()
    }

    /// Leaves a progress notification for the caller, if it reads them and has room.
    pub(super) fn progress(&self, params: ProgressNotificationParams) {
        self.event(Event::Progress(params));
    }

    /// Leaves a task's status for the caller, as [`progress`](Self::progress) does.
    pub(super) fn task(&self, update: TaskUpdate) {
        self.event(Event::Task(update));
    }

    fn event(&self, params: Event) {
        if !self.slot.progress {
            return;
        }
        let waker = {
            let mut state = self.slot.lock();
            if state.progress.len() >= MAX_WAITING_PROGRESS {
                return;
            }
            state.progress.push_back(params);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Leaves the answer and wakes the caller.
    pub(super) fn send(self, answer: A) {
        let waker = {
            let mut state = self.slot.lock();
            state.answer = Some(answer);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        // `Drop` finds the answer there and changes nothing.
    }
}

impl<Q, A> Drop for ReplySender<Q, A> {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.slot.lock();
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// What a caller finds in its slot.
pub(super) enum Delivered<A> {
    Progress(Event),
    /// The answer, or `None` when the driver dropped the request without one.
    Answer(Option<A>),
}

/// The caller's end of a slot.
pub(super) struct ReplyReceiver<Q, A> {
    slot: Arc<Slot<Q, A>>,
}

impl<Q, A> ReplyReceiver<Q, A> {
    /// The next progress notification, or, once none is waiting, the answer. Progress first,
    /// so all of it is delivered before the answer that follows it.
    pub(super) fn poll_next(&mut self, cx: &Context<'_>) -> Poll<Delivered<A>> {
        let mut state = self.slot.lock();
        if let Some(progress) = state.progress.pop_front() {
            return Poll::Ready(Delivered::Progress(progress));
        }
        Self::poll_answer_locked(&mut state, cx).map(Delivered::Answer)
    }

    /// The answer, leaving any progress for [`try_progress`](Self::try_progress).
    pub(super) fn poll_answer(&mut self, cx: &Context<'_>) -> Poll<Option<A>> {
        Self::poll_answer_locked(&mut self.slot.lock(), cx)
    }

    /// The answer, when it comes (see [`poll_answer`](Self::poll_answer)).
    pub(super) async fn answer(&mut self) -> Option<A> {
        std::future::poll_fn(|cx| self.poll_answer(cx)).await
    }

    fn poll_answer_locked(state: &mut State<Q, A>, cx: &Context<'_>) -> Poll<Option<A>> {
        if let Some(answer) = state.answer.take() {
            return Poll::Ready(Some(answer));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// A progress notification still waiting, if any.
    pub(super) fn try_progress(&mut self) -> Option<Event> {
        self.slot.lock().progress.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A waker that counts its wakes.
    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        (count, waker)
    }

    fn progress(n: f64) -> ProgressNotificationParams {
        serde_json::from_value(serde_json::json!({"progressToken": 1, "progress": n})).unwrap()
    }

    #[test]
    fn the_request_is_taken_once() {
        let (tx, _rx) = slot::<u8, u32>(5, false);
        assert_eq!(tx.take_request(), Some(5));
        assert_eq!(tx.take_request(), None);
    }

    #[test]
    fn progress_comes_before_the_answer_and_wakes_the_caller() {
        let (count, waker) = counting();
        let cx = Context::from_waker(&waker);
        let (tx, mut rx) = slot::<(), u32>((), true);
        assert!(rx.poll_next(&cx).is_pending());
        tx.progress(progress(1.0));
        tx.progress(progress(2.0));
        tx.send(7);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        for expected in [1.0, 2.0] {
            match rx.poll_next(&cx) {
                Poll::Ready(Delivered::Progress(Event::Progress(p))) => {
                    assert_eq!(p.progress, expected)
                }
                _ => panic!("progress {expected} first"),
            }
        }
        assert!(matches!(
            rx.poll_next(&cx),
            Poll::Ready(Delivered::Answer(Some(7)))
        ));
    }

    #[test]
    fn a_dropped_sender_closes_the_slot_and_unread_progress_is_dropped() {
        let (count, waker) = counting();
        let cx = Context::from_waker(&waker);
        let (tx, mut rx) = slot::<(), u32>((), false);
        tx.progress(progress(1.0));
        assert!(rx.poll_answer(&cx).is_pending());
        drop(tx);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(rx.try_progress().is_none());
        assert!(matches!(rx.poll_answer(&cx), Poll::Ready(None)));
    }

    #[test]
    fn a_slow_caller_keeps_at_most_the_limit() {
        let (tx, mut rx) = slot::<(), u32>((), true);
        for n in 0..MAX_WAITING_PROGRESS + 10 {
            tx.progress(progress(n as f64));
        }
        let mut kept = 0;
        while let Some(Event::Progress(p)) = rx.try_progress() {
            assert_eq!(p.progress, kept as f64);
            kept += 1;
        }
        assert_eq!(kept, MAX_WAITING_PROGRESS);
    }
}
