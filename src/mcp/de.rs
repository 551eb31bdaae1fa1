//! One-pass deserialization for types that keep unknown members: a visitor reads each member
//! once, straight into its typed slot or into the `extra` map, with no buffering.
//!
//! `#[serde(flatten)]` on an `extra` map makes serde's derive buffer every member of the object
//! as `Content` and deserialize the struct from that buffer afterwards: two passes, an
//! allocation per member, and no way for a member to borrow from or capture raw JSON of the
//! input. [`open_struct!`] generates the same behaviour by hand: known members into their
//! fields (a second occurrence is an error, as with derive; a missing required one too), any
//! other member into `extra` as a [`Value`] (a second occurrence replaces the first, as with
//! flatten).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::common::JsonObject;
use crate::jsonrpc::STRING_OR_RAW_TOKEN;

/// A member name, borrowed from the input when it holds no escapes.
pub(crate) struct MemberName<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = MemberName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Borrowed(v)))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

/// Something that takes the members of one JSON object one at a time, then builds a value.
pub(crate) trait Members {
    /// What the members build.
    type Output;

    /// Reads the value of the member `key` from `value`.
    fn member<'de, D: Deserializer<'de>>(
        &mut self,
        key: Cow<'_, str>,
        value: D,
    ) -> Result<(), D::Error>;

    /// Builds the value once every member is in; fails if a required member is missing.
    fn finish<E: Error>(self) -> Result<Self::Output, E>;
}

/// Hands one member's value to [`Members::member`] from inside `MapAccess::next_value_seed`.
pub(crate) struct MemberSeed<'b, 'k, B>(pub(crate) &'b mut B, pub(crate) Cow<'k, str>);

impl<'de, B: Members> DeserializeSeed<'de> for MemberSeed<'_, '_, B> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.0.member(self.1, deserializer)
    }
}

/// Deserializes a JSON object member by member into `B`.
pub(crate) fn deserialize_members<'de, B: Members + Default, D: Deserializer<'de>>(
    deserializer: D,
    expecting: &'static str,
) -> Result<B::Output, D::Error> {
    struct MembersVisitor<B>(&'static str, PhantomData<B>);
    impl<'de, B: Members + Default> Visitor<'de> for MembersVisitor<B> {
        type Value = B::Output;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<B::Output, A::Error> {
            let mut builder = B::default();
            while let Some(MemberName(key)) = map.next_key()? {
                map.next_value_seed(MemberSeed(&mut builder, key))?;
            }
            builder.finish()
        }
    }
    deserializer.deserialize_map(MembersVisitor::<B>(expecting, PhantomData))
}

/// Deserializes a known member into its slot, refusing a second occurrence.
pub(crate) fn once<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    slot: &mut Option<T>,
    value: D,
    name: &'static str,
) -> Result<(), D::Error> {
    if slot.is_some() {
        return Err(D::Error::duplicate_field(name));
    }
    *slot = Some(T::deserialize(value)?);
    Ok(())
}

/// [`once`] for a string that may be large (a tool result's text): read in one copy.
///
/// serde_json unescapes a string holding escapes (a text of many lines holds `\n`s) into a
/// scratch buffer of its own, grown by doubling, and only then copies it out: a 10 MiB text
/// was held twice over beside the input, plus the scratch's slack. Here the string's JSON text
/// is copied out once, exactly sized (as a raw value: serde_json checks its syntax without
/// unescaping it), and unescaped where it lies, so the copy becomes the string.
pub(crate) fn once_string<'de, D: Deserializer<'de>>(
    slot: &mut Option<String>,
    value: D,
    name: &'static str,
) -> Result<(), D::Error> {
    if slot.is_some() {
        return Err(D::Error::duplicate_field(name));
    }
    match read_raw(value)? {
        Ok(string) => *slot = Some(string),
        Err(raw) => {
            let unexpected = match raw.get().as_bytes().first() {
                Some(b't' | b'f') => Unexpected::Other("a boolean"),
                Some(b'n') => Unexpected::Unit,
                Some(b'[') => Unexpected::Seq,
                Some(b'{') => Unexpected::Map,
                _ => Unexpected::Other("a number"),
            };
            return Err(D::Error::invalid_type(unexpected, &"a string"));
        }
    }
    Ok(())
}

/// Any JSON value, a string read in one copy as [`once_string`] reads it: for a member that
/// may be a large text but must wait for its object's `type` to be known.
pub(crate) fn value_one_copy<'de, D: Deserializer<'de>>(value: D) -> Result<Value, D::Error> {
    match read_raw(value)? {
        Ok(string) => Ok(Value::String(string)),
        Err(raw) => serde_json::from_str(raw.get()).map_err(D::Error::custom),
    }
}

/// A value's JSON text, copied out once: a string unescaped where it lies, anything else
/// left raw. The fast reader hands over a string without escapes as it is, read in one pass
/// ([`STRING_OR_RAW_TOKEN`]); every other reader gives the value raw.
fn read_raw<'de, D: Deserializer<'de>>(
    value: D,
) -> Result<Result<String, Box<RawValue>>, D::Error> {
    struct StringOrRaw;
    impl<'de> Visitor<'de> for StringOrRaw {
        type Value = Result<String, Box<RawValue>>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Ok(text.to_owned()))
        }

        fn visit_newtype_struct<D: Deserializer<'de>>(
            self,
            value: D,
        ) -> Result<Self::Value, D::Error> {
            let raw = Box::<RawValue>::deserialize(value)?;
            if !raw.get().starts_with('"') {
                return Ok(Err(raw));
            }
            let literal = String::from(Box::<str>::from(raw)).into_bytes();
            unescape_in_place(literal).map(Ok).map_err(D::Error::custom)
        }
    }
    value.deserialize_newtype_struct(STRING_OR_RAW_TOKEN, StringOrRaw)
}

/// The string a JSON string literal (quotes included, its syntax already checked) stands
/// for, unescaped in the literal's own buffer: the text only ever moves towards the start.
/// A `\u` escape of half a surrogate pair without its other half is refused, as serde_json
/// refuses it for a `String`.
pub(crate) fn unescape_in_place(mut literal: Vec<u8>) -> Result<String, &'static str> {
    const TRUNCATED: &str = "a JSON string ends inside an escape";
    let end = literal.len().saturating_sub(1);
    let mut read = 1;
    let mut write = 0;
    while read < end {
        let Some(offset) = memchr::memchr(b'\\', &literal[read..end]) else {
            literal.copy_within(read..end, write);
            write += end - read;
            break;
        };
        literal.copy_within(read..read + offset, write);
        write += offset;
        read += offset + 1;
        let escaped = *literal.get(read).filter(|_| read < end).ok_or(TRUNCATED)?;
        read += 1;
        let byte = match escaped {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (character, used) = hex_escape(&literal[read..end])?;
                read += used;
                let mut utf8 = [0; 4];
                let encoded = character.encode_utf8(&mut utf8).as_bytes();
                // Never past `read`: an escape is at least as long as its UTF-8 (six bytes
                // for up to three, twelve for a pair's four).
                literal[write..write + encoded.len()].copy_from_slice(encoded);
                write += encoded.len();
                continue;
            }
            _ => return Err("an invalid escape in a JSON string"),
        };
        literal[write] = byte;
        write += 1;
    }
    literal.truncate(write);
    literal.shrink_to_fit();
    String::from_utf8(literal).map_err(|_| "a JSON string is not UTF-8")
}

/// The character of a `\u` escape whose `XXXX` starts `after_u` (a surrogate pair's second
/// escape read too), and how many bytes it used.
fn hex_escape(after_u: &[u8]) -> Result<(char, usize), &'static str> {
    let four = |at: usize| -> Result<u32, &'static str> {
        let digits = after_u
            .get(at..at + 4)
            .ok_or("a JSON string ends inside an escape")?;
        digits.iter().try_fold(0, |code, &digit| {
            let value = char::from(digit)
                .to_digit(16)
                .ok_or("an invalid \\u escape in a JSON string")?;
            Ok(code * 16 + value)
        })
    };
    let lone = "a lone surrogate in a \\u escape of a JSON string";
    let first = four(0)?;
    match first {
        0xD800..=0xDBFF => {
            if after_u.get(4..6) != Some(b"\\u") {
                return Err(lone);
            }
            let second = four(6)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return Err(lone);
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            Ok((char::from_u32(code).ok_or(lone)?, 10))
        }
        0xDC00..=0xDFFF => Err(lone),
        _ => Ok((char::from_u32(first).ok_or(lone)?, 4)),
    }
}

/// Deserializes an unknown member into `extra`; a later occurrence replaces an earlier one.
pub(crate) fn extra<'de, D: Deserializer<'de>>(
    extra: &mut JsonObject,
    key: Cow<'_, str>,
    value: D,
) -> Result<(), D::Error> {
    let value = Value::deserialize(value)?;
    extra.insert(key.into_owned(), value);
    Ok(())
}

/// A JSON object written with its members in the order given.
pub(crate) struct OrderedObject<'a, V>(pub(crate) &'a [(String, V)]);

impl<V: Serialize> Serialize for OrderedObject<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Implements `Deserialize` for a struct with an `extra: JsonObject` field, reading each member
/// once (see the [module docs](self)). Fields are listed with their wire names; `[required]`
/// marks those without which the object is refused, the others (`Option`s) default. Names under
/// `ignore` are skipped without being kept. Also defines `$builder`, the struct's [`Members`].
macro_rules! open_struct {
    (
        $name:ident via $builder:ident, expecting $expecting:literal,
        { $( $field:ident : $fty:ty = $wire:literal $([$req:ident])? $(via $read:path)? , )* }
        $( ignore [ $($skip:literal),* ] )?
    ) => {
        #[doc = concat!("Collects the members of one [`", stringify!($name), "`].")]
        pub(crate) struct $builder {
            $( $field: ::std::option::Option<$fty>, )*
            extra: $crate::mcp::JsonObject,
        }

        impl ::std::default::Default for $builder {
            fn default() -> Self {
                Self {
                    $( $field: None, )*
                    extra: $crate::mcp::JsonObject::new(),
                }
            }
        }

        impl $crate::mcp::de::Members for $builder {
            type Output = $name;

            fn member<'de, D: ::serde::Deserializer<'de>>(
                &mut self,
                key: ::std::borrow::Cow<'_, str>,
                value: D,
            ) -> ::std::result::Result<(), D::Error> {
                match &*key {
                    $( $wire => $crate::mcp::de::open_struct!(
                        @read self.$field, value, $wire $(, $read)?
                    ), )*
                    $( $( $skip => {
                        <::serde::de::IgnoredAny as ::serde::Deserialize>::deserialize(value)?;
                        Ok(())
                    } )* )?
                    _ => $crate::mcp::de::extra(&mut self.extra, key, value),
                }
            }

            fn finish<E: ::serde::de::Error>(self) -> ::std::result::Result<$name, E> {
                Ok($name {
                    $( $field: $crate::mcp::de::open_struct!(@take self.$field, $wire $(, $req)?), )*
                    extra: self.extra,
                })
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                $crate::mcp::de::deserialize_members::<$builder, D>(deserializer, $expecting)
            }
        }
    };
    (@read $slot:expr, $value:ident, $wire:literal) => {
        $crate::mcp::de::once(&mut $slot, $value, $wire)
    };
    (@read $slot:expr, $value:ident, $wire:literal, $read:path) => {
        $read(&mut $slot, $value, $wire)
    };
    (@take $slot:expr, $wire:literal) => {
        $slot.unwrap_or_default()
    };
    (@take $slot:expr, $wire:literal, required) => {
        match $slot {
            Some(value) => value,
            None => return Err(E::missing_field($wire)),
        }
    };
}
pub(crate) use open_struct;
