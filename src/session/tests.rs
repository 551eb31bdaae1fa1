//! Deterministic session tests: an in-memory server peer and a clock that only moves when told.

// One reading of the clock gives the fake clock its origin; after that time moves only when a
// test says so.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
#[cfg(feature = "client")]
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::jsonrpc;

/// The session under test, a fake clock, and everything it has output so far.
struct Harness {
    session: Session,
    now: Instant,
    sent: Vec<Value>,
    settled: Vec<Settled>,
    progress: Vec<(Id, f64)>,
    notifications: Vec<String>,
    ready: Vec<Ready>,
    forwarded: Vec<Request<'static>>,
}

impl Harness {
    fn new() -> Self {
        Harness::with_config(Config {
            era: EraPolicy::Legacy,
            ..Config::default()
        })
    }

    fn with_config(config: Config) -> Self {
        Harness {
            session: Session::new(config),
            now: Instant::now(),
            sent: Vec::new(),
            settled: Vec::new(),
            progress: Vec::new(),
            notifications: Vec::new(),
            ready: Vec::new(),
            forwarded: Vec::new(),
        }
    }

    /// Drains the session's outputs into the harness's records.
    fn pump(&mut self) {
        while let Some(output) = self.session.poll_output() {
            match output {
                Output::Transmit(t) => self
                    .sent
                    .push(serde_json::from_str(&t.message.encode()).unwrap()),
                Output::Settled(s) => self.settled.push(s),
                Output::Progress { id, params } => self.progress.push((id, params.progress)),
                Output::Notification(n) => self.notifications.push(n.method.into_owned()),
                Output::Ready(ready) => self.ready.push(*ready),
                Output::ServerRequest(request) => self.forwarded.push(request),
            }
        }
    }

    /// The server sends this JSON-RPC text.
    fn receive(&mut self, text: Value) {
        let text = text.to_string();
        let message = jsonrpc::decode_message(text.as_bytes()).unwrap();
        self.session.handle_message(message, self.now);
        self.pump();
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.session.handle_timeout(self.now);
        self.pump();
    }

    /// Starts and completes the handshake with a server offering `capabilities`.
    fn ready(capabilities: Value) -> Self {
        let mut h = Harness::new();
        h.session.start(h.now);
        h.pump();
        h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "serverInfo": {"name": "fake", "version": "1"}}}));
        h.sent.clear();
        h.settled.clear();
        h
    }

    fn call(&mut self, options: RequestOptions) -> Id {
        let params = serde_json::value::to_raw_value(&json!({"name": "t"})).unwrap();
        let id = self
            .session
            .request("tools/call", Some(params), options, self.now)
            .unwrap();
        self.pump();
        id
    }

    fn failure(&self, id: &Id) -> &Failure {
        let settled = self.settled.iter().find(|s| &s.id == id).expect("settled");
        settled.outcome.as_ref().expect_err("a failure")
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn handshake_offers_latest_and_accepts_a_downgrade() {
    let mut h = Harness::new();
    h.session.start(h.now);
    h.pump();
    assert_eq!(h.sent.len(), 1);
    let init = &h.sent[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "mcpwire");
    assert!(matches!(h.session.phase(), Phase::Initializing));
    h.receive(json!({"jsonrpc": "2.0", "id": init["id"], "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"}}}));
    assert_eq!(
        h.session.protocol_version(),
        Some(ProtocolVersion::V2025_06_18)
    );
    assert_eq!(
        h.sent[1],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    assert!(h.settled[0].outcome.is_ok());
    assert_eq!(h.session.server().unwrap().server_info.name, "s");
}

/// `initialize` (2025-era) declares core tasks but not the 2026-07-28 tasks extension, whose
/// answers a 2025-era session does not read; other extensions are declared as given.
#[test]
fn initialize_declares_core_tasks_without_the_tasks_extension() {
    for (extensions, expected) in [
        (json!({"io.modelcontextprotocol/tasks": {}}), None),
        (
            json!({"io.modelcontextprotocol/tasks": {}, "x.example/other": {"a": 1}}),
            Some(json!({"x.example/other": {"a": 1}})),
        ),
    ] {
        let mut extra = crate::mcp::JsonObject::new();
        extra.insert("extensions".to_owned(), extensions.clone());
        let capabilities = crate::mcp::ClientCapabilities {
            tasks: Some(json!({})),
            extra,
            ..crate::mcp::ClientCapabilities::default()
        };
        let mut h = Harness::with_config(Config {
            era: EraPolicy::Legacy,
            capabilities,
            ..Config::default()
        });
        h.session.start(h.now);
        h.pump();
        let declared = &h.sent[0]["params"]["capabilities"];
        assert_eq!(declared["tasks"], json!({}), "{extensions}");
        assert_eq!(
            declared.get("extensions").cloned(),
            expected,
            "{extensions}"
        );
    }
}

#[test]
fn an_unaccepted_version_closes_the_session_with_a_known_outcome() {
    let mut h = Harness::new();
    h.session.start(h.now);
    h.pump();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "serverInfo": {"name": "old", "version": "1"}}}));
    let failure = h.failure(&Id::Number(0));
    assert_eq!(failure.kind, FailureKind::UnsupportedVersion);
    assert!(failure.detail.contains("2024-11-05"), "{failure}");
    assert!(!failure.outcome_unknown());
    assert!(matches!(h.session.phase(), Phase::Closed));
    assert_eq!(h.sent.len(), 1, "no initialized notification");
}

#[test]
fn the_legacy_version_is_accepted_when_configured() {
    let mut config = Config {
        era: EraPolicy::Legacy,
        ..Config::default()
    };
    config.accepted_versions.push(ProtocolVersion::V2024_11_05);
    let mut h = Harness::with_config(config);
    h.session.start(h.now);
    h.pump();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
        "serverInfo": {"name": "old", "version": "1"}}}));
    assert_eq!(
        h.session.protocol_version(),
        Some(ProtocolVersion::V2024_11_05)
    );
}

#[test]
fn a_malformed_initialize_result_is_a_protocol_failure() {
    let mut h = Harness::new();
    h.session.start(h.now);
    h.pump();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": {"hello": "world"}}));
    assert_eq!(h.failure(&Id::Number(0)).kind, FailureKind::Protocol);
    assert!(matches!(h.session.phase(), Phase::Closed));
}

#[test]
fn an_initialize_error_response_is_a_server_error() {
    let mut h = Harness::new();
    h.session.start(h.now);
    h.pump();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32602, "message": "bad"}}));
    let failure = h.failure(&Id::Number(0));
    assert_eq!(failure.kind, FailureKind::ServerError { code: -32602 });
    assert!(failure.detail.contains("bad"));
}

#[test]
fn initialize_timeout_closes_without_a_cancel_notification() {
    let mut h = Harness::new();
    h.session.start(h.now);
    h.pump();
    assert_eq!(h.session.poll_timeout(), Some(h.now + secs(30)));
    h.advance(secs(30));
    assert_eq!(h.failure(&Id::Number(0)).kind, FailureKind::Timeout);
    assert_eq!(
        h.sent.len(),
        1,
        "initialize must not be cancelled by notification"
    );
    assert!(matches!(h.session.phase(), Phase::Closed));
}

#[test]
fn requests_are_refused_before_the_handshake_and_without_capability() {
    let mut h = Harness::new();
    let refused = h.session.request(
        "tools/list",
        None,
        RequestOptions::with_timeout(secs(1)),
        h.now,
    );
    assert_eq!(refused, Err(RequestError::NotReady));
    let mut h = Harness::ready(json!({"prompts": {}}));
    let refused = h.session.request(
        "tools/list",
        None,
        RequestOptions::with_timeout(secs(1)),
        h.now,
    );
    assert!(matches!(
        refused,
        Err(RequestError::CapabilityMissing {
            capability: "tools",
            ..
        })
    ));
    h.pump();
    assert!(h.sent.is_empty());
    // Methods outside any capability, such as ping, are always allowed.
    assert!(
        h.session
            .request("ping", None, RequestOptions::with_timeout(secs(1)), h.now)
            .is_ok()
    );
}

#[test]
fn responses_are_matched_by_id_in_any_order_and_late_ones_dropped() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let a = h.call(RequestOptions::with_timeout(secs(5)));
    let b = h.call(RequestOptions::with_timeout(secs(5)));
    assert_ne!(a, b);
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[1]["id"], "result": {"content": []}}));
    assert_eq!(h.settled.len(), 1);
    assert_eq!(h.settled[0].id, b);
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[0]["id"], "result": {"content": []}}));
    assert_eq!(h.settled[1].id, a);
    // A repeat, and an id nobody asked for, are dropped.
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[0]["id"], "result": {}}));
    h.receive(json!({"jsonrpc": "2.0", "id": "nobody", "result": {}}));
    assert_eq!(h.settled.len(), 2);
    assert_eq!(h.session.dropped_responses(), 2);
}

#[test]
fn progress_is_routed_by_token_and_resets_the_idle_deadline() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions {
        timeout: secs(60),
        idle_timeout: Some(secs(5)),
        progress_token: Some(Id::String("call-1".into())),
    });
    assert_eq!(h.session.poll_timeout(), Some(h.now + secs(5)));
    h.advance(secs(4));
    h.receive(json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "call-1", "progress": 1, "total": 3}}));
    h.receive(json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "someone-else", "progress": 9}}));
    assert_eq!(h.progress, vec![(id.clone(), 1.0)]);
    assert_eq!(h.session.poll_timeout(), Some(h.now + secs(5)));
    h.advance(secs(4));
    assert!(h.settled.is_empty(), "the idle deadline moved");
    h.advance(secs(1));
    let failure = h.failure(&id);
    assert_eq!(failure.kind, FailureKind::IdleTimeout);
    assert!(failure.outcome_unknown());
}

#[test]
fn the_hard_deadline_caps_an_idle_timer_kept_alive_by_progress() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions {
        timeout: secs(10),
        idle_timeout: Some(secs(3)),
        progress_token: Some(Id::Number(77)),
    });
    for _ in 0..5 {
        h.advance(secs(2));
        h.receive(json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 77, "progress": 1}}));
    }
    assert_eq!(h.failure(&id).kind, FailureKind::Timeout);
}

#[test]
fn a_timeout_after_sending_cancels_on_the_wire_and_drops_the_late_response() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions::with_timeout(secs(3)));
    h.advance(secs(3));
    let failure = h.failure(&id);
    assert_eq!(
        (failure.kind.clone(), failure.delivery),
        (FailureKind::Timeout, Delivery::MayHaveReached)
    );
    assert!(failure.outcome_unknown());
    let cancel = h.sent.last().unwrap();
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], h.sent[0]["id"]);
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[0]["id"], "result": {"content": []}}));
    assert_eq!(h.settled.len(), 1);
    assert_eq!(h.session.dropped_responses(), 1);
}

#[test]
fn cancelling_a_request_not_yet_handed_out_withdraws_it() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h
        .session
        .request(
            "tools/call",
            None,
            RequestOptions::with_timeout(secs(3)),
            h.now,
        )
        .unwrap();
    h.session.cancel(&id, "user interrupt");
    h.pump();
    assert!(h.sent.is_empty(), "nothing may be sent: {:?}", h.sent);
    let failure = h.failure(&id);
    assert_eq!(
        (failure.kind.clone(), failure.delivery),
        (FailureKind::Cancelled, Delivery::NotSent)
    );
    assert!(!failure.outcome_unknown());
}

#[test]
fn cancelling_a_sent_request_notifies_the_server_once() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions::with_timeout(secs(3)));
    h.session.cancel(&id, "user interrupt");
    h.session.cancel(&id, "again");
    h.pump();
    let cancels: Vec<_> = h
        .sent
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["params"]["reason"], "user interrupt");
    assert_eq!(h.settled.len(), 1);
    assert!(h.session.poll_timeout().is_none());
}

#[test]
fn server_requests_are_answered() {
    let mut h = Harness::ready(json!({"tools": {}}));
    h.receive(json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}));
    assert_eq!(
        h.sent[0],
        json!({"jsonrpc": "2.0", "id": "p1", "result": {}})
    );
    h.receive(
        json!({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 1}}),
    );
    assert_eq!(h.sent[1]["id"], 5);
    assert_eq!(h.sent[1]["error"]["code"], -32601);
    h.receive(json!({"jsonrpc": "2.0", "id": 6, "method": "roots/list"}));
    assert_eq!(h.sent[2]["error"]["code"], -32601);
}

#[test]
fn sampling_does_not_disturb_a_call_in_flight() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions::with_timeout(secs(3)));
    h.receive(
        json!({"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage",
        "params": {}}),
    );
    assert!(h.session.is_pending(&id));
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[0]["id"], "result": {"content": []}}));
    assert!(h.settled[0].outcome.is_ok());
}

#[test]
fn elicitation_during_a_call_ends_the_call_with_its_outcome_unknown() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions::with_timeout(secs(30)));
    h.receive(
        json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create",
        "params": {"message": "Approve?", "requestedSchema": {"type": "object"}}}),
    );
    let failure = h.failure(&id);
    assert_eq!(failure.kind, FailureKind::ElicitationRequested);
    assert!(failure.outcome_unknown());
    let methods: Vec<_> = h.sent.iter().map(|m| m["method"].clone()).collect();
    assert!(
        methods.contains(&json!("notifications/cancelled")),
        "{methods:?}"
    );
    let answer = h.sent.iter().find(|m| m["id"] == 3).unwrap();
    assert_eq!(answer["error"]["code"], -32601);
}

#[test]
fn notifications_for_the_host_pass_and_unknown_ones_are_ignored() {
    let mut h = Harness::ready(json!({"tools": {}}));
    h.receive(json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "hi"}}));
    h.receive(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    h.receive(json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}));
    h.receive(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 99}}),
    );
    assert_eq!(
        h.notifications,
        vec!["notifications/message", "notifications/tools/list_changed"]
    );
    assert!(h.sent.is_empty());
}

#[test]
fn transport_failures_keep_their_delivery_facts() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let cases = [
        (FailureKind::Connect, Delivery::NotSent, false),
        (
            FailureKind::Unauthorized { status: 401 },
            Delivery::Refused,
            false,
        ),
        (FailureKind::SessionExpired, Delivery::Refused, false),
        (FailureKind::ConnectionLost, Delivery::MayHaveReached, true),
        (FailureKind::Protocol, Delivery::Answered, true),
        (FailureKind::LimitExceeded, Delivery::Answered, true),
    ];
    for (kind, delivery, unknown) in cases {
        let id = h.call(RequestOptions::with_timeout(secs(3)));
        h.session
            .fail_request(&id, Failure::new(kind.clone(), delivery, "x"));
        h.pump();
        let failure = h.failure(&id);
        assert_eq!((&failure.kind, failure.delivery), (&kind, delivery));
        assert_eq!(failure.outcome_unknown(), unknown, "{kind:?}");
        assert!(!h.session.is_pending(&id));
    }
    assert!(
        !h.sent
            .iter()
            .any(|m| m["method"] == "notifications/cancelled")
    );
}

#[test]
fn a_server_error_response_is_a_known_outcome() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let id = h.call(RequestOptions::with_timeout(secs(3)));
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[0]["id"],
        "error": {"code": -32602, "message": "Unknown tool", "data": {"tool": "t"}}}));
    let failure = h.failure(&id);
    assert_eq!(failure.kind, FailureKind::ServerError { code: -32602 });
    assert!(!failure.outcome_unknown());
    assert!(failure.detail.contains("Unknown tool"));
}

#[test]
fn close_settles_everything_and_sends_nothing_more() {
    let mut h = Harness::ready(json!({"tools": {}}));
    let sent = h.call(RequestOptions::with_timeout(secs(3)));
    let queued = h
        .session
        .request(
            "tools/call",
            None,
            RequestOptions::with_timeout(secs(3)),
            h.now,
        )
        .unwrap();
    h.session.close();
    h.pump();
    assert_eq!(h.sent.len(), 1, "the queued request is withdrawn");
    assert_eq!(h.failure(&sent).delivery, Delivery::MayHaveReached);
    assert_eq!(h.failure(&queued).delivery, Delivery::NotSent);
    h.receive(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}));
    assert_eq!(h.sent.len(), 1, "a closed session answers nothing");
}

#[test]
fn the_pending_limit_refuses_without_sending() {
    let config = Config {
        max_pending_requests: 2,
        era: EraPolicy::Legacy,
        ..Config::default()
    };
    let mut h = Harness::with_config(config);
    h.session.start(h.now);
    h.pump();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"}}}));
    h.call(RequestOptions::with_timeout(secs(3)));
    h.call(RequestOptions::with_timeout(secs(3)));
    let third = h.session.request(
        "tools/call",
        None,
        RequestOptions::with_timeout(secs(3)),
        h.now,
    );
    assert_eq!(third, Err(RequestError::TooManyPending { limit: 2 }));
}

#[test]
fn resumption_needs_an_event_id() {
    let mut r = Resumption::new(ResumePolicy::default());
    let now = Instant::now();
    assert_eq!(r.next_attempt(now, 0.5), None);
    r.observe("", None);
    assert_eq!(r.next_attempt(now, 0.5), None);
}

#[test]
fn resumption_honours_the_server_retry_exactly() {
    let mut r = Resumption::new(ResumePolicy::default());
    let now = Instant::now();
    r.observe("event-1", Some(500));
    for jitter in [0.0, 0.99] {
        assert_eq!(
            r.next_attempt(now, jitter),
            Some(now + Duration::from_millis(500))
        );
    }
    assert_eq!(r.last_event_id(), "event-1");
}

#[test]
fn resumption_backs_off_with_jitter_up_to_a_cap_then_gives_up() {
    let policy = ResumePolicy {
        max_attempts: 4,
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(300),
    };
    let mut r = Resumption::new(policy);
    let now = Instant::now();
    r.observe("e", None);
    let waits: Vec<Duration> = (0..4)
        .map(|_| r.next_attempt(now, 1.0).unwrap() - now)
        .collect();
    assert_eq!(
        waits,
        [100, 200, 300, 300].map(Duration::from_millis).to_vec()
    );
    assert_eq!(r.next_attempt(now, 1.0), None);
    let mut r = Resumption::new(policy);
    r.observe("e", None);
    assert_eq!(
        r.next_attempt(now, 0.0),
        Some(now + Duration::from_millis(50))
    );
}

#[test]
fn resumption_attempts_that_bring_events_do_not_count() {
    let policy = ResumePolicy {
        max_attempts: 2,
        ..ResumePolicy::default()
    };
    let mut r = Resumption::new(policy);
    let now = Instant::now();
    for n in 0..10 {
        r.observe(&format!("e{n}"), None);
        assert!(r.next_attempt(now, 0.5).is_some(), "attempt {n}");
    }
    assert!(r.next_attempt(now, 0.5).is_some());
    assert!(r.next_attempt(now, 0.5).is_none());
}

/// Random operations; invariants: every request settles exactly once, a request is never
/// reported as having reached the server unless it was handed out, and nothing stays pending
/// after close.
#[test]
fn random_operation_sequences_keep_the_invariants() {
    let mut state = 0x1234_5678_9ABC_DEF1_u64;
    let mut rand = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    for _ in 0..2_000 {
        let mut h = Harness::ready(json!({"tools": {}}));
        let mut made: Vec<Id> = Vec::new();
        let mut handed_out: HashMap<Id, bool> = HashMap::new();
        for _ in 0..rand(40) {
            match rand(7) {
                0 | 1 => {
                    let options = RequestOptions {
                        timeout: Duration::from_millis(1 + rand(5000)),
                        idle_timeout: (rand(2) == 0).then(|| Duration::from_millis(1 + rand(900))),
                        progress_token: Some(Id::Number(made.len() as i64)),
                    };
                    let id = h
                        .session
                        .request("tools/call", None, options, h.now)
                        .unwrap();
                    made.push(id);
                }
                2 => {
                    // Drain some outputs, noting what was handed to the transport.
                    for _ in 0..rand(4) {
                        match h.session.poll_output() {
                            Some(Output::Transmit(t)) => {
                                if let Some(id) = t.request_id() {
                                    handed_out.insert(id.clone(), true);
                                }
                            }
                            Some(Output::Settled(s)) => h.settled.push(s),
                            _ => {}
                        }
                    }
                }
                3 if !made.is_empty() => {
                    let id = &made[rand(made.len() as u64) as usize];
                    let reply = if rand(2) == 0 {
                        json!({"jsonrpc": "2.0", "id": id, "result": {}})
                    } else {
                        json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": id, "progress": 1}})
                    };
                    let text = reply.to_string();
                    let message = jsonrpc::decode_message(text.as_bytes()).unwrap();
                    h.session.handle_message(message, h.now);
                }
                4 => {
                    h.now += Duration::from_millis(rand(1500));
                    h.session.handle_timeout(h.now);
                }
                5 if !made.is_empty() => {
                    let id = made[rand(made.len() as u64) as usize].clone();
                    if rand(2) == 0 {
                        h.session.cancel(&id, "test");
                    } else {
                        h.session.fail_request(
                            &id,
                            Failure::new(
                                FailureKind::ConnectionLost,
                                Delivery::MayHaveReached,
                                "x",
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
        h.session.close();
        while let Some(output) = h.session.poll_output() {
            if let Output::Settled(s) = output {
                h.settled.push(s);
            }
        }
        for id in &made {
            let settled: Vec<_> = h.settled.iter().filter(|s| &s.id == id).collect();
            assert_eq!(
                settled.len(),
                1,
                "request {id} settled {} times",
                settled.len()
            );
            if let Err(failure) = &settled[0].outcome {
                let transport_said = failure.kind == FailureKind::ConnectionLost;
                if failure.delivery != Delivery::NotSent && !transport_said {
                    assert!(
                        handed_out.contains_key(id),
                        "{id} reported {:?} but was never handed out",
                        failure.delivery
                    );
                }
            }
        }
        assert!(h.session.poll_timeout().is_none());
    }
}

// ---------------------------------------------------------------------------------------------
// The era probe (2026-07-28 `basic/versioning.mdx`) and the stateless revision.
// ---------------------------------------------------------------------------------------------

fn probing() -> Harness {
    let mut h = Harness::with_config(Config::default());
    h.session.start(h.now);
    h.pump();
    h
}

const DISCOVERED: &str = "2026-07-28";

fn discover_result() -> Value {
    json!({"supportedVersions": [DISCOVERED], "capabilities": {"tools": {}},
        "instructions": "hi", "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}}})
}

#[test]
fn the_probe_is_server_discover_with_the_full_envelope() {
    let h = probing();
    assert!(matches!(h.session.phase(), Phase::Probing));
    assert_eq!(h.sent.len(), 1);
    let probe = &h.sent[0];
    assert_eq!(probe["method"], "server/discover");
    let meta = &probe["params"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], DISCOVERED);
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "mcpwire"
    );
    assert_eq!(
        h.session.probe_version(),
        Some(ProtocolVersion::V2026_07_28)
    );
}

#[test]
fn a_discover_result_makes_the_session_modern_with_no_initialize() {
    let mut h = probing();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": discover_result()}));
    assert_eq!(
        h.session.protocol_version(),
        Some(ProtocolVersion::V2026_07_28)
    );
    assert!(h.session.is_modern());
    assert_eq!(h.ready.len(), 1);
    let server = h.ready[0].server.as_ref().expect("described");
    assert_eq!(server.server_info.name, "modern");
    assert_eq!(server.instructions.as_deref(), Some("hi"));
    assert!(server.capabilities.tools.is_some());
    assert_eq!(h.sent.len(), 1, "no initialize, no initialized");
    // Every request now carries the envelope, its own _meta kept.
    let params =
        serde_json::value::to_raw_value(&json!({"name": "t", "_meta": {"progressToken": "p"}}))
            .unwrap();
    h.session
        .request(
            "tools/call",
            Some(params),
            RequestOptions::with_timeout(secs(5)),
            h.now,
        )
        .unwrap();
    h.pump();
    let meta = &h.sent[1]["params"]["_meta"];
    assert_eq!(meta["progressToken"], "p");
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], DISCOVERED);
    assert_eq!(h.sent[1]["params"]["name"], "t");
    // Requests with no params get an envelope too.
    h.session
        .request(
            "tools/list",
            None,
            RequestOptions::with_timeout(secs(5)),
            h.now,
        )
        .unwrap();
    h.pump();
    assert!(h.sent[2]["params"]["_meta"]["io.modelcontextprotocol/clientInfo"].is_object());
    // 2026-07-28 has no ping.
    let refused = h
        .session
        .request("ping", None, RequestOptions::with_timeout(secs(5)), h.now)
        .unwrap_err();
    assert!(
        matches!(refused, RequestError::NotInRevision { .. }),
        "{refused}"
    );
}

#[cfg(feature = "client")]
#[test]
fn params_built_with_the_current_stamp_go_as_they_are_and_a_stale_one_is_stamped_again() {
    let mut h = probing();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": discover_result()}));
    let stamp = h.session.stamp().cloned().expect("modern");
    // The marker shows which way they went: as they are, nothing is added.
    let call = |h: &mut Harness| {
        let params = serde_json::value::to_raw_value(&json!({"name": "t", "_meta": {"m": 1}}));
        let options = RequestOptions::with_timeout(secs(5));
        let method = "tools/call".into();
        let stamp = Some(&stamp);
        h.session
            .request_stamped(method, params.ok(), options, stamp, h.now)
            .unwrap();
        h.pump();
    };
    call(&mut h);
    assert_eq!(h.sent[1]["params"], json!({"name": "t", "_meta": {"m": 1}}));
    // A new revision is a new stamp: params made with the old one get the new envelope.
    h.session.switch_version(ProtocolVersion::V2026_07_28);
    assert!(!Arc::ptr_eq(h.session.stamp().unwrap(), &stamp));
    call(&mut h);
    let meta = &h.sent[2]["params"]["_meta"];
    assert_eq!(meta["m"], 1);
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], DISCOVERED);
}

#[test]
fn a_legacy_answer_to_the_probe_falls_back_to_initialize() {
    // Every shape a 2025-era server answers an unknown first request with.
    let answers = [
        json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "Method not found"}}),
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32000,
            "message": "Bad Request: Unsupported protocol version: 2026-07-28"}}),
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32022, "message": "x"}}),
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32022, "message": "x",
            "data": {"supported": ["2025-11-25", "2025-06-18"]}}}),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"supportedVersions": ["2027-01-01"],
            "capabilities": {}}}),
    ];
    for answer in answers {
        let mut h = probing();
        h.receive(answer.clone());
        assert!(
            matches!(h.session.phase(), Phase::Initializing),
            "{answer}: {:?}",
            h.session.phase()
        );
        assert_eq!(h.sent[1]["method"], "initialize", "{answer}");
        assert_eq!(h.sent[1]["params"]["protocolVersion"], "2025-11-25");
        assert!(
            h.sent[1]["params"].get("_meta").is_none(),
            "byte-identical to a 2025 client"
        );
        let initialize = h.session.initialize_id().cloned().unwrap();
        assert_ne!(initialize, Id::Number(0), "a new id");
        h.receive(json!({"jsonrpc": "2.0", "id": h.sent[1]["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "old", "version": "1"}}}));
        assert_eq!(
            h.session.protocol_version(),
            Some(ProtocolVersion::V2025_11_25)
        );
        assert!(!h.session.is_modern());
        assert_eq!(h.sent[2]["method"], "notifications/initialized");
    }
}

#[test]
fn a_4xx_without_json_rpc_falls_back_and_auth_and_5xx_do_not() {
    let mut h = probing();
    h.session.fail_request(
        &Id::Number(0),
        Failure::new(
            FailureKind::HttpStatus { status: 405 },
            Delivery::Refused,
            "405",
        ),
    );
    h.pump();
    assert!(matches!(h.session.phase(), Phase::Initializing));
    for kind in [
        FailureKind::Unauthorized { status: 401 },
        FailureKind::HttpStatus { status: 503 },
        FailureKind::Connect,
        FailureKind::ConnectionLost,
    ] {
        let mut h = probing();
        h.session.fail_request(
            &Id::Number(0),
            Failure::new(kind.clone(), Delivery::Refused, "no verdict"),
        );
        h.pump();
        assert!(matches!(h.session.phase(), Phase::Closed), "{kind:?}");
        let failure = h.failure(&Id::Number(0));
        assert_eq!(failure.kind, kind);
        match kind {
            // Refused credentials: the probe never reached the server, and the detail (the
            // OAuth step that failed, or the challenge) is the whole story.
            FailureKind::Unauthorized { .. } => assert_eq!(failure.detail, "no verdict"),
            _ => assert!(failure.detail.contains("era probe"), "{failure}"),
        }
        assert_eq!(h.sent.len(), 1, "{kind:?}: no initialize");
    }
}

#[test]
fn a_32022_naming_a_common_revision_repeats_the_probe_once() {
    let mut h = probing();
    let rejection = |id: &Value| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": [DISCOVERED], "requested": DISCOVERED}}})
    };
    h.receive(rejection(&h.sent[0]["id"]));
    assert!(matches!(h.session.phase(), Phase::Probing));
    assert_eq!(h.sent.len(), 2);
    assert_eq!(h.sent[1]["method"], "server/discover");
    assert_ne!(h.sent[1]["id"], h.sent[0]["id"], "a new id");
    // A second rejection is an error, not a loop and not a fallback.
    h.receive(rejection(&h.sent[1]["id"]));
    assert!(matches!(h.session.phase(), Phase::Closed));
    assert_eq!(h.sent.len(), 2);
    let last = h.settled.last().unwrap();
    assert_eq!(
        last.outcome.as_ref().unwrap_err().kind,
        FailureKind::UnsupportedVersion
    );
    // And a corrected probe that is answered makes the session modern.
    let mut h = probing();
    h.receive(rejection(&h.sent[0]["id"]));
    h.receive(json!({"jsonrpc": "2.0", "id": h.sent[1]["id"], "result": discover_result()}));
    assert!(h.session.is_modern());
}

#[test]
fn only_unknown_stateless_revisions_fail_the_probe() {
    let mut h = probing();
    h.receive(
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32022, "message": "x",
        "data": {"supported": ["2027-03-01"]}}}),
    );
    assert!(matches!(h.session.phase(), Phase::Closed));
    let failure = h.failure(&Id::Number(0));
    assert_eq!(failure.kind, FailureKind::UnsupportedVersion);
    assert!(failure.detail.contains("2027-03-01"), "{failure}");
}

#[test]
fn probe_silence_is_an_error_over_http_and_legacy_over_stdio() {
    let mut h = probing();
    h.advance(secs(11));
    assert!(matches!(h.session.phase(), Phase::Closed));
    assert_eq!(h.failure(&Id::Number(0)).kind, FailureKind::Timeout);

    let mut h = Harness::with_config(Config {
        silent_probe_means_legacy: true,
        ..Config::default()
    });
    h.session.start(h.now);
    h.pump();
    h.advance(secs(11));
    assert!(matches!(h.session.phase(), Phase::Initializing));
    assert_eq!(h.sent[1]["method"], "initialize");
    // A late answer to the probe is dropped.
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": discover_result()}));
    assert!(matches!(h.session.phase(), Phase::Initializing));

    // A stdio server that exits on the probe: withdrawn, initialize queued for the new one.
    let mut h = Harness::with_config(Config {
        silent_probe_means_legacy: true,
        ..Config::default()
    });
    h.session.start(h.now);
    h.pump();
    assert!(h.session.probe_lost(h.now));
    h.pump();
    assert_eq!(h.sent[1]["method"], "initialize");
    assert!(!h.session.probe_lost(h.now), "only while probing");
}

#[test]
fn a_known_modern_era_is_ready_at_once_and_switches_revision_on_request() {
    let mut h = Harness::with_config(Config {
        era: EraPolicy::Modern(ProtocolVersion::V2026_07_28),
        ..Config::default()
    });
    h.session.start(h.now);
    h.pump();
    assert!(h.sent.is_empty(), "nothing sent before the first request");
    assert_eq!(h.ready.len(), 1);
    assert!(h.ready[0].server.is_none());
    assert!(h.session.is_modern());
    // No capability checks without a description of the server.
    h.session
        .request(
            "prompts/list",
            None,
            RequestOptions::with_timeout(secs(1)),
            h.now,
        )
        .unwrap();
    // Switching to a revision that is not stateless is ignored.
    h.session.switch_version(ProtocolVersion::V2025_11_25);
    assert_eq!(
        h.session.protocol_version(),
        Some(ProtocolVersion::V2026_07_28)
    );
}

#[test]
fn modern_cancel_still_queues_the_notification_for_stdio() {
    let mut h = Harness::with_config(Config {
        era: EraPolicy::Modern(ProtocolVersion::V2026_07_28),
        ..Config::default()
    });
    h.session.start(h.now);
    h.pump();
    let id = h.call(RequestOptions::with_timeout(secs(5)));
    h.session.cancel(&id, "stop");
    h.pump();
    let cancelled = h.sent.last().unwrap();
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], json!(id_value(&id)));
}

fn id_value(id: &Id) -> Value {
    match id {
        Id::Number(n) => json!(n),
        Id::String(s) => json!(s),
    }
}

#[test]
fn forwarded_input_requests_are_answered_by_the_driver_once() {
    let mut h = Harness::with_config(Config {
        era: EraPolicy::Legacy,
        forward_input_requests: true,
        ..Config::default()
    });
    h.session.start(h.now);
    h.pump();
    h.receive(json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"}}}));
    let call = h.call(RequestOptions::with_timeout(secs(30)));
    h.sent.clear();
    h.receive(
        json!({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create",
        "params": {"message": "ok?", "requestedSchema": {"type": "object"}}}),
    );
    assert_eq!(h.forwarded.len(), 1);
    assert!(h.sent.is_empty(), "nothing answered by the session itself");
    assert!(
        h.session.is_pending(&call),
        "the call goes on while the handler answers"
    );
    // ping is still the session's own.
    h.receive(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}));
    assert_eq!(h.sent.len(), 1);
    let id = Id::String("e1".into());
    let answer = serde_json::value::to_raw_value(&json!({"action": "accept"})).unwrap();
    h.session.answer_server_request(&id, Ok(answer.clone()));
    h.pump();
    assert_eq!(
        h.sent[1],
        json!({"jsonrpc": "2.0", "id": "e1", "result": {"action": "accept"}})
    );
    h.session.answer_server_request(&id, Ok(answer));
    h.pump();
    assert_eq!(h.sent.len(), 2, "answered once");
}
