//! The legacy HTTP+SSE transport (2024-11-05): its event stream, the `endpoint` event, and the
//! same-origin check on where messages then go.

use http::{Method, Uri};

use crate::jsonrpc::Id;
use crate::session::{Delivery, Failure, FailureKind};
use crate::sse;

use super::request::ACCEPT_EVENTS;
use super::{Exchange, Op, Output, default_port, lost};

impl Exchange {
    /// The server does not speak Streamable HTTP: open the legacy event stream and wait for its
    /// `endpoint` event (the initialize request is sent again there, by the session).
    pub(super) fn open_legacy(&mut self, initialize: Id) {
        let request = self.build(
            Method::GET,
            self.config.url.clone(),
            Vec::new(),
            ACCEPT_EVENTS,
            0,
        );
        self.log(|| format!("> GET {} (legacy HTTP+SSE)", self.config.url));
        let decoder = sse::Decoder::new(self.config.limits.sse);
        self.issue(Op::Legacy(Box::new((decoder, Some(initialize)))), request);
    }

    /// Decodes a chunk of the legacy event stream: the `endpoint` event first, then messages.
    pub(super) fn legacy_events(
        &mut self,
        state: &mut (sse::Decoder, Option<Id>),
        chunk: &[u8],
    ) -> Result<(), Failure> {
        let (decoder, initialize) = state;
        let mut messages = Vec::new();
        let mut endpoint = None;
        let mut refused = None;
        let waiting = initialize.is_some();
        let decoded = decoder.decode(chunk, |event| {
            if waiting && endpoint.is_none() {
                // Before the endpoint event nothing else is taken.
                if event.event_type() == "endpoint" {
                    endpoint = Some(event.data().trim().to_owned());
                }
                return;
            }
            if refused.is_none() {
                self.take_message(&event, &mut messages);
            }
        });
        if let Some(reference) = endpoint {
            match resolve_same_origin(&self.config.url, &reference) {
                Ok(uri) => {
                    self.log(|| format!("< legacy endpoint {uri}"));
                    self.learned.legacy_endpoint = Some(uri);
                    *initialize = None;
                    self.outputs.push_back(Output::LegacyTransport);
                }
                Err(detail) => {
                    refused = Some(Failure::new(
                        FailureKind::Protocol,
                        Delivery::Refused,
                        self.redact(&detail),
                    ));
                }
            }
        }
        self.deliver(messages);
        if let Err(error) = decoded {
            let detail = format!("the legacy event stream was refused: {error}");
            refused.get_or_insert_with(|| match initialize {
                Some(_) => Failure::new(FailureKind::Protocol, Delivery::Refused, detail),
                None => lost(detail),
            });
        }
        refused.map_or(Ok(()), Err)
    }
}

/// Resolves the legacy `endpoint` event's URI against the base URL, refusing another origin
/// (the bearer token must never go there).
pub(super) fn resolve_same_origin(base: &Uri, reference: &str) -> Result<Uri, String> {
    let resolved: Uri = if reference.starts_with("http://") || reference.starts_with("https://") {
        reference
            .parse()
            .map_err(|e| format!("the legacy endpoint {reference:?} is not a URI: {e}"))?
    } else {
        let path = if reference.starts_with('/') {
            reference.to_owned()
        } else {
            let base_path = base.path();
            let directory = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
            format!("{directory}{reference}")
        };
        let scheme = base.scheme_str().unwrap_or("http");
        let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
        format!("{scheme}://{authority}{path}")
            .parse()
            .map_err(|e| format!("the legacy endpoint {reference:?} is not a URI: {e}"))?
    };
    let same_origin = resolved.scheme() == base.scheme()
        && resolved.host() == base.host()
        && resolved.port_u16().or(default_port(&resolved))
            == base.port_u16().or(default_port(base));
    if same_origin {
        Ok(resolved)
    } else {
        Err(format!(
            "the legacy endpoint {reference:?} is on another origin than {base}; refusing to \
             send messages (and credentials) there"
        ))
    }
}
