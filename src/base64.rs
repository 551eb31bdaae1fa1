//! Base64 (RFC 4648): the one encoder and decoder of the crate, for `Mcp-*` header values, the
//! fixture payloads, `Basic` credentials, and the URL-safe alphabet of PKCE and JWTs.

/// Which of the two RFC 4648 alphabets, and whether the encoding pads to a multiple of four.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// Section 4: `+` and `/`, padded with `=`.
    Standard,
    /// Section 5: `-` and `_`, no padding (as JWS and PKCE use it).
    #[cfg_attr(not(feature = "auth"), allow(dead_code))]
    UrlSafe,
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Flavor {
    fn alphabet(self) -> &'static [u8; 64] {
        match self {
            Flavor::Standard => STANDARD,
            Flavor::UrlSafe => URL_SAFE,
        }
    }
}

/// `bytes` encoded.
// The parser-only builds encode only in place (`mcp::headers`).
#[cfg_attr(not(any(feature = "fixtures", feature = "auth")), allow(dead_code))]
pub(crate) fn encode(bytes: &[u8], flavor: Flavor) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    encode_into(bytes, flavor, &mut out);
    out
}

/// `bytes` encoded, appended to `out`.
pub(crate) fn encode_into(bytes: &[u8], flavor: Flavor, out: &mut String) {
    let alphabet = flavor.alphabet();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(alphabet[((n >> shift) & 63) as usize]));
            } else if flavor == Flavor::Standard {
                out.push('=');
            }
        }
    }
}

/// How a decoder treats `=` padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Padding {
    /// The text is a multiple of four characters, padded with `=` as needed.
    Required,
    /// Padding may be there or not.
    #[cfg_attr(not(feature = "fixtures"), allow(dead_code))]
    Optional,
}

/// The bytes `text` encodes, or `None` when it is not base64 of that flavor: a character
/// outside the alphabet, padding where it cannot be, a length no encoding has, or bits left
/// over that are not zero (so every byte string has exactly one accepted encoding per form).
pub(crate) fn decode(text: &str, flavor: Flavor, padding: Padding) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let body = match bytes.iter().position(|&b| b == b'=') {
        Some(start) => {
            let pad = &bytes[start..];
            if pad.len() > 2 || pad.iter().any(|&b| b != b'=') || !bytes.len().is_multiple_of(4) {
                return None;
            }
            &bytes[..start]
        }
        None => {
            if padding == Padding::Required && !bytes.len().is_multiple_of(4) {
                return None;
            }
            bytes
        }
    };
    if body.len() % 4 == 1 {
        return None;
    }
    let alphabet = flavor.alphabet();
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        let value = alphabet.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // The leftover bits of the last character must be zero.
    (acc == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(encode(plain.as_bytes(), Flavor::Standard), encoded);
            assert_eq!(
                encode(plain.as_bytes(), Flavor::UrlSafe),
                encoded.trim_end_matches('=')
            );
            assert_eq!(
                decode(encoded, Flavor::Standard, Padding::Required).as_deref(),
                Some(plain.as_bytes())
            );
            assert_eq!(
                decode(
                    encoded.trim_end_matches('='),
                    Flavor::UrlSafe,
                    Padding::Optional
                )
                .as_deref(),
                Some(plain.as_bytes())
            );
        }
    }

    #[test]
    fn round_trips_every_length_and_byte() {
        let data: Vec<u8> = (0..=255u8).rev().collect();
        for len in 0..data.len() {
            for flavor in [Flavor::Standard, Flavor::UrlSafe] {
                let text = encode(&data[..len], flavor);
                assert_eq!(
                    decode(&text, flavor, Padding::Optional).as_deref(),
                    Some(&data[..len])
                );
            }
        }
        assert_eq!(encode(&[0xfb, 0xff], Flavor::Standard), "+/8=");
        assert_eq!(encode(&[0xfb, 0xff], Flavor::UrlSafe), "-_8");
    }

    #[test]
    fn refuses_what_is_not_base64() {
        for bad in [
            "Zm9v!", "Zg", "Zg=", "Z===", "Zm9vY", "Zm=v", "Zh==", "Zm9=", "====", "Zm8==",
        ] {
            assert_eq!(
                decode(bad, Flavor::Standard, Padding::Required),
                None,
                "{bad:?}"
            );
        }
        // Unpadded forms only where padding is optional; no whitespace anywhere.
        assert_eq!(
            decode("Zg", Flavor::Standard, Padding::Optional),
            Some(b"f".to_vec())
        );
        assert_eq!(decode("Zm9v Zg", Flavor::Standard, Padding::Optional), None);
        // Each alphabet refuses the other's two characters.
        assert_eq!(decode("-_8", Flavor::Standard, Padding::Optional), None);
        assert_eq!(decode("+/8", Flavor::UrlSafe, Padding::Optional), None);
    }
}
