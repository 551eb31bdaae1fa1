//! Pair tests of calls that become tasks, in both eras: polling at the server's interval and
//! within the deadline, the result, input, cancellation, and every hostile task message a
//! typed error. A `tools/call` goes once in every one of them: polling is not re-sending.

use super::*;
use crate::mcp::{TaskError, TaskStatus, TaskSupport};

/// A 2025-11-25 server that offers task-augmented calls (`tasks.requests.tools.call`).
fn tasks_initialized(seen: &Seen) -> Reply {
    Reply::Status(
        200,
        response(
            &id_of(seen),
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
                   "serverInfo": {"name": "tasks", "version": "1"}}),
        ),
        vec![("mcp-session-id", "s-1".to_owned())],
    )
}

fn task(id: &str, status: &str, poll_ms: u64) -> Value {
    json!({"taskId": id, "status": status, "createdAt": "2026-12-03T08:00:00Z",
           "lastUpdatedAt": "2026-12-03T08:00:00Z", "ttl": 60000, "pollInterval": poll_ms})
}

/// A pair speaking 2025-11-25 with tasks on; `server` answers after `initialize`.
fn legacy_pair(mut server: Server) -> Pair {
    let mut pair = Pair::new(
        session::EraPolicy::Legacy,
        Box::new(move |seen| match seen.rpc_method() {
            Some("initialize") => tasks_initialized(seen),
            _ => server(seen),
        }),
    );
    pair.connection.limits.tasks = true;
    pair
}

/// A pair speaking 2026-07-28 with tasks on.
fn modern_pair(server: Server) -> Pair {
    let mut pair = Pair::modern(server);
    pair.connection.limits.tasks = true;
    pair
}

fn task_call(pair: &mut Pair, support: Option<TaskSupport>, timeout: Duration) -> OpId {
    let mut call = traced_call("research", None, None, None);
    call.task_support = matches!(support, Some(TaskSupport::Optional | TaskSupport::Required));
    call.timeout = timeout;
    pair.connection.call_tool(call, pair.now)
}

fn statuses(pair: &Pair) -> Vec<TaskStatus> {
    pair.outputs
        .iter()
        .filter_map(|o| match o {
            Output::TaskStatus { update, .. } => Some(update.status),
            _ => None,
        })
        .collect()
}

fn task_id_of(outcome: &Result<Outcome, OpError>) -> Option<String> {
    match outcome {
        Ok(Outcome::Call(result)) => result
            .meta
            .as_ref()?
            .get(crate::mcp::RELATED_TASK_KEY)?
            .get("taskId")?
            .as_str()
            .map(str::to_owned),
        Err(OpError::Failed(failure)) => failure.task_id().map(str::to_owned),
        _ => None,
    }
}

#[test]
fn a_2025_task_call_is_sent_once_polled_at_its_interval_and_its_result_fetched() {
    let mut polls = 0;
    let mut pair = legacy_pair(Box::new(move |seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(response(
            &id_of(seen),
            json!({"task": task("t-1", "working", 500)}),
        )),
        Some("tasks/get") => {
            polls += 1;
            let status = if polls < 3 { "working" } else { "completed" };
            Reply::Json(response(&id_of(seen), task("t-1", status, 500)))
        }
        Some("tasks/result") => Reply::Json(response(
            &id_of(seen),
            json!({"content": [{"type": "text", "text": "report"}],
                   "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = task_call(
        &mut pair,
        Some(TaskSupport::Required),
        Duration::from_secs(60),
    );
    let outcome = pair.finish(op);
    assert_eq!(task_id_of(&outcome).as_deref(), Some("t-1"));
    assert_eq!(text_of(outcome), "report");
    let calls = pair.calls_seen("tools/call");
    assert_eq!(calls.len(), 1, "polling is not re-sending");
    assert_eq!(calls[0].params()["task"]["ttl"], json!(60000));
    let gets = pair.calls_seen("tasks/get");
    assert_eq!(gets.len(), 3);
    for (before, after) in std::iter::once(calls[0])
        .chain(gets.iter().copied())
        .zip(&gets)
    {
        assert_eq!(
            after.at - before.at,
            Duration::from_millis(500),
            "the server's interval"
        );
        assert_eq!(after.params()["taskId"], json!("t-1"));
    }
    assert_eq!(pair.calls_seen("tasks/result").len(), 1);
    assert_eq!(
        statuses(&pair),
        [TaskStatus::Working, TaskStatus::Completed]
    );
}

#[test]
fn a_2025_tool_that_forbids_tasks_or_a_server_without_them_gets_a_plain_call() {
    let mut pair = legacy_pair(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(response(&id_of(seen), text_result("plain"))),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    for support in [None, Some(TaskSupport::Forbidden)] {
        let op = task_call(&mut pair, support, Duration::from_secs(5));
        assert_eq!(text_of(pair.finish(op)), "plain");
    }
    let mut pair = Pair::new(
        session::EraPolicy::Legacy,
        Box::new(|seen| match seen.rpc_method() {
            Some("initialize") => initialized(seen),
            Some("tools/call") => Reply::Json(response(&id_of(seen), text_result("plain"))),
            _ => Reply::Status(400, Value::Null, Vec::new()),
        }),
    );
    pair.connection.limits.tasks = true;
    let op = task_call(
        &mut pair,
        Some(TaskSupport::Optional),
        Duration::from_secs(5),
    );
    assert_eq!(text_of(pair.finish(op)), "plain");
    for seen in pair.calls_seen("tools/call") {
        assert!(seen.params().get("task").is_none());
    }
}

#[test]
fn a_2026_task_asks_the_host_through_tasks_update_and_echoes_the_latest_state() {
    let mut polls = 0;
    let mut pair = modern_pair(Box::new(move |seen| match seen.rpc_method() {
        Some("tools/call") => created(seen, "t-9", json!({"ttlSeconds": 60, "requestState": "s0"})),
        Some("tasks/get") => {
            polls += 1;
            let body = match polls {
                1 => json!({"resultType": "complete", "taskId": "t-9", "status": "input_required",
                    "requestState": "s1", "pollIntervalMilliseconds": 200,
                    "inputRequests": {"name": {"method": "elicitation/create",
                        "params": {"message": "name?", "requestedSchema": {"type": "object"}}}}}),
                // Not caught up yet: the answered request is listed again.
                2 => json!({"resultType": "complete", "taskId": "t-9", "status": "input_required",
                    "requestState": "s2",
                    "inputRequests": {"name": {"method": "elicitation/create",
                        "params": {"message": "name?", "requestedSchema": {"type": "object"}}}}}),
                _ => json!({"resultType": "complete", "taskId": "t-9", "status": "completed",
                    "result": {"content": [{"type": "text", "text": "hello Jane"}]}}),
            };
            Reply::Json(response(&id_of(seen), body))
        }
        Some("tasks/update") => {
            Reply::Json(response(&id_of(seen), json!({"resultType": "complete"})))
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = task_call(&mut pair, None, Duration::from_secs(60));
    pair.run(|outputs| outputs.iter().any(|o| matches!(o, Output::Input { .. })));
    let mut answers = JsonObject::new();
    answers.insert(
        "name".to_owned(),
        json!({"action": "accept", "content": {"name": "Jane"}}),
    );
    pair.connection.answer_input(op, Ok(answers), pair.now);
    let outcome = pair.finish(op);
    assert_eq!(task_id_of(&outcome).as_deref(), Some("t-9"));
    assert_eq!(text_of(outcome), "hello Jane");
    assert_eq!(pair.calls_seen("tools/call").len(), 1);
    let inputs = pair
        .outputs
        .iter()
        .filter(|o| matches!(o, Output::Input { .. }))
        .count();
    assert_eq!(inputs, 1, "an answered request is not asked twice");
    let updates = pair.calls_seen("tasks/update");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].params()["taskId"], json!("t-9"));
    assert_eq!(updates[0].params()["requestState"], json!("s1"));
    assert_eq!(
        updates[0].params()["inputResponses"]["name"]["content"]["name"],
        json!("Jane")
    );
    let gets = pair.calls_seen("tasks/get");
    assert_eq!(gets[0].params()["requestState"], json!("s0"));
    assert_eq!(gets[2].params()["requestState"], json!("s2"));
    for get in &gets {
        assert_eq!(
            get.headers.get("mcp-name").map(|v| v.as_bytes()),
            Some(&b"t-9"[..])
        );
        assert_eq!(
            get.headers.get("mcp-method").map(|v| v.as_bytes()),
            Some(&b"tasks/get"[..])
        );
    }
}

#[test]
fn a_2026_task_without_the_extension_declared_is_an_invalid_answer() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(response(
            &id_of(seen),
            json!({"resultType": "task", "taskId": "t", "status": "working"}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = task_call(&mut pair, None, Duration::from_secs(5));
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::Task(TaskError::Unrequested));
    assert!(failure.outcome_unknown());
    assert!(pair.calls_seen("tasks/get").is_empty());
}

/// A 2026-07-28 `CreateTaskResult` for task `id`, polled every 200 ms unless `extra` says.
fn created(seen: &Seen, id: &str, extra: Value) -> Reply {
    let mut body = json!({"resultType": "task", "taskId": id, "status": "working",
                          "pollIntervalMilliseconds": 200});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    Reply::Json(response(&id_of(seen), body))
}

/// A 2026-07-28 server whose task answers `tasks/get` with `get(poll)`.
fn modern_task_server(mut get: impl FnMut(usize) -> Value + 'static) -> Server {
    let mut polls = 0;
    Box::new(move |seen| match seen.rpc_method() {
        Some("tools/call") => created(seen, "t-1", json!({"pollIntervalMilliseconds": 100})),
        Some("tasks/get") => {
            polls += 1;
            let mut body = get(polls);
            body["resultType"] = json!("complete");
            Reply::Json(response(&id_of(seen), body))
        }
        Some("tasks/cancel") => {
            Reply::Json(response(&id_of(seen), json!({"resultType": "complete"})))
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    })
}

#[test]
fn hostile_task_messages_are_typed_errors_with_the_task_id() {
    type TaskGet = Box<dyn FnMut(usize) -> Value>;
    let cases: Vec<(TaskGet, TaskError)> = vec![
        (
            Box::new(|_| json!({"taskId": "someone-else", "status": "working"})),
            TaskError::WrongTaskId,
        ),
        (
            Box::new(|_| json!({"taskId": "t-1", "status": "completed"})),
            TaskError::TerminalWithoutResult,
        ),
        (
            Box::new(|_| json!({"taskId": "t-1", "status": "failed"})),
            TaskError::TerminalWithoutResult,
        ),
        (
            Box::new(|_| json!({"taskId": "t-1", "status": "input_required"})),
            TaskError::InputWithoutRequests,
        ),
        (
            Box::new(|_| json!({"taskId": "t-1", "status": "finished"})),
            TaskError::UnknownStatus,
        ),
        (
            Box::new(|_| json!({"status": "working"})),
            TaskError::MissingTaskId,
        ),
    ];
    for (get, expected) in cases {
        let mut pair = modern_pair(modern_task_server(get));
        let op = task_call(&mut pair, None, Duration::from_secs(30));
        let outcome = pair.finish(op);
        assert_eq!(task_id_of(&outcome).as_deref(), Some("t-1"), "{expected:?}");
        let failure = failed(outcome);
        assert_eq!(failure.kind, FailureKind::Task(expected));
        assert!(
            failure.outcome_unknown(),
            "the tool may be running: {expected:?}"
        );
        assert_eq!(pair.calls_seen("tools/call").len(), 1);
    }
}

#[test]
fn endless_working_ends_at_the_deadline_with_tasks_cancel_and_a_huge_interval_is_capped() {
    let mut pair = modern_pair(modern_task_server(
        |_| json!({"taskId": "t-1", "status": "working", "pollIntervalMilliseconds": 1e12}),
    ));
    let start = pair.now;
    let op = task_call(&mut pair, None, Duration::from_secs(35));
    let outcome = pair.finish(op);
    assert_eq!(task_id_of(&outcome).as_deref(), Some("t-1"));
    let failure = failed(outcome);
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert!(failure.outcome_unknown());
    assert!(pair.now - start <= Duration::from_secs(35) + Duration::from_secs(2));
    let gets = pair.calls_seen("tasks/get");
    // 0.1 s to the first poll, then at most 10 s apart: polls at 0.1, 10.1, 20.1, 30.1.
    assert_eq!(
        gets.len(),
        4,
        "{:?}",
        gets.iter().map(|g| g.at - start).collect::<Vec<_>>()
    );
    for pair_of in gets.windows(2) {
        assert_eq!(pair_of[1].at - pair_of[0].at, Duration::from_secs(10));
    }
    let cancels = pair.calls_seen("tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0].params()["taskId"], json!("t-1"));
    assert_eq!(pair.calls_seen("tools/call").len(), 1);
}

#[test]
fn a_broken_poll_is_asked_again_and_a_cancelled_call_sends_tasks_cancel() {
    let mut polls = 0;
    let mut pair = modern_pair(Box::new(move |seen| match seen.rpc_method() {
        Some("tools/call") => created(seen, "t-1", json!({"pollIntervalMilliseconds": 100})),
        Some("tasks/get") => {
            polls += 1;
            match polls {
                1 | 2 => Reply::Lost,
                3 => Reply::Json(response(
                    &id_of(seen),
                    json!({"resultType": "complete",
                    "taskId": "t-1", "status": "completed",
                    "result": {"content": [{"type": "text", "text": "survived"}]}}),
                )),
                _ => Reply::Json(response(
                    &id_of(seen),
                    json!({"resultType": "complete",
                    "taskId": "t-1", "status": "working"}),
                )),
            }
        }
        Some("tasks/cancel") => {
            Reply::Json(response(&id_of(seen), json!({"resultType": "complete"})))
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = task_call(&mut pair, None, Duration::from_secs(30));
    assert_eq!(text_of(pair.finish(op)), "survived");
    assert_eq!(pair.calls_seen("tasks/get").len(), 3);
    assert_eq!(pair.calls_seen("tools/call").len(), 1);

    // The next call's task works on; the host cancels it between polls.
    let op = task_call(&mut pair, None, Duration::from_secs(30));
    pair.run(|outputs| {
        outputs
            .iter()
            .filter(|o| matches!(o, Output::TaskStatus { .. }))
            .count()
            >= 3
    });
    pair.connection.cancel(op, "the user stopped it", pair.now);
    let outcome = pair.finish(op);
    let failure = failed(outcome);
    assert_eq!(failure.kind, FailureKind::Cancelled);
    assert_eq!(failure.task_id(), Some("t-1"));
    assert!(failure.outcome_unknown());
    assert_eq!(pair.calls_seen("tasks/cancel").len(), 1);
    assert_eq!(pair.calls_seen("tools/call").len(), 2);
}

#[test]
fn a_status_after_a_terminal_one_is_refused_by_the_polling_machine() {
    use crate::connection::task::{Step, TaskPoll};
    use crate::mcp::tasks::read_task;
    let raw = |v: Value| serde_json::value::to_raw_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let read = |v: Value| read_task(&raw(v)).unwrap_or_else(|e| panic!("{e}"));
    let created = read(json!({"taskId": "t", "status": "working"}));
    let (mut poll, step) = TaskPoll::created(created, false).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(step, Step::Poll(wait) if wait == Duration::from_secs(1)));
    let step = poll.on_state(read(
        json!({"taskId": "t", "status": "completed", "pollInterval": 0}),
    ));
    assert!(matches!(step, Ok(Step::FetchResult)));
    // A zero interval is floored.
    assert_eq!(poll.interval(), Duration::from_millis(100));
    let again = poll.on_state(read(json!({"taskId": "t", "status": "working"})));
    assert_eq!(again.err(), Some(TaskError::StatusAfterTerminal));
    assert_eq!(poll.status(), TaskStatus::Completed);
    // The same terminal status again is no regression.
    let same = poll.on_state(read(json!({"taskId": "t", "status": "completed"})));
    assert!(matches!(same, Ok(Step::FetchResult)));
    for _ in 0..crate::connection::task::MAX_POLLS {
        assert!(poll.count_poll().is_ok());
    }
    assert_eq!(poll.count_poll().err(), Some(TaskError::TooManyPolls));
}

#[test]
fn a_2026_task_needing_input_without_a_handler_fails_unknown_and_is_cancelled() {
    let mut pair = modern_pair(modern_task_server(|_| {
        json!({"taskId": "t-1", "status": "input_required",
               "inputRequests": {"ok": {"method": "elicitation/create",
                   "params": {"message": "sure?", "requestedSchema": {"type": "object"}}}}})
    }));
    pair.connection.limits.answers_input = false;
    let op = task_call(&mut pair, None, Duration::from_secs(30));
    let outcome = pair.finish(op);
    assert_eq!(task_id_of(&outcome).as_deref(), Some("t-1"));
    let failure = failed(outcome);
    assert_eq!(failure.kind, FailureKind::ElicitationRequested);
    assert!(failure.outcome_unknown());
    assert!(
        !pair
            .outputs
            .iter()
            .any(|o| matches!(o, Output::Input { .. }))
    );
    assert_eq!(pair.calls_seen("tasks/cancel").len(), 1);
}
