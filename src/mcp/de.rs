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

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::common::JsonObject;

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
        { $( $field:ident : $fty:ty = $wire:literal $([$req:ident])? , )* }
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
                    $( $wire => $crate::mcp::de::once(&mut self.$field, value, $wire), )*
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
