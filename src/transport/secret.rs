//! A credential that never shows itself in `Debug`, `Display` or error messages.

use std::fmt;

/// A bearer token or other credential. Its `Debug` output is `Secret(<redacted>)`; the value
/// is only reachable through [`Secret::expose`], which the transport calls to build the one
/// header that carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself. Call only to put it on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every occurrence of the credential in `text` with `<redacted>`, for text that
    /// may echo it (a server's error body, a wire trace).
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            // Too short to search for without mangling ordinary text; such a value is not a
            // real credential anyway.
            return text.to_owned();
        }
        text.replace(&self.0, "<redacted>")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_and_redact_hide_the_value() {
        let secret = Secret::new("tok-123456");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(
            secret.redact("Bearer tok-123456 rejected"),
            "Bearer <redacted> rejected"
        );
        assert_eq!(secret.expose(), "tok-123456");
    }
}
