//! An RFC 3339 timestamp with an explicit offset, parsed once and kept as written.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use std::fmt;

/// An instant the client wrote as RFC 3339 with an offset (`Z` or `±hh:mm`). It serialises to
/// the text it was parsed from, so a stored body reads back exactly as it was sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Timestamp {
    text: String,
    at: DateTime<Utc>,
}

impl Timestamp {
    /// A bare local time is refused: its instant is unknowable.
    pub fn parse(text: &str) -> Result<Self, chrono::ParseError> {
        let at = DateTime::parse_from_rfc3339(text.trim())?.with_timezone(&Utc);
        Ok(Self {
            text: text.to_owned(),
            at,
        })
    }

    pub fn instant(&self) -> DateTime<Utc> {
        self.at
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.text)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse(&text).map_err(|e| {
            de::Error::custom(format!(
                "{text:?} is not an RFC 3339 timestamp with an offset: {e}"
            ))
        })
    }
}
