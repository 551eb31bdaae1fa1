//! Discovery: the protected-resource metadata (the challenge's `resource_metadata`, else
//! the well-known URLs, else the 2025-03-26 fallback), the authorization server's metadata
//! (RFC 8414, then OpenID discovery), the client identity that follows from it
//! (pre-registered, Client ID Metadata Document, dynamic registration), and the `resource`
//! parameter.

use super::{Error, Flow, GrantKind, Purpose, ResourceSearch, ServerSearch, Stage};
use crate::auth::UnixTime;
use crate::auth::client::{self, Identity};
use crate::auth::metadata::{
    MAX_METADATA_BYTES, ResourceMetadata, ServerMetadata, resource_matches, resource_metadata_urls,
    server_metadata_urls,
};
use crate::auth::token::{MAX_TOKEN_RESPONSE_BYTES, clean_text};
use crate::auth::url::{Url, UrlError};

impl ServerSearch {
    fn new(issuer: Url, legacy: bool) -> ServerSearch {
        let urls = server_metadata_urls(&issuer)
            .into_iter()
            .map(|(u, _)| u)
            .collect();
        ServerSearch {
            issuer,
            urls,
            next: 0,
            legacy,
            tried: Vec::new(),
            mismatch: None,
        }
    }
}

impl Flow {
    pub(super) fn discover(&mut self, now: UnixTime) {
        self.resource_metadata = None;
        self.server_metadata = None;
        self.client = None;
        self.resource = canonical(&self.config.server);
        let hint = self
            .challenge
            .as_ref()
            .and_then(|c| c.resource_metadata.clone());
        let (urls, from_header) = match hint {
            Some(text) => match Url::parse(&text) {
                Ok(url) if url.origin() == self.config.server.origin() => (vec![url], true),
                // The hint must stay on the server's origin: a refusal must not send the
                // client to fetch from anywhere the server names.
                Ok(url) => {
                    return self.fail(Error::CrossOrigin {
                        url: url.to_string(),
                    });
                }
                Err(error) => {
                    return self.fail(Error::Url {
                        url: clean_text(&text, 200),
                        error,
                    });
                }
            },
            None => (resource_metadata_urls(&self.config.server), false),
        };
        let search = ResourceSearch {
            urls,
            next: 0,
            from_header,
            tried: Vec::new(),
        };
        self.next_resource_metadata(search, now);
    }

    pub(super) fn next_resource_metadata(&mut self, mut search: ResourceSearch, now: UnixTime) {
        let Some(url) = search.urls.get(search.next).cloned() else {
            if !search.from_header && self.config.legacy_fallback {
                // 2025-03-26: the MCP server's origin is the authorization server.
                let origin = self.config.server.origin_text().to_owned();
                return match Url::parse(&origin) {
                    Ok(issuer) => self.next_server_metadata(ServerSearch::new(issuer, true), now),
                    Err(error) => self.fail(Error::Url { url: origin, error }),
                };
            }
            return self.fail(Error::NoResourceMetadata {
                tried: search.tried,
            });
        };
        search.next += 1;
        self.stage = Stage::ResourceMetadata(search);
        self.get(url, Purpose::ResourceMetadata, MAX_METADATA_BYTES, now);
    }

    pub(super) fn got_resource_metadata(&mut self, body: &[u8], now: UnixTime) {
        let meta = match ResourceMetadata::parse(body) {
            Ok(meta) => meta,
            Err(error) => {
                return self.fail(Error::Document {
                    purpose: Purpose::ResourceMetadata,
                    error,
                });
            }
        };
        if !resource_matches(&meta.resource, &self.config.server) {
            return self.fail(Error::ResourceMismatch {
                resource: meta.resource.to_string(),
                server: self.config.server.to_string(),
            });
        }
        let bound = self
            .config
            .pre_registered
            .as_ref()
            .and_then(|c| c.issuer.clone());
        let issuer = match &bound {
            Some(bound) => meta
                .authorization_servers
                .iter()
                .find(|s| s.as_str() == bound),
            None => meta.authorization_servers.first(),
        };
        let Some(issuer) = issuer.cloned() else {
            return self.fail(Error::ClientBoundElsewhere {
                bound: bound.unwrap_or_default(),
                offered: meta
                    .authorization_servers
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            });
        };
        self.resource = meta.resource.as_str().to_owned();
        self.resource_metadata = Some(meta);
        self.next_server_metadata(ServerSearch::new(issuer, false), now);
    }

    pub(super) fn next_server_metadata(&mut self, mut search: ServerSearch, now: UnixTime) {
        let Some(url) = search.urls.get(search.next).cloned() else {
            if let Some(mismatch) = search.mismatch {
                return self.fail(Error::ServerMetadata(mismatch));
            }
            if search.legacy {
                return match ServerMetadata::defaults_for(&self.config.server) {
                    Ok(meta) => self.got_server_metadata(meta, now),
                    Err(error) => self.fail(Error::Document {
                        purpose: Purpose::ServerMetadata,
                        error,
                    }),
                };
            }
            return self.fail(Error::NoServerMetadata {
                issuer: search.issuer.to_string(),
                tried: search.tried,
            });
        };
        search.next += 1;
        self.stage = Stage::ServerMetadata(search);
        self.get(url, Purpose::ServerMetadata, MAX_METADATA_BYTES, now);
    }

    pub(super) fn got_server_metadata(&mut self, meta: ServerMetadata, now: UnixTime) {
        if let GrantKind::AuthorizationCode { .. } = self.config.grant {
            if meta.authorization_endpoint.is_none() {
                return self.fail(Error::NoAuthorizationEndpoint {
                    issuer: meta.issuer,
                });
            }
            if !meta.supports_s256() {
                return self.fail(Error::PkceUnsupported {
                    issuer: meta.issuer,
                });
            }
        }
        let issuer = meta.issuer.clone();
        self.server_metadata = Some(meta);
        // Before anything else: a server whose DPoP algorithms are none of ours fails here,
        // not after the person's login.
        if let Err(e) = self.ensure_dpop_key() {
            return self.fail(e);
        }
        let Some(meta) = self.server_metadata.as_ref() else {
            return;
        };
        // The spec's order: pre-registered, then a Client ID Metadata Document, then
        // dynamic registration. A registration is kept per issuer, never reused elsewhere.
        if let Some(client) = &self.config.pre_registered {
            if let Some(bound) = client.issuer.as_ref().filter(|b| **b != issuer) {
                return self.fail(Error::ClientBoundElsewhere {
                    bound: bound.clone(),
                    offered: vec![issuer],
                });
            }
            self.client = Some(Identity::new(
                client.client_id.clone(),
                client.client_secret.clone(),
                client.signing_key.clone(),
                client.auth_method,
                meta,
            ));
            return self.obtain(now);
        }
        let GrantKind::AuthorizationCode { redirect_uri } = &self.config.grant else {
            return self.fail(Error::NoClientIdentity { issuer });
        };
        if let Some(identity) = self.registrations.get(&issuer) {
            self.client = Some(identity.clone());
            return self.obtain(now);
        }
        if let Some(document) = self.config.metadata_document.as_ref().filter(|d| {
            meta.client_id_metadata_document_supported && client::valid_metadata_document_url(d)
        }) {
            self.client = Some(Identity::new(document.to_string(), None, None, None, meta));
            return self.obtain(now);
        }
        let Some(endpoint) = meta.registration_endpoint.clone() else {
            return self.fail(Error::NoClientIdentity { issuer });
        };
        // The scopes the client will ask for go into its registration: an authorization server
        // may take only the scopes a client registered (the Python SDK refuses any other).
        let scopes = match self.select_scopes(meta) {
            Ok(scopes) => scopes.map(|s| s.to_string()),
            Err(e) => return self.fail(e),
        };
        let Some(request) = client::registration_request(
            &endpoint,
            &self.config.client_metadata,
            redirect_uri.as_str(),
            scopes.as_deref(),
            meta,
        ) else {
            return self.fail(Error::Url {
                url: endpoint.to_string(),
                error: UrlError::Character,
            });
        };
        self.stage = Stage::Registering;
        self.send(
            endpoint,
            request,
            Purpose::Registration,
            MAX_TOKEN_RESPONSE_BYTES,
            now,
        );
    }
}

/// `https://Host/path` as the `resource` parameter when no metadata names one: scheme and
/// host in lower case (the spec's canonical form), the rest as written.
pub(super) fn canonical(server: &Url) -> String {
    let text = server.as_str();
    let scheme_end = text.find("://").map_or(0, |i| i + 3);
    let authority_end = server.origin_text().len();
    format!(
        "{}{}{}",
        text[..scheme_end].to_ascii_lowercase(),
        text[scheme_end..authority_end].to_ascii_lowercase(),
        &text[authority_end..]
    )
}
