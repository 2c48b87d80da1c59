//! The consignment as the node understands it, apart from how it is stored or served: ids and
//! read scopes, the summary columns of a list row, the ports derived from a description, what
//! a revision changed, code-list labels, the in-memory list order, paging cursors and the
//! clock's format. Use cases above build on it; it knows nothing of HTTP and nothing of the
//! use cases.

pub mod changes;
pub mod codes;
pub mod cursor;
pub mod listing;
pub mod ports;
pub mod rows;
pub mod summary;

use oxigraph::model::NamedNode;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::store::graphs;

/// Which consignment: the one type for it wherever the node names one (the inbox's records,
/// routing, notices to partner nodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsignmentRef {
    /// The node's id for it: 32 hex digits (`aig:<hex>` in the API).
    pub aig_hex: String,
    pub global_id: String,
    pub identifier: String,
    /// The publishing organisation's DID.
    pub publisher: String,
}

impl ConsignmentRef {
    /// `aig:<hex>`, as the API writes it.
    pub fn aig_id(&self) -> String {
        format!("aig:{}", self.aig_hex)
    }

    /// The root of the stored description (and the record in the node's index).
    pub fn node(&self) -> NamedNode {
        graphs::consignment(&self.aig_hex)
    }

    /// The publisher's contribution graph: the description, and the dataset partners pull.
    pub fn graph(&self) -> NamedNode {
        graphs::contribution(&self.aig_hex, &self.publisher)
    }
}

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Own,
    Shared,
    All,
}

impl Scope {
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value {
            None | Some("all") => Ok(Scope::All),
            Some("own") => Ok(Scope::Own),
            Some("shared") => Ok(Scope::Shared),
            Some(other) => Err(Error::invalid_field(
                "scope",
                format!("{other:?} is not one of own, shared, all"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Own => "own",
            Scope::Shared => "shared",
            Scope::All => "all",
        }
    }

    pub(crate) fn includes_own(self) -> bool {
        matches!(self, Scope::Own | Scope::All)
    }

    pub(crate) fn includes_shared(self) -> bool {
        matches!(self, Scope::Shared | Scope::All)
    }
}

/// `limit` as the spec has it: a string; default 20, 1 to 100.
pub fn parse_limit(value: Option<&str>) -> Result<usize> {
    let Some(text) = value else {
        return Ok(DEFAULT_LIMIT);
    };
    match text.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_LIMIT as i64).contains(&n) => Ok(n as usize),
        Ok(_) => Err(Error::invalid_field(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        )),
        Err(_) => Err(Error::invalid_field("limit", "must be a whole number")),
    }
}

pub struct Page {
    pub entities: Vec<Entity>,
    pub cursor: Option<String>,
    /// `discoveryFailed` warnings of partner datasets a list could not include.
    pub warnings: Vec<Value>,
}

/// One entity of a page: a JSON value, or a list row as the row cache keeps it — JSON text,
/// written into the page as it is (cloning and serialising 50 cached row objects was most of
/// the time of a list page served from the cache).
pub enum Entity {
    Value(Value),
    Text(std::sync::Arc<str>),
}

impl Page {
    pub fn new(entities: Vec<Value>, cursor: Option<String>) -> Self {
        Self {
            entities: entities.into_iter().map(Entity::Value).collect(),
            cursor,
            warnings: Vec::new(),
        }
    }

    /// `{"entities": [...], "cursor"?, "warnings"?}` as compact JSON text.
    pub fn to_json(&self) -> String {
        let mut body = String::from("{\"entities\":[");
        for (i, entity) in self.entities.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            match entity {
                Entity::Value(v) => body.push_str(&v.to_string()),
                Entity::Text(text) => body.push_str(text),
            }
        }
        body.push(']');
        if let Some(cursor) = &self.cursor {
            body.push_str(",\"cursor\":");
            body.push_str(&Value::from(cursor.as_str()).to_string());
        }
        if !self.warnings.is_empty() {
            body.push_str(",\"warnings\":");
            body.push_str(&Value::from(self.warnings.clone()).to_string());
        }
        body.push('}');
        body
    }
}

/// The time now as the node writes it (RFC 3339, milliseconds, UTC).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Milliseconds since the epoch in the form [`now`] writes.
pub fn format_millis(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_and_scope_parsing() {
        assert_eq!(parse_limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(parse_limit(Some("7")).unwrap(), 7);
        for bad in ["0", "-1", "101", "ten", "1.5", ""] {
            assert!(parse_limit(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(Scope::parse(None).unwrap(), Scope::All);
        assert_eq!(Scope::parse(Some("own")).unwrap(), Scope::Own);
        assert!(Scope::parse(Some("mine")).is_err());
    }

    #[test]
    fn a_page_written_as_text_is_the_page_as_json() {
        let row = serde_json::json!({"aigId": "aig:1", "ports": {"name": "Mombasa \"Kilindini\""}});
        let warning = serde_json::json!({"code": "discoveryFailed", "provider": "did:web:b"});
        let mut page = Page::new(vec![serde_json::json!({"b": 1, "a": [2]})], None);
        page.entities.push(Entity::Text(row.to_string().into()));
        assert_eq!(
            serde_json::from_str::<Value>(&page.to_json()).unwrap(),
            serde_json::json!({"entities": [{"b": 1, "a": [2]}, row]})
        );
        page.cursor = Some("c\u{e9}\"1".into());
        page.warnings.push(warning.clone());
        let text = page.to_json();
        assert_eq!(
            text,
            serde_json::json!({
                "entities": [{"b": 1, "a": [2]}, row],
                "cursor": "c\u{e9}\"1",
                "warnings": [warning],
            })
            .to_string()
        );
        assert_eq!(Page::new(Vec::new(), None).to_json(), r#"{"entities":[]}"#);
    }
}
