//! The binding `tls` block ([TLS](super#tls)): [`TlsSettings`], the pool options it stands
//! for, and the checks on every member.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::transport::http::{ClientCert, Roots, TlsOptions};

use super::ConfigError;
use super::read::{Fields, Nested};

/// A binding's `tls` member (see [TLS](super#tls)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TlsSettings {
    /// `roots`, or `ca_file` as [`Roots::CaFile`].
    pub roots: Roots,
    /// `extra_ca_file`.
    pub extra_ca_file: Option<PathBuf>,
    /// `client_cert_file` and `client_key_file`.
    pub client_cert: Option<ClientCert>,
}

impl TlsSettings {
    /// The pool settings these stand for.
    pub(crate) fn to_options(&self) -> TlsOptions {
        TlsOptions {
            roots: self.roots.clone(),
            extra_ca_file: self.extra_ca_file.clone(),
            extra_roots: Vec::new(),
            client_cert: self.client_cert.clone(),
        }
    }

    /// The member that names `path`, for errors about that file.
    pub(crate) fn field_for(&self, path: &Path) -> &'static str {
        match &self.client_cert {
            Some(client) if client.cert_file == path => return "tls.client_cert_file",
            Some(client) if client.key_file == path => return "tls.client_key_file",
            _ => {}
        }
        match &self.roots {
            Roots::CaFile(file) if file == path => "tls.ca_file",
            _ if self.extra_ca_file.as_deref() == Some(path) => "tls.extra_ca_file",
            Roots::Platform => "tls.roots",
            _ => "tls",
        }
    }

    pub(super) fn to_json(&self) -> Value {
        let path = |p: &Path| Value::from(p.display().to_string());
        let mut object = Map::new();
        match &self.roots {
            Roots::CaFile(file) => {
                object.insert("ca_file".to_owned(), path(file));
            }
            Roots::Platform => {
                object.insert("roots".to_owned(), Value::from("platform"));
            }
            _ => {
                object.insert("roots".to_owned(), Value::from("webpki"));
            }
        }
        if let Some(file) = &self.extra_ca_file {
            object.insert("extra_ca_file".to_owned(), path(file));
        }
        if let Some(client) = &self.client_cert {
            object.insert("client_cert_file".to_owned(), path(&client.cert_file));
            object.insert("client_key_file".to_owned(), path(&client.key_file));
        }
        Value::Object(object)
    }
}

/// Every member a `tls` object may have.
const TLS_FIELDS: [&str; 5] = [
    "roots",
    "ca_file",
    "extra_ca_file",
    "client_cert_file",
    "client_key_file",
];

/// Reads a binding's `tls` object, as [TLS](super#tls) says.
pub(super) fn parse_tls(fields: &Fields<'_>, value: &Value) -> Result<TlsSettings, ConfigError> {
    let tls = Nested::new(fields, "tls", value, &TLS_FIELDS)?;
    let string = |member: &str| tls.string(member);
    let path = |member: &str| tls.path(member);
    let roots = match (string("roots")?, path("ca_file")?) {
        (Some(_), Some(_)) => {
            return Err(fields.error(
                "tls.ca_file",
                "not with `roots`: `ca_file` replaces the roots (use `extra_ca_file` to add \
                 to them)",
            ));
        }
        (None, Some(file)) => Roots::CaFile(file),
        (None | Some("webpki"), None) => Roots::Webpki,
        (Some("platform"), None) => Roots::Platform,
        (Some(_), None) => {
            return Err(fields.error(
                "tls.roots",
                "must be \"webpki\" (the bundled roots) or \"platform\" (the system's trust \
                 store); for a CA bundle use `ca_file`",
            ));
        }
    };
    let extra_ca_file = path("extra_ca_file")?;
    if extra_ca_file.is_some() && matches!(roots, Roots::CaFile(_)) {
        return Err(fields.error(
            "tls.extra_ca_file",
            "not with `ca_file`: put every CA in the `ca_file` bundle",
        ));
    }
    let client_cert = match (path("client_cert_file")?, path("client_key_file")?) {
        (Some(cert_file), Some(key_file)) => Some(ClientCert {
            cert_file,
            key_file,
        }),
        (None, None) => None,
        (Some(_), None) => {
            return Err(fields.error(
                "tls.client_key_file",
                "missing: `client_cert_file` needs the key in `client_key_file`",
            ));
        }
        (None, Some(_)) => {
            return Err(fields.error(
                "tls.client_cert_file",
                "missing: `client_key_file` needs the certificate in `client_cert_file`",
            ));
        }
    };
    Ok(TlsSettings {
        roots,
        extra_ca_file,
        client_cert,
    })
}
