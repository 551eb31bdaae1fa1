//! The `WWW-Authenticate` header (RFC 9110 section 11.6.1): challenges, their auth-params and
//! token68, parsed strictly and within [`MAX_CHALLENGE_BYTES`]; and what a `Bearer` challenge
//! tells an MCP client (RFC 6750 section 3, RFC 9728 section 5.1).
//!
//! ```text
//! WWW-Authenticate = #challenge
//! challenge   = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//! auth-param  = token BWS "=" BWS ( token / quoted-string )
//! token68     = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//! ```

use std::fmt;

/// The most bytes read from all `WWW-Authenticate` fields of one response together.
pub(crate) const MAX_CHALLENGE_BYTES: usize = 8 * 1024;
/// The most challenges taken from one response.
pub(crate) const MAX_CHALLENGES: usize = 16;
/// The most auth-params in one challenge.
pub(crate) const MAX_PARAMS: usize = 32;

/// Why a `WWW-Authenticate` value was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ChallengeError {
    /// The fields hold more than [`MAX_CHALLENGE_BYTES`].
    TooLong,
    /// More than [`MAX_CHALLENGES`] challenges.
    TooManyChallenges,
    /// A challenge with more than [`MAX_PARAMS`] parameters.
    TooManyParams,
    /// Where an auth-scheme must start, something that is not a token.
    ExpectedScheme,
    /// The scheme is not followed by a space, a comma or the end.
    ExpectedSpace,
    /// After a scheme and its space, neither auth-params nor a token68.
    ExpectedParams,
    /// A parameter's value is neither a token nor a quoted string.
    ExpectedValue,
    /// Something other than a comma after a parameter or a token68.
    ExpectedComma,
    /// A quoted string that does not end, or holds a control character.
    BadQuotedString,
    /// The same parameter name twice in one challenge (RFC 9110: names occur once).
    DuplicateParam,
    /// A value that is not UTF-8.
    NotUtf8,
}

impl fmt::Display for ChallengeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChallengeError::TooLong => "the WWW-Authenticate fields are too long",
            ChallengeError::TooManyChallenges => "too many WWW-Authenticate challenges",
            ChallengeError::TooManyParams => "a WWW-Authenticate challenge has too many parameters",
            ChallengeError::ExpectedScheme => "a WWW-Authenticate challenge has no valid scheme",
            ChallengeError::ExpectedSpace => "a WWW-Authenticate scheme is not followed by a space",
            ChallengeError::ExpectedParams => {
                "a WWW-Authenticate challenge has neither parameters nor a token68"
            }
            ChallengeError::ExpectedValue => "a WWW-Authenticate parameter has no valid value",
            ChallengeError::ExpectedComma => "a WWW-Authenticate list element is malformed",
            ChallengeError::BadQuotedString => "a WWW-Authenticate quoted string is malformed",
            ChallengeError::DuplicateParam => {
                "a WWW-Authenticate challenge names a parameter twice"
            }
            ChallengeError::NotUtf8 => "a WWW-Authenticate value is not UTF-8",
        })
    }
}

impl std::error::Error for ChallengeError {}

/// One challenge: its scheme, and its parameters or token68.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Challenge {
    scheme: String,
    token68: Option<String>,
    /// Names in lower case (they are case-insensitive), values as sent after unquoting.
    params: Vec<(String, String)>,
}

impl Challenge {
    #[cfg(any(test, feature = "fuzzing"))]
    /// The auth-scheme as sent.
    pub(crate) fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Whether the scheme is `scheme`, ignoring case (schemes are case-insensitive).
    pub(crate) fn is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// The value of the parameter `name` (compared ignoring case), unquoted.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// The parameters in order: names in lower case, values unquoted.
    pub(crate) fn params(&self) -> impl Iterator<Item = (&str, &str)> {
        self.params.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// The token68, for schemes that carry one instead of parameters.
    pub(crate) fn token68(&self) -> Option<&str> {
        self.token68.as_deref()
    }
}

/// What a `Bearer` challenge says to an OAuth client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BearerChallenge {
    /// RFC 9728 section 5.1: where the protected-resource metadata is.
    pub resource_metadata: Option<String>,
    /// RFC 6750 section 3: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// RFC 6750 section 3.1: `invalid_request`, `invalid_token`, `insufficient_scope`...
    pub error: Option<String>,
    /// A text for people; never shown unfiltered.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The `Bearer` challenge among `challenges` (the first, if several), else the `DPoP`
    /// one (RFC 9449 section 7.1: the same `error`, `error_description` and `scope`, and
    /// RFC 9728's `resource_metadata` for any scheme), if any.
    pub(crate) fn find(challenges: &[Challenge]) -> Option<BearerChallenge> {
        let bearer = challenges
            .iter()
            .find(|c| c.is("Bearer"))
            .or_else(|| challenges.iter().find(|c| c.is("DPoP")))?;
        let get = |name| bearer.param(name).map(str::to_owned);
        Some(BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
        })
    }

    /// Whether the error is `insufficient_scope` (a 403 asking for more scopes).
    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Parses every `WWW-Authenticate` field of a response (each a list of challenges), in
/// order. An empty result means no field (or only empty list elements).
///
/// ```text
/// use mcpwire::auth::challenge::{parse, BearerChallenge};
///
/// let fields: [&[u8]; 1] = [br#"Basic realm="x", Bearer scope="files:read", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#];
/// let challenges = parse(fields).unwrap();
/// assert_eq!(challenges.len(), 2);
/// let bearer = BearerChallenge::find(&challenges).unwrap();
/// assert_eq!(bearer.scope.as_deref(), Some("files:read"));
/// ```
pub(crate) fn parse<'a>(
    fields: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<Challenge>, ChallengeError> {
    let mut challenges = Vec::new();
    let mut total = 0usize;
    for field in fields {
        total = total.saturating_add(field.len());
        if total > MAX_CHALLENGE_BYTES {
            return Err(ChallengeError::TooLong);
        }
        Parser {
            input: field,
            pos: 0,
        }
        .field(&mut challenges)?;
    }
    Ok(challenges)
}

/// The `Bearer` challenge of a response's headers, if it has one.
pub(crate) fn bearer(headers: &http::HeaderMap) -> Result<Option<BearerChallenge>, ChallengeError> {
    let fields = headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .map(|v| v.as_bytes());
    Ok(BearerChallenge::find(&parse(fields)?))
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn skip_ows(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Skips whitespace and empty list elements; whether any comma was passed.
    fn skip_separators(&mut self) -> bool {
        let mut comma = false;
        loop {
            self.skip_ows();
            if self.peek() == Some(b',') {
                comma = true;
                self.pos += 1;
            } else {
                return comma;
            }
        }
    }

    fn token(&mut self) -> Option<&str> {
        let start = self.pos;
        while self.peek().is_some_and(is_tchar) {
            self.pos += 1;
        }
        // tchars are ASCII, so this cannot fail.
        (self.pos > start)
            .then(|| std::str::from_utf8(&self.input[start..self.pos]).ok())
            .flatten()
    }

    fn field(&mut self, out: &mut Vec<Challenge>) -> Result<(), ChallengeError> {
        self.skip_separators();
        while self.pos < self.input.len() {
            if out.len() == MAX_CHALLENGES {
                return Err(ChallengeError::TooManyChallenges);
            }
            let challenge = self.challenge()?;
            out.push(challenge);
            // `challenge` stops at the end or just after the comma that ends it.
            self.skip_separators();
        }
        Ok(())
    }

    fn challenge(&mut self) -> Result<Challenge, ChallengeError> {
        let scheme = self
            .token()
            .ok_or(ChallengeError::ExpectedScheme)?
            .to_owned();
        let mut challenge = Challenge {
            scheme,
            token68: None,
            params: Vec::new(),
        };
        let spaces = self.skip_ows();
        match self.peek() {
            None => return Ok(challenge),
            Some(b',') => {
                self.pos += 1;
                return Ok(challenge);
            }
            Some(_) if spaces == 0 => return Err(ChallengeError::ExpectedSpace),
            Some(_) => {}
        }
        if let Some(token68) = self.token68() {
            challenge.token68 = Some(token68);
            return self.end_of_element().map(|()| challenge);
        }
        loop {
            let (name, value) = self.param()?;
            if challenge.params.iter().any(|(n, _)| *n == name) {
                return Err(ChallengeError::DuplicateParam);
            }
            if challenge.params.len() == MAX_PARAMS {
                return Err(ChallengeError::TooManyParams);
            }
            challenge.params.push((name, value));
            self.skip_ows();
            match self.peek() {
                None => return Ok(challenge),
                Some(b',') => {}
                Some(_) => return Err(ChallengeError::ExpectedComma),
            }
            // After the comma(s): another parameter of this challenge, or the next challenge.
            self.skip_separators();
            if self.peek().is_none() || !self.param_follows() {
                return Ok(challenge);
            }
        }
    }

    /// A token68 when the element is one (the characters, then padding, then the element's
    /// end); otherwise leaves the position where it was.
    fn token68(&mut self) -> Option<String> {
        let start = self.pos;
        let mut end = start;
        while self.input.get(end).copied().is_some_and(is_token68_char) {
            end += 1;
        }
        if end == start {
            return None;
        }
        while self.input.get(end) == Some(&b'=') {
            end += 1;
        }
        let mut after = end;
        while matches!(self.input.get(after), Some(b' ' | b'\t')) {
            after += 1;
        }
        if !matches!(self.input.get(after), None | Some(b',')) {
            return None;
        }
        self.pos = end;
        std::str::from_utf8(&self.input[start..end])
            .ok()
            .map(str::to_owned)
    }

    fn end_of_element(&mut self) -> Result<(), ChallengeError> {
        self.skip_ows();
        match self.peek() {
            None => Ok(()),
            Some(b',') => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(ChallengeError::ExpectedComma),
        }
    }

    /// Whether a `token BWS "="` starts here (a parameter, not a new challenge's scheme).
    fn param_follows(&self) -> bool {
        let mut at = self.pos;
        while self.input.get(at).copied().is_some_and(is_tchar) {
            at += 1;
        }
        if at == self.pos {
            return false;
        }
        while matches!(self.input.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        self.input.get(at) == Some(&b'=')
    }

    fn param(&mut self) -> Result<(String, String), ChallengeError> {
        let name = self
            .token()
            .ok_or(ChallengeError::ExpectedParams)?
            .to_ascii_lowercase();
        self.skip_ows();
        if self.peek() != Some(b'=') {
            return Err(ChallengeError::ExpectedParams);
        }
        self.pos += 1;
        self.skip_ows();
        let value = if self.peek() == Some(b'"') {
            self.quoted_string()?
        } else {
            self.token()
                .ok_or(ChallengeError::ExpectedValue)?
                .to_owned()
        };
        Ok((name, value))
    }

    fn quoted_string(&mut self) -> Result<String, ChallengeError> {
        self.pos += 1; // the opening quote
        let mut value = Vec::new();
        loop {
            let b = self.peek().ok_or(ChallengeError::BadQuotedString)?;
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let escaped = self.peek().ok_or(ChallengeError::BadQuotedString)?;
                    if !(escaped == b'\t' || escaped >= 0x20) || escaped == 0x7f {
                        return Err(ChallengeError::BadQuotedString);
                    }
                    self.pos += 1;
                    value.push(escaped);
                }
                b'\t' | 0x20..=0x7e | 0x80..=0xff => value.push(b),
                _ => return Err(ChallengeError::BadQuotedString),
            }
        }
        String::from_utf8(value).map_err(|_| ChallengeError::NotUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Result<Vec<Challenge>, ChallengeError> {
        parse([text.as_bytes()])
    }

    fn params(c: &Challenge) -> Vec<(&str, &str)> {
        c.params
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn the_spec_examples() {
        let found = one(
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\",\r\n                         scope=\"files:read\""
                .replace("\r\n", "")
                .as_str(),
        )
        .unwrap();
        assert_eq!(found.len(), 1);
        let bearer = BearerChallenge::find(&found).unwrap();
        assert_eq!(
            bearer.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(bearer.scope.as_deref(), Some("files:read"));

        let found = one(
            r#"Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="Additional file write permission required""#,
        )
        .unwrap();
        let bearer = BearerChallenge::find(&found).unwrap();
        assert!(bearer.is_insufficient_scope());
        assert_eq!(
            bearer.scope.as_deref(),
            Some("files:read files:write user:profile")
        );
        assert_eq!(
            bearer.error_description.as_deref(),
            Some("Additional file write permission required")
        );
    }

    #[test]
    fn several_challenges_in_one_field_and_across_fields() {
        // RFC 9110 section 11.6.1's example.
        let found =
            one(r#"Basic realm="simple", Newauth realm="apps", type=1, title="Login to \"apps\"""#)
                .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].scheme(), "Basic");
        assert_eq!(params(&found[0]), [("realm", "simple")]);
        assert_eq!(found[1].scheme(), "Newauth");
        assert_eq!(
            params(&found[1]),
            [
                ("realm", "apps"),
                ("type", "1"),
                ("title", "Login to \"apps\"")
            ]
        );

        let found = parse([
            b"Negotiate".as_slice(),
            b"DPoP algs=\"ES256\", bearer error=invalid_token".as_slice(),
        ])
        .unwrap();
        let schemes: Vec<&str> = found.iter().map(Challenge::scheme).collect();
        assert_eq!(schemes, ["Negotiate", "DPoP", "bearer"]);
        // The scheme is case-insensitive.
        let bearer = BearerChallenge::find(&found).unwrap();
        assert_eq!(bearer.error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn token68_and_bare_schemes() {
        let found = one("Negotiate a87421000492aa874209af8bc028==, Bearer").unwrap();
        assert_eq!(found[0].token68(), Some("a87421000492aa874209af8bc028=="));
        assert!(found[0].params.is_empty());
        assert!(found[1].is("BEARER"));
        assert_eq!(
            BearerChallenge::find(&found),
            Some(BearerChallenge::default())
        );
        // `abc=` at the element's end is a token68 with padding, not an empty parameter.
        let found = one("X abc=").unwrap();
        assert_eq!(found[0].token68(), Some("abc="));
        let found = one("Bearer scope=").unwrap();
        assert_eq!(found[0].token68(), Some("scope="));
        assert_eq!(found[0].param("scope"), None);
    }

    #[test]
    fn whitespace_case_and_empty_elements() {
        let found = one(" ,, Bearer  Scope = \"a b\" ,\tRESOURCE_METADATA=x ,, ").unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].param("scope"), Some("a b"));
        assert_eq!(found[0].param("resource_metadata"), Some("x"));
        assert_eq!(one("").unwrap(), []);
        assert_eq!(one(" , ").unwrap(), []);
        // A quoted string may be empty, and escapes any visible character.
        let found = one(r#"Bearer scope="", error_description="a\\b\"c\d""#).unwrap();
        assert_eq!(found[0].param("scope"), Some(""));
        assert_eq!(found[0].param("error_description"), Some(r#"a\b"cd"#));
        // UTF-8 in a quoted string (obs-text) is kept.
        let found = one("Bearer error_description=\"d\u{e9}j\u{e0} vu\"").unwrap();
        assert_eq!(found[0].param("error_description"), Some("déjà vu"));
    }

    #[test]
    fn hostile_inputs_are_refused() {
        let cases: &[(&[u8], ChallengeError)] = &[
            (b"=x", ChallengeError::ExpectedScheme),
            (b"\"Bearer\"", ChallengeError::ExpectedScheme),
            (b"Bearer=x", ChallengeError::ExpectedSpace),
            (b"Bearer\"x\"", ChallengeError::ExpectedSpace),
            (b"Bearer scope=\"open", ChallengeError::BadQuotedString),
            (b"Bearer scope=\"a\\", ChallengeError::BadQuotedString),
            (b"Bearer scope=\"a\nb\"", ChallengeError::BadQuotedString),
            (b"Bearer scope=\"a\0b\"", ChallengeError::BadQuotedString),
            (b"Bearer scope=\"\\\x7f\"", ChallengeError::BadQuotedString),
            (b"Bearer scope=, error=x", ChallengeError::ExpectedSpace),
            (b"Bearer scope=a b", ChallengeError::ExpectedComma),
            (b"Bearer scope=\"a\"b", ChallengeError::ExpectedComma),
            (b"Bearer abc== def", ChallengeError::ExpectedValue),
            (b"Bearer scope=a, SCOPE=b", ChallengeError::DuplicateParam),
            (b"Bearer scope=\"\xff\"", ChallengeError::NotUtf8),
            (b"Bearer scope=\xc3\xa9", ChallengeError::ExpectedValue),
            (b"Bearer \xc3\xa9=x", ChallengeError::ExpectedParams),
            (b"Neg abc==x", ChallengeError::ExpectedValue),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse([*input]),
                Err(*expected),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn limits() {
        let long = format!("Bearer scope=\"{}\"", "a".repeat(MAX_CHALLENGE_BYTES));
        assert_eq!(one(&long), Err(ChallengeError::TooLong));
        // The limit counts all fields together.
        let half = "a".repeat(MAX_CHALLENGE_BYTES / 2);
        let field = format!("Bearer scope={half}");
        assert_eq!(
            parse([field.as_bytes(), field.as_bytes()]),
            Err(ChallengeError::TooLong)
        );
        let many = vec!["Basic"; MAX_CHALLENGES + 1].join(", ");
        assert_eq!(one(&many), Err(ChallengeError::TooManyChallenges));
        assert_eq!(
            one(&vec!["Basic"; MAX_CHALLENGES].join(", ")).map(|c| c.len()),
            Ok(MAX_CHALLENGES)
        );
        let params: Vec<String> = (0..=MAX_PARAMS).map(|i| format!("p{i}=v")).collect();
        assert_eq!(
            one(&format!("Bearer {}", params.join(", "))),
            Err(ChallengeError::TooManyParams)
        );
        assert!(one(&format!("Bearer {}", params[..MAX_PARAMS].join(", "))).is_ok());
    }

    #[test]
    fn every_prefix_and_byte_flip_is_handled() {
        // No input panics: every cut of a real header, and every one-byte change of it.
        let text = br#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://h/.well-known/oauth-protected-resource", error_description="need \"write\"", Basic realm=x, Negotiate abc=="#;
        for cut in 0..=text.len() {
            let _ = parse([&text[..cut]]);
        }
        for at in 0..text.len() {
            for b in [0u8, b' ', b',', b'=', b'"', b'\\', 0xff] {
                let mut changed = text.to_vec();
                changed[at] = b;
                let _ = parse([changed.as_slice()]);
            }
        }
        let whole = parse([text.as_slice()]).unwrap();
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].param("error_description"), Some("need \"write\""));
    }

    #[test]
    fn bearer_reads_the_header_map() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(bearer(&headers), Ok(None));
        headers.append(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Basic realm=x"),
        );
        assert_eq!(bearer(&headers), Ok(None));
        headers.append(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer scope=\"mcp:basic\""),
        );
        assert_eq!(
            bearer(&headers).unwrap().unwrap().scope.as_deref(),
            Some("mcp:basic")
        );
    }
}
