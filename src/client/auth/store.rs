//! The token store file: what an operator's one interactive login (`mcp-tools -login`) leaves
//! for a host that calls the server later with nobody present (a binding's
//! `"auth": {"grant": "authorization_code", "token_store": PATH}`).
//!
//! It holds only what the next process needs to go on without a person: the MCP endpoint and
//! the redirect URI the client was registered with, the client (its id, the secret a dynamic
//! registration gave, its authentication method, the issuer it belongs to), and the tokens
//! by issuer, client, resource and scope with their expiry and granted scope. No metadata, no
//! code, no verifier.
//!
//! No DPoP-bound token either (RFC 9449; [`Token::is_dpop`]), and never a DPoP key: the key
//! lives in the process's memory only, and a bound token (access or refresh) is of no use
//! without it. Writing the key next to the token it binds would hand whoever reads this file
//! both halves, which is what sender-constraining a token is meant to prevent; a process with
//! DPoP gets its tokens afresh instead.
//!
//! It feeds [`OAuth::with_cache`] rather than being a [`TokenProvider`](crate::auth::TokenProvider) of its own: the
//! flow already knows when to refresh, how to rotate, and what a 401 after a refresh means,
//! so the store only starts the flow with its client and tokens ([`TokenStore::oauth`]) and
//! writes back what changed after each run of the flow ([`OAuth::on_change`]). The store's
//! client is given as the flow's pre-registered client bound to its issuer, so the tokens it
//! holds are found again (they are cached under that client id) and nothing registers anew.
//! When no usable token or refresh token is left the flow would need a person: the
//! [`Unattended`] authorizer fails it with a message that says to log in again.
//!
//! # Format (version 1)
//!
//! ```json
//! {"version": 1, "server": "https://mcp.example.com/mcp",
//!  "redirect_uri": "http://127.0.0.1:53682/callback",
//!  "client": {"client_id": "...", "client_secret": "...", "issuer": "https://auth.example.com",
//!             "token_endpoint_auth_method": "client_secret_post"},
//!  "tokens": [{"issuer": "...", "client_id": "...", "resource": "...", "scope": "mcp:tools",
//!              "access_token": "...", "refresh_token": "...", "expires_at": 1767225600,
//!              "granted_scope": "mcp:tools"}]}
//! ```
//!
//! Read strictly: at most `MAX_STORE_BYTES`, no unknown or repeated member, `version` 1,
//! `https` or loopback `http` URLs, header-safe tokens, valid scopes. On unix a store that
//! its group or others may read is refused (`chmod 600` it), and every write goes to a new
//! file created with mode 0600 in the same directory, synced, then renamed over the store,
//! so a reader sees the old store or the new one, never half of one.
//!
//! # Processes that share a store
//!
//! `mcpwire call` runs as one process per call, and calls at once share one store. With an
//! authorization server that rotates refresh tokens (each usable once), two processes that
//! refresh together would race: one spends the refresh token, the other is refused
//! (`invalid_grant`) and, writing back what it holds, could leave the store with the spent
//! one. So every refresh and every write-back happens under an advisory lock (on unix
//! `flock(2)`, exclusive) on a lock file beside the store, `PATH.lock` (created with mode
//! 0600 and left in place: the store itself is replaced by rename, so it cannot carry the
//! lock). Before spending a refresh token, the flow asks for the store's current tokens
//! (`Output::Reload`): under the lock the store is read
//! afresh, and a token another process renewed meanwhile is used as it is (or, if it has
//! expired too, refreshed with its own refresh token); only when the store still holds the
//! token about to be refreshed does the refresh go out. The lock is held until the tokens
//! it brought are written back. A write-back outside a refresh (a login, a token the server
//! refused) takes the lock too, reads the store again, and changes only the entries this
//! process changed since it last read or wrote them, so it never puts back a token another
//! process has rotated. The lock is waited for no longer than one token request may take
//! (`request_timeout_secs` of the flow's [`Limits`](crate::auth::Limits), 30 s by default):
//! after that the refresh fails with a message naming the lock file, and nothing is spent
//! or written. The lock belongs to the open lock file, so a process that dies holding it
//! lets it go. On other platforms no lock is taken.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{AuthorizeFuture, Authorizer, OAuth, OAuthSetupError};
use crate::auth::{
    AuthMethod, Config, PreRegistered, Scopes, Secret, Token, TokenCache, TokenKey, UnixTime, Url,
};

/// The largest store read.
pub(crate) const MAX_STORE_BYTES: u64 = 64 * 1024;
/// The format version written and read.
pub(crate) const STORE_VERSION: u64 = 1;
/// The most tokens a store holds.
const MAX_STORED_TOKENS: usize = 64;
/// The longest token taken from a store (as from a token endpoint).
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// How long [`TokenStore::save`] and [`TokenStore::save_from`] wait for the lock: a flow's
/// default request timeout (a holder keeps it for one token request and a write).
const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The longest pause between two tries of a lock another process holds.
const MAX_LOCK_PAUSE: Duration = Duration::from_millis(20);

/// A store's advisory lock (see the [module docs](self)), held until dropped.
pub(crate) struct StoreLock {
    #[cfg(unix)]
    _file: std::fs::File,
}

impl std::fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreLock")
    }
}

/// One try at the lock at `path` (created 0600 if missing, never through a symbolic link):
/// `None` while another process holds it.
#[cfg(unix)]
fn try_lock(path: &Path) -> Result<Option<StoreLock>, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let io = |error| StoreError::Io {
        path: path.to_owned(),
        error,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    if flock_exclusive(file.as_raw_fd()) {
        return Ok(Some(StoreLock { _file: file }));
    }
    match std::io::Error::last_os_error() {
        e if e.kind() == std::io::ErrorKind::WouldBlock
            || e.kind() == std::io::ErrorKind::Interrupted =>
        {
            Ok(None)
        }
        e => Err(io(e)),
    }
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: whether the lock was had (else see `errno`). The lock
/// belongs to the open file, so it ends when the file is closed, even if the process dies.
#[cfg(unix)]
#[allow(unsafe_code)]
fn flock_exclusive(fd: std::os::unix::io::RawFd) -> bool {
    // SAFETY: flock takes a file descriptor and flags and touches no memory; `fd` belongs to
    // a file the caller keeps open for the call.
    unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(not(unix))]
fn try_lock(_path: &Path) -> Result<Option<StoreLock>, StoreError> {
    Ok(Some(StoreLock {}))
}

/// Reads and checks the store at `path`: what it holds, and its bytes.
fn read(path: &Path) -> Result<(Contents, Vec<u8>), StoreError> {
    let io = |error| StoreError::Io {
        path: path.to_owned(),
        error,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(StoreError::Permissions {
                path: path.to_owned(),
                mode,
            });
        }
    }
    if meta.len() > MAX_STORE_BYTES {
        return Err(StoreError::TooLarge {
            path: path.to_owned(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_STORE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_STORE_BYTES {
        return Err(StoreError::TooLarge {
            path: path.to_owned(),
        });
    }
    let contents = parse(&bytes).map_err(|reason| StoreError::Invalid {
        path: path.to_owned(),
        reason,
    })?;
    Ok((contents, bytes))
}

/// `theirs` (the file as it is now) with the changes `ours` made to `base` (the file as this
/// process last read or wrote it): each token entry, and the client, that this process
/// changed (added, renewed, removed) is taken from `ours`, every other from `theirs`; a
/// removal only of the token this process knew (not of one another process renewed).
fn merge(base: &Contents, ours: &Contents, mut theirs: Contents) -> Contents {
    let keys: Vec<TokenKey> = base
        .tokens
        .iter()
        .chain(ours.tokens.iter())
        .map(|(key, _)| key.clone())
        .collect();
    for key in keys {
        let (was, now) = (base.tokens.get(&key), ours.tokens.get(&key));
        if was.map(token_row) == now.map(token_row) {
            continue;
        }
        match now {
            Some(token) => theirs.tokens.insert(key, token.clone()),
            // Dropped here (refused, spent): unless another process renewed it meanwhile.
            None if theirs.tokens.get(&key).map(token_row) == was.map(token_row) => {
                theirs.tokens.remove(&key);
            }
            None => {}
        }
    }
    if base.client.as_ref().map(client_row) != ours.client.as_ref().map(client_row) {
        theirs.client.clone_from(&ours.client);
    }
    theirs
}

/// What the file holds of a token, to compare two.
fn token_row(token: &Token) -> (&str, Option<&str>, Option<u64>, Option<String>) {
    (
        token.access_token().expose(),
        token.refresh_token().map(Secret::expose),
        token.expires_at().map(|at| at.0),
        token.scope().map(ToString::to_string),
    )
}

/// What the file holds of a client, to compare two.
fn client_row(client: &PreRegistered) -> (&str, Option<&str>, Option<&str>, Option<&str>) {
    (
        client.client_id.as_str(),
        client.client_secret.as_ref().map(Secret::expose),
        client.issuer.as_deref(),
        client.auth_method.map(|m| m.name()),
    )
}

/// Why a store cannot be read or written. Never holds a secret: the path, and what is wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The file could not be read, written, renamed or removed.
    Io {
        /// The store's path.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The store is larger than `MAX_STORE_BYTES`.
    TooLarge {
        /// The store's path.
        path: PathBuf,
    },
    /// On unix: the store may be read by its group or others (its mode).
    Permissions {
        /// The store's path.
        path: PathBuf,
        /// The file's permission bits.
        mode: u32,
    },
    /// The store is not a valid version-1 token store.
    Invalid {
        /// The store's path.
        path: PathBuf,
        /// What is wrong (a member's name, never its value).
        reason: String,
    },
    /// Another process held the store's lock for longer than it was waited for.
    Locked {
        /// The lock file's path (the store's, with `.lock` after it).
        path: PathBuf,
        /// How long it was waited for, in milliseconds.
        waited_ms: u64,
    },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Io { path, error } => {
                write!(f, "the token store {}: {error}", path.display())
            }
            StoreError::TooLarge { path } => write!(
                f,
                "the token store {} is larger than {MAX_STORE_BYTES} bytes",
                path.display()
            ),
            StoreError::Permissions { path, mode } => write!(
                f,
                "the token store {} may be read by others (mode {:o}); it holds tokens: \
                 `chmod 600` it",
                path.display(),
                mode & 0o777
            ),
            StoreError::Invalid { path, reason } => write!(
                f,
                "the token store {} is not a valid token store: {reason}",
                path.display()
            ),
            StoreError::Locked { path, waited_ms } => write!(
                f,
                "the token store's lock {} was held by another process for more than {} ms; \
                 nothing was refreshed or written (try again)",
                path.display(),
                waited_ms
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The file's members, as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u64,
    server: String,
    redirect_uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<FileClient>,
    #[serde(default)]
    tokens: Vec<FileToken>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileClient {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    issuer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint_auth_method: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToken {
    issuer: String,
    client_id: String,
    resource: String,
    scope: String,
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    granted_scope: Option<String>,
}

/// What a store holds.
#[derive(Clone)]
struct Contents {
    server: String,
    redirect_uri: String,
    client: Option<PreRegistered>,
    tokens: TokenCache,
}

/// A token store file (see the [module docs](self)): read when loaded and again under its
/// lock before each refresh and write-back, written back when the flow changed what it holds.
pub struct TokenStore {
    path: PathBuf,
    /// What this process held when it last read the file or wrote its changes to it: the
    /// base that tells this process's changes from other processes'.
    contents: Mutex<Contents>,
    /// The bytes last read or written: a write that would change nothing is skipped.
    written: Mutex<Vec<u8>>,
    /// Made by [`TokenStore::create`] and not yet written: its first write replaces whatever
    /// is at the path (a new login), rather than merging with it.
    replaces: std::sync::atomic::AtomicBool,
    /// The last write-back that failed (from [`OAuth::on_change`], which cannot fail).
    last_error: Mutex<Option<String>>,
    /// Told of each write-back that fails.
    error_sink: Mutex<Option<ErrorSink>>,
}

/// Where `TokenStore::set_error_sink` sends the message of a failed write-back.
pub(crate) type ErrorSink = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl TokenStore {
    /// A new, empty store at `path` for the MCP endpoint `server`, whose client is registered
    /// with `redirect_uri`; nothing is written until `save`.
    pub fn create(path: impl Into<PathBuf>, server: &str, redirect_uri: &str) -> TokenStore {
        TokenStore::with(
            path.into(),
            Contents {
                server: server.to_owned(),
                redirect_uri: redirect_uri.to_owned(),
                client: None,
                tokens: TokenCache::default(),
            },
            Vec::new(),
            true,
        )
    }

    fn with(path: PathBuf, contents: Contents, written: Vec<u8>, replaces: bool) -> TokenStore {
        TokenStore {
            path,
            contents: Mutex::new(contents),
            written: Mutex::new(written),
            replaces: std::sync::atomic::AtomicBool::new(replaces),
            last_error: Mutex::new(None),
            error_sink: Mutex::new(None),
        }
    }

    /// Reads the store at `path` (see the [module docs](self) for what is refused).
    ///
    /// # Errors
    ///
    /// The file cannot be read, is too large, may be read by others, or is not a valid store.
    pub fn load(path: impl Into<PathBuf>) -> Result<TokenStore, StoreError> {
        let path = path.into();
        let (contents, bytes) = read(&path)?;
        Ok(TokenStore::with(path, contents, bytes, false))
    }

    /// The path of the store's lock file: the store's, with `.lock` after it.
    pub fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// Takes the store's lock (see the [module docs](self)), waiting at most `wait` for
    /// another process to release it; released when the [`StoreLock`] is dropped.
    ///
    /// # Errors
    ///
    /// [`StoreError::Locked`] when the wait ends first; the lock file cannot be opened or
    /// locked.
    pub(crate) async fn lock(&self, wait: Duration) -> Result<StoreLock, StoreError> {
        let path = self.lock_path();
        let mut pause = Duration::from_millis(1);
        let waited = tokio::time::timeout(wait, async {
            loop {
                if let Some(lock) = try_lock(&path)? {
                    return Ok(lock);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_LOCK_PAUSE);
            }
        })
        .await;
        waited.unwrap_or(Err(StoreError::Locked {
            path,
            waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        }))
    }

    /// As [`lock`](TokenStore::lock), for a caller outside the runtime: the thread sleeps
    /// between tries, `wait` in all at most.
    ///
    /// # Errors
    ///
    /// As [`lock`](TokenStore::lock).
    pub(crate) fn lock_blocking(&self, wait: Duration) -> Result<StoreLock, StoreError> {
        let path = self.lock_path();
        let (mut pause, mut slept) = (Duration::from_millis(1), Duration::ZERO);
        loop {
            if let Some(lock) = try_lock(&path)? {
                return Ok(lock);
            }
            if slept >= wait {
                return Err(StoreError::Locked {
                    path,
                    waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                });
            }
            let step = pause.min(wait - slept);
            std::thread::sleep(step);
            slept += step;
            pause = (pause * 2).min(MAX_LOCK_PAUSE);
        }
    }

    /// With the lock held: the file read afresh (as strictly as [`load`](TokenStore::load)
    /// reads it) becomes what this store holds, and its tokens are returned, for
    /// [`Flow::handle_reload`](crate::auth::Flow::handle_reload).
    ///
    /// # Errors
    ///
    /// As [`load`](TokenStore::load) (a store deleted meanwhile, by a logout, is an error).
    pub(crate) fn reload(&self, _lock: &StoreLock) -> Result<TokenCache, StoreError> {
        let (contents, bytes) = read(&self.path)?;
        let tokens = contents.tokens.clone();
        self.set_base(contents, bytes);
        Ok(tokens)
    }

    fn set_base(&self, contents: Contents, bytes: Vec<u8>) {
        match self.contents.lock() {
            Ok(mut base) => *base = contents,
            Err(poisoned) => *poisoned.into_inner() = contents,
        }
        if let Ok(mut written) = self.written.lock() {
            *written = bytes;
        }
        self.replaces
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The MCP endpoint the store's tokens are for.
    pub fn server(&self) -> String {
        self.contents().server
    }

    /// How many tokens it holds.
    pub fn token_count(&self) -> usize {
        self.contents().tokens.len()
    }

    /// Whether it holds a token that is valid at `now`, or one that may be refreshed.
    pub fn has_usable_token(&self, now: UnixTime) -> bool {
        self.contents()
            .tokens
            .iter()
            .any(|(_, t)| !t.is_expired(now) || t.refresh_token().is_some())
    }

    /// Sends the message of each write-back that fails to `sink` (a host's log): the
    /// rotated tokens are then only in memory, and the next process may find the store's
    /// refresh token spent.
    #[cfg(feature = "bindings")]
    pub(crate) fn set_error_sink(&self, sink: ErrorSink) {
        if let Ok(mut slot) = self.error_sink.lock() {
            *slot = Some(sink);
        }
    }

    fn contents(&self) -> Contents {
        match self.contents.lock() {
            Ok(contents) => contents.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The flow's configuration: the authorization code grant with the store's redirect URI,
    /// its client as the pre-registered one (bound to its issuer).
    ///
    /// # Errors
    ///
    /// The store's URLs are not `https` or loopback `http` (never for a loaded store).
    pub fn config(&self) -> Result<Config, crate::auth::Error> {
        let contents = self.contents();
        let mut config = Config::authorization_code(&contents.server, &contents.redirect_uri)?;
        config.pre_registered = contents.client;
        Ok(config)
    }

    /// OAuth for the store's server with [`config`](TokenStore::config), starting with its
    /// tokens, that writes back what changes (rotated tokens, a new client after a login)
    /// after each run of the flow. `authorizer` is the person's part: a login's loopback
    /// listener, or [`Unattended`] for a host.
    ///
    /// # Errors
    ///
    /// As [`config`](TokenStore::config), and [`OAuth::with_cache`]'s.
    pub fn oauth(
        self: &Arc<Self>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Result<OAuth, Box<dyn std::error::Error + Send + Sync>> {
        let config = self.config()?;
        Ok(self.oauth_with(config, authorizer)?)
    }

    /// As [`oauth`](TokenStore::oauth) with `config` (the store's, with other limits).
    ///
    /// # Errors
    ///
    /// As [`OAuth::with_cache`].
    pub fn oauth_with(
        self: &Arc<Self>,
        config: Config,
        authorizer: Arc<dyn Authorizer>,
    ) -> Result<OAuth, OAuthSetupError> {
        let tokens = self.contents().tokens;
        let oauth = OAuth::with_cache(config, tokens, Some(authorizer))?;
        Ok(oauth.shared_with(self.clone()))
    }

    /// Makes every token that has a refresh token due now (`expires_at` = `now`) and drops
    /// the others, so the next flow refreshes at once (`mcp-tools -refresh`). Returns how
    /// many are left to refresh.
    pub fn expire_for_refresh(&self, now: UnixTime) -> usize {
        let Ok(mut contents) = self.contents.lock() else {
            return 0;
        };
        let mut due = TokenCache::default();
        for (key, token) in contents.tokens.iter() {
            if let Some(refresh) = token.refresh_token() {
                due.insert(
                    key.clone(),
                    Token::new(
                        token.access_token().clone(),
                        Some(refresh.clone()),
                        Some(now),
                        token.scope().cloned(),
                    ),
                );
            }
        }
        contents.tokens = due;
        contents.tokens.len()
    }

    /// When the first of its tokens expires, if any says.
    pub fn expires_at(&self) -> Option<UnixTime> {
        self.contents()
            .tokens
            .iter()
            .filter_map(|(_, t)| t.expires_at())
            .min()
    }

    /// Takes the tokens and the client of `oauth`, and writes the store if that changed it.
    ///
    /// # Errors
    ///
    /// As `save`.
    pub fn save_from(&self, oauth: &OAuth) -> Result<(), StoreError> {
        if !self.changed_by(oauth) {
            return Ok(());
        }
        let lock = self.lock_blocking(DEFAULT_LOCK_WAIT)?;
        self.merge_from(oauth, &lock)
    }

    /// What [`OAuth`] does after each run of its flow: writes back what the run changed,
    /// under `held` (the lock its refresh took) or, if it changed anything, under the lock
    /// taken now. A failure goes to the error sink and [`last_error`](TokenStore::last_error).
    pub(super) async fn write_back(&self, oauth: &OAuth, held: Option<StoreLock>, wait: Duration) {
        let result = match held {
            Some(lock) => self.merge_from(oauth, &lock),
            None if !self.changed_by(oauth) => Ok(()),
            None => match self.lock(wait).await {
                Ok(lock) => self.merge_from(oauth, &lock),
                Err(error) => Err(error),
            },
        };
        let failed = result.err().map(|e| e.to_string());
        if let (Some(message), Ok(sink)) = (&failed, self.error_sink.lock())
            && let Some(sink) = sink.as_ref()
        {
            sink(&format!("cannot write the tokens back: {message}"));
        }
        if let Ok(mut last) = self.last_error.lock() {
            *last = failed;
        }
    }

    /// What this store holds with the tokens and client of `oauth` (this process's view).
    fn ours(&self, oauth: &OAuth) -> Contents {
        let mut ours = self.contents();
        ours.tokens = oauth.cache();
        if let Some(client) = oauth.client() {
            ours.client = Some(client);
        }
        ours
    }

    /// Whether `oauth` holds what the store, as last read or written, does not.
    fn changed_by(&self, oauth: &OAuth) -> bool {
        render(&self.ours(oauth)) != render(&self.contents())
    }

    /// With the lock held: reads the file again and writes it with this process's changes
    /// since it last read or wrote it (the tokens and the client of `oauth` that differ from
    /// that base) over what the file holds now, which other processes may have changed.
    /// A store made by [`create`](TokenStore::create), or a file that is gone or for another
    /// server, is replaced with this process's view whole.
    fn merge_from(&self, oauth: &OAuth, _lock: &StoreLock) -> Result<(), StoreError> {
        let base = self.contents();
        let ours = self.ours(oauth);
        let theirs = match read(&self.path) {
            Ok(found) => Some(found),
            Err(StoreError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
                None
            }
            Err(error) => return Err(error),
        };
        let replaces = self.replaces.load(std::sync::atomic::Ordering::Relaxed);
        let (merged, on_disk) = match theirs {
            Some((theirs, bytes))
                if !replaces
                    && theirs.server == base.server
                    && theirs.redirect_uri == base.redirect_uri =>
            {
                (merge(&base, &ours, theirs), bytes)
            }
            Some((_, bytes)) => (ours, bytes),
            None => (ours, Vec::new()),
        };
        let bytes = render(&merged);
        // The base becomes this process's view: what it holds is in the file now, and an
        // entry it left alone is still another process's to change.
        let ours = self.ours(oauth);
        if bytes == on_disk || (on_disk.is_empty() && merged.tokens.is_empty()) {
            self.set_base(ours, on_disk);
            return Ok(());
        }
        write_atomically(&self.path, &bytes).map_err(|error| StoreError::Io {
            path: self.path.clone(),
            error,
        })?;
        self.set_base(ours, bytes);
        Ok(())
    }

    #[cfg(test)]
    /// Writes the store as this process holds it, whole (a new file with mode 0600, synced,
    /// renamed over the old one, under the lock), unless it would not change, or it is a new
    /// store with no token yet (a login that failed or was never asked for leaves no file).
    ///
    /// # Errors
    ///
    /// The lock is not had, or the file cannot be written or renamed.
    pub(crate) fn save(&self) -> Result<(), StoreError> {
        let contents = self.contents();
        let bytes = render(&contents);
        {
            let Ok(written) = self.written.lock() else {
                return Ok(());
            };
            if *written == bytes || (written.is_empty() && contents.tokens.is_empty()) {
                return Ok(());
            }
        }
        let _lock = self.lock_blocking(DEFAULT_LOCK_WAIT)?;
        write_atomically(&self.path, &bytes).map_err(|error| StoreError::Io {
            path: self.path.clone(),
            error,
        })?;
        self.set_base(contents, bytes);
        Ok(())
    }

    /// Deletes the store at `path` (the tokens are forgotten locally; the server is not told).
    /// `Ok(false)` when there was none.
    ///
    /// # Errors
    ///
    /// The file exists but cannot be removed.
    pub fn remove(path: &Path) -> Result<bool, StoreError> {
        match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(StoreError::Io {
                path: path.to_owned(),
                error,
            }),
        }
    }
}

/// The authorizer of a host with nobody present: when the store's tokens are spent, the call
/// fails with a message saying to log in again (its outcome known: nothing was sent to the
/// tool).
#[derive(Clone, Debug)]
pub struct Unattended {
    store: PathBuf,
}

impl Unattended {
    /// For the store at `store` (named in the message).
    pub fn new(store: impl Into<PathBuf>) -> Unattended {
        Unattended {
            store: store.into(),
        }
    }
}

impl Authorizer for Unattended {
    fn authorize(&self, _url: &Url) -> AuthorizeFuture {
        let message = format!(
            "the token store {} holds no usable token or refresh token, and nobody is here \
             to approve a new one: log in again with `mcp-tools -url URL -login -token-store \
             {}` (see `mcp-tools -help`)",
            self.store.display(),
            self.store.display()
        );
        Box::pin(async move { Err(message.into()) })
    }
}

fn render(contents: &Contents) -> Vec<u8> {
    let mut tokens: Vec<FileToken> = contents
        .tokens
        .iter()
        // A DPoP-bound token is not written: its key lives in memory only (see the README),
        // and without the key neither the token nor its refresh token can be used.
        .filter(|(_, token)| !token.is_dpop())
        .map(|(key, token)| FileToken {
            issuer: key.issuer.clone(),
            client_id: key.client_id.clone(),
            resource: key.resource.clone(),
            scope: key.scope.clone(),
            access_token: token.access_token().expose().to_owned(),
            refresh_token: token.refresh_token().map(|t| t.expose().to_owned()),
            expires_at: token.expires_at().map(|at| at.0),
            granted_scope: token.scope().map(ToString::to_string),
        })
        .collect();
    // A stable order, so an unchanged store renders the same bytes.
    tokens.sort_by(|a, b| {
        (&a.issuer, &a.client_id, &a.resource, &a.scope).cmp(&(
            &b.issuer,
            &b.client_id,
            &b.resource,
            &b.scope,
        ))
    });
    let file = File {
        version: STORE_VERSION,
        server: contents.server.clone(),
        redirect_uri: contents.redirect_uri.clone(),
        client: contents.client.as_ref().map(|c| FileClient {
            client_id: c.client_id.clone(),
            client_secret: c.client_secret.as_ref().map(|s| s.expose().to_owned()),
            issuer: c.issuer.clone().unwrap_or_default(),
            token_endpoint_auth_method: c.auth_method.map(|m| m.name().to_owned()),
        }),
        tokens,
    };
    let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Parses a store's bytes; the reason names a member, never a value.
fn parse(bytes: &[u8]) -> Result<Contents, String> {
    // serde reads a struct from an array too: the shape is checked on the JSON first, then
    // the typed read catches repeated members (which a `Value` would keep the last of).
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("line {} column {}: {}", e.line(), e.column(), category(&e)))?;
    let objects = value.is_object()
        && value.get("client").is_none_or(|c| c.is_object())
        && value
            .get("tokens")
            .and_then(serde_json::Value::as_array)
            .is_none_or(|tokens| tokens.iter().all(serde_json::Value::is_object));
    if !objects {
        return Err(
            "a token store is a JSON object, its client an object, its tokens an \
                    array of objects"
                .to_owned(),
        );
    }
    let file: File = serde_json::from_slice(bytes).map_err(|e| {
        // serde_json's message quotes unknown member names and types, not string values.
        format!("line {} column {}: {}", e.line(), e.column(), category(&e))
    })?;
    if file.version != STORE_VERSION {
        return Err(format!(
            "version {} (this mcpwire reads version {STORE_VERSION})",
            file.version
        ));
    }
    secure_url(&file.server, "server")?;
    secure_url(&file.redirect_uri, "redirect_uri")?;
    let client = match file.client {
        None => None,
        Some(c) => {
            if c.client_id.is_empty() || c.client_id.chars().any(char::is_control) {
                return Err("client.client_id must be a non-empty string".to_owned());
            }
            secure_url(&c.issuer, "client.issuer")?;
            let auth_method = match c.token_endpoint_auth_method.as_deref() {
                None => None,
                Some(name) => Some(AuthMethod::from_name(name).ok_or(
                    "client.token_endpoint_auth_method is not none, client_secret_basic, \
                     client_secret_post or private_key_jwt",
                )?),
            };
            if let Some(secret) = &c.client_secret {
                token_text(secret, "client.client_secret")?;
            }
            Some(PreRegistered {
                client_id: c.client_id,
                client_secret: c.client_secret.map(Secret::new),
                signing_key: None,
                issuer: Some(c.issuer),
                auth_method,
            })
        }
    };
    if file.tokens.len() > MAX_STORED_TOKENS {
        return Err(format!(
            "tokens holds {} tokens; at most {MAX_STORED_TOKENS}",
            file.tokens.len()
        ));
    }
    let mut tokens = TokenCache::default();
    for (i, t) in file.tokens.into_iter().enumerate() {
        token_text(&t.access_token, &format!("tokens[{i}].access_token"))?;
        if let Some(refresh) = &t.refresh_token {
            token_text(refresh, &format!("tokens[{i}].refresh_token"))?;
        }
        Scopes::parse(&t.scope).map_err(|_| format!("tokens[{i}].scope is not a scope"))?;
        let granted = match &t.granted_scope {
            None => None,
            Some(s) => Some(
                Scopes::parse(s)
                    .map_err(|_| format!("tokens[{i}].granted_scope is not a scope"))?,
            ),
        };
        tokens.insert(
            TokenKey {
                issuer: t.issuer,
                client_id: t.client_id,
                resource: t.resource,
                scope: t.scope,
            },
            Token::new(
                Secret::new(t.access_token),
                t.refresh_token.map(Secret::new),
                t.expires_at.map(UnixTime),
                granted,
            ),
        );
    }
    Ok(Contents {
        server: file.server,
        redirect_uri: file.redirect_uri,
        client,
        tokens,
    })
}

/// What kind of problem serde_json found, without the text it may quote from a value.
fn category(error: &serde_json::Error) -> String {
    let text = error.to_string();
    // "unknown field `x`", "missing field `x`", "duplicate field `x`", "invalid type: ..."
    // name members and types; a syntax error names nothing. Values are never quoted
    // because every member here is a string, number or array: "invalid type: string \"..\""
    // would quote one, so that case is cut at the type.
    let text = text.split(" at line ").next().unwrap_or_default();
    match text.split_once(" \"") {
        Some((head, _)) if text.starts_with("invalid") => head.to_owned(),
        _ => text.to_owned(),
    }
}

fn secure_url(text: &str, member: &str) -> Result<(), String> {
    match Url::parse(text) {
        Ok(url) if url.is_secure() => Ok(()),
        Ok(_) => Err(format!("{member} is neither https nor loopback http")),
        Err(_) => Err(format!("{member} is not a URL")),
    }
}

/// A token as a header may carry it.
fn token_text(token: &str, member: &str) -> Result<(), String> {
    if token.is_empty()
        || token.len() > MAX_TOKEN_BYTES
        || !token.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(format!("{member} is not a token"));
    }
    Ok(())
}

/// Writes `bytes` to a new file beside `path` (mode 0600 on unix), syncs it, and renames it
/// over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path names no file"))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let _ = std::fs::remove_file(&temp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpwire-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("tokens.json")
    }

    fn filled(path: &Path) -> TokenStore {
        let store = TokenStore::create(
            path,
            "http://127.0.0.1:8000/mcp",
            "http://127.0.0.1:9/callback",
        );
        {
            let mut contents = store.contents.lock().unwrap();
            let mut client = PreRegistered::new("client-1");
            client.client_secret = Some(Secret::new("cs-STORE-5e1a"));
            client.issuer = Some("http://127.0.0.1:8000".to_owned());
            client.auth_method = Some(AuthMethod::ClientSecretPost);
            contents.client = Some(client);
            contents.tokens.insert(
                TokenKey {
                    issuer: "http://127.0.0.1:8000".into(),
                    client_id: "client-1".into(),
                    resource: "http://127.0.0.1:8000/mcp".into(),
                    scope: "mcp:tools offline_access".into(),
                },
                Token::new(
                    Secret::new("at-STORE-1f2e"),
                    Some(Secret::new("rt-STORE-3d4c")),
                    Some(UnixTime(2_000)),
                    Some(Scopes::parse("mcp:tools").unwrap()),
                ),
            );
        }
        store
    }

    #[test]
    fn a_store_round_trips_with_mode_0600_and_skips_writes_that_change_nothing() {
        let path = scratch("round-trip");
        let store = filled(&path);
        store.save().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let loaded = TokenStore::load(&path).unwrap();
        assert_eq!(render(&loaded.contents()), render(&store.contents()));
        assert_eq!(loaded.token_count(), 1);
        assert!(loaded.has_usable_token(UnixTime(5_000)), "refreshable");
        let config = loaded.config().unwrap();
        let client = config.pre_registered.unwrap();
        assert_eq!(client.client_id, "client-1");
        assert_eq!(client.issuer.as_deref(), Some("http://127.0.0.1:8000"));
        assert_eq!(client.client_secret.unwrap().expose(), "cs-STORE-5e1a");
        // Unchanged: no write (a file put in its place stays).
        std::fs::write(&path, b"replaced").unwrap();
        loaded.save().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"replaced");
        let debug = format!("{loaded:?}");
        for secret in ["cs-STORE-5e1a", "at-STORE-1f2e", "rt-STORE-3d4c"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(TokenStore::remove(&path).unwrap());
        assert!(!TokenStore::remove(&path).unwrap());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    const KEY_SCOPE: &str = "mcp:tools offline_access";

    fn key(scope: &str) -> TokenKey {
        TokenKey {
            issuer: "http://127.0.0.1:8000".into(),
            client_id: "client-1".into(),
            resource: "http://127.0.0.1:8000/mcp".into(),
            scope: scope.into(),
        }
    }

    fn token(access: &str, refresh: &str, expires_at: u64) -> Token {
        Token::new(
            Secret::new(access),
            Some(Secret::new(refresh)),
            Some(UnixTime(expires_at)),
            None,
        )
    }

    /// A store loaded from `path`, and an OAuth that starts with its tokens.
    fn process(path: &Path) -> (Arc<TokenStore>, OAuth) {
        let store = Arc::new(TokenStore::load(path).unwrap());
        let oauth = store.oauth(Arc::new(Unattended::new(path))).unwrap();
        (store, oauth)
    }

    fn set(oauth: &OAuth, scope: &str, token: Option<Token>) {
        oauth.with_flow(|flow| match token {
            Some(token) => flow.cache_mut().insert(key(scope), token),
            None => {
                flow.cache_mut().remove(&key(scope));
            }
        });
    }

    fn on_disk(path: &Path, scope: &str) -> Option<(String, Option<String>)> {
        let (contents, _) = read(path).unwrap();
        contents.tokens.get(&key(scope)).map(|t| {
            (
                t.access_token().expose().to_owned(),
                t.refresh_token().map(|r| r.expose().to_owned()),
            )
        })
    }

    fn pair(access: &str, refresh: &str) -> Option<(String, Option<String>)> {
        Some((access.to_owned(), Some(refresh.to_owned())))
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_lock_is_one_process_at_a_time_bounded_and_named_in_its_error() {
        use std::os::unix::fs::PermissionsExt;
        let path = scratch("lock");
        filled(&path).save().unwrap();
        let store = TokenStore::load(&path).unwrap();
        let lock_path = store.lock_path();
        assert_eq!(lock_path, path.with_file_name("tokens.json.lock"));
        let held = store.lock(Duration::from_secs(1)).await.unwrap();
        let mode = std::fs::metadata(&lock_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // flock(2) locks belong to the open file: another open, even in this process, waits.
        let other = TokenStore::load(&path).unwrap();
        assert!(try_lock(&lock_path).unwrap().is_none());
        let error = other.lock(Duration::from_millis(50)).await.unwrap_err();
        assert!(
            matches!(&error, StoreError::Locked { path, waited_ms: 50 } if *path == lock_path),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(text.contains("tokens.json.lock"), "{text}");
        assert!(text.contains("50 ms"), "{text}");
        assert!(!text.contains("STORE"), "{text}");
        let blocking = other.lock_blocking(Duration::from_millis(30)).unwrap_err();
        assert!(
            matches!(blocking, StoreError::Locked { .. }),
            "{blocking:?}"
        );
        // A holder that lets go (or dies: the file closes) lets the next one in, which was
        // waiting.
        let waiting = tokio::spawn(async move { other.lock(Duration::from_secs(5)).await });
        drop(held);
        let next = waiting.await.unwrap().unwrap();
        assert!(try_lock(&lock_path).unwrap().is_none());
        drop(next);
        assert!(try_lock(&lock_path).unwrap().is_some());
        // Never through a symbolic link.
        let link = scratch("lock-link");
        std::fs::write(link.with_file_name("elsewhere"), b"").unwrap();
        std::os::unix::fs::symlink(
            link.with_file_name("elsewhere"),
            link.with_file_name("tokens.json.lock"),
        )
        .unwrap();
        assert!(matches!(
            try_lock(&link.with_file_name("tokens.json.lock")),
            Err(StoreError::Io { .. })
        ));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
        let _ = std::fs::remove_dir_all(link.parent().unwrap());
    }

    #[tokio::test]
    async fn a_reload_under_the_lock_sees_what_another_process_wrote() {
        let path = scratch("reload");
        filled(&path).save().unwrap();
        let (a, a_oauth) = process(&path);
        let (b, _) = process(&path);
        // A renews the token and writes it back.
        set(&a_oauth, KEY_SCOPE, Some(token("at-A-2", "rt-A-2", 9_000)));
        a.save_from(&a_oauth).unwrap();
        assert_eq!(on_disk(&path, KEY_SCOPE), pair("at-A-2", "rt-A-2"));
        // B, loaded before, reads A's token under the lock, and holds it from then on.
        let lock = b.lock(Duration::from_secs(1)).await.unwrap();
        let tokens = b.reload(&lock).unwrap();
        let got = tokens.get(&key(KEY_SCOPE)).unwrap();
        assert_eq!(got.refresh_token().unwrap().expose(), "rt-A-2");
        assert_eq!(b.expires_at(), Some(UnixTime(9_000)));
        drop(lock);
        // A store deleted meanwhile (a logout) is not reloaded into nothing.
        std::fs::remove_file(&path).unwrap();
        let lock = b.lock(Duration::from_secs(1)).await.unwrap();
        assert!(matches!(b.reload(&lock), Err(StoreError::Io { .. })));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_write_back_changes_only_what_this_process_changed() {
        let path = scratch("merge");
        filled(&path).save().unwrap();
        let (a, a_oauth) = process(&path);
        let (b, b_oauth) = process(&path);
        let (c, c_oauth) = process(&path);
        // A rotates the token.
        set(&a_oauth, KEY_SCOPE, Some(token("at-A-2", "rt-A-2", 9_000)));
        a.save_from(&a_oauth).unwrap();
        // B, which read the store before, gets a token for another scope (a step-up): its
        // write keeps A's rotated token rather than putting back the spent one.
        set(
            &b_oauth,
            "mcp:admin",
            Some(token("at-B-1", "rt-B-1", 9_500)),
        );
        b.save_from(&b_oauth).unwrap();
        assert_eq!(on_disk(&path, KEY_SCOPE), pair("at-A-2", "rt-A-2"));
        assert_eq!(on_disk(&path, "mcp:admin"), pair("at-B-1", "rt-B-1"));
        // C drops the token it knew (the server refused it): A's renewed one stays.
        set(&c_oauth, KEY_SCOPE, None);
        c.save_from(&c_oauth).unwrap();
        assert_eq!(on_disk(&path, KEY_SCOPE), pair("at-A-2", "rt-A-2"));
        // A drops its own (refused): gone; B's stays.
        set(&a_oauth, KEY_SCOPE, None);
        a.save_from(&a_oauth).unwrap();
        assert_eq!(on_disk(&path, KEY_SCOPE), None);
        assert_eq!(on_disk(&path, "mcp:admin"), pair("at-B-1", "rt-B-1"));
        // Nothing changed: no write (a file put in its place stays).
        let kept = std::fs::read(&path).unwrap();
        std::fs::write(&path, b"replaced").unwrap();
        b.save_from(&b_oauth).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"replaced");
        std::fs::write(&path, kept).unwrap();
        // The client, and the file's mode, are kept.
        let (contents, _) = read(&path).unwrap();
        assert_eq!(contents.client.unwrap().client_id, "client-1");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_new_login_replaces_the_store_whole() {
        let path = scratch("login");
        filled(&path).save().unwrap();
        let store = Arc::new(TokenStore::create(
            &path,
            "http://127.0.0.1:8000/mcp",
            "http://127.0.0.1:9/callback",
        ));
        let oauth = store.oauth(Arc::new(Unattended::new(&path))).unwrap();
        set(
            &oauth,
            "mcp:other",
            Some(token("at-NEW-1", "rt-NEW-1", 7_000)),
        );
        store.save_from(&oauth).unwrap();
        assert_eq!(
            on_disk(&path, KEY_SCOPE),
            None,
            "the old login's token is gone"
        );
        assert_eq!(on_disk(&path, "mcp:other"), pair("at-NEW-1", "rt-NEW-1"));
        // From then on it merges like any other.
        let (other, other_oauth) = process(&path);
        set(
            &other_oauth,
            "mcp:third",
            Some(token("at-3", "rt-3", 7_000)),
        );
        other.save_from(&other_oauth).unwrap();
        set(
            &oauth,
            "mcp:other",
            Some(token("at-NEW-2", "rt-NEW-2", 8_000)),
        );
        store.save_from(&oauth).unwrap();
        assert_eq!(on_disk(&path, "mcp:third"), pair("at-3", "rt-3"));
        assert_eq!(on_disk(&path, "mcp:other"), pair("at-NEW-2", "rt-NEW-2"));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_dpop_bound_token_is_not_written() {
        let path = scratch("dpop");
        let store = filled(&path);
        store.contents.lock().unwrap().tokens.insert(
            key("dpop"),
            token("at-DPOP-7a1c", "rt-DPOP-2b8e", 2_000).bound(true),
        );
        let text = String::from_utf8(render(&store.contents())).unwrap();
        assert!(text.contains("at-STORE-1f2e"), "the bearer token is kept");
        assert!(
            !text.contains("at-DPOP-7a1c") && !text.contains("rt-DPOP-2b8e"),
            "{text}"
        );
        store.save().unwrap();
        assert_eq!(TokenStore::load(&path).unwrap().token_count(), 1);
        // The directory, not only the store: the save left its lock file there.
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_new_store_without_tokens_is_not_written() {
        let path = scratch("empty");
        let store = TokenStore::create(&path, "http://127.0.0.1:1/mcp", "http://127.0.0.1:2/cb");
        store.save().unwrap();
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_write_that_fails_names_the_path_and_leaves_nothing_behind() {
        let dir = scratch("unwritable");
        let dir = dir.parent().unwrap().to_owned();
        let path = dir.join("missing").join("tokens.json");
        let error = filled(&path).save().unwrap_err();
        assert!(matches!(error, StoreError::Io { .. }), "{error:?}");
        let text = error.to_string();
        assert!(text.contains("missing/tokens.json"), "{text}");
        assert!(!text.contains("STORE"), "{text}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "no temporary file"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_store_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let path = scratch("mode");
        filled(&path).save().unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = TokenStore::load(&path).unwrap_err();
        assert!(matches!(error, StoreError::Permissions { mode, .. } if mode & 0o777 == 0o644));
        assert!(error.to_string().contains("chmod 600"), "{error}");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn invalid_stores_are_refused_without_quoting_values() {
        let good = String::from_utf8(render(&filled(Path::new("/x")).contents())).unwrap();
        let cases: Vec<(String, &str)> = vec![
            (
                good.replace("\"version\": 1", "\"version\": 2"),
                "version 2",
            ),
            (
                good.replace("\"tokens\"", "\"extra\": 1, \"tokens\""),
                "unknown field `extra`",
            ),
            (
                good.replace("at-STORE-1f2e", "at STORE 1f2e"),
                "tokens[0].access_token is not a token",
            ),
            (
                good.replace(
                    "\"scope\": \"mcp:tools offline_access\"",
                    "\"scope\": \"a\\tb\"",
                ),
                "tokens[0].scope is not a scope",
            ),
            (
                good.replace(
                    "http://127.0.0.1:8000/mcp\",\n  \"redirect",
                    "http://example.com/mcp\",\n  \"redirect",
                ),
                "server is neither https nor loopback http",
            ),
            (
                good.replace("\"client_secret_post\"", "\"magic\""),
                "token_endpoint_auth_method",
            ),
            (
                good.replace("\"expires_at\": 2000", "\"expires_at\": \"cs-STORE-5e1a\""),
                "invalid type: string",
            ),
            ("[]".to_owned(), "a token store is a JSON object"),
            (
                good.replace("\"tokens\": [", "\"tokens\": [[], "),
                "array of objects",
            ),
            (
                good.replace("\"version\": 1,", "\"version\": 1, \"version\": 1,"),
                "duplicate field `version`",
            ),
            (String::new(), "EOF"),
        ];
        for (text, expected) in cases {
            let reason = parse(text.as_bytes())
                .err()
                .unwrap_or_else(|| panic!("{text}"));
            assert!(reason.contains(expected), "{reason} for {text}");
            for secret in ["cs-STORE-5e1a", "at-STORE-1f2e", "rt-STORE-3d4c", "STORE"] {
                assert!(!reason.contains(secret), "{reason}");
            }
        }
        let path = scratch("large");
        std::fs::write(&path, vec![b' '; MAX_STORE_BYTES as usize + 1]).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert!(matches!(
            TokenStore::load(&path),
            Err(StoreError::TooLarge { .. })
        ));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
