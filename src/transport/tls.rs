//! TLS for the HTTP pool: which roots a server's certificate is checked against (the bundled
//! webpki roots, a PEM CA bundle, or the platform's store, each optionally with more roots),
//! and the client certificate and key for mutual TLS. Builds the pool's rustls
//! `ClientConfig`. PEM files are read with rustls-pki-types' parser; errors name the file and
//! never quote what is in it (a key file's lines are key material).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::RootCertStore;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The roots a server's certificate is checked against.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Roots {
    /// The Mozilla roots bundled in the `webpki-roots` crate (the default): the same on every
    /// machine, updated with the crate.
    #[default]
    Webpki,
    /// The platform's trust store, read once per process with `rustls-native-certs` (on Linux
    /// and other Unix systems: the OpenSSL locations, or `SSL_CERT_FILE` / `SSL_CERT_DIR` when
    /// set; the keychain on macOS; the system store on Windows). Certificates in it that rustls
    /// cannot use are skipped; a store with none usable is an error.
    Platform,
    /// Only the certificates of this PEM bundle (every `CERTIFICATE` section; other sections
    /// are ignored). For a private CA.
    CaFile(PathBuf),
}

/// A client certificate for mutual TLS: two PEM files, read when the pool is made.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ClientCert {
    /// The certificate chain, leaf first (every `CERTIFICATE` section of the file).
    pub cert_file: PathBuf,
    /// The private key of the leaf: the file's first PKCS#8, PKCS#1 (RSA) or SEC1 (EC) key.
    /// Encrypted keys are not supported.
    pub key_file: PathBuf,
}

impl ClientCert {
    /// A client certificate chain and its key, each a PEM file.
    pub fn new(cert_file: impl Into<PathBuf>, key_file: impl Into<PathBuf>) -> Self {
        ClientCert {
            cert_file: cert_file.into(),
            key_file: key_file.into(),
        }
    }
}

/// TLS settings for a pool. The default trusts the webpki roots and sends no client
/// certificate.
///
/// ```
/// use mcpwire::transport::http::{ClientCert, Roots, TlsOptions};
///
/// let mut private_ca = TlsOptions::default();
/// private_ca.roots = Roots::CaFile("/etc/mcp/ca.pem".into());
/// private_ca.client_cert = Some(ClientCert::new("/etc/mcp/client.pem", "/etc/mcp/client.key"));
/// assert_eq!(TlsOptions::default().roots, Roots::Webpki);
/// # let _ = private_ca;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TlsOptions {
    /// The base set of roots.
    pub roots: Roots,
    /// A PEM bundle whose certificates are trusted in addition to [`roots`](Self::roots).
    pub extra_ca_file: Option<PathBuf>,
    /// Certificates trusted in addition to [`roots`](Self::roots) (for tests and private
    /// CAs held in memory).
    pub extra_roots: Vec<CertificateDer<'static>>,
    /// The client certificate sent when a server asks for one (mutual TLS).
    pub client_cert: Option<ClientCert>,
}

/// Why TLS settings could not be used. Messages name the file; they never quote its contents.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not valid PEM.
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong, in words that quote nothing from the file.
        problem: &'static str,
    },
    /// A PEM file holds no certificate, or no usable private key.
    Missing {
        /// The file.
        path: PathBuf,
        /// What was looked for.
        expected: &'static str,
    },
    /// A certificate cannot be used as a root.
    InvalidRoot {
        /// The file it came from (`None` for one of [`TlsOptions::extra_roots`]).
        path: Option<PathBuf>,
        /// Why rustls refused it.
        source: rustls::Error,
    },
    /// The platform's trust store could not be read, or holds no usable certificate.
    PlatformRoots {
        /// What went wrong (paths and I/O errors; a trust store holds no secrets).
        detail: String,
    },
    /// The client certificate and key were refused (a key that does not match the
    /// certificate, or of a kind the crypto provider does not support).
    ClientCert {
        /// The certificate file.
        cert_file: PathBuf,
        /// The key file.
        key_file: PathBuf,
        /// Why rustls refused them.
        source: rustls::Error,
    },
    /// rustls refused the settings.
    Setup(rustls::Error),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            TlsError::Pem { path, problem } => {
                write!(f, "{} is not valid PEM: {problem}", path.display())
            }
            TlsError::Missing { path, expected } => {
                write!(f, "{} holds no {expected}", path.display())
            }
            TlsError::InvalidRoot {
                path: Some(path),
                source,
            } => write!(
                f,
                "a certificate in {} cannot be a root: {source}",
                path.display()
            ),
            TlsError::InvalidRoot { path: None, source } => {
                write!(f, "an extra root certificate is invalid: {source}")
            }
            TlsError::PlatformRoots { detail } => {
                write!(f, "the platform's trust store cannot be used: {detail}")
            }
            TlsError::ClientCert {
                cert_file,
                key_file,
                source,
            } => write!(
                f,
                "the client certificate {} and key {} cannot be used: {source}",
                cert_file.display(),
                key_file.display()
            ),
            TlsError::Setup(source) => write!(f, "TLS setup failed: {source}"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsError::Read { source, .. } => Some(source),
            TlsError::InvalidRoot { source, .. } | TlsError::ClientCert { source, .. } => {
                Some(source)
            }
            TlsError::Setup(source) => Some(source),
            TlsError::Pem { .. } | TlsError::Missing { .. } | TlsError::PlatformRoots { .. } => {
                None
            }
        }
    }
}

/// The rustls client configuration for `tls`, with ALPN left for the connector to set.
pub(crate) fn client_config(
    tls: &TlsOptions,
    provider: rustls::crypto::CryptoProvider,
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = match &tls.roots {
        Roots::Webpki => webpki_root_store().clone(),
        Roots::Platform => platform_root_store()
            .as_ref()
            .map_err(|detail| TlsError::PlatformRoots {
                detail: detail.clone(),
            })?
            .clone(),
        Roots::CaFile(path) => {
            let mut store = RootCertStore::empty();
            add_file(&mut store, path)?;
            store
        }
    };
    if let Some(path) = &tls.extra_ca_file {
        add_file(&mut roots, path)?;
    }
    for cert in &tls.extra_roots {
        roots
            .add(cert.clone())
            .map_err(|source| TlsError::InvalidRoot { path: None, source })?;
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?
        .with_root_certificates(roots);
    match &tls.client_cert {
        None => Ok(builder.with_no_client_auth()),
        Some(client) => {
            let chain = certificates(&client.cert_file)?;
            let key = private_key(&client.key_file)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|source| TlsError::ClientCert {
                    cert_file: client.cert_file.clone(),
                    key_file: client.key_file.clone(),
                    source,
                })
        }
    }
}

/// Adds every certificate of a PEM file to `store`; each must be a valid root.
fn add_file(store: &mut RootCertStore, path: &Path) -> Result<(), TlsError> {
    for cert in certificates(path)? {
        store.add(cert).map_err(|source| TlsError::InvalidRoot {
            path: Some(path.to_owned()),
            source,
        })?;
    }
    Ok(())
}

/// Every `CERTIFICATE` section of a PEM file; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    const EXPECTED: &str = "certificate (a PEM `CERTIFICATE` section)";
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e, EXPECTED))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e, EXPECTED))?;
    if certs.is_empty() {
        return Err(TlsError::Missing {
            path: path.to_owned(),
            expected: EXPECTED,
        });
    }
    Ok(certs)
}

/// The first private key of a PEM file.
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        pem_error(
            path,
            e,
            "private key (a PEM `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` section; \
             encrypted keys are not supported)",
        )
    })
}

/// A PEM parse error as a [`TlsError`] that quotes nothing from the file: the parser's own
/// messages for a malformed section show the offending line.
fn pem_error(path: &Path, error: pem::Error, expected: &'static str) -> TlsError {
    let path = path.to_owned();
    let problem = match error {
        pem::Error::Io(source) => return TlsError::Read { path, source },
        pem::Error::NoItemsFound => return TlsError::Missing { path, expected },
        pem::Error::MissingSectionEnd { .. } => "a section has no END line",
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a section is not valid base64",
        pem::Error::SectionTooLarge => "a section is larger than 256 MB",
        _ => "the file cannot be parsed",
    };
    TlsError::Pem { path, problem }
}

/// The webpki roots, parsed once per process.
fn webpki_root_store() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    })
}

/// The platform's roots, read once per process (reading them can mean parsing a large file).
fn platform_root_store() -> &'static Result<RootCertStore, String> {
    static ROOTS: OnceLock<Result<RootCertStore, String>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        let mut store = RootCertStore::empty();
        let (added, _unusable) = store.add_parsable_certificates(loaded.certs);
        if added > 0 {
            return Ok(store);
        }
        let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
        Err(if errors.is_empty() {
            "it holds no certificate rustls can use".to_owned()
        } else {
            format!("it holds no usable certificate ({})", errors.join("; "))
        })
    })
}
