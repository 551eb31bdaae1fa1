//! The operations a [`Connection`] carries out, request by request: listing every tool page
//! by page, calling a tool through its rounds, and the one-request operations (ping, listen,
//! a raw request).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::{Connection, Excluded, OpError, OpId, Outcome, arguments_of};
use crate::exchange::SendOptions;
use crate::jsonrpc::Id;
use crate::mcp::headers as mcp_headers;
use crate::mcp::modern::{self, ResultEnvelope, ResultType};
use crate::mcp::{
    CallToolResult, ContentOnly, JsonObject, ListToolsRequestParams, ListToolsResult,
    ProgressToken, Tool, TraceContext, error_code, methods,
};
use crate::session::{Delivery, Failure, FailureKind, Payload, RequestError, RequestOptions};

mod tasking;
pub(super) use tasking::TaskParam;

/// An operation in progress.
pub(super) enum Op {
    List(ListOp),
    Call(CallOp),
    Single { request: Option<Id>, kind: Single },
}

/// What a one-request operation reads from its answer.
pub(super) enum Single {
    Ping,
    /// Any request; at a stateless revision its `resultType` is checked.
    Raw {
        method: String,
    },
    /// `subscriptions/listen`: the stream's end is the operation's.
    Listen,
    /// A request nobody waits for (a `tasks/cancel` after its call ended): it ends unreported.
    Detached,
}

impl Op {
    pub(super) fn set_request(&mut self, id: Id) {
        match self {
            Op::List(list) => list.request = Some(id),
            Op::Call(call) => call.request = Some(id),
            Op::Single { request, .. } => *request = Some(id),
        }
    }

    pub(super) fn request(&self) -> Option<&Id> {
        match self {
            Op::List(list) => list.request.as_ref(),
            Op::Call(call) => call.request.as_ref(),
            Op::Single { request, .. } => request.as_ref(),
        }
    }

    /// Whether the operation is a call that became a task.
    pub(super) fn has_task(&self) -> bool {
        matches!(self, Op::Call(call) if call.task.is_some())
    }

    /// Whether nobody waits for the operation's end.
    pub(super) fn is_detached(&self) -> bool {
        matches!(
            self,
            Op::Single {
                kind: Single::Detached,
                ..
            }
        )
    }

    /// The call a listing is made for, if it is one.
    pub(super) fn parent(&self) -> Option<OpId> {
        match self {
            Op::List(list) => list.parent,
            _ => None,
        }
    }
}

/// A `tools/list` in progress: the pages so far.
pub(super) struct ListOp {
    tools: Vec<Tool>,
    cursors: HashSet<String>,
    pages: usize,
    cursor: Option<String>,
    /// The page asked for now: its params (sent again once if its stream breaks), and
    /// whether it was.
    params: Option<Box<RawValue>>,
    resent: bool,
    request: Option<Id>,
    /// The call this listing is for (a `-32020` relisting), whose outcome it feeds.
    parent: Option<OpId>,
    /// The trace context each page's request carries.
    trace: Option<TraceContext>,
}

/// A call the host asks for.
#[derive(Debug)]
pub(crate) struct CallTool {
    /// The tool's name on the server (shared: a binding names its tool once, not per call).
    pub(crate) name: Arc<str>,
    /// Its arguments, a JSON object.
    pub(crate) arguments: Option<CallArguments>,
    /// The caller's `_meta` members.
    pub(crate) meta: Option<JsonObject>,
    /// One more `_meta` member, written after the caller's (it replaces one of the same name):
    /// the binding layer's caller identity.
    pub(crate) member: Option<(Arc<str>, Box<RawValue>)>,
    /// The progress token; one is made when `None`.
    pub(crate) progress_token: Option<ProgressToken>,
    /// The whole call's deadline, every round included.
    pub(crate) timeout: Duration,
    /// The most time without progress on a round.
    pub(crate) idle_timeout: Option<Duration>,
    /// Bytes of reply each round may receive.
    pub(crate) max_response_bytes: Option<u64>,
    /// Read only the content (the binding layer maps nothing else).
    pub(crate) content_only: bool,
    /// The tool's input schema, for its `Mcp-Param-*` headers when it was not listed.
    pub(crate) input_schema: Option<Arc<serde_json::Value>>,
    /// The answer is given back raw (a `tools/call` made through a raw request).
    pub(crate) raw: bool,
    /// The W3C trace context the call's `_meta` carries (it replaces any trace member of
    /// `meta`).
    pub(crate) trace: Option<TraceContext>,
    /// The tool allows or requires tasks (its `execution.taskSupport`, as the caller knows
    /// it): at 2025-11-25 it is called as one when the server declares
    /// `tasks.requests.tools.call` and the connection speaks tasks.
    pub(crate) task_support: bool,
}

/// A call's arguments, a JSON object: the caller's own, moved in and written once into the
/// call's params, or written already by a caller that keeps its object (the binding layer).
#[derive(Debug)]
pub(crate) enum CallArguments {
    /// The object itself.
    Object(JsonObject),
    /// The object as written.
    #[cfg_attr(not(any(feature = "bindings", test)), allow(dead_code))]
    Raw(Box<RawValue>),
}

impl CallArguments {
    /// The arguments as an object, for the `Mcp-Param-*` headers (read again when written).
    fn object(&self) -> Option<Cow<'_, JsonObject>> {
        match self {
            CallArguments::Object(object) => Some(Cow::Borrowed(object)),
            CallArguments::Raw(raw) => arguments_object(raw).map(Cow::Owned),
        }
    }
}

impl serde::Serialize for CallArguments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CallArguments::Object(object) => object.serialize(serializer),
            CallArguments::Raw(raw) => raw.serialize(serializer),
        }
    }
}

/// A `tools/call` in progress.
pub(super) struct CallOp {
    name: Arc<str>,
    /// The params of the first round (with the stamp of the revision spoken then); `None`
    /// once sent, for a call of one round.
    original: Option<Box<RawValue>>,
    stamp: Option<Arc<modern::Stamp>>,
    /// The params of an `input_required` retry.
    retry: Option<Box<RawValue>>,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    /// `None` once sent, for a call of one round.
    token: Option<ProgressToken>,
    /// The call has one round: only at a stateless revision is a call sent again (input
    /// rounds, `-32020`, `-32022`), so at a 2025-era one its params and token go with the
    /// round rather than copies of them.
    once: bool,
    deadline: Instant,
    idle_timeout: Option<Duration>,
    max_response_bytes: Option<u64>,
    content_only: bool,
    raw: bool,
    input_schema: Option<Arc<serde_json::Value>>,
    rounds: usize,
    relisted: bool,
    switched: bool,
    request: Option<Id>,
    /// Waiting for the host's answers: the methods asked, and the server's `requestState`.
    waiting: Option<(String, Option<Box<RawValue>>)>,
    /// The call's trace context, for the listing a `-32020` makes (its rounds carry it in
    /// their params already).
    trace: Option<TraceContext>,
    /// The call was sent with a `task` member (2025-11-25): its answer is read raw.
    augmented: bool,
    /// A copy of the progress token of a call that may become a task: progress about the
    /// task comes under it after the call's own request is over.
    task_token: Option<ProgressToken>,
    /// The task the server made of the call.
    task: Option<Box<tasking::TaskRun>>,
}

impl Connection {
    /// Lists every tool, following `nextCursor` page by page. A cursor seen twice, more than
    /// `max_list_pages` pages or more than `max_tools` tools is an error, never a loop. At a
    /// stateless revision a tool whose `x-mcp-header` annotations break the spec's rules is
    /// left out, with a warning, and the headers the others' arguments give are remembered
    /// for their calls; a page whose stream breaks before its answer is asked for once more
    /// (listing changes nothing).
    /// Each page's request carries `trace` in its `_meta`.
    pub(crate) fn list_tools(&mut self, trace: Option<TraceContext>, now: Instant) -> OpId {
        let op = self.start_list(None, trace);
        self.next_page(op, now);
        self.flush(now);
        op
    }

    fn start_list(&mut self, parent: Option<OpId>, trace: Option<TraceContext>) -> OpId {
        self.new_op(Op::List(ListOp {
            tools: Vec::new(),
            cursors: HashSet::new(),
            pages: 0,
            cursor: None,
            params: None,
            resent: false,
            request: None,
            parent,
            trace,
        }))
    }

    fn list_op(&mut self, op: OpId) -> Option<&mut ListOp> {
        match self.ops.get_mut(&op) {
            Some(Op::List(list)) => Some(list),
            _ => None,
        }
    }

    /// Asks for the next page (from the cache when it holds it).
    fn next_page(&mut self, op: OpId, now: Instant) {
        let max_pages = self.limits.max_list_pages;
        loop {
            let modern = self.is_modern();
            let cached = {
                let Some(list) = self.list_op(op) else { return };
                if list.pages >= max_pages {
                    let error = answered(
                        FailureKind::LimitExceeded,
                        format!("tools/list has more than {max_pages} pages"),
                    );
                    self.end(op, Err(error));
                    return;
                }
                list.pages += 1;
                list.resent = false;
                let cursor = list.cursor.clone();
                match (&self.lists, modern) {
                    (Some(lists), true) => lists.get(&cursor, now),
                    _ => None,
                }
            };
            if let Some(page) = cached {
                if self.on_page(op, page) {
                    continue;
                }
                return;
            }
            let Some(list) = self.list_op(op) else { return };
            let params = ListToolsRequestParams {
                cursor: list.cursor.clone(),
                ..ListToolsRequestParams::default()
            };
            let params = match serde_json::value::to_raw_value(&params)
                .map_err(|error| OpError::Internal(error.to_string()))
                .and_then(|params| traced(Some(params), list.trace.as_ref()))
            {
                Ok(Some(params)) => params,
                Ok(None) => return self.end(op, Err(OpError::Internal("no params".to_owned()))),
                Err(error) => return self.end(op, Err(error)),
            };
            list.params = Some(params.clone());
            self.send_list(op, params, now);
            return;
        }
    }

    fn send_list(&mut self, op: OpId, params: Box<RawValue>, now: Instant) {
        let options = RequestOptions::with_timeout(self.limits.request_timeout);
        let limits = SendOptions::decoding::<ListToolsResult>();
        self.send(
            op,
            Cow::Borrowed(methods::TOOLS_LIST),
            Some(params),
            None,
            options,
            limits,
            now,
        );
    }

    /// Takes a page in; returns whether to ask for the next one.
    fn on_page(&mut self, op: OpId, page: ListToolsResult) -> bool {
        let max_tools = self.limits.max_tools;
        let Some(list) = self.list_op(op) else {
            return false;
        };
        list.tools.extend(page.tools);
        if list.tools.len() > max_tools {
            let error = answered(
                FailureKind::LimitExceeded,
                format!("the server lists more than {max_tools} tools"),
            );
            self.end(op, Err(error));
            return false;
        }
        match page.next_cursor {
            None => {
                let tools = std::mem::take(&mut list.tools);
                let (tools, excluded) = self.admit_tools(tools);
                self.end(op, Ok(Outcome::Tools(tools, excluded)));
                false
            }
            Some(next) => {
                if !list.cursors.insert(next.clone()) {
                    let error = answered(
                        FailureKind::Protocol,
                        format!("tools/list repeated the cursor {next:?}; stopping a loop"),
                    );
                    self.end(op, Err(error));
                    return false;
                }
                list.cursor = Some(next);
                true
            }
        }
    }

    fn on_list_answer(&mut self, op: OpId, outcome: Result<Payload, Failure>, now: Instant) {
        let modern = self.is_modern();
        let payload = match outcome {
            // 2026-07-28: a broken stream loses the request; a listing is safe to repeat.
            Err(failure) if modern && stream_broke(&failure) => {
                let Some(list) = self.list_op(op) else { return };
                match (list.resent, list.params.clone()) {
                    (false, Some(params)) => {
                        list.resent = true;
                        self.send_list(op, params, now);
                    }
                    _ => self.end(op, Err(OpError::Failed(failure))),
                }
                return;
            }
            Err(failure) => return self.end(op, Err(OpError::Failed(failure))),
            Ok(payload) => payload,
        };
        let page = match self
            .redact_payload(payload)
            .and_then(|payload| typed::<ListToolsResult>(payload, methods::TOOLS_LIST))
        {
            Ok(page) => page,
            Err(error) => return self.end(op, Err(error)),
        };
        if modern {
            let result_type = page.extra.get("resultType").and_then(|v| v.as_str());
            if ResultType::read(result_type) != ResultType::Complete {
                let error = malformed(methods::TOOLS_LIST, &format!("resultType {result_type:?}"));
                return self.end(op, Err(error));
            }
            let hint = modern::CacheHint::from_members(&page.extra);
            let cursor = self.list_op(op).and_then(|list| list.cursor.clone());
            if let Some(lists) = &self.lists
                && !hint.ttl.is_zero()
            {
                lists.put(cursor, &hint, now, page.clone());
            }
        }
        if self.on_page(op, page) {
            self.next_page(op, now);
        }
    }

    /// At a stateless revision: leaves out the tools whose annotations are invalid (with a
    /// warning each, and in the returned list) and remembers the others' header declarations.
    fn admit_tools(&mut self, tools: Vec<Tool>) -> (Vec<Tool>, Vec<Excluded>) {
        if !self.is_modern() {
            return (tools, Vec::new());
        }
        let mut declared = HashMap::new();
        let mut excluded = Vec::new();
        let tools = tools
            .into_iter()
            .filter(
                |tool| match mcp_headers::param_headers(&tool.input_schema) {
                    Ok(headers) => {
                        declared.insert(tool.name.clone(), Arc::from(headers));
                        true
                    }
                    Err(reason) => {
                        excluded.push(Excluded {
                            name: tool.name.clone(),
                            reason,
                        });
                        false
                    }
                },
            )
            .collect();
        self.headers.set_listed(declared);
        for tool in &excluded {
            self.warn(format!(
                "tools/list: left out the tool {:?}: {}",
                tool.name, tool.reason
            ));
        }
        (tools, excluded)
    }

    /// Calls a tool (see [`CallTool`]). At a stateless revision the call follows
    /// `input_required` answers (through the host, at most `max_input_rounds` rounds, each
    /// under a new id with the server's `requestState` echoed exactly), lists the tools again
    /// and retries once after `-32020` (stale `Mcp-Param-*` headers), and retries once at
    /// another revision after `-32022`: in both cases the server refused the request before
    /// running it. A call whose stream breaks is never sent again. The call's trace context
    /// goes into its `_meta`; a trace member of the caller's `_meta` that breaks the W3C
    /// rules refuses the call before anything is sent.
    pub(crate) fn call_tool(&mut self, call: CallTool, now: Instant) -> OpId {
        if let Err(error) = crate::mcp::check_meta(call.meta.as_ref()) {
            return self.refuse(refused_trace(error), now);
        }
        let op = self.next_op;
        let token = call
            .progress_token
            .unwrap_or_else(|| super::progress_token(self.limits.process_id, op));
        let modern = self.is_modern();
        let headers = match modern {
            true => self.headers.call_headers(
                &call.name,
                || call.arguments.as_ref().and_then(CallArguments::object),
                call.input_schema.as_ref(),
            ),
            false => Ok(Vec::new()),
        };
        // At a stateless revision the envelope is written here, with the rest, and the
        // session takes the params as they are while it still speaks that revision.
        let stamp = self.session.stamp().cloned().filter(|_| modern);
        let augmented = !modern
            && self.limits.tasks
            && self.session.server_offers_tool_tasks()
            && call.task_support;
        // The call's deadline, in whole seconds rounded up (a binding's timeout less the
        // moments connecting took is still its timeout: the same on every run).
        let task = augmented.then(|| TaskParam {
            ttl: (call.timeout.as_secs() + u64::from(call.timeout.subsec_nanos() > 0))
                .saturating_mul(1000),
        });
        let task_token = (augmented || (modern && self.limits.tasks)).then(|| token.clone());
        let original = serde_json::value::to_raw_value(&CallParams {
            name: &call.name,
            arguments: call.arguments.as_ref(),
            task: task.as_ref(),
            meta: CallMeta {
                meta: call.meta.as_ref(),
                member: call.member.as_ref().map(|(key, value)| (&**key, &**value)),
                trace: call.trace.as_ref(),
                token: &token,
                stamp: stamp.as_deref(),
            },
        });
        let (headers, original) = match (headers, original) {
            (Ok(headers), Ok(original)) => (headers, original),
            (Err(error), _) => return self.refuse(error, now),
            (_, Err(error)) => return self.refuse(OpError::Internal(error.to_string()), now),
        };
        let state = CallOp {
            name: call.name,
            original: Some(original),
            stamp,
            retry: None,
            headers,
            token: Some(token),
            once: !modern,
            deadline: now + call.timeout,
            idle_timeout: call.idle_timeout,
            max_response_bytes: call.max_response_bytes,
            content_only: call.content_only,
            raw: call.raw,
            input_schema: call.input_schema,
            rounds: 0,
            relisted: false,
            switched: false,
            request: None,
            waiting: None,
            trace: call.trace,
            augmented,
            task_token,
            task: None,
        };
        let op = self.new_op(Op::Call(state));
        self.send_call(op, now);
        self.flush(now);
        op
    }

    /// An operation refused before anything was sent: it ends at once with `error`.
    fn refuse(&mut self, error: OpError, now: Instant) -> OpId {
        let op = self.new_op(Op::Single {
            request: None,
            kind: Single::Ping,
        });
        self.end(op, Err(error));
        self.flush(now);
        op
    }

    fn call_op(&mut self, op: OpId) -> Option<&mut CallOp> {
        match self.ops.get_mut(&op) {
            Some(Op::Call(call)) => Some(call),
            _ => None,
        }
    }

    /// Sends the call's next round.
    fn send_call(&mut self, op: OpId, now: Instant) {
        let Some(call) = self.call_op(op) else { return };
        let (params, progress_token) = match (call.once, &call.retry) {
            (true, _) => (call.original.take(), call.token.take()),
            (false, Some(retry)) => (Some(retry.clone()), call.token.clone()),
            (false, None) => (call.original.clone(), call.token.clone()),
        };
        let Some(params) = params else {
            let error = OpError::Internal("a call of one round was sent twice".to_owned());
            return self.end(op, Err(error));
        };
        let options = RequestOptions {
            timeout: call.deadline.saturating_duration_since(now),
            idle_timeout: call.idle_timeout,
            progress_token,
        };
        // A raw call's answer is given back as sent: nothing to decode.
        let limits = match (call.raw || call.augmented, call.content_only) {
            (true, _) => SendOptions::default(),
            (false, true) => SendOptions::decoding::<ContentOnly>(),
            (false, false) => SendOptions::decoding::<CallToolResult>(),
        }
        .with_max_response_bytes(call.max_response_bytes)
        .with_headers(call.headers.clone());
        let stamped = call.stamp.clone().filter(|_| call.retry.is_none());
        self.send(
            op,
            Cow::Borrowed(methods::TOOLS_CALL),
            Some(params),
            stamped.as_ref(),
            options,
            limits,
            now,
        );
    }

    fn on_call_answer(&mut self, op: OpId, outcome: Result<Payload, Failure>, now: Instant) {
        let modern = self.is_modern();
        let tasks = self.limits.tasks;
        let Some(call) = self.call_op(op) else { return };
        call.request = None;
        if call.task.is_some() {
            return self.on_task_answer(op, outcome, now);
        }
        let (content_only, raw_wanted, augmented) = (call.content_only, call.raw, call.augmented);
        let payload = match outcome {
            Ok(payload) => payload,
            Err(failure) if modern => return self.on_call_refused(op, failure, now),
            Err(failure) => return self.end(op, Err(OpError::Failed(failure))),
        };
        let payload = match self.redact_payload(payload) {
            Ok(payload) => payload,
            Err(error) => return self.end(op, Err(error)),
        };
        let raw = match payload {
            Payload::Raw(raw) if modern => raw,
            // 2025-11-25: a task-augmented call is answered with a task, or (a server that
            // did not make one) with the result.
            Payload::Raw(raw) if augmented && crate::mcp::tasks::is_created_2025(&raw) => {
                return self.start_task(op, crate::mcp::tasks::read_created_2025(&raw), now);
            }
            Payload::Raw(raw) if augmented && !raw_wanted => {
                return self.end(op, call_outcome(Payload::Raw(raw), content_only, false));
            }
            // Decoded means complete: the typed reader takes no other result type.
            payload => return self.end(op, call_outcome(payload, content_only, raw_wanted)),
        };
        let envelope = match ResultEnvelope::read(&raw) {
            Ok(envelope) => envelope,
            Err(error) => return self.end(op, Err(malformed(methods::TOOLS_CALL, &error))),
        };
        if envelope.result_type() == ResultType::Complete {
            return self.end(
                op,
                call_outcome(Payload::Raw(raw), content_only, raw_wanted),
            );
        }
        if envelope.result_type() == ResultType::Task {
            // Only to a client that declared the extension (SEP-2663): to any other, an
            // invalid answer.
            let created = match tasks {
                true => crate::mcp::tasks::read_created_2026(&raw),
                false => Err(crate::mcp::TaskError::Unrequested),
            };
            return self.start_task(op, created, now);
        }
        let max_rounds = self.limits.max_input_rounds;
        let answers_input = self.limits.answers_input;
        let Some(call) = self.call_op(op) else { return };
        call.rounds += 1;
        if call.rounds > max_rounds {
            let error = answered(
                FailureKind::LimitExceeded,
                format!("the server still needs input after {max_rounds} rounds"),
            );
            return self.end(op, Err(error));
        }
        let requests = match envelope.input_requests() {
            Ok(requests) => requests,
            Err(error) => return self.end(op, Err(malformed(methods::TOOLS_CALL, &error))),
        };
        let request_state = envelope.request_state.clone();
        if requests.is_empty() {
            return self.retry_call(op, None, request_state.as_deref(), now);
        }
        let asked = requests
            .iter()
            .map(|r| r.method.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        if !answers_input {
            let error = answered(
                FailureKind::ElicitationRequested,
                format!(
                    "the server needs input ({asked}) before the tool can finish, and this \
                     client has no input handler"
                ),
            );
            return self.end(op, Err(error));
        }
        let kinds = match self.classify_inputs(&requests) {
            Ok(kinds) => kinds,
            Err(refusal) => {
                let error = answered(
                    FailureKind::Protocol,
                    format!(
                        "the server asks for input against the client's capabilities: {refusal}"
                    ),
                );
                return self.end(op, Err(error));
            }
        };
        let Some(call) = self.call_op(op) else { return };
        call.waiting = Some((asked, request_state));
        self.outputs.push_back(super::Output::Input {
            op,
            requests,
            kinds,
        });
    }

    /// The host's answers to an `input_required` round (each under its request's key), or
    /// why it has none: the call's next round goes out, or the call fails.
    pub(crate) fn answer_input(
        &mut self,
        op: OpId,
        answers: Result<JsonObject, String>,
        now: Instant,
    ) {
        let Some(call) = self.call_op(op) else { return };
        let Some((asked, request_state)) = call.waiting.take() else {
            return;
        };
        if call.task.is_some() {
            self.answer_task_input(op, answers, now);
            return self.flush(now);
        }
        match answers.and_then(|answers| {
            serde_json::value::to_raw_value(&answers).map_err(|error| error.to_string())
        }) {
            Ok(responses) => self.retry_call(op, Some(&responses), request_state.as_deref(), now),
            Err(error) => {
                let error = answered(
                    FailureKind::ElicitationRequested,
                    format!("the input handler gave no answer to {asked}: {error}"),
                );
                self.end(op, Err(error));
            }
        }
        self.flush(now);
    }

    fn retry_call(
        &mut self,
        op: OpId,
        responses: Option<&RawValue>,
        request_state: Option<&RawValue>,
        now: Instant,
    ) {
        let Some(call) = self.call_op(op) else { return };
        match modern::retry_params(call.original.as_deref(), responses, request_state) {
            Ok(params) => {
                call.retry = Some(params);
                self.send_call(op, now);
            }
            Err(error) => self.end(op, Err(OpError::Internal(error.to_string()))),
        }
    }

    /// A stateless revision's refusals that a call may get past once.
    fn on_call_refused(&mut self, op: OpId, failure: Failure, now: Instant) {
        let supported = modern::supported_in_error(failure.data(), self.session.modern_versions());
        let Some(call) = self.call_op(op) else { return };
        match failure.kind {
            FailureKind::ServerError {
                code: error_code::HEADER_MISMATCH,
            } if !call.relisted => {
                call.relisted = true;
                trace_info!(
                    code = error_code::HEADER_MISMATCH,
                    tool = &*call.name,
                    "the server refused the call's Mcp-Param headers as stale: listing the \
                     tools again and retrying the call once"
                );
                let trace = call.trace.clone();
                let list = self.start_list(Some(op), trace);
                self.next_page(list, now);
            }
            FailureKind::ServerError {
                code: error_code::UNSUPPORTED_PROTOCOL_VERSION,
            } if !call.switched => match supported {
                Some(version) => {
                    call.switched = true;
                    trace_info!(
                        code = error_code::UNSUPPORTED_PROTOCOL_VERSION,
                        tool = &*call.name,
                        protocol_version = version.as_str(),
                        "the server refused the call's revision: retrying the call once \
                             at one it supports"
                    );
                    self.switch_version(version);
                    self.send_call(op, now);
                }
                None => self.end(op, Err(OpError::Failed(failure))),
            },
            FailureKind::ServerError {
                code: error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            } => {
                let failure = elicitation_refusal(&failure).unwrap_or(failure);
                self.end(op, Err(OpError::Failed(failure)));
            }
            _ => self.end(op, Err(OpError::Failed(failure))),
        }
    }

    /// The relisting a call made after `-32020` is over: the call goes again with headers
    /// from the new listing, or fails with the listing.
    pub(super) fn resume_after_relist(
        &mut self,
        op: OpId,
        listed: Result<(), OpError>,
        now: Instant,
    ) {
        if let Err(error) = listed {
            return self.end(op, Err(error));
        }
        let Some(call) = self.call_op(op) else { return };
        let (name, schema) = (call.name.clone(), call.input_schema.clone());
        let original = call.original.clone();
        let headers = self.headers.call_headers(
            &name,
            || original.as_deref().and_then(arguments_of).map(Cow::Owned),
            schema.as_ref(),
        );
        match headers {
            Ok(headers) => {
                if let Some(call) = self.call_op(op) {
                    call.headers = headers;
                }
                self.send_call(op, now);
            }
            Err(error) => self.end(op, Err(error)),
        }
    }

    /// Sends `ping` (with `trace` in its `_meta`). At a stateless revision, which has no
    /// `ping`, it is refused without being sent.
    pub(crate) fn ping(&mut self, trace: Option<TraceContext>, now: Instant) -> OpId {
        let options = RequestOptions::with_timeout(self.limits.request_timeout);
        let op = Op::Single {
            request: None,
            kind: Single::Ping,
        };
        let params = match traced(None, trace.as_ref()) {
            Ok(params) => params,
            Err(error) => return self.refuse(error, now),
        };
        self.single(
            op,
            Cow::Borrowed(methods::PING),
            params,
            options,
            SendOptions::default(),
            now,
        )
    }

    /// Listens for what the server announces (2026-07-28 `subscriptions/listen`): the
    /// operation ends when the stream does, at `max_duration`, or when cancelled. Refused at
    /// 2025-era revisions.
    pub(crate) fn listen(
        &mut self,
        notifications: serde_json::Value,
        max_duration: Duration,
        trace: Option<TraceContext>,
        now: Instant,
    ) -> OpId {
        if !self.is_modern() {
            let error = RequestError::NotInRevision {
                method: methods::SUBSCRIPTIONS_LISTEN.to_owned(),
                version: self
                    .protocol_version()
                    .unwrap_or(crate::mcp::ProtocolVersion::LATEST_INITIALIZE),
            };
            return self.refuse(OpError::Refused(error), now);
        }
        let op = Op::Single {
            request: None,
            kind: Single::Listen,
        };
        let params = serde_json::value::to_raw_value(&serde_json::json!({
            "notifications": notifications
        }))
        .ok();
        let params = match traced(params, trace.as_ref()) {
            Ok(params) => params,
            Err(error) => return self.refuse(error, now),
        };
        let options = RequestOptions::with_timeout(max_duration);
        let method = Cow::Borrowed(methods::SUBSCRIPTIONS_LISTEN);
        self.single(op, method, params, options, SendOptions::default(), now)
    }

    /// Sends any request and gives its result back as the server sent it (credentials taken
    /// out). At a stateless revision the `_meta` envelope and `Mcp-Method` are added, and
    /// `Mcp-Name` from `params.name` (or `params.uri` for `resources/read`); the result's
    /// `resultType` is checked. `tools/call` goes through [`call_tool`](Self::call_tool),
    /// with all its rules, and its result is given back raw. A request whose stream breaks
    /// is not sent again. `trace` goes into the request's `_meta` (replacing any trace member
    /// of `params._meta`); a trace member of `params._meta` that breaks the W3C rules refuses
    /// the request before anything is sent.
    pub(crate) fn request_raw(
        &mut self,
        method: &str,
        params: Option<serde_json::Value>,
        timeout: Option<Duration>,
        trace: Option<TraceContext>,
        now: Instant,
    ) -> OpId {
        let timeout = timeout.unwrap_or(self.limits.request_timeout);
        if let Err(error) = crate::mcp::check_params(params.as_ref()) {
            return self.refuse(refused_trace(error), now);
        }
        if method == methods::TOOLS_CALL {
            return match raw_call(params, timeout, trace) {
                Ok(call) => self.call_tool(call, now),
                Err(error) => self.refuse(OpError::Config(error), now),
            };
        }
        let mut headers = Vec::new();
        if self.is_modern() {
            let member = match method {
                methods::RESOURCES_READ => "uri",
                _ => "name",
            };
            let name = params
                .as_ref()
                .and_then(|p| p.get(member)?.as_str())
                .filter(|_| matches!(method, methods::PROMPTS_GET | methods::RESOURCES_READ));
            if let Some(name) = name {
                headers.extend(super::headers::mcp_name_header(name));
            }
        }
        let params = params.and_then(|p| serde_json::value::to_raw_value(&p).ok());
        let params = match traced(params, trace.as_ref()) {
            Ok(params) => params,
            Err(error) => return self.refuse(error, now),
        };
        let op = Op::Single {
            request: None,
            kind: Single::Raw {
                method: method.to_owned(),
            },
        };
        let limits = SendOptions::default().with_headers(headers);
        let options = RequestOptions::with_timeout(timeout);
        let method = Cow::Owned(method.to_owned());
        self.single(op, method, params, options, limits, now)
    }

    /// A request's answer, for the operation it serves.
    pub(super) fn on_answer(&mut self, op: OpId, outcome: Result<Payload, Failure>, now: Instant) {
        let modern = self.is_modern();
        match self.ops.get_mut(&op) {
            Some(Op::List(list)) => {
                list.request = None;
                self.on_list_answer(op, outcome, now);
            }
            Some(Op::Call(_)) => self.on_call_answer(op, outcome, now),
            Some(Op::Single { kind, .. }) => {
                let outcome = match kind {
                    Single::Ping | Single::Detached => {
                        outcome.map(|_| Outcome::Pong).map_err(OpError::from)
                    }
                    Single::Listen => match outcome {
                        Ok(Payload::Raw(raw)) => ResultEnvelope::read(&raw)
                            .map(|_| Outcome::Raw(None))
                            .map_err(|e| malformed(methods::SUBSCRIPTIONS_LISTEN, &e)),
                        Ok(_) => Ok(Outcome::Raw(None)),
                        Err(failure) => Err(OpError::Failed(failure)),
                    },
                    Single::Raw { method } => {
                        let method = std::mem::take(method);
                        match outcome.map_err(OpError::from) {
                            Ok(payload) => match self.redact_payload(payload) {
                                Ok(Payload::Raw(raw)) if modern => ResultEnvelope::read(&raw)
                                    .map(|_| Outcome::Raw(Some(raw)))
                                    .map_err(|e| malformed(&method, &e)),
                                Ok(Payload::Raw(raw)) => Ok(Outcome::Raw(Some(raw))),
                                Ok(_) => Err(malformed(&method, &"decoded as another type")),
                                Err(error) => Err(error),
                            },
                            Err(error) => Err(error),
                        }
                    }
                };
                self.end(op, outcome);
            }
            None => {}
        }
    }
}

/// A `tools/call` made through a raw request: its params read as a call's.
fn raw_call(
    params: Option<serde_json::Value>,
    timeout: Duration,
    trace: Option<TraceContext>,
) -> Result<CallTool, String> {
    let Some(serde_json::Value::Object(mut params)) = params else {
        return Err("tools/call needs params with the tool's name".to_owned());
    };
    let Some(serde_json::Value::String(name)) = params.remove("name") else {
        return Err("tools/call params need a string `name`".to_owned());
    };
    let arguments = match params.remove("arguments") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Object(arguments)) => Some(CallArguments::Object(arguments)),
        Some(_) => return Err("tools/call `arguments` must be an object".to_owned()),
    };
    let mut meta = match params.remove("_meta") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Object(meta)) => Some(meta),
        Some(_) => return Err("tools/call `_meta` must be an object".to_owned()),
    };
    let progress_token = meta
        .as_mut()
        .and_then(|meta| meta.remove(crate::mcp::PROGRESS_TOKEN_KEY))
        .and_then(|token| serde_json::from_value::<ProgressToken>(token).ok());
    if let Some(other) = params.keys().next() {
        return Err(format!(
            "tools/call params member {other:?} is not one mcpwire sends (name, arguments, _meta)"
        ));
    }
    Ok(CallTool {
        name: name.into(),
        arguments,
        meta,
        member: None,
        progress_token,
        timeout,
        idle_timeout: None,
        max_response_bytes: None,
        content_only: false,
        input_schema: None,
        raw: true,
        trace,
        task_support: false,
    })
}

/// `params` with `trace` in its `_meta`, or as they are without one.
fn traced(
    params: Option<Box<RawValue>>,
    trace: Option<&TraceContext>,
) -> Result<Option<Box<RawValue>>, OpError> {
    match trace {
        None => Ok(params),
        Some(trace) => trace
            .inject(params.as_deref())
            .map(Some)
            .map_err(|error| OpError::Config(format!("the trace context cannot be sent: {error}"))),
    }
}

/// A request whose caller-given `_meta` holds a malformed trace member: never sent.
fn refused_trace(error: crate::mcp::TraceContextError) -> OpError {
    OpError::Config(format!(
        "the request's _meta holds a malformed W3C trace context, which is never sent: {error}"
    ))
}

/// `raw` read as a JSON object, when it is one.
fn arguments_object(raw: &RawValue) -> Option<JsonObject> {
    serde_json::from_str(raw.get()).ok()
}

/// An error the server's answer made.
fn answered(kind: FailureKind, detail: String) -> OpError {
    OpError::Failed(Failure::new(kind, Delivery::Answered, detail))
}

fn malformed(method: &str, why: &dyn std::fmt::Display) -> OpError {
    answered(
        FailureKind::Protocol,
        format!("the {method} result is malformed: {why}"),
    )
}

/// Whether a request was lost with its stream (not answered, not refused).
fn stream_broke(failure: &Failure) -> bool {
    failure.kind == FailureKind::ConnectionLost && failure.delivery == Delivery::MayHaveReached
}

/// A request's result as `T`: decoded already by the exchange, or parsed from the raw JSON.
pub(super) fn typed<T: DeserializeOwned + 'static>(
    payload: Payload,
    method: &str,
) -> Result<T, OpError> {
    match payload {
        Payload::Raw(raw) => serde_json::from_str(raw.get()).map_err(|e| malformed(method, &e)),
        Payload::Decoded(decoded) => decoded
            .downcast::<T>()
            .map(|result| *result)
            .map_err(|_| malformed(method, &"decoded as another type")),
    }
}

/// A `tools/call` result, read whole or for its content only (as the call's decoder read
/// it); given back raw for a raw request.
fn call_outcome(payload: Payload, content_only: bool, raw: bool) -> Result<Outcome, OpError> {
    match (raw, payload) {
        (true, Payload::Raw(raw)) => {
            // Read whole, as a check that it is a call's result, and given back as sent.
            serde_json::from_str::<CallToolResult>(raw.get())
                .map_err(|e| malformed(methods::TOOLS_CALL, &e))?;
            Ok(Outcome::Raw(Some(raw)))
        }
        // A raw call is sent with no decoder.
        (true, Payload::Decoded(_)) => Err(malformed(methods::TOOLS_CALL, &"decoded")),
        (false, payload) if content_only => {
            typed::<ContentOnly>(payload, methods::TOOLS_CALL).map(|result| Outcome::Call(result.0))
        }
        (false, payload) => typed(payload, methods::TOOLS_CALL).map(Outcome::Call),
    }
}

/// A `tools/call` answered -32021 (MissingRequiredClientCapability), never sent again. When
/// the capability is elicitation, the server wanted user input for a tool that may have run:
/// real servers find that out inside the tool (the TypeScript SDK v2 runs the handler, which
/// asks for an elicitation, and only then answers -32021: `fixtures/ts2-2026-confirm`), so it
/// fails as an elicitation request with its outcome unknown, as a 2025-era
/// `elicitation/create` does (SPEC.md). Any other capability stays the server's refusal (a
/// JSON-RPC error): `None`.
fn elicitation_refusal(failure: &Failure) -> Option<Failure> {
    let required = failure
        .data()
        .and_then(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .and_then(|data| data.get("requiredCapabilities").cloned());
    let wants_input = required
        .as_ref()
        .and_then(serde_json::Value::as_object)
        .is_some_and(|caps| caps.contains_key("elicitation"));
    if !wants_input {
        return None;
    }
    let named = required.map_or_else(String::new, |caps| caps.to_string());
    Some(Failure::new(
        FailureKind::ElicitationRequested,
        Delivery::MayHaveReached,
        format!(
            "the server needs user input (-32021, required capabilities {named}), which a \
             call through this client cannot give; the tool may have run"
        ),
    ))
}

/// The params of `tools/call` as [`CallToolRequestParams`](crate::mcp::CallToolRequestParams)
/// writes them, over the caller's arguments and `_meta` rather than copies of them.
#[derive(serde::Serialize)]
pub(super) struct CallParams<'a> {
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) arguments: Option<&'a CallArguments>,
    /// A 2025-11-25 task-augmented call's `task` member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) task: Option<&'a TaskParam>,
    #[serde(rename = "_meta")]
    pub(super) meta: CallMeta<'a>,
}

/// A call's `_meta`: the caller's members and the one more it gave, then the trace context
/// (whose members replace any trace member the caller set), then the progress token (which
/// replaces one the caller set), then the envelope of the session's stamp, if given (which
/// replaces any envelope key the caller set).
pub(super) struct CallMeta<'a> {
    pub(super) meta: Option<&'a JsonObject>,
    pub(super) member: Option<(&'a str, &'a RawValue)>,
    pub(super) trace: Option<&'a TraceContext>,
    pub(super) token: &'a ProgressToken,
    pub(super) stamp: Option<&'a modern::Stamp>,
}

impl serde::Serialize for CallMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let members = self.meta.into_iter().flatten();
        let mut map = serializer.serialize_map(None)?;
        let replaced = |key: &str| {
            key == crate::mcp::PROGRESS_TOKEN_KEY
                || (self.stamp.is_some() && modern::is_envelope_key(key))
                || (self.trace.is_some() && crate::mcp::is_trace_key(key))
        };
        let member = self.member.filter(|(key, _)| !replaced(key));
        let member_key = member.map(|(key, _)| key);
        for (key, value) in
            members.filter(|(key, _)| !replaced(key) && member_key != Some(key.as_str()))
        {
            map.serialize_entry(key, value)?;
        }
        if let Some((key, value)) = member {
            map.serialize_entry(key, value)?;
        }
        if let Some(trace) = self.trace {
            trace.write_members(&mut map)?;
        }
        map.serialize_entry(crate::mcp::PROGRESS_TOKEN_KEY, self.token)?;
        if let Some(stamp) = self.stamp {
            stamp.write_members(&mut map)?;
        }
        map.end()
    }
}

/// `tools/list` pages kept as long as their `ttlMs` says (2026-07-28
/// `server/utilities/caching.mdx`), per endpoint and cursor; a `private` page only for the
/// same credentials (a fingerprint of them, never the credentials), a `public` one for anyone.
/// `notifications/tools/list_changed` from the endpoint drops its pages. Bounded: past
/// 256 pages the cache starts afresh. Time is the caller's: the cache never reads a clock.
#[derive(Clone, Debug, Default)]
pub struct ListCache(Arc<Mutex<HashMap<ListKey, (Instant, ListToolsResult)>>>);

/// Endpoint, cursor, and the credentials' fingerprint for a private page.
type ListKey = (String, Option<String>, Option<u64>);

/// How many pages a [`ListCache`] holds at most.
const LIST_CACHE_ENTRIES: usize = 256;

impl ListCache {
    fn get(
        &self,
        url: &str,
        cursor: &Option<String>,
        fingerprint: u64,
        now: Instant,
    ) -> Option<ListToolsResult> {
        let map = self.0.lock().ok()?;
        [None, Some(fingerprint)].into_iter().find_map(|who| {
            map.get(&(url.to_owned(), cursor.clone(), who))
                .filter(|(expires, _)| *expires > now)
                .map(|(_, page)| page.clone())
        })
    }

    fn put(&self, key: ListKey, expires: Instant, page: ListToolsResult) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= LIST_CACHE_ENTRIES && !map.contains_key(&key) {
                map.clear();
            }
            map.insert(key, (expires, page));
        }
    }

    /// Drops every page of `url` (its tool list changed).
    pub fn invalidate(&self, url: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.retain(|(endpoint, _, _), _| endpoint != url);
        }
    }

    /// How many pages are held.
    pub fn len(&self) -> usize {
        self.0.lock().map_or(0, |map| map.len())
    }

    /// Whether no page is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One connection's place in a [`ListCache`]: its endpoint and its credentials' fingerprint.
#[derive(Clone, Debug)]
pub(crate) struct ListCacheRef {
    pub(crate) cache: ListCache,
    pub(crate) url: String,
    pub(crate) fingerprint: u64,
}

impl ListCacheRef {
    fn get(&self, cursor: &Option<String>, now: Instant) -> Option<ListToolsResult> {
        self.cache.get(&self.url, cursor, self.fingerprint, now)
    }

    fn put(
        &self,
        cursor: Option<String>,
        hint: &modern::CacheHint,
        now: Instant,
        page: ListToolsResult,
    ) {
        let who = match hint.scope {
            modern::CacheScope::Public => None,
            _ => Some(self.fingerprint),
        };
        self.cache
            .put((self.url.clone(), cursor, who), now + hint.ttl, page);
    }

    pub(super) fn invalidate(&self) {
        self.cache.invalidate(&self.url);
    }
}
