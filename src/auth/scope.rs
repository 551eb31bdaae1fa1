//! Scopes (RFC 6749 section 3.3): space-separated scope tokens, kept as an ordered set, and the
//! MCP spec's rules for choosing them ("Scope Selection Strategy", "Step-Up Authorization
//! Flow" in `basic/authorization`).

use std::fmt;

/// The most scope tokens kept in one set.
pub(crate) const MAX_SCOPES: usize = 128;
/// The longest scope string read.
pub(crate) const MAX_SCOPE_BYTES: usize = 4096;

/// The scope `offline_access` (OpenID Connect Core section 11), asking for a refresh token.
pub(crate) const OFFLINE_ACCESS: &str = "offline_access";

/// Why a scope string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeError {
    /// More than `MAX_SCOPE_BYTES` or `MAX_SCOPES` tokens.
    TooLong,
    /// A character outside `%x21 / %x23-5B / %x5D-7E`, or a separator other than one space.
    Character,
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScopeError::TooLong => "the scope is too long",
            ScopeError::Character => "the scope has a character a scope token cannot have",
        })
    }
}

impl std::error::Error for ScopeError {}

/// An ordered set of scope tokens (first occurrence kept, duplicates dropped).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Scopes(Vec<String>);

fn is_scope_char(b: u8) -> bool {
    b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)
}

impl Scopes {
    /// No scopes.
    pub(crate) fn new() -> Self {
        Scopes(Vec::new())
    }

    /// Parses `scope = scope-token *( SP scope-token )`. Runs of spaces and spaces at either
    /// end are tolerated (servers send them); any other whitespace is not.
    pub fn parse(text: &str) -> Result<Scopes, ScopeError> {
        if text.len() > MAX_SCOPE_BYTES {
            return Err(ScopeError::TooLong);
        }
        let mut scopes = Scopes::new();
        for token in text.split(' ').filter(|t| !t.is_empty()) {
            if !token.bytes().all(is_scope_char) {
                return Err(ScopeError::Character);
            }
            scopes.insert(token)?;
        }
        Ok(scopes)
    }

    /// A set from a metadata document's `scopes_supported` list.
    pub(crate) fn from_list(list: &[String]) -> Result<Scopes, ScopeError> {
        let mut scopes = Scopes::new();
        for token in list {
            if token.is_empty() || !token.bytes().all(is_scope_char) {
                return Err(ScopeError::Character);
            }
            scopes.insert(token)?;
        }
        Ok(scopes)
    }

    fn insert(&mut self, token: &str) -> Result<(), ScopeError> {
        if !self.contains(token) {
            if self.0.len() == MAX_SCOPES {
                return Err(ScopeError::TooLong);
            }
            self.0.push(token.to_owned());
        }
        Ok(())
    }

    /// Whether `token` is in the set.
    pub fn contains(&self, token: &str) -> bool {
        self.0.iter().any(|t| t == token)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The tokens in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// This set, then what `other` adds (the step-up rule of 2026-07-28: the scopes asked for
    /// before plus those of the challenge).
    pub(crate) fn union(&self, other: &Scopes) -> Result<Scopes, ScopeError> {
        let mut union = self.clone();
        for token in other.iter() {
            union.insert(token)?;
        }
        Ok(union)
    }

    /// The set with `token` added at the end (if not there already).
    pub(crate) fn with(&self, token: &str) -> Result<Scopes, ScopeError> {
        let mut with = self.clone();
        with.insert(token)?;
        Ok(with)
    }

    #[cfg(test)]
    /// Whether every token of `self` is in `other`.
    pub(crate) fn is_subset(&self, other: &Scopes) -> bool {
        self.iter().all(|t| other.contains(t))
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let scopes = Scopes::parse(" files:read  files:write files:read ").unwrap();
        assert_eq!(scopes.to_string(), "files:read files:write");
        assert!(Scopes::parse("").unwrap().is_empty());
        assert_eq!(Scopes::parse("a\tb"), Err(ScopeError::Character));
        assert_eq!(Scopes::parse("a\"b"), Err(ScopeError::Character));
        assert_eq!(Scopes::parse("a\\b"), Err(ScopeError::Character));
        assert_eq!(Scopes::parse("é"), Err(ScopeError::Character));
        assert_eq!(
            Scopes::parse(&"a".repeat(MAX_SCOPE_BYTES + 1)),
            Err(ScopeError::TooLong)
        );
        let many: Vec<String> = (0..=MAX_SCOPES).map(|i| format!("s{i}")).collect();
        assert_eq!(Scopes::parse(&many.join(" ")), Err(ScopeError::TooLong));
        assert_eq!(
            Scopes::from_list(&["a".into(), String::new()]),
            Err(ScopeError::Character)
        );
    }

    #[test]
    fn union_keeps_order_and_the_earlier_scopes() {
        let before = Scopes::parse("mcp:basic").unwrap();
        let challenge = Scopes::parse("mcp:write mcp:basic").unwrap();
        assert_eq!(
            before.union(&challenge).unwrap().to_string(),
            "mcp:basic mcp:write"
        );
        assert!(before.is_subset(&before.union(&challenge).unwrap()));
        assert!(!challenge.is_subset(&before));
        assert_eq!(
            before.with(OFFLINE_ACCESS).unwrap().to_string(),
            "mcp:basic offline_access"
        );
    }
}
