//! Opaque list cursors: the keyset position of the last row, bound to the caller's
//! organisation, scope and list, signed so a tampered or foreign cursor is a 400.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// Which list (`consignments`, `documents`).
    pub list: String,
    pub org: String,
    pub scope: String,
    /// Sort key of the last row returned (a date-time) and its tie-breaker id.
    pub at: String,
    pub id: String,
}

pub struct Cursors {
    key: Vec<u8>,
}

fn mac(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    m.update(payload);
    m.finalize().into_bytes()[..16].to_vec()
}

impl Cursors {
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    pub fn encode(&self, position: &Position) -> String {
        let payload = serde_json::to_vec(position).expect("serialisable");
        let tag = mac(&self.key, &payload);
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The position, if `cursor` was made by this node for this list, organisation and scope.
    pub fn decode(&self, cursor: &str, list: &str, org: &str, scope: &str) -> Result<Position> {
        let bad = || Error::invalid_field("cursor", "not a cursor this list handed out");
        let (payload, tag) = cursor.split_once('.').ok_or_else(bad)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| bad())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| bad())?;
        let expected = mac(&self.key, &payload);
        let same = tag.len() == expected.len()
            && tag
                .iter()
                .zip(&expected)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same {
            return Err(bad());
        }
        let position: Position = serde_json::from_slice(&payload).map_err(|_| bad())?;
        if position.list != list || position.org != org || position.scope != scope {
            return Err(bad());
        }
        Ok(position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position() -> Position {
        Position {
            list: "consignments".into(),
            org: "did:web:x:org:1".into(),
            scope: "all".into(),
            at: "2026-11-21T10:00:00Z".into(),
            id: "aig:00".into(),
        }
    }

    #[test]
    fn round_trip_and_rejections() {
        let c = Cursors::new(b"key");
        let token = c.encode(&position());
        assert_eq!(
            c.decode(&token, "consignments", "did:web:x:org:1", "all")
                .unwrap(),
            position()
        );
        assert!(c
            .decode(&token, "consignments", "did:web:x:org:2", "all")
            .is_err());
        assert!(c
            .decode(&token, "consignments", "did:web:x:org:1", "own")
            .is_err());
        assert!(c
            .decode(&token, "documents", "did:web:x:org:1", "all")
            .is_err());
        let mut tampered = token.clone();
        tampered.replace_range(0..1, if token.starts_with('A') { "B" } else { "A" });
        assert!(c
            .decode(&tampered, "consignments", "did:web:x:org:1", "all")
            .is_err());
        assert!(Cursors::new(b"other")
            .decode(&token, "consignments", "did:web:x:org:1", "all")
            .is_err());
        for junk in ["", ".", "abc", "a.b.c", "%%%.%%%"] {
            assert!(c
                .decode(junk, "consignments", "did:web:x:org:1", "all")
                .is_err());
        }
    }
}
