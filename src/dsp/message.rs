//! What connectors send, checked, and the protocol's error bodies (`CatalogError`,
//! `ContractNegotiationError`, `TransferError`: `{@context, @type, code, reason}`).

use serde_json::{json, Map, Value};

use super::CONTEXT;
use crate::error::{Error, Result};

/// `body` as a DSP message of type `kind`: a JSON object whose `@context` holds the DSP
/// context (as an array, or the one string a lenient sender writes) and whose `@type` is
/// `kind` (compact, or as the `dspace:` IRI).
pub fn check<'a>(body: &'a Value, kind: &str) -> Result<&'a Map<String, Value>> {
    let object = body
        .as_object()
        .ok_or_else(|| Error::bad_request(format!("a {kind} must be a JSON object")))?;
    let has_context = match object.get("@context") {
        Some(Value::String(c)) => c == CONTEXT,
        Some(Value::Array(cs)) => cs.iter().any(|c| c.as_str() == Some(CONTEXT)),
        _ => false,
    };
    if !has_context {
        return Err(Error::invalid_field(
            "@context",
            format!("must hold {CONTEXT}"),
        ));
    }
    let named = object.get("@type").and_then(Value::as_str).map(|t| {
        t.strip_prefix("https://w3id.org/dspace/2025/1/")
            .or_else(|| t.strip_prefix("dspace:"))
            .unwrap_or(t)
    });
    if named != Some(kind) {
        return Err(Error::invalid_field("@type", format!("must be {kind}")));
    }
    Ok(object)
}

/// A required string member, 400 naming it otherwise.
pub fn required_str(m: &Map<String, Value>, name: &str) -> Result<String> {
    match m.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(Error::invalid_field(name, "required, a string")),
    }
}

/// A message about process `p` names both its pids.
pub fn pids(m: &Map<String, Value>, p: &super::process::Process) -> Result<()> {
    if required_str(m, "providerPid")? != p.provider_pid {
        return Err(Error::invalid_field("providerPid", "not this process's"));
    }
    if required_str(m, "consumerPid")? != p.consumer_pid {
        return Err(Error::invalid_field("consumerPid", "not this process's"));
    }
    Ok(())
}

/// An error body of the protocol: `kind` is `CatalogError`, `ContractNegotiationError` or
/// `TransferError`; the code is the HTTP status.
pub fn error_body(kind: &str, status: u16, reason: &str) -> Value {
    json!({
        "@context": [CONTEXT],
        "@type": kind,
        "code": status.to_string(),
        "reason": [reason],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_and_type_are_required() {
        let ok = json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"});
        assert!(check(&ok, "CatalogRequestMessage").is_ok());
        let lenient = json!({"@context": CONTEXT, "@type": "dspace:CatalogRequestMessage"});
        assert!(check(&lenient, "CatalogRequestMessage").is_ok());
        for bad in [
            json!([1]),
            json!({"@type": "CatalogRequestMessage"}),
            json!({"@context": ["https://example.com/other"], "@type": "CatalogRequestMessage"}),
            json!({"@context": [CONTEXT], "@type": "Catalog"}),
            json!({"@context": [CONTEXT]}),
        ] {
            assert!(check(&bad, "CatalogRequestMessage").is_err(), "{bad}");
        }
    }
}
