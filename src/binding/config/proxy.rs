//! The binding `proxy` member ([Proxies](super#proxies)): [`ProxySetting`] and the checks on a
//! proxy URL.

use crate::transport::http::ProxyConfig;

use super::read::has_scheme;

/// A binding's `proxy` member (see [Proxies](super#proxies)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProxySetting {
    /// `"none"`: connect directly.
    Direct,
    /// Every connection through this proxy (`http://host[:port]`, no credentials).
    Url(String),
}

impl ProxySetting {
    /// The pool's proxy settings this stands for ([`Direct`](Self::Direct) is
    /// [`ProxyConfig::default`] (no proxy)).
    ///
    /// # Errors
    ///
    /// A URL that [`ProxyConfig::all`] refuses (never for a loaded binding).
    pub(crate) fn to_config(&self) -> Result<ProxyConfig, crate::transport::http::ProxyError> {
        match self {
            ProxySetting::Direct => Ok(ProxyConfig::default()),
            ProxySetting::Url(url) => ProxyConfig::all(url),
        }
    }
}

/// Checks a binding's proxy URL: what [`ProxyConfig::all`] accepts, with an `http://` scheme
/// and no user info. The URL itself never appears in the message.
pub(super) fn check_proxy_url(url: &str) -> Result<(), String> {
    if !has_scheme(url, "http") {
        return Err(
            "must be \"none\" or an http:// proxy URL (`http://host:port`; TLS to the proxy \
             is not supported)"
                .to_owned(),
        );
    }
    let authority = url.split_once("://").map_or("", |(_, rest)| rest);
    if authority
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .contains('@')
    {
        return Err(
            "must not contain credentials (`user:password@`): give an authenticated proxy in \
             HTTPS_PROXY / HTTP_PROXY and leave `proxy` out"
                .to_owned(),
        );
    }
    ProxyConfig::all(url).map(drop).map_err(|e| match e {
        crate::transport::http::ProxyError::InvalidUrl { reason, .. }
        | crate::transport::http::ProxyError::Unsupported { reason, .. } => {
            format!("not a valid proxy URL: {reason}")
        }
    })
}
