//! Request-level checks of an inbox activity: the things that make it a 400 (or 403) rather
//! than a failed task.

use serde_json::{Map, Value};

use crate::error::Error;
pub use crate::vocab::{AS_CONTEXT, AS_CONTEXT_ALIASES, UNECE_CONTEXT, UNECE_CONTEXT_ALIASES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Create,
    Update,
    Add,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Create => "Create",
            Kind::Update => "Update",
            Kind::Add => "Add",
        }
    }

    /// The system event recorded for it.
    pub fn system_event(self) -> &'static str {
        match self {
            Kind::Create => "CREATE",
            Kind::Update => "UPDATE",
            Kind::Add => "ADD",
        }
    }
}

/// An activity that passed the request-level checks.
pub struct Activity {
    pub kind: Kind,
    pub document: Map<String, Value>,
    /// `actor.registeredId.@value`.
    pub actor_did: String,
}

impl Activity {
    pub fn object(&self) -> &Map<String, Value> {
        self.document["object"]
            .as_object()
            .expect("checked in parse")
    }

    pub fn target(&self) -> Option<&Map<String, Value>> {
        self.document.get("target").and_then(Value::as_object)
    }
}

/// The spec's "string or JSON-LD value object": a JSON string, or an object whose `@value` is
/// a string (with `@type` or `@language`, or neither). Numbers, arrays and other objects are not.
pub fn is_string_or_value_object(value: &Value) -> bool {
    match value {
        Value::String(_) => true,
        Value::Object(o) => {
            o.get("@value").is_some_and(Value::is_string)
                && o.keys()
                    .all(|k| matches!(k.as_str(), "@value" | "@type" | "@language"))
        }
        _ => false,
    }
}

fn missing(field: &str) -> Error {
    Error::invalid_field(field, "required")
}

fn is_as_context(url: &str) -> bool {
    url == AS_CONTEXT || AS_CONTEXT_ALIASES.contains(&url)
}

/// Parses the body and applies the checks the spec's error table makes 400s. The actor must be
/// the caller's organisation (403 otherwise).
pub fn parse(body: &[u8], caller_org: &str) -> Result<Activity, Error> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::bad_request(format!("the activity is not valid JSON: {e}")))?;
    let Value::Object(document) = value else {
        return Err(Error::bad_request("the activity must be a JSON object"));
    };
    let kind = match document.get("type") {
        None | Some(Value::Null) => return Err(missing("type")),
        Some(Value::String(t)) => match t.as_str() {
            "Create" => Kind::Create,
            "Update" => Kind::Update,
            "Add" => Kind::Add,
            other => {
                return Err(Error::invalid_field(
                    "type",
                    format!("{other:?} is not one of Create, Update, Add"),
                ))
            }
        },
        Some(_) => return Err(Error::invalid_field("type", "must be a string")),
    };
    match document.get("@context") {
        None | Some(Value::Null) => return Err(missing("@context")),
        Some(Value::String(url)) if is_as_context(url) => {}
        Some(Value::Array(urls)) if urls.iter().any(|u| u.as_str().is_some_and(is_as_context)) => {}
        Some(_) => {
            return Err(Error::invalid_field(
                "@context",
                format!("must include the Activity Streams context {AS_CONTEXT}"),
            ))
        }
    }
    for field in ["actor", "object"] {
        match document.get(field) {
            None | Some(Value::Null) => return Err(missing(field)),
            Some(Value::Object(_)) => {}
            Some(_) => return Err(Error::invalid_field(field, "must be an object")),
        }
    }
    if kind == Kind::Add {
        match document.get("target") {
            None | Some(Value::Null) => return Err(missing("target")),
            Some(Value::Object(_)) => {}
            Some(_) => return Err(Error::invalid_field("target", "must be an object")),
        }
    }
    let actor_did = document["actor"]
        .get("registeredId")
        .and_then(|r| r.get("@value"))
        .and_then(Value::as_str)
        .ok_or_else(|| missing("actor.registeredId.@value"))?
        .to_owned();
    if actor_did != caller_org {
        return Err(Error::Forbidden(
            "the actor must be the organisation of the session (actor.registeredId.@value)".into(),
        ));
    }
    Ok(Activity {
        kind,
        document,
        actor_did,
    })
}

/// Canonical JSON text (object keys sorted, no insignificant white space): the same activity
/// posted twice has the same canonical form, whatever its key order or formatting.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// [`canonical_json`] of an object, without building a `Value` around it.
pub fn canonical_object(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_object(map, &mut out);
    out
}

fn write_object(map: &Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_unstable();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        write_canonical(&map[key], out);
    }
    out.push('}');
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_object(map, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ORG: &str = "did:web:node.example:org:1";

    fn activity(kind: &str) -> Value {
        json!({
            "@context": [AS_CONTEXT],
            "type": kind,
            "actor": {"@context": UNECE_CONTEXT, "type": "TradeParty",
                      "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": ORG}},
            "object": {"@context": UNECE_CONTEXT, "type": "Consignment"},
            "target": {"@context": UNECE_CONTEXT, "type": "Consignment", "globalId": "g"}
        })
    }

    fn field_of(e: Error) -> String {
        match e {
            Error::BadRequest {
                properties,
                message,
            } => properties
                .get("field")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or(message),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn each_missing_required_field_is_named() {
        for field in ["type", "@context", "actor", "object"] {
            let mut v = activity("Create");
            v.as_object_mut().unwrap().remove(field);
            let e = parse(v.to_string().as_bytes(), ORG).err().unwrap();
            assert_eq!(field_of(e), field);
        }
        let mut v = activity("Add");
        v.as_object_mut().unwrap().remove("target");
        assert_eq!(
            field_of(parse(v.to_string().as_bytes(), ORG).err().unwrap()),
            "target"
        );
    }

    #[test]
    fn wrong_type_context_and_actor() {
        let v = activity("Delete");
        assert_eq!(
            field_of(parse(v.to_string().as_bytes(), ORG).err().unwrap()),
            "type"
        );
        let mut v = activity("Create");
        v["@context"] = json!(UNECE_CONTEXT);
        assert_eq!(
            field_of(parse(v.to_string().as_bytes(), ORG).err().unwrap()),
            "@context"
        );
        let v = activity("Create");
        assert!(matches!(
            parse(v.to_string().as_bytes(), "did:web:other:org:2"),
            Err(Error::Forbidden(_))
        ));
        assert!(parse(b"[]", ORG).is_err());
        assert!(parse(b"{", ORG).is_err());
        assert!(parse(&[0xff, 0xfe], ORG).is_err());
    }

    #[test]
    fn canonical_form_ignores_key_order_and_spacing() {
        let a: Value =
            serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "s"}], "a": null}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":null,"b":[1,{"x":"s","y":2}]}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(canonical_json(&a), r#"{"a":null,"b":[1,{"x":"s","y":2}]}"#);
    }
}
