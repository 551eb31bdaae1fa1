//! A credential that never shows itself in `Debug`, `Display` or error messages.

use std::fmt;

/// A bearer token or other credential. Its `Debug` output is `Secret(<redacted>)`; the value
/// is only reachable through [`Secret::expose`], which the transport calls to build the one
/// header that carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

/// The shortest start of a credential that [`Secret::redact_cut`] hides at the end of a text.
const MIN_CUT_BYTES: usize = 4;

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
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            // Too short to search for without mangling ordinary text; such a value is not a
            // real credential anyway.
            return text.to_owned();
        }
        text.replace(&self.0, "<redacted>")
    }

    /// Whether `text` holds the credential (as [`redact`](Secret::redact) would find it).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn appears_in(&self, text: &str) -> bool {
        self.0.len() >= 4 && text.contains(&self.0)
    }

    /// Whether `bytes` hold the credential (as [`appears_in`](Secret::appears_in) for text).
    #[cfg_attr(not(feature = "exchange"), allow(dead_code))]
    pub(crate) fn appears_in_bytes(&self, bytes: &[u8]) -> bool {
        self.0.len() >= 4 && memchr::memmem::find(bytes, self.0.as_bytes()).is_some()
    }

    /// Like [`redact`](Secret::redact), for text cut short from a longer one (an excerpt of a
    /// server's body or header): also hides a start of the credential at the very end, where
    /// the cut may have split an echoed credential whose whole no longer matches.
    pub(crate) fn redact_cut(&self, text: &str) -> String {
        let mut text = self.redact(text);
        if self.0.len() < MIN_CUT_BYTES {
            return text;
        }
        // The longest start of the credential that ends the text; shorter ones say too little
        // to matter and would mangle ordinary text.
        let cut = (MIN_CUT_BYTES..self.0.len())
            .rev()
            .find(|&len| self.0.is_char_boundary(len) && text.ends_with(&self.0[..len]));
        if let Some(len) = cut {
            text.truncate(text.len() - len);
            text.push_str("<redacted>");
        }
        text
    }
}

/// `text` with every one of `secrets` redacted (see [`Secret::redact`]).
pub(crate) fn redact_all(secrets: &[Secret], text: &str) -> String {
    secrets
        .iter()
        .fold(text.to_owned(), |text, secret| secret.redact(&text))
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

    #[test]
    fn redact_cut_hides_a_credential_split_at_the_end() {
        let secret = Secret::new("tok-123456");
        assert_eq!(secret.redact_cut("Bearer tok-1234"), "Bearer <redacted>");
        assert_eq!(
            secret.redact_cut("a tok-123456 b tok-"),
            "a <redacted> b <redacted>"
        );
        // Too short a start to tell from ordinary text; nothing else is touched.
        assert_eq!(secret.redact_cut("ends in tok"), "ends in tok");
        assert_eq!(
            secret.redact_cut("tok-1 in the middle"),
            "tok-1 in the middle"
        );
    }
}
