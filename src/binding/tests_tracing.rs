//! The `tracing` feature: a call's span and its fields, the events for retries and era
//! fallbacks, and no secret anywhere in them, seen by a subscriber written here.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use super::*;
use crate::binding::config::load_config;
use crate::client::Client;
use crate::demo::{DemoOptions, DemoServer, Era};
use crate::transport::http::HttpConfig;

/// A token recognizable anywhere it might leak.
const TOKEN: &str = "tok-TRACING-SECRET-5d2c";
/// An argument value that must not show either.
const ARGUMENT: &str = "arg-TRACING-VALUE-77";

/// One span as the subscriber saw it: its name and every field recorded on it.
#[derive(Clone, Debug)]
struct SeenSpan {
    name: String,
    fields: Vec<(String, String)>,
    metadata: &'static Metadata<'static>,
}

/// One event: its fields (`message` among them) and the span it happened in.
#[derive(Clone, Debug)]
struct SeenEvent {
    fields: Vec<(String, String)>,
    span: Option<u64>,
}

#[derive(Default)]
struct Seen {
    spans: Vec<SeenSpan>,
    events: Vec<SeenEvent>,
    /// The entered spans, innermost last (the runtime is single-threaded).
    stack: Vec<u64>,
}

/// Collects every span and event; spans are numbered from 1 in creation order.
#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut seen = self.0.lock().unwrap();
        let mut recorded = SeenSpan {
            name: span.metadata().name().to_owned(),
            fields: Vec::new(),
            metadata: span.metadata(),
        };
        span.record(&mut Fields(&mut recorded.fields));
        seen.spans.push(recorded);
        Id::from_u64(seen.spans.len() as u64)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut seen = self.0.lock().unwrap();
        let index = span.into_u64() as usize - 1;
        values.record(&mut Fields(&mut seen.spans[index].fields));
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut seen = self.0.lock().unwrap();
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        let span = seen.stack.last().copied();
        seen.events.push(SeenEvent { fields, span });
    }

    /// What `Span::current()` and `in_current_span` ask, as real subscribers answer it.
    fn current_span(&self) -> tracing_core::span::Current {
        let seen = self.0.lock().unwrap();
        match seen.stack.last() {
            Some(&id) => tracing_core::span::Current::new(
                Id::from_u64(id),
                seen.spans[id as usize - 1].metadata,
            ),
            None => tracing_core::span::Current::none(),
        }
    }

    fn enter(&self, span: &Id) {
        self.0.lock().unwrap().stack.push(span.into_u64());
    }

    fn exit(&self, span: &Id) {
        let mut seen = self.0.lock().unwrap();
        if let Some(at) = seen.stack.iter().rposition(|id| *id == span.into_u64()) {
            seen.stack.remove(at);
        }
    }
}

impl Collector {
    /// Runs `test` on a single-threaded runtime with this collector as the subscriber.
    fn run<F: std::future::Future<Output = ()>>(&self, test: impl FnOnce() -> F) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        tracing::subscriber::with_default(self.clone(), || runtime.block_on(test()));
    }

    fn spans(&self) -> Vec<SeenSpan> {
        self.0.lock().unwrap().spans.clone()
    }

    fn events(&self) -> Vec<SeenEvent> {
        self.0.lock().unwrap().events.clone()
    }

    /// Every name and value seen, for the secrets check.
    fn all_text(&self) -> String {
        let seen = self.0.lock().unwrap();
        let mut text = String::new();
        for span in &seen.spans {
            text.push_str(&span.name);
            for (name, value) in &span.fields {
                text.push_str(&format!(" {name}={value}"));
            }
            text.push('\n');
        }
        for event in &seen.events {
            for (name, value) in &event.fields {
                text.push_str(&format!(" {name}={value}"));
            }
            text.push('\n');
        }
        text
    }
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

struct FixedToken;

impl TokenSource for FixedToken {
    fn token(&self, name: &str) -> Option<Secret> {
        (name == "TRACING_TOKEN").then(|| Secret::new(TOKEN))
    }
}

fn echo_caller(url: &str) -> Caller {
    let config = json!([{
        "name": "docs_echo",
        "description": "echoes",
        "input_schema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "url": url,
        "mcp_tool": "echo",
        "token_env": "TRACING_TOKEN",
        "tenants": ["acme"],
        "timeout_seconds": 20,
    }]);
    let bindings = load_config(&config.to_string()).expect("a valid config");
    let pool = HttpPool::new(&TlsOptions::default()).expect("a pool");
    Caller::with_default_proxy(pool, bindings, Arc::new(FixedToken), ProxyConfig::default())
        .expect("a caller")
}

/// Calls `docs_echo` on a demo server of `era` that wants the bearer token, in the
/// collector; returns the server's URL.
fn traced_binding_call(collector: &Collector, era: Era) -> String {
    let url = Arc::new(Mutex::new(String::new()));
    let seen_url = url.clone();
    collector.run(|| async move {
        let options = DemoOptions {
            token: Some(TOKEN.to_owned()),
            era,
        };
        let server = DemoServer::start_with_options(options)
            .await
            .expect("a demo server");
        *seen_url.lock().unwrap() = server.url();
        let caller = echo_caller(&server.url());
        let context = CallContext::new("acme", "conversation-1", "call-traced-1");
        let result = caller
            .call(
                "docs_echo",
                &context,
                &json!({"message": ARGUMENT}),
                |_| {},
                None,
            )
            .await;
        assert!(!result.is_error(), "{}", result.to_json_line());
    });
    url.lock().unwrap().clone()
}

#[test]
fn a_binding_call_has_one_span_with_its_fields_and_no_secret() {
    let collector = Collector::default();
    let url = traced_binding_call(&collector, Era::Both);
    let spans = collector.spans();
    let calls: Vec<&SeenSpan> = spans.iter().filter(|s| s.name == "call").collect();
    assert_eq!(calls.len(), 1, "{spans:#?}");
    let call = &calls[0].fields;
    let origin = url.trim_end_matches("/mcp");
    assert_eq!(field(call, "binding"), Some("docs_echo"), "{call:?}");
    assert_eq!(field(call, "tool"), Some("echo"), "{call:?}");
    assert_eq!(field(call, "origin"), Some(origin), "{call:?}");
    assert_eq!(field(call, "call_id"), Some("call-traced-1"), "{call:?}");
    assert_eq!(
        field(call, "protocol_version"),
        Some("2026-07-28"),
        "{call:?}"
    );
    assert_eq!(field(call, "error_kind"), None, "{call:?}");
    // The driver's events belong to the call: the revision settled inside its span.
    let events = collector.events();
    let settled = events
        .iter()
        .find(|e| field(&e.fields, "message") == Some("protocol revision settled"))
        .expect("the revision settled");
    assert_eq!(settled.span, Some(1), "{events:#?}");
    assert_eq!(
        field(&settled.fields, "protocol_version"),
        Some("2026-07-28")
    );
    let text = collector.all_text();
    assert!(!text.contains(TOKEN), "the token shows: {text}");
    assert!(!text.contains(ARGUMENT), "an argument value shows: {text}");
}

#[test]
fn an_era_fallback_is_an_event_of_the_call() {
    let collector = Collector::default();
    traced_binding_call(&collector, Era::Legacy);
    let spans = collector.spans();
    let call = &spans
        .iter()
        .find(|s| s.name == "call")
        .expect("a span")
        .fields;
    assert_eq!(
        field(call, "protocol_version"),
        Some("2025-11-25"),
        "{call:?}"
    );
    let events = collector.events();
    let fallback = events
        .iter()
        .find(|e| {
            field(&e.fields, "message")
                .is_some_and(|m| m.starts_with("era fallback: the server speaks a 2025-era"))
        })
        .unwrap_or_else(|| panic!("no fallback event: {events:#?}"));
    assert_eq!(fallback.span, Some(1));
    let text = collector.all_text();
    assert!(!text.contains(TOKEN), "the token shows: {text}");
    assert!(!text.contains(ARGUMENT), "an argument value shows: {text}");
}

#[test]
fn a_32020_retry_is_an_event_with_its_code() {
    let collector = Collector::default();
    collector.run(|| async {
        let options = DemoOptions {
            token: Some(TOKEN.to_owned()),
            ..DemoOptions::default()
        };
        let server = DemoServer::start_with_options(options)
            .await
            .expect("a demo server");
        let pool = HttpPool::new(&TlsOptions::default()).expect("a pool");
        let mut config = HttpConfig::new(&server.url()).expect("a config");
        config.bearer_token = Some(Secret::new(TOKEN));
        let client = Client::connect_http(&pool, config, ClientOptions::default())
            .await
            .expect("connect");
        // Before any listing the call has no Mcp-Param-Region header: -32020, then a retry.
        let arguments = json!({"region": ARGUMENT}).as_object().cloned();
        let result = client
            .call_tool("region_echo", arguments, CallOptions::default())
            .await
            .expect("a result after the retry");
        assert!(!result.is_error(), "{result:?}");
        client.close().await;
    });
    let events = collector.events();
    let retry = events
        .iter()
        .find(|e| field(&e.fields, "code") == Some("-32020"))
        .unwrap_or_else(|| panic!("no -32020 event: {events:#?}"));
    assert_eq!(field(&retry.fields, "tool"), Some("region_echo"));
    let text = collector.all_text();
    assert!(!text.contains(TOKEN), "the token shows: {text}");
    assert!(!text.contains(ARGUMENT), "an argument value shows: {text}");
}
