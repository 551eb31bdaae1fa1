//! Making a [`Client`]: the HTTP setup (the era verdict cache and its probe turn, the list
//! cache's key, a token refreshed ahead of the handshake), the stdio child, and the machine and
//! driver task both run on.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::driver::{Command, Driver, DriverAuth, Link, Shared};
use super::era::{EraCache, Verdict};
use super::{Client, ClientOptions, auth, op_error};
use crate::connection::{self, Connection, ListCacheRef};
use crate::error::Error;
use crate::exchange::Exchange;
use crate::mcp::ProtocolVersion;
use crate::secret::Secret;
use crate::session::EraPolicy;
use crate::transport::http::{HttpConfig, HttpLink, HttpPool};
use crate::transport::stdio::{StdioConfig, StdioLink};

/// A fingerprint of the credentials a client sends, for keying private cache entries: a
/// process-keyed SipHash of them, never stored or shown.
fn fingerprint(secrets: &[Secret], principal: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let mut hasher = KEYS.get_or_init(Default::default).build_hasher();
    for secret in secrets {
        hasher.write(secret.expose().as_bytes());
        hasher.write_u8(0);
    }
    hasher.write_u64(principal);
    hasher.finish()
}

/// A token source to refresh ahead of each request, with what its flow's requests need.
pub(super) type Ahead = (
    auth::Auth,
    HttpPool,
    Option<crate::exchange::config::WireLog>,
);

/// A driver task started, before its handshake.
struct Launched {
    commands: mpsc::Sender<Command>,
    driver: JoinHandle<()>,
    shared: Arc<Shared>,
    /// What the handshake and the client keep of the options, which the driver took.
    handshake_trace: Option<crate::mcp::TraceContext>,
    trace_context: Option<crate::mcp::TraceContext>,
    skills: bool,
    max_list_pages: usize,
}

/// What the HTTP-only setup of a connection gives [`Client::launch`].
struct HttpSetup {
    lists: ListCacheRef,
    eras: EraCache,
    url: String,
}

impl Client {
    /// Connects to the Streamable HTTP endpoint `url` with every default: a connection pool
    /// of its own (TLS with the webpki roots), no credentials, the era probe, default
    /// options. For a shared pool, a token or other options, [`connect_http`](Self::connect_http).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), mcpwire::Error> {
    /// let client = mcpwire::Client::connect("http://127.0.0.1:3001/mcp").await?;
    /// println!("{} tools", client.list_tools().await?.len());
    /// client.close().await;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Client, Error> {
        let pool = HttpPool::new(&crate::transport::http::TlsOptions::default())?;
        let config = HttpConfig::new(url)?;
        Client::connect_http(&pool, config, ClientOptions::default()).await
    }

    /// Opens a session over Streamable HTTP (falling back to legacy HTTP+SSE when the server
    /// speaks only that, if the config allows it).
    ///
    /// The connection comes from `pool`; what the client learns about the endpoint (its era
    /// verdict, cacheable `tools/list` pages) goes to the caches in `options`
    /// ([`ClientOptions::era_cache`], [`ClientOptions::list_cache`]), so clients made with
    /// clones of one `ClientOptions` probe each endpoint once.
    pub async fn connect_http(
        pool: &HttpPool,
        config: HttpConfig,
        mut options: ClientOptions,
    ) -> Result<Client, Error> {
        // The bearer token and the extra headers' values.
        let secrets = config.secrets();
        let url = config.url.to_string();
        if let Some(auth) = &options.auth {
            if config.bearer_token.is_some() {
                return Err(Error::config(
                    "a static bearer token and a token source (auth) are both configured; \
                     use one",
                ));
            }
            if let Some(server) = auth.as_oauth().and_then(|oauth| oauth.server())
                && !same_origin(&server, &url)
            {
                return Err(Error::config(format!(
                    "the OAuth flow is for {server}, not {url}: its tokens go to no other origin"
                )));
            }
        }
        let eras = options.era_cache.clone();
        let mut cached = match options.session.era {
            EraPolicy::Auto => eras.get(&url),
            _ => None,
        };
        // Connections that find no verdict while another one probes wait for its verdict. The
        // turn is held until this function returns: after the verdict is put, or on failure.
        let probes = cached.is_none() && options.session.era == EraPolicy::Auto;
        let _turn = match probes {
            true => eras.probe_turn(&url, options.session.probe_timeout).await,
            false => None,
        };
        if probes && _turn.is_none() {
            cached = eras.get(&url);
        }
        if let Some(verdict) = &cached {
            options.session.era = match verdict.modern {
                Some(version) => EraPolicy::Modern(version),
                None => EraPolicy::Legacy,
            };
        }
        // The backoff's jitter needs no clock: the standard library's per-process random hash
        // keys seed it.
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        let ahead = options
            .auth
            .clone()
            .map(|auth| (auth, pool.clone(), config.wire_log.clone()));
        if let Some((auth, pool, log)) = &ahead {
            // The handshake too goes out with a token that will still be valid.
            auth.refresh_ahead(pool, log.as_ref()).await;
        }
        // In a block: what it builds is moved into the driver before the await below, and
        // takes no room in this future.
        let launched = {
            let mut exchange = Exchange::new(config, seed);
            if options.auth.is_some() {
                exchange.hold_refusals(true);
            }
            let principal = options.auth.as_ref().map_or(0, auth::Auth::identity);
            let lists = ListCacheRef {
                cache: options.list_cache.clone(),
                url: url.clone(),
                fingerprint: fingerprint(&secrets, principal),
            };
            let setup = HttpSetup {
                lists,
                eras: eras.clone(),
                url: url.clone(),
            };
            let link = Link::Http(Box::new(HttpLink::new(pool.clone())));
            let http = Some((exchange, pool.clone()));
            Client::launch(link, http, options, secrets, Some(setup))
        };
        let started = Client::started(launched, ahead).await;
        match started {
            Ok(mut client) => {
                match &cached {
                    // Known already: what the probe learnt stands in for what was not asked.
                    Some(verdict) => {
                        if client.server.is_none() {
                            client.server.clone_from(&verdict.server);
                        }
                    }
                    None => eras.put(
                        &url,
                        Verdict {
                            modern: Some(client.protocol_version()).filter(|v| v.is_modern()),
                            server: client.server.clone(),
                        },
                    ),
                }
                Ok(client)
            }
            Err(error) => {
                // A cached verdict that no longer holds (the server was replaced): the next
                // connection probes again.
                if cached.is_some() {
                    eras.forget(&url);
                }
                Err(error)
            }
        }
    }

    /// Opens a session with a server run as a child process speaking newline-delimited JSON on
    /// stdin and stdout. The era probe treats silence and an exit as a 2025-era server; one
    /// that exits on the probe is started again for `initialize`.
    pub async fn connect_stdio(
        config: StdioConfig,
        mut options: ClientOptions,
    ) -> Result<Client, Error> {
        options.session.silent_probe_means_legacy = true;
        let (events_tx, events) = mpsc::channel(256);
        let secrets = crate::transport::stdio::credential_values(&config.env);
        let respawn = config.clone();
        let link = StdioLink::spawn(config, events_tx).map_err(Error::from_failure)?;
        let link = Link::Stdio {
            link,
            events,
            respawn: Some(Box::new(respawn)),
        };
        let launched = Client::launch(link, None, options, secrets, None);
        Client::started(launched, None).await
    }

    /// Builds the machine and its driver and starts the driver task. A plain function, so
    /// that none of that (kilobytes) is part of the connecting future, which a binding
    /// call's future carries.
    fn launch(
        link: Link,
        http: Option<(Exchange, HttpPool)>,
        mut options: ClientOptions,
        secrets: Vec<Secret>,
        setup: Option<HttpSetup>,
    ) -> Launched {
        if let Some(handler) = &options.input_handler {
            options.session.capabilities = handler.capabilities();
            options.session.forward_input_requests = true;
        }
        let limits = connection::Limits {
            request_timeout: options.request_timeout,
            max_list_pages: options.max_list_pages,
            max_tools: options.max_tools,
            max_input_rounds: options.max_input_rounds,
            answers_input: options.input_handler.is_some(),
            process_id: process_id(),
            tasks: options.tasks,
        };
        if options.tasks {
            options.session.capabilities.declare_tasks();
        }
        if options.skills {
            options
                .session
                .capabilities
                .declare_extension(crate::connection::SKILLS_EXTENSION);
        }
        let (mut connection, auth) = match http {
            Some((exchange, pool)) => {
                let log = exchange.config().wire_log.clone();
                let connection = Connection::http(options.session, exchange, limits, secrets);
                let auth = options.auth.clone().map(|auth| DriverAuth {
                    auth,
                    pool,
                    log,
                    superseded: None,
                });
                (connection, auth)
            }
            None => (Connection::stdio(options.session, limits, secrets), None),
        };
        if let Some(auth) = &auth {
            connection.add_secrets(auth.auth.secrets());
        }
        let shared = Arc::new(Shared {
            version: std::sync::Mutex::new(ProtocolVersion::LATEST_INITIALIZE),
        });
        if let Some(setup) = &setup {
            connection.set_list_cache(setup.lists.clone());
        }
        let (commands, command_rx) = mpsc::channel(64);
        // Boxed: the driver (the machine, the link) is moved once here, and its task's
        // future, spawned and moved by tokio, holds a pointer to it rather than two copies.
        let mut driver = Box::new(Driver::new(
            connection,
            link,
            auth,
            options.input_handler.clone(),
            options.on_warning.clone(),
            options.notifications.clone(),
            commands.clone(),
            command_rx,
            shared.clone(),
        ));
        driver.eras = setup.map(|setup| (setup.eras, setup.url));
        // The driver's events belong to the span the connection was made in (a binding
        // call's).
        #[cfg(feature = "tracing")]
        let driver = tokio::spawn(tracing::Instrument::in_current_span(driver.run()));
        #[cfg(not(feature = "tracing"))]
        let driver = tokio::spawn(driver.run());
        Launched {
            commands,
            driver,
            shared,
            handshake_trace: options.handshake_trace,
            trace_context: options.trace_context,
            skills: options.skills,
            max_list_pages: options.max_list_pages,
        }
    }

    /// Starts the handshake on a launched driver and waits for it. The handshake carries the
    /// trace context of `options`' handshake, else (with the `opentelemetry` feature) the
    /// current span's, else [`ClientOptions::trace_context`].
    async fn started(launched: Launched, ahead: Option<Ahead>) -> Result<Client, Error> {
        let Launched {
            commands,
            driver,
            shared,
            handshake_trace,
            trace_context,
            skills,
            max_list_pages,
        } = launched;
        let trace = handshake_trace;
        #[cfg(feature = "opentelemetry")]
        let trace = trace.or_else(|| super::span::context_of(&tracing::Span::current()));
        let trace = trace.or_else(|| trace_context.clone());
        let (reply, answer) = oneshot::channel();
        let _ = commands.send(Command::Start { reply, trace }).await;
        let connected = match answer.await {
            Ok(Ok(connected)) => connected,
            Ok(Err(error)) => return Err(op_error(error)),
            Err(_) => return Err(Error::closed()),
        };
        Ok(Client {
            ahead,
            commands,
            driver: Some(driver),
            next_key: AtomicU64::new(0),
            server: connected.server.map(Arc::new),
            shared,
            session_id: connected.session_id,
            trace_context,
            skills,
            max_list_pages,
        })
    }
}

/// Whether two URLs have the same scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    match (crate::auth::Url::parse(a), crate::auth::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// This process's id, read once: `std::process::id()` is a `getpid` system call on every
/// call (glibc has not cached it since 2.25), and a progress token needs it per tool call.
fn process_id() -> u32 {
    static ID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ID.get_or_init(std::process::id)
}
