//! The MCP client span of each operation (`tracing` feature), after OpenTelemetry's semantic
//! conventions for MCP (`gen-ai/mcp.md`, "Client" spans; development status): kind `client`,
//! named `{mcp.method.name} {target}` where the target is the tool's (or prompt's) name, with
//! `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`, `gen_ai.operation.name`,
//! `mcp.protocol.version`, `mcp.session.id` and, when it fails, `error.type` (the JSON-RPC
//! error code, `tool_error` for a tool's own error, or the error's kind otherwise) and
//! `rpc.response.status_code`. Never an argument, a result, a header value or a token.
//!
//! With the `opentelemetry` feature, the span's OpenTelemetry context (`tracing-opentelemetry`)
//! is what a request that brings no trace context of its own carries in `_meta`.

use super::Client;
use super::driver::Operation;
use crate::connection::Outcome;
use crate::error::Error;
use crate::mcp::methods;
use crate::session::FailureKind;

/// The span of one operation, made where the caller awaits it (its parent is the caller's span).
pub(super) fn of(client: &Client, operation: &Operation) -> tracing::Span {
    let (method, tool, prompt): (&str, Option<&str>, Option<&str>) = match operation {
        Operation::ListTools => (methods::TOOLS_LIST, None, None),
        Operation::CallTool(call) => (methods::TOOLS_CALL, Some(&*call.name), None),
        Operation::Raw { method, params, .. } => {
            let name = || params.as_ref()?.get("name")?.as_str();
            match method.as_str() {
                methods::TOOLS_CALL => (method, name(), None),
                methods::PROMPTS_GET => (method, None, name()),
                _ => (method, None, None),
            }
        }
        Operation::Listen { .. } => (methods::SUBSCRIPTIONS_LISTEN, None, None),
        Operation::Ping => (methods::PING, None, None),
    };
    let name = match tool.or(prompt) {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let operation_name = (method == methods::TOOLS_CALL).then_some("execute_tool");
    tracing::info_span!(
        "mcp.client",
        otel.name = name,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        gen_ai.tool.name = tool,
        gen_ai.prompt.name = prompt,
        gen_ai.operation.name = operation_name,
        mcp.protocol.version = client.protocol_version().as_str(),
        mcp.session.id = client.session_id(),
        error.type = tracing::field::Empty,
        rpc.response.status_code = tracing::field::Empty,
    )
}

/// Records how the operation ended: `error.type` (and the status) for a failure or a tool's
/// own error, nothing for a success.
pub(super) fn record(span: &tracing::Span, outcome: &Result<Outcome, Error>) {
    let code = match outcome {
        Ok(Outcome::Call(result)) if result.is_error() => {
            span.record("error.type", "tool_error");
            None
        }
        Ok(_) => return,
        Err(error) => match error.failure().map(|failure| &failure.kind) {
            Some(FailureKind::ServerError { code }) => Some(code.to_string()),
            _ => {
                span.record("error.type", error.kind().as_str());
                None
            }
        },
    };
    if let Some(code) = code {
        span.record("error.type", code.as_str());
        span.record("rpc.response.status_code", code.as_str());
    }
    span.record("otel.status_code", "error");
}

/// The trace context of `span` as OpenTelemetry sees it (through `tracing-opentelemetry`),
/// when it has a valid one: its trace id, its own span id as the parent and its flags, with
/// the OpenTelemetry context's `tracestate` and baggage when they are well formed (a malformed
/// one is left out, never sent).
#[cfg(feature = "opentelemetry")]
pub(crate) fn context_of(span: &tracing::Span) -> Option<crate::mcp::TraceContext> {
    use opentelemetry::baggage::BaggageExt;
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let context = span.context();
    let span_context = context.span().span_context().clone();
    if !span_context.is_valid() {
        return None;
    }
    let trace = crate::mcp::TraceContext::from_ids(
        span_context.trace_id().to_bytes(),
        span_context.span_id().to_bytes(),
        span_context.trace_flags().to_u8(),
    )
    .ok()?;
    // A malformed member is left out, never sent.
    let add = |trace: crate::mcp::TraceContext,
               value: String,
               what: &str,
               with: fn(
        crate::mcp::TraceContext,
        &str,
    ) -> Result<crate::mcp::TraceContext, crate::mcp::TraceContextError>| {
        if value.is_empty() {
            return trace;
        }
        with(trace.clone(), &value).unwrap_or_else(|error| {
            tracing::warn!(%error, "the OpenTelemetry context's {what} is malformed: not sent");
            trace
        })
    };
    let trace = add(
        trace,
        span_context.trace_state().header(),
        "tracestate",
        |trace, value| trace.with_tracestate(value),
    );
    let trace = add(
        trace,
        baggage_header(context.baggage()),
        "baggage",
        |trace, value| trace.with_baggage(value),
    );
    Some(trace)
}

/// OpenTelemetry baggage as a W3C `baggage` value: `key=value` list-members, each value
/// percent-encoded (W3C Baggage 3.2.1.2), each member's metadata as its properties.
#[cfg(feature = "opentelemetry")]
fn baggage_header(baggage: &opentelemetry::baggage::Baggage) -> String {
    let mut header = String::new();
    for (key, (value, metadata)) in baggage {
        if !header.is_empty() {
            header.push(',');
        }
        header.push_str(key.as_str());
        header.push('=');
        for byte in value.as_str().bytes() {
            let plain = matches!(byte, 0x21 | 0x23..=0x24 | 0x26..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e);
            if plain {
                header.push(char::from(byte));
            } else {
                header.push_str(&format!("%{byte:02X}"));
            }
        }
        if !metadata.as_str().is_empty() {
            header.push(';');
            header.push_str(metadata.as_str());
        }
    }
    header
}
