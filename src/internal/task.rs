//! The `task_poll` harness: the task parsers (`CreateTaskResult` of both eras, `tasks/get`
//! answers, status notifications) and the polling machine, driven by a sequence of task
//! messages as a server would send them; see `connection::task::fuzz_poll`.

/// Separates the messages in the input.
pub(crate) const NEXT_MESSAGE: &[u8] = b"\n#next-message\n";

/// The `task_poll` fuzz target. The first byte: bit 0 the 2026-07-28 era (else 2025-11-25).
/// The rest: the `CreateTaskResult`, then each later task message, separated by
/// [`NEXT_MESSAGE`]. Checks (in the machine's driver): every wait it asks for is at most the
/// cap, a terminal status never changes, an error takes nothing of its message in, the polls
/// stop at their limit; nothing panics.
pub(crate) fn fuzz_task_poll(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let mut messages: Vec<&[u8]> = Vec::new();
    let mut rest = rest;
    while let Some(at) = find(rest, NEXT_MESSAGE) {
        messages.push(&rest[..at]);
        rest = &rest[at + NEXT_MESSAGE.len()..];
        if messages.len() >= 4096 {
            break;
        }
    }
    messages.push(rest);
    let steps = crate::connection::task::fuzz_poll(knob & 1 == 1, &messages);
    assert!(steps <= messages.len());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
