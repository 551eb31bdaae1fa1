//! The message model: requests, notifications, responses and error objects that borrow their
//! method names and raw JSON members from the input they were decoded from.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::Id;

/// One JSON-RPC 2.0 message: a request, a notification or a response.
///
/// Decoded messages borrow from the input; [`Message::into_owned`] detaches them. Equality
/// compares raw members (`params`, `result`, `data`) by their JSON text, so `{"a":1}` and
/// `{"a": 1}` are different values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// A call that expects a response (spec §4).
    Request(Request<'a>),
    /// A call without an `id`, which gets no response (spec §4.1).
    Notification(Notification<'a>),
    /// The answer to a request: a result or an error (spec §5).
    Response(Response<'a>),
}

/// A request: a method call that the peer must answer with a [`Response`] carrying the same `id`
/// (spec §4).
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The request id. MCP forbids a `null` id on requests.
    pub id: Id,
    /// The method name.
    pub method: Cow<'a, str>,
    /// The parameters: a JSON object or array (spec §4.2), or `None` when the member is absent.
    pub params: Option<Cow<'a, RawValue>>,
}

/// A notification: a request without an `id`, which is never answered (spec §4.1).
#[derive(Clone, Debug)]
pub struct Notification<'a> {
    /// The method name.
    pub method: Cow<'a, str>,
    /// The parameters: a JSON object or array (spec §4.2), or `None` when the member is absent.
    pub params: Option<Cow<'a, RawValue>>,
}

/// A response: the `result` of a request, or the `error` it failed with (spec §5).
#[derive(Clone, Debug)]
pub struct Response<'a> {
    /// The id of the request this answers. `None` stands for a JSON `null` id, which spec §5
    /// allows only on an error response to a request whose id could not be read.
    pub id: Option<Id>,
    /// `Ok` with the raw `result` member (any JSON value, `null` included), or `Err` with the
    /// `error` member.
    pub outcome: Result<Cow<'a, RawValue>, ErrorObject<'a>>,
}

/// The `error` member of a failed response (spec §5.1).
#[derive(Clone, Debug)]
pub struct ErrorObject<'a> {
    /// The error code; see [`PARSE_ERROR`](super::PARSE_ERROR) and its neighbours for the
    /// codes the spec reserves.
    pub code: i64,
    /// A short description of the error.
    pub message: Cow<'a, str>,
    /// Additional information, any JSON value, or `None` when the member is absent.
    pub data: Option<Cow<'a, RawValue>>,
}

/// What one JSON text holds: a single message or a batch of them (spec §6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A JSON object: one message.
    Single(Message<'a>),
    /// A JSON array of messages; the decoder guarantees it is not empty.
    Batch(Vec<Message<'a>>),
}

fn raw_eq(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get()
}

fn opt_raw_eq(a: &Option<Cow<'_, RawValue>>, b: &Option<Cow<'_, RawValue>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => raw_eq(a, b),
        _ => false,
    }
}

fn owned_raw(raw: Cow<'_, RawValue>) -> Cow<'static, RawValue> {
    Cow::Owned(raw.into_owned())
}

fn owned_str(s: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(s.into_owned())
}

impl PartialEq for Request<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.method == other.method
            && opt_raw_eq(&self.params, &other.params)
    }
}

impl Eq for Request<'_> {}

impl PartialEq for Notification<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && opt_raw_eq(&self.params, &other.params)
    }
}

impl Eq for Notification<'_> {}

impl PartialEq for Response<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && match (&self.outcome, &other.outcome) {
                (Ok(a), Ok(b)) => raw_eq(a, b),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
    }
}

impl Eq for Response<'_> {}

impl PartialEq for ErrorObject<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && opt_raw_eq(&self.data, &other.data)
    }
}

impl Eq for ErrorObject<'_> {}

impl<'a> Request<'a> {
    /// A request; `params` should be a JSON object or array (spec §4.2).
    pub fn new(
        id: impl Into<Id>,
        method: impl Into<Cow<'a, str>>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params: params.map(Cow::Owned),
        }
    }

    /// Copies whatever is borrowed, detaching the request from the input.
    pub fn into_owned(self) -> Request<'static> {
        Request {
            id: self.id,
            method: owned_str(self.method),
            params: self.params.map(owned_raw),
        }
    }
}

impl<'a> Notification<'a> {
    /// A notification; `params` should be a JSON object or array (spec §4.2).
    pub fn new(method: impl Into<Cow<'a, str>>, params: Option<Box<RawValue>>) -> Self {
        Notification {
            method: method.into(),
            params: params.map(Cow::Owned),
        }
    }

    /// Copies whatever is borrowed, detaching the notification from the input.
    pub fn into_owned(self) -> Notification<'static> {
        Notification {
            method: owned_str(self.method),
            params: self.params.map(owned_raw),
        }
    }
}

impl<'a> Response<'a> {
    /// A success response carrying `result`, any JSON value.
    pub fn ok(id: impl Into<Id>, result: Box<RawValue>) -> Self {
        Response {
            id: Some(id.into()),
            outcome: Ok(Cow::Owned(result)),
        }
    }

    /// An error response. `id` is `None` (a JSON `null`) only when the request's id could not
    /// be read (spec §5).
    pub fn error(id: Option<Id>, error: ErrorObject<'a>) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }

    /// Copies whatever is borrowed, detaching the response from the input.
    pub fn into_owned(self) -> Response<'static> {
        Response {
            id: self.id,
            outcome: match self.outcome {
                Ok(result) => Ok(owned_raw(result)),
                Err(error) => Err(error.into_owned()),
            },
        }
    }
}

impl<'a> ErrorObject<'a> {
    /// An error object without `data`.
    pub fn new(code: i64, message: impl Into<Cow<'a, str>>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error object with `data` set.
    #[cfg(any(test, feature = "demo"))]
    pub(crate) fn with_data(self, data: Box<RawValue>) -> Self {
        ErrorObject {
            data: Some(Cow::Owned(data)),
            ..self
        }
    }

    /// Copies whatever is borrowed, detaching the error object from the input.
    pub fn into_owned(self) -> ErrorObject<'static> {
        ErrorObject {
            code: self.code,
            message: owned_str(self.message),
            data: self.data.map(owned_raw),
        }
    }
}

impl<'a> Message<'a> {
    /// A request message; see [`Request::new`].
    #[cfg(test)]
    pub(crate) fn request(
        id: impl Into<Id>,
        method: impl Into<Cow<'a, str>>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Message::Request(Request::new(id, method, params))
    }

    /// A notification message; see [`Notification::new`].
    pub(crate) fn notification(
        method: impl Into<Cow<'a, str>>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Message::Notification(Notification::new(method, params))
    }

    #[cfg(any(test, feature = "demo"))]
    /// A success response message; see [`Response::ok`].
    pub(crate) fn response_ok(id: impl Into<Id>, result: Box<RawValue>) -> Self {
        Message::Response(Response::ok(id, result))
    }

    #[cfg(any(test, feature = "demo"))]
    /// An error response message; see [`Response::error`].
    pub(crate) fn response_error(id: Option<Id>, error: ErrorObject<'a>) -> Self {
        Message::Response(Response::error(id, error))
    }

    /// The method name of a request or notification; `None` for a response.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }

    /// The id of a request or response; `None` for a notification and for a response whose id
    /// is `null`.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Notification(_) => None,
            Message::Response(r) => r.id.as_ref(),
        }
    }

    /// Copies whatever is borrowed, detaching the message from the input.
    pub fn into_owned(self) -> Message<'static> {
        match self {
            Message::Request(r) => Message::Request(r.into_owned()),
            Message::Notification(n) => Message::Notification(n.into_owned()),
            Message::Response(r) => Message::Response(r.into_owned()),
        }
    }
}

impl<'a> From<Request<'a>> for Message<'a> {
    fn from(request: Request<'a>) -> Self {
        Message::Request(request)
    }
}

impl<'a> From<Notification<'a>> for Message<'a> {
    fn from(notification: Notification<'a>) -> Self {
        Message::Notification(notification)
    }
}

impl<'a> From<Response<'a>> for Message<'a> {
    fn from(response: Response<'a>) -> Self {
        Message::Response(response)
    }
}

impl<'a> Packet<'a> {
    /// The messages in order: one for [`Packet::Single`], all of them for a batch.
    pub fn into_messages(self) -> Vec<Message<'a>> {
        match self {
            Packet::Single(message) => vec![message],
            Packet::Batch(messages) => messages,
        }
    }

    /// Copies whatever is borrowed, detaching the packet from the input.
    pub fn into_owned(self) -> Packet<'static> {
        match self {
            Packet::Single(message) => Packet::Single(message.into_owned()),
            Packet::Batch(messages) => {
                Packet::Batch(messages.into_iter().map(Message::into_owned).collect())
            }
        }
    }
}
