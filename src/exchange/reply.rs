//! How each reply is read: its head (status, content type, session id), JSON and event-stream
//! bodies, bounded prefixes of error bodies, and the one-pass decoding of its messages.

use std::any::Any;
use std::time::{Duration, Instant};

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::de::DeserializeOwned;

use crate::jsonrpc::{self, ErrorObject, Id, Message, Response, TypedDecodeError};
use crate::mcp::{ProgressNotificationParams, error_code, methods};
use crate::session::{Delivery, Failure, FailureKind};
use crate::sse;

use super::credentials::describe_challenge;
use super::overload::{GiveUp, WallClock, given_up, is_overload, rate_limited, retry_after};
use super::request::{EVENT_STREAM, SESSION_ID};
use super::{Exchange, Flight, HttpRequest, Op, Output, RequestOp, StreamId, lost, over_budget};

/// The longest session id accepted; the specification only says it must be visible ASCII.
const MAX_SESSION_ID_BYTES: usize = 1024;
/// How much of an error body is kept for the message, and of a one-way reply for the log.
pub(super) const ERROR_BODY_BYTES: usize = 512;
/// How much of a 4xx body is read at a stateless revision, where it holds a JSON-RPC error
/// (`-32020` header mismatch, `-32022` unsupported revision, `-32601`...).
pub(super) const ERROR_REPLY_BYTES: usize = 16 * 1024;
/// How long, and how many bytes, a reply stream is read on for after its response, so its
/// connection can be reused.
pub(super) const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
pub(super) const DRAIN_BYTES: usize = 64 * 1024;

/// A response whose result was decoded in the same pass as its envelope.
#[non_exhaustive]
pub(crate) struct DecodedResponse {
    /// The id of the request it answers.
    pub id: Option<Id>,
    /// The decoded result, or the error object.
    pub outcome: Result<Box<dyn Any + Send>, ErrorObject<'static>>,
}

/// Decodes one message that is probably a request's response (see [`decode_result_as`]).
pub(crate) type ResultDecoder =
    for<'a> fn(&'a [u8]) -> Result<DecodedResponse, jsonrpc::TypedDecodeError<'a>>;

/// A [`ResultDecoder`] for results of type `R`: [`jsonrpc::decode_response_as`], boxed.
pub(crate) fn decode_result_as<R: DeserializeOwned + Send + 'static>(
    input: &[u8],
) -> Result<DecodedResponse, jsonrpc::TypedDecodeError<'_>> {
    let response = jsonrpc::decode_response_as::<R>(input)?;
    Ok(DecodedResponse {
        id: response.id,
        outcome: match response.outcome {
            Ok(result) => Ok(Box::new(result)),
            Err(error) => Err(error.into_owned()),
        },
    })
}

/// The most decoded messages whose room [`Exchange`] keeps from one response chunk to the next.
const DECODED_KEPT: usize = 16;

/// A message at most this long is decoded by the hand-written envelope reader, cheaply
/// enough to try it first as a progress notification (what most small messages on a call's
/// stream are); a longer one is most likely the response itself.
const SMALL_MESSAGE_BYTES: usize = 16 * 1024;

/// What kind of reply a response is, by status and content type.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reply {
    Empty,
    Json,
    EventStream,
    Other(String),
}

/// What a bounded read of a body is for, once it has its bytes.
#[derive(Debug)]
pub(super) enum PrefixUse {
    /// Logged (a one-way message's reply); delivers the one-way message.
    OneWay { status: StatusCode, barrier: bool },
    /// The error of a request answered with an unusable content type.
    Unusable {
        id: Id,
        status: StatusCode,
        media_type: String,
    },
    /// Nothing (a legacy POST's reply: the answer comes on the event stream).
    Nothing,
    /// A 4xx reply at a stateless revision: the JSON-RPC error it holds answers the request;
    /// a body that holds none fails it with `failure`.
    ErrorReply { id: Id, failure: Failure },
    /// The end of the `DELETE`.
    Delete { status: StatusCode },
    /// A 400, 404 or 405 with a JSON body answering `initialize`: a -32022 answers it, any
    /// other body means the legacy HTTP+SSE transport.
    InitializeRefused { id: Id },
}

/// How the body of a response is being read.
#[derive(Debug)]
pub(super) enum Read {
    /// No head yet.
    Head,
    /// An `application/json` body, collected whole (bounded).
    Json(Vec<u8>),
    /// An event stream, through the op's decoder.
    Events,
    /// Up to [`ERROR_BODY_BYTES`], then [`PrefixUse`].
    Prefix(Vec<u8>, PrefixUse),
    /// The rest of a stream whose response arrived, bounded in time and bytes.
    Drain { read: usize, deadline: Instant },
}

impl Exchange {
    pub(super) fn request_head(
        &mut self,
        stream: StreamId,
        mut op: Box<RequestOp>,
        status: StatusCode,
        headers: &HeaderMap,
        wall: WallClock,
        now: Instant,
    ) {
        if op.resuming {
            let reply = classify_reply(status, headers);
            if status.is_success() && reply == Reply::EventStream {
                if let Some(decoder) = &mut op.decoder {
                    decoder.reset_stream();
                }
                self.flights.insert(
                    stream,
                    Flight {
                        op: Op::Request(op),
                        read: Read::Events,
                    },
                );
                return;
            }
            self.outputs.push_back(Output::Abort(stream));
            if status == StatusCode::NOT_FOUND && self.learned.session_id.is_some() {
                self.fail(
                    op.id.clone(),
                    Failure::new(
                        FailureKind::SessionExpired,
                        Delivery::MayHaveReached,
                        "the session expired while resuming the response stream",
                    ),
                );
            } else if status == StatusCode::METHOD_NOT_ALLOWED {
                self.fail(
                    op.id.clone(),
                    lost(
                        "the response stream ended before the response, and the server does \
                         not allow resuming it (GET answered 405)"
                            .to_owned(),
                    ),
                );
            } else {
                self.schedule_resume(op, "ended", now);
            }
            return;
        }
        if op.is_initialize
            && self.config.legacy_fallback
            && !self.is_legacy()
            && matches!(status.as_u16(), 400 | 404 | 405)
        {
            // A stateless-era server refuses a 2025 initialize with -32022 in a JSON body
            // (`basic/versioning`: it may be the only diagnostic a 2025 client surfaces); that
            // is its answer, not a sign of the 2024-11-05 transport. Any other body falls back.
            if classify_reply(status, headers) == Reply::Json {
                let id = op.id.clone();
                self.flights.insert(
                    stream,
                    Flight {
                        op: Op::Request(op),
                        read: Read::Prefix(Vec::new(), PrefixUse::InitializeRefused { id }),
                    },
                );
                return;
            }
            self.outputs.push_back(Output::Abort(stream));
            self.open_legacy(op.id.clone());
            return;
        }
        // The head settles whether the request can be sent again: its copy is no longer needed.
        let retained = op.retained.take();
        if is_overload(status) {
            // Before the 4xx rules below: a 429's JSON-RPC error body, if any, says no more
            // than the status, and the request is not the server's to answer yet.
            self.outputs.push_back(Output::Abort(stream));
            self.overloaded(op, retained, status, headers, wall, now);
            return;
        }
        if matches!(status.as_u16(), 401 | 403) && !op.legacy {
            self.outputs.push_back(Output::Abort(stream));
            self.refused(op, retained, status, headers);
            return;
        }
        if let Some(failure) = self.status_failure(status, headers, op.is_initialize) {
            if self.learned.modern
                && status.is_client_error()
                && !matches!(status.as_u16(), 401 | 403)
                && classify_reply(status, headers) == Reply::Json
            {
                let id = op.id.clone();
                self.flights.insert(
                    stream,
                    Flight {
                        op: Op::Request(op),
                        read: Read::Prefix(Vec::new(), PrefixUse::ErrorReply { id, failure }),
                    },
                );
                return;
            }
            self.outputs.push_back(Output::Abort(stream));
            self.fail(op.id.clone(), failure);
            return;
        }
        if op.is_initialize
            && let Err(failure) = self.capture_session_id(headers)
        {
            self.outputs.push_back(Output::Abort(stream));
            self.fail(op.id.clone(), failure);
            return;
        }
        if op.legacy {
            // Legacy transport: the answer arrives on the event stream, not here.
            self.flights.insert(
                stream,
                Flight {
                    op: Op::Request(op),
                    read: Read::Prefix(Vec::new(), PrefixUse::Nothing),
                },
            );
            return;
        }
        let read = match readable_body(
            &mut op,
            classify_reply(status, headers),
            self.config.limits.sse,
        ) {
            Ok(read) => read,
            Err(Reply::Other(media_type)) => Read::Prefix(
                Vec::new(),
                PrefixUse::Unusable {
                    id: op.id.clone(),
                    status,
                    media_type,
                },
            ),
            // No body.
            Err(_) => {
                self.outputs.push_back(Output::Abort(stream));
                self.fail(
                    op.id.clone(),
                    Failure::new(
                        FailureKind::Protocol,
                        Delivery::MayHaveReached,
                        format!(
                            "the server answered {status} with no body to a request; a request \
                             needs a JSON or event-stream reply"
                        ),
                    ),
                );
                return;
            }
        };
        self.flights.insert(
            stream,
            Flight {
                op: Op::Request(op),
                read,
            },
        );
    }

    /// Decodes a chunk of a request's response stream and delivers its messages.
    pub(super) fn request_events(
        &mut self,
        op: &mut RequestOp,
        chunk: &[u8],
    ) -> Result<(), Failure> {
        op.budget.take(chunk.len())?;
        let Some(decoder) = &mut op.decoder else {
            return Ok(());
        };
        // Kept between chunks, so that a chunk's messages cost no allocation.
        let mut messages = std::mem::take(&mut self.decoded);
        let mut refused = None;
        let decode_result = op.decode_result;
        let mut events = false;
        // `decode` reads the events that lie wholly inside the chunk where they are.
        let decoded = decoder.decode(chunk, |event| {
            events = true;
            if refused.is_some() || event.data().is_empty() || event.event_type() != "message" {
                // After a refusal nothing more is taken; otherwise this is a priming event,
                // or an event type MCP does not use.
                return;
            }
            self.log(|| format!("< event {}", event.data()));
            match self.decode_reply(event.data().as_bytes(), decode_result, &mut messages) {
                Ok(()) => {}
                Err(error) => {
                    refused = Some(Failure::new(
                        FailureKind::Protocol,
                        Delivery::MayHaveReached,
                        format!("an event on the response stream is not JSON-RPC: {error}"),
                    ));
                }
            }
        });
        if let Err(error) = decoded {
            refused.get_or_insert_with(|| {
                Failure::new(
                    FailureKind::LimitExceeded,
                    Delivery::MayHaveReached,
                    format!("the response stream was refused: {error}"),
                )
            });
        }
        op.resumption
            .observe(decoder.last_event_id(), decoder.retry_ms());
        if events {
            op.resumption.heard();
        }
        self.outputs.extend(messages.drain(..));
        // A burst's buffer is not kept.
        if messages.capacity() <= DECODED_KEPT {
            self.decoded = messages;
        }
        refused.map_or(Ok(()), Err)
    }

    /// [`decode_reply`], the result left raw when the reply echoes the bearer token (the
    /// client takes credentials out of raw results).
    pub(super) fn decode_reply(
        &self,
        data: &[u8],
        decode_result: Option<ResultDecoder>,
        out: &mut Vec<Output>,
    ) -> Result<(), jsonrpc::DecodeError> {
        decode_reply(
            data,
            decode_result.filter(|_| !self.echoes_secret(data)),
            out,
        )
    }

    /// Whether the server echoed a credential (the bearer token, an extra header's value) in
    /// these bytes.
    fn echoes_secret(&self, data: &[u8]) -> bool {
        self.secrets
            .iter()
            .any(|secret| secret.appears_in_bytes(data))
    }

    pub(super) fn use_prefix(&mut self, stream: StreamId, read: Read, now: Instant) {
        let Read::Prefix(collected, use_) = read else {
            return;
        };
        match use_ {
            PrefixUse::OneWay { status, barrier } => {
                self.log(|| format!("< {status} {}", String::from_utf8_lossy(&collected)));
                self.one_way_done(stream, barrier, now);
            }
            PrefixUse::Unusable {
                id,
                status,
                media_type,
            } => {
                let detail = format!(
                    "the server answered {status} with content type {:?}, not JSON or an event \
                     stream: {}",
                    self.redact(&media_type),
                    self.snippet(&collected)
                );
                self.fail(
                    id,
                    Failure::new(FailureKind::Protocol, Delivery::Answered, detail),
                );
            }
            PrefixUse::Nothing => {}
            PrefixUse::ErrorReply { id, failure } => {
                self.log(|| format!("< {}", self.snippet(&collected)));
                match error_reply(&collected, &id) {
                    Some(message) => self.outputs.push_back(Output::Message(message)),
                    None => self.fail(id, failure),
                }
            }
            PrefixUse::Delete { status } => {
                self.log(|| format!("< DELETE {:?}", Some(status)));
                self.delete_done(Some(status), now);
            }
            PrefixUse::InitializeRefused { id } => {
                self.log(|| format!("< {}", self.snippet(&collected)));
                let refusal = error_reply(&collected, &id).filter(|message| {
                    matches!(message, Message::Response(Response { outcome: Err(error), .. })
                        if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION)
                });
                match refusal {
                    Some(message) => self.outputs.push_back(Output::Message(message)),
                    None => self.open_legacy(id),
                }
            }
        }
    }

    /// Takes the JSON-RPC messages of a `message` event on a stream that carries no request's
    /// response (the standalone stream, the legacy one). Events that are not JSON-RPC are
    /// skipped: nobody waits on them.
    pub(super) fn take_message(
        &self,
        event: &sse::Event<'_>,
        messages: &mut Vec<Message<'static>>,
    ) {
        if event.event_type() == "message" && !event.data().is_empty() {
            self.log(|| format!("< event {}", event.data()));
            if let Ok(packet) = jsonrpc::decode(event.data().as_bytes()) {
                messages.extend(packet.into_messages().into_iter().map(Message::into_owned));
            }
        }
    }

    /// A request answered 429 or 503: the server did not handle it. One that may be sent
    /// twice waits for the server's `Retry-After` (or a jittered backoff) and goes again,
    /// while that ends before its deadline and the policy allows; otherwise, and always for a
    /// request that may not (a `tools/call`), it fails as rate limited, with the server's wait.
    fn overloaded(
        &mut self,
        mut op: Box<RequestOp>,
        retained: Option<HttpRequest>,
        status: StatusCode,
        headers: &HeaderMap,
        wall: WallClock,
        now: Instant,
    ) {
        let wait = retry_after(headers, wall);
        let jitter = self.next_jitter();
        let deadline = op.retry_until.filter(|_| retained.is_some());
        let next = self
            .config
            .overload
            .next_attempt(op.overloads, wait, now, deadline, jitter);
        match (next, retained) {
            (Ok(at), Some(request)) => {
                op.overloads += 1;
                let delay_ms = at.saturating_duration_since(now).as_millis() as u64;
                trace_info!(
                    status = status.as_u16(),
                    delay_ms,
                    retry = op.overloads,
                    "the server is overloaded: sending the request again after its wait"
                );
                self.log(|| {
                    format!(
                        "< the server is overloaded ({status}{}); sending the request again in                          {delay_ms} ms",
                        wait.map_or_else(String::new, |w| format!(
                            ", Retry-After {} s",
                            w.as_secs()
                        ))
                    )
                });
                op.repost = Some(request);
                self.waiting.push((at, Op::Request(op)));
            }
            (next, _) => {
                let why = next.err().unwrap_or(GiveUp::NotRetried);
                let why = match (why, op.overloads) {
                    (GiveUp::Deadline, retries) if retries > 0 => format!(
                        " after {} attempts{}",
                        retries + 1,
                        given_up(GiveUp::Deadline, wait)
                    ),
                    (why, _) => given_up(why, wait),
                };
                self.fail(op.id.clone(), rate_limited(status, wait, &why));
            }
        }
    }

    /// The failure a status that is not a usable reply means, or `None` for a 2xx.
    pub(super) fn status_failure(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        is_initialize: bool,
    ) -> Option<Failure> {
        if status.is_success() {
            return None;
        }
        let has_session = self.learned.session_id.is_some();
        let code = status.as_u16();
        Some(match code {
            300..=399 => Failure::new(
                FailureKind::HttpStatus { status: code },
                Delivery::Refused,
                format!(
                    "the server answered {status} (a redirect{}); redirects are not followed",
                    headers
                        .get(http::header::LOCATION)
                        .map(|l| format!(" to {}", self.snippet(l.as_bytes())))
                        .unwrap_or_default()
                ),
            ),
            401 | 403 => Failure::new(
                FailureKind::Unauthorized { status: code },
                Delivery::Refused,
                describe_challenge(status, headers, &|text| self.redact(text)),
            ),
            404 if has_session && !is_initialize => Failure::new(
                FailureKind::SessionExpired,
                Delivery::Refused,
                "the server no longer knows this session (404)",
            ),
            400..=499 => Failure::new(
                FailureKind::HttpStatus { status: code },
                Delivery::Refused,
                format!("the server refused the request with {status}"),
            ),
            _ => Failure::new(
                FailureKind::HttpStatus { status: code },
                Delivery::MayHaveReached,
                format!("the server failed with {status}"),
            ),
        })
    }

    fn capture_session_id(&mut self, headers: &HeaderMap) -> Result<(), Failure> {
        let Some(value) = headers.get(&SESSION_ID) else {
            return Ok(());
        };
        let valid = value.len() <= MAX_SESSION_ID_BYTES
            && value.as_bytes().iter().all(|b| (0x21..=0x7E).contains(b));
        let session_id = value.to_str().ok().filter(|_| valid).ok_or_else(|| {
            Failure::new(
                FailureKind::Protocol,
                Delivery::Answered,
                "the server sent an invalid Mcp-Session-Id (it must be visible ASCII)",
            )
        })?;
        // A copy, not `value` itself: that holds on to the read buffer of the response.
        self.learned.session_id = HeaderValue::from_bytes(session_id.as_bytes()).ok();
        Ok(())
    }
}

/// The JSON-RPC error response in a 4xx body, as the answer to request `id`: a server that
/// could not read the request's id (or would not) answers with `"id": null`, and the HTTP
/// request it answers says whose error it is.
fn error_reply(body: &[u8], id: &Id) -> Option<Message<'static>> {
    let packet = jsonrpc::decode(body).ok()?;
    let mut messages = packet.into_messages();
    if messages.len() != 1 {
        return None;
    }
    match messages.pop()? {
        Message::Response(response) => match response.outcome {
            Err(error) if response.id.as_ref().is_none_or(|named| named == id) => Some(
                Message::Response(Response::error(Some(id.clone()), error.into_owned())),
            ),
            _ => None,
        },
        _ => None,
    }
}

/// Decodes one message of a request's reply (a JSON body or an event's data) into outputs for
/// the session, in one pass where it can: a small message is read first as a progress
/// notification, a response straight into the request's result type
/// ([`SendOptions::decode_result`]). Anything else, and anything those readers do not take,
/// goes through the raw decoder, whose messages and errors are the reference. Public for the
/// benchmarks, which measure the path the client runs.
#[doc(hidden)]
pub(crate) fn decode_reply(
    data: &[u8],
    decode_result: Option<ResultDecoder>,
    out: &mut Vec<Output>,
) -> Result<(), jsonrpc::DecodeError> {
    let batch = data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    // Which reader goes first is a guess at what the message is, and only saves a pass:
    // either reader gives what it does not take to the next. A reply that names no method
    // near its start is most likely the response, read straight into its type.
    let response_first = decode_result.is_some() && !names_method_early(data);
    if !batch && !response_first && data.len() <= SMALL_MESSAGE_BYTES {
        match jsonrpc::decode_notification_as::<ProgressNotificationParams>(data) {
            Ok(notification) if notification.method == methods::PROGRESS => {
                // Progress without params names no request: nothing to route.
                out.extend(notification.params.map(Output::Progress));
                return Ok(());
            }
            Err(TypedDecodeError::Unexpected(message))
                if decode_result.is_none() || !matches!(message, Message::Response(_)) =>
            {
                out.push(Output::Message(message.into_owned()));
                return Ok(());
            }
            // A response (decoded below), another notification whose params fit, params
            // that do not fit, or an input for the raw decoder to judge.
            _ => {}
        }
    }
    if !batch && let Some(decode) = decode_result {
        match decode(data) {
            Ok(DecodedResponse {
                id: Some(id),
                outcome: Ok(result),
            }) => {
                out.push(Output::Decoded { id, result });
                return Ok(());
            }
            Ok(DecodedResponse {
                id,
                outcome: Err(error),
            }) => {
                out.push(Output::Message(Message::Response(Response::error(
                    id, error,
                ))));
                return Ok(());
            }
            Err(TypedDecodeError::Unexpected(message)) => {
                out.push(Output::Message(message.into_owned()));
                return Ok(());
            }
            // A result that does not fit its type (the caller's own reading of the raw
            // result says why), or an input for the raw decoder to judge.
            _ => {}
        }
    }
    let packet = jsonrpc::decode(data)?;
    out.extend(
        packet
            .into_messages()
            .into_iter()
            .map(|message| Output::Message(message.into_owned())),
    );
    Ok(())
}

/// How far into a message [`names_method_early`] looks: past `{"jsonrpc":"2.0",` and a
/// typical id.
const METHOD_SNIFF_BYTES: usize = 64;

/// Whether a `"method"` key (or string) appears in the first bytes of a message, as it does
/// in the notifications and requests servers send and rarely in a response.
fn names_method_early(data: &[u8]) -> bool {
    // Built once: building a searcher costs more than searching 64 bytes with it.
    static METHOD_KEY: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
        std::sync::OnceLock::new();
    METHOD_KEY
        .get_or_init(|| memchr::memmem::Finder::new(b"\"method\""))
        .find(&data[..data.len().min(METHOD_SNIFF_BYTES)])
        .is_some()
}

pub(super) fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())
}

/// Media types are compared without parameters and case-insensitively
/// (`text/event-stream; charset=utf-8` is an event stream).
pub(super) fn classify_reply(status: StatusCode, headers: &HeaderMap) -> Reply {
    let declared_empty = headers
        .get(CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() == b"0");
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT || declared_empty {
        return Reply::Empty;
    }
    let Some(value) = content_type(headers) else {
        return Reply::Other(String::new());
    };
    let media_type = value.split(';').next().unwrap_or("").trim();
    if media_type.eq_ignore_ascii_case("application/json") {
        Reply::Json
    } else if media_type.eq_ignore_ascii_case(EVENT_STREAM) {
        Reply::EventStream
    } else {
        Reply::Other(media_type.chars().take(100).collect())
    }
}

/// Counts reply bytes against a request's limit, across resumptions.
#[derive(Debug)]
pub(super) struct ByteBudget {
    remaining: Option<u64>,
    limit: u64,
}

impl ByteBudget {
    pub(super) fn new(limit: Option<u64>) -> Self {
        ByteBudget {
            remaining: limit,
            limit: limit.unwrap_or(u64::MAX),
        }
    }

    pub(super) fn take(&mut self, bytes: usize) -> Result<(), Failure> {
        let Some(remaining) = &mut self.remaining else {
            return Ok(());
        };
        *remaining = remaining
            .checked_sub(bytes as u64)
            .ok_or_else(|| over_budget(self.limit))?;
        Ok(())
    }
}

/// The body to read after the 2xx head of a request sent once (not a resumption, not
/// `initialize`, not a legacy POST) whose reply is JSON or an event stream, the request set up
/// for it; `None` for every other head, which [`Exchange::request_head`] judges. What it does
/// is what `request_head` does with such a head.
pub(super) fn plain_reply(
    op: &mut RequestOp,
    status: StatusCode,
    headers: &HeaderMap,
    sse: sse::Limits,
) -> Option<Read> {
    if !status.is_success() || op.resuming || op.is_initialize || op.legacy {
        return None;
    }
    let read = readable_body(op, classify_reply(status, headers), sse).ok()?;
    // The head settles that the request is not sent again.
    op.retained = None;
    Some(read)
}

/// How a request's reply of this kind is read: a JSON body collected, an event stream decoded
/// (the request gets its decoder); any other reply is given back.
fn readable_body(op: &mut RequestOp, reply: Reply, sse: sse::Limits) -> Result<Read, Reply> {
    match reply {
        Reply::Json => Ok(Read::Json(Vec::new())),
        Reply::EventStream => {
            op.decoder = Some(sse::Decoder::new(sse));
            Ok(Read::Events)
        }
        other => Err(other),
    }
}
