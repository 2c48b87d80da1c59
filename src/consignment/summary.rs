//! The ConsignmentSummary columns that come from the payload, built once at intake from the
//! spec's "Sources of the list summary" table. Per-viewer columns (`latestStatus`) and the
//! record's own (`id`, `aigId`, dates) are added at read time.
//!
//! Shapes the spec leaves "not shown" (documented in docs/API.md):
//! - `firstConsignor`, `lastConsignee`, `carrierParty`: `{name, countryId}`
//! - `tradeParty`: `[{role: "consignor"|"consignee"|"carrier", name, countryId}]`
//! - `commodities`: `[{goodsTypeCode, description, originCountryId}]`
//! - `transportMeans`: `[{identifier, transportMeansTypeCode, label}]`, one per equipment
//!
//! An absent source leaves its column out; nothing is invented.

use serde_json::{json, Map, Value};

use super::codes::CodeLists;
use crate::consignment::ports::{string_value, Ports};

/// The entries of a JSON-LD value: an array's elements, or the value itself.
fn entries(value: Option<&Value>) -> Vec<&Map<String, Value>> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
        Some(Value::Object(o)) => vec![o],
        _ => Vec::new(),
    }
}

fn first(value: Option<&Value>) -> Option<&Map<String, Value>> {
    entries(value).into_iter().next()
}

/// `unece:CountryId#KE` → `KE`: the code after the list's `#`.
pub fn code_of(value: &str) -> &str {
    value.rsplit_once('#').map_or(value, |(_, code)| code)
}

fn party(p: &Map<String, Value>) -> Option<Value> {
    let mut out = Map::new();
    if let Some(name) = string_value(p.get("name")) {
        out.insert("name".into(), json!(name));
    }
    let country = first(p.get("postalAddress"))
        .and_then(|a| string_value(a.get("tradeAddressCountryId")))
        .map(code_of);
    if let Some(country) = country {
        out.insert("countryId".into(), json!(country));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

pub fn build(
    consignment: &Map<String, Value>,
    ports: &Ports,
    codes: &CodeLists,
) -> Map<String, Value> {
    let mut s = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            s.insert(k.into(), v);
        }
    };
    put(
        "identifier",
        string_value(consignment.get("identifier")).map(|v| json!(v)),
    );
    put(
        "globalId",
        string_value(consignment.get("globalId")).map(|v| json!(v)),
    );

    let departure = first(consignment.get("atDepartureTransportMovement"));
    let means = departure.and_then(|m| first(m.get("usedTransportMeans")));
    put(
        "transportId",
        means
            .and_then(|m| string_value(m.get("identifier")))
            .map(|v| json!(v)),
    );
    put("dateOfEntry", ports.arrival_date.as_ref().map(|d| json!(d)));
    for (which, port) in [("Entry", &ports.entry), ("Exit", &ports.exit)] {
        let Some(port) = port else { continue };
        put(
            &format!("portOf{which}"),
            port.name.as_ref().map(|v| json!(v)),
        );
        put(
            &format!("portOf{which}Code"),
            port.code.as_ref().map(|v| json!(v)),
        );
        put(
            &format!("portOf{which}CountryId"),
            port.country.as_ref().map(|v| json!(v)),
        );
    }

    let included = entries(consignment.get("includedConsignment"));
    put(
        "firstConsignor",
        included
            .first()
            .and_then(|c| first(c.get("consignorParty")))
            .and_then(party),
    );
    put(
        "lastConsignee",
        included
            .last()
            .and_then(|c| first(c.get("consigneeParty")))
            .and_then(party),
    );
    put(
        "carrierParty",
        included
            .first()
            .and_then(|c| first(c.get("carrierParty")))
            .and_then(party),
    );
    let mut parties = Vec::new();
    let mut commodities = Vec::new();
    for c in &included {
        for (role, key) in [
            ("consignor", "consignorParty"),
            ("consignee", "consigneeParty"),
            ("carrier", "carrierParty"),
        ] {
            for p in entries(c.get(key)) {
                if let Some(Value::Object(mut v)) = party(p) {
                    v.insert("role".into(), json!(role));
                    let v = Value::Object(v);
                    if !parties.contains(&v) {
                        parties.push(v);
                    }
                }
            }
        }
        for item in entries(c.get("includedConsignmentItem")) {
            let mut v = Map::new();
            if let Some(code) = string_value(item.get("goodsTypeCode")) {
                v.insert("goodsTypeCode".into(), json!(code_of(code)));
            }
            if let Some(text) = string_value(item.get("information")) {
                v.insert("description".into(), json!(text));
            }
            if let Some(country) =
                first(item.get("originCountry")).and_then(|c| string_value(c.get("countryId")))
            {
                v.insert("originCountryId".into(), json!(code_of(country)));
            }
            if !v.is_empty() {
                commodities.push(Value::Object(v));
            }
        }
    }
    put(
        "tradeParty",
        (!parties.is_empty()).then(|| Value::Array(parties)),
    );
    put(
        "commodities",
        (!commodities.is_empty()).then(|| Value::Array(commodities)),
    );

    put(
        "transportModeCode",
        departure
            .and_then(|m| string_value(m.get("transportModeCode")))
            .map(|c| json!(code_of(c))),
    );
    let means_type = means
        .and_then(|m| string_value(m.get("transportMeansTypeCode")))
        .map(code_of);
    let equipment: Vec<Value> = entries(consignment.get("utilizedTransportEquipment"))
        .into_iter()
        .filter_map(|e| string_value(e.get("identifier")))
        .map(|id| {
            let mut v = Map::new();
            v.insert("identifier".into(), json!(id));
            if let Some(code) = means_type {
                v.insert("transportMeansTypeCode".into(), json!(code));
                if let Some(label) = codes.transport_means_type(code) {
                    v.insert("label".into(), json!(label));
                }
            }
            Value::Object(v)
        })
        .collect();
    put(
        "reference",
        equipment.first().and_then(|e| e.get("identifier")).cloned(),
    );
    put(
        "transportMeans",
        (!equipment.is_empty()).then(|| Value::Array(equipment)),
    );
    put("payloadVersion", Some(json!("D23B")));
    // Not a column: read as `latestStatus` while the consignment has no events (the views
    // remove it from the row).
    put(
        "scheduledDeparture",
        ports.departure_date.as_ref().map(|d| json!(d)),
    );
    s
}
