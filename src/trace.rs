//! Instrumentation through `tracing`, the ecosystem's facade, behind the `tracing` feature:
//! the macros here expand to `tracing`'s events with the feature and to nothing without it,
//! so the layers below the drivers emit events without depending on it. What goes into a
//! field is chosen to be safe to log: names, origins, ids, codes, revisions and delays; never a
//! token, a header value, an argument value or a server's message (which may echo a secret).

/// An `INFO` event (`tracing::info!`'s syntax), or nothing without the `tracing` feature.
macro_rules! trace_info {
    ($($arg:tt)+) => {{
        #[cfg(feature = "tracing")]
        ::tracing::info!($($arg)+);
    }};
}

/// A `DEBUG` event (`tracing::debug!`'s syntax), or nothing without the `tracing` feature.
#[cfg_attr(not(feature = "exchange"), allow(unused_macros))]
macro_rules! trace_debug {
    ($($arg:tt)+) => {{
        #[cfg(feature = "tracing")]
        ::tracing::debug!($($arg)+);
    }};
}
