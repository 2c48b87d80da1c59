//! A webhook subscription: what an organisation asked to be told, where, and the secrets its
//! deliveries are signed with. The stored form holds the secrets; the form callers read never
//! does (the secret is answered once, by the call that made it).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use url::{Host, Url};

use crate::documents::source::{forbidden, AllowList};
use crate::error::{Error, Result};

/// The event types a subscription may name.
pub const EVENTS: [&str; 6] = [
    "consignment.created",
    "consignment.updated",
    "consignment.event_added",
    "consignment.document_added",
    "consignment.shared",
    "consignment.unshared",
];

/// How long a secret replaced by a rotation keeps signing (next to the new one).
pub const ROTATION_OVERLAP_MS: i64 = 24 * 3600 * 1000;

const MAX_URL_BYTES: usize = 2048;
const MAX_DESCRIPTION_CHARS: usize = 500;

/// Which consignments' events a subscription wants, beyond those its organisation may read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_of_entry_country_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_of_exit_country_id: Option<String>,
    /// `own`, `shared` or `all` (none: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// A signing secret: `whsec_` and the base64 of its key bytes; `until` (ms) when rotated out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret {
    pub secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
}

impl Secret {
    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        Self {
            secret: format!("whsec_{}", STANDARD.encode(key)),
            until: None,
        }
    }

    /// The key bytes the signature is keyed with.
    pub fn key(&self) -> Vec<u8> {
        let b64 = self.secret.strip_prefix("whsec_").unwrap_or(&self.secret);
        STANDARD.decode(b64).unwrap_or_default()
    }
}

/// A subscription as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub id: String,
    pub organization: String,
    pub url: String,
    pub events: Vec<String>,
    pub filter: Filter,
    pub full: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `enabled` or `disabled`.
    pub state: String,
    pub created: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<String>,
    /// Failed attempts since the last delivery.
    #[serde(default)]
    pub failures: u32,
    /// The newest first; those rotated out carry `until`.
    pub secrets: Vec<Secret>,
}

impl Subscription {
    /// What callers read: everything but the secrets and the owner.
    pub fn public(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "url": self.url,
            "events": self.events,
            "filter": self.filter,
            "full": self.full,
            "state": self.state,
            "created": self.created,
        });
        let o = v.as_object_mut().expect("an object");
        let optional = [
            ("description", &self.description),
            ("updated", &self.updated),
            ("lastError", &self.last_error),
            ("disabledAt", &self.disabled_at),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                o.insert(name.into(), Value::String(value.clone()));
            }
        }
        v
    }

    /// The secrets that sign at `now_ms`: the current one and any rotated out less than
    /// [`ROTATION_OVERLAP_MS`] ago.
    pub fn signing(&self, now_ms: i64) -> Vec<&Secret> {
        self.secrets
            .iter()
            .filter(|s| s.until.is_none_or(|until| until > now_ms))
            .collect()
    }

    pub fn enabled(&self) -> bool {
        self.state == "enabled"
    }
}

/// What a create or a change asks for, checked: every field it names.
#[derive(Debug, Default)]
pub struct Changes {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub filter: Option<Filter>,
    pub full: Option<bool>,
    pub description: Option<Option<String>>,
    pub state: Option<String>,
}

impl Changes {
    /// Checks a `POST` (`creating`: `url` and `events` required, `state` not accepted) or a
    /// `PATCH` body; 400 naming the first field at fault.
    pub fn parse(
        body: &Map<String, Value>,
        creating: bool,
        allow_http: &AllowList,
    ) -> Result<Self> {
        let mut out = Changes::default();
        for (key, value) in body {
            match key.as_str() {
                "url" => out.url = Some(url(value, allow_http)?),
                "events" => out.events = Some(events(value)?),
                "filter" => out.filter = Some(filter(value)?),
                "full" => {
                    out.full = Some(
                        value
                            .as_bool()
                            .ok_or_else(|| Error::invalid_field("full", "must be true or false"))?,
                    )
                }
                "description" => out.description = Some(description(value)?),
                "state" if !creating => out.state = Some(state(value)?),
                other => {
                    return Err(Error::invalid_field(other, "not a field of a subscription"));
                }
            }
        }
        if creating {
            if out.url.is_none() {
                return Err(Error::invalid_field("url", "required"));
            }
            if out.events.is_none() {
                return Err(Error::invalid_field("events", "required"));
            }
        }
        Ok(out)
    }
}

fn url(value: &Value, allow_http: &AllowList) -> Result<String> {
    let bad = |why: &str| Error::invalid_field("url", why);
    let text = value.as_str().ok_or_else(|| bad("must be a string"))?;
    if text.len() > MAX_URL_BYTES {
        return Err(bad("longer than 2048 bytes"));
    }
    let parsed = Url::parse(text).map_err(|e| bad(&format!("not a URL: {e}")))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_http.allows(&parsed) => {}
        "http" => {
            return Err(bad(
                "http:// only to hosts listed in --webhook-allow-http; use https://",
            ))
        }
        _ => return Err(bad("must be an https:// URL")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("must not carry a user name or password"));
    }
    if parsed.fragment().is_some() {
        return Err(bad("must not have a fragment"));
    }
    // An address given as such is judged now; names are judged at every connection.
    let ip = match parsed.host() {
        Some(Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
        Some(Host::Domain(_)) => None,
        None => return Err(bad("must name a host")),
    };
    if ip.is_some_and(|ip| forbidden(ip) && !allow_http.lists_ip(ip)) {
        return Err(bad(
            "a loopback, private, link-local or metadata address is refused unless listed in \
             --webhook-allow-http",
        ));
    }
    Ok(parsed.to_string())
}

fn events(value: &Value) -> Result<Vec<String>> {
    let bad = |why: String| Error::invalid_field("events", why);
    let items = value
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad("must be a non-empty array of event types".into()))?;
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let name = item
            .as_str()
            .ok_or_else(|| bad("must be a non-empty array of event types".into()))?;
        if !EVENTS.contains(&name) {
            return Err(bad(format!(
                "unknown event {name:?}; known: {}",
                EVENTS.join(", ")
            )));
        }
        if !out.iter().any(|e| e == name) {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

fn filter(value: &Value) -> Result<Filter> {
    let object = value
        .as_object()
        .ok_or_else(|| Error::invalid_field("filter", "must be an object"))?;
    let mut out = Filter::default();
    for (key, value) in object {
        let field = format!("filter.{key}");
        let text = value
            .as_str()
            .ok_or_else(|| Error::invalid_field(&field, "must be a string"))?;
        match key.as_str() {
            "portOfEntryCountryId" | "portOfExitCountryId" => {
                if text.len() != 2 || !text.bytes().all(|b| b.is_ascii_uppercase()) {
                    return Err(Error::invalid_field(
                        &field,
                        "must be an ISO 3166-1 alpha-2 country code (two capital letters)",
                    ));
                }
                if key == "portOfEntryCountryId" {
                    out.port_of_entry_country_id = Some(text.to_owned());
                } else {
                    out.port_of_exit_country_id = Some(text.to_owned());
                }
            }
            "scope" => {
                if !matches!(text, "own" | "shared" | "all") {
                    return Err(Error::invalid_field(&field, "must be own, shared or all"));
                }
                out.scope = Some(text.to_owned());
            }
            _ => return Err(Error::invalid_field(&field, "not a filter")),
        }
    }
    Ok(out)
}

fn description(value: &Value) -> Result<Option<String>> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.chars().count() <= MAX_DESCRIPTION_CHARS => Ok(Some(s.clone())),
        _ => Err(Error::invalid_field(
            "description",
            "must be a string of at most 500 characters",
        )),
    }
}

fn state(value: &Value) -> Result<String> {
    match value.as_str() {
        Some(s @ ("enabled" | "disabled")) => Ok(s.to_owned()),
        _ => Err(Error::invalid_field("state", "must be enabled or disabled")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value, allow: &[&str]) -> Result<Changes> {
        let allow =
            AllowList::parse(&allow.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        Changes::parse(body.as_object().unwrap(), true, &allow)
    }

    fn field(r: Result<Changes>) -> String {
        match r {
            Err(Error::BadRequest { properties, .. }) => properties["field"].to_string(),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn urls_are_https_or_listed_http_and_never_a_forbidden_address() {
        let ok = |u: &str, allow: &[&str]| parse(json!({"url": u, "events": [EVENTS[0]]}), allow);
        assert!(ok("https://hooks.example.com/x", &[]).is_ok());
        assert!(ok("http://127.0.0.1:9000/x", &["127.0.0.1"]).is_ok());
        for bad in [
            "not a url",
            "ftp://hooks.example.com/x",
            "http://hooks.example.com/x",
            "https://169.254.169.254/latest",
            "https://10.0.0.1/x",
            "https://u:p@hooks.example.com/x",
        ] {
            assert_eq!(field(ok(bad, &[])), "\"url\"", "{bad}");
        }
        // Listed with a port, a forbidden address is still refused for names and other ports.
        assert!(ok("http://127.0.0.1:9000/x", &["127.0.0.1:9000"]).is_err());
    }

    #[test]
    fn events_and_filters_are_checked_by_name() {
        let base = |extra: Value| {
            let mut b = json!({"url": "https://h.example/x", "events": ["consignment.created"]});
            for (k, v) in extra.as_object().unwrap() {
                b[k] = v.clone();
            }
            parse(b, &[])
        };
        assert_eq!(field(base(json!({"events": ["nope"]}))), "\"events\"");
        assert_eq!(field(base(json!({"events": []}))), "\"events\"");
        assert_eq!(
            field(base(json!({"filter": {"port": "KE"}}))),
            "\"filter.port\""
        );
        assert_eq!(
            field(base(json!({"filter": {"scope": "mine"}}))),
            "\"filter.scope\""
        );
        assert_eq!(
            field(base(json!({"filter": {"portOfEntryCountryId": "ke"}}))),
            "\"filter.portOfEntryCountryId\""
        );
        assert_eq!(field(base(json!({"state": "enabled"}))), "\"state\"");
        assert_eq!(field(base(json!({"extra": 1}))), "\"extra\"");
        let ok = base(
            json!({"filter": {"portOfEntryCountryId": "KE", "scope": "shared"},
            "full": true, "description": "customs"}),
        )
        .unwrap();
        assert_eq!(ok.filter.unwrap().scope.as_deref(), Some("shared"));
    }

    #[test]
    fn secrets_sign_until_their_overlap_ends() {
        let (new, mut old) = (Secret::generate(), Secret::generate());
        assert_eq!(new.key().len(), 32);
        old.until = Some(1_000);
        let s = Subscription {
            id: "x".into(),
            organization: "o".into(),
            url: "https://h.example/".into(),
            events: vec![EVENTS[0].into()],
            filter: Filter::default(),
            full: false,
            description: None,
            state: "enabled".into(),
            created: "2026-01-01T00:00:00.000Z".into(),
            updated: None,
            last_error: None,
            disabled_at: None,
            failures: 0,
            secrets: vec![new, old],
        };
        assert_eq!(s.signing(999).len(), 2);
        assert_eq!(s.signing(1_000).len(), 1);
        assert!(!s.public().to_string().contains("whsec_"));
    }
}
