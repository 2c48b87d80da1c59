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
    put(
        &mut s,
        "identifier",
        string_value(consignment.get("identifier")).map(|v| json!(v)),
    );
    put(
        &mut s,
        "globalId",
        string_value(consignment.get("globalId")).map(|v| json!(v)),
    );
    let departure = first(consignment.get("atDepartureTransportMovement"));
    let means = departure.and_then(|m| first(m.get("usedTransportMeans")));
    put(
        &mut s,
        "transportId",
        means
            .and_then(|m| string_value(m.get("identifier")))
            .map(|v| json!(v)),
    );
    port_columns(&mut s, ports);
    party_columns(&mut s, &entries(consignment.get("includedConsignment")));
    put(
        &mut s,
        "transportModeCode",
        departure
            .and_then(|m| string_value(m.get("transportModeCode")))
            .map(|c| json!(code_of(c))),
    );
    let means_type = means
        .and_then(|m| string_value(m.get("transportMeansTypeCode")))
        .map(code_of);
    let equipment = equipment(consignment, means_type, codes);
    put(
        &mut s,
        "reference",
        equipment.first().and_then(|e| e.get("identifier")).cloned(),
    );
    put(
        &mut s,
        "transportMeans",
        (!equipment.is_empty()).then(|| Value::Array(equipment)),
    );
    put(&mut s, "payloadVersion", Some(json!("D23B")));
    // Not a column: read as `latestStatus` while the consignment has no events (the views
    // remove it from the row).
    put(
        &mut s,
        "scheduledDeparture",
        ports.departure_date.as_ref().map(|d| json!(d)),
    );
    s
}

fn put(s: &mut Map<String, Value>, k: &str, v: Option<Value>) {
    if let Some(v) = v {
        s.insert(k.into(), v);
    }
}

/// The date of entry and each port's name, code and country.
fn port_columns(s: &mut Map<String, Value>, ports: &Ports) {
    put(
        s,
        "dateOfEntry",
        ports.arrival_date.as_ref().map(|d| json!(d)),
    );
    for (which, port) in [("Entry", &ports.entry), ("Exit", &ports.exit)] {
        let Some(port) = port else { continue };
        put(
            s,
            &format!("portOf{which}"),
            port.name.as_ref().map(|v| json!(v)),
        );
        put(
            s,
            &format!("portOf{which}Code"),
            port.code.as_ref().map(|v| json!(v)),
        );
        put(
            s,
            &format!("portOf{which}CountryId"),
            port.country.as_ref().map(|v| json!(v)),
        );
    }
}

/// The first consignor, last consignee and first carrier of the included consignments; every
/// party with its role; the commodities.
fn party_columns(s: &mut Map<String, Value>, included: &[&Map<String, Value>]) {
    let role_of = |c: Option<&&Map<String, Value>>, key: &str| {
        c.and_then(|c| first(c.get(key))).and_then(party)
    };
    put(
        s,
        "firstConsignor",
        role_of(included.first(), "consignorParty"),
    );
    put(
        s,
        "lastConsignee",
        role_of(included.last(), "consigneeParty"),
    );
    put(s, "carrierParty", role_of(included.first(), "carrierParty"));
    let mut parties = Vec::new();
    let mut commodities = Vec::new();
    for c in included {
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
        commodities.extend(
            entries(c.get("includedConsignmentItem"))
                .into_iter()
                .filter_map(commodity),
        );
    }
    put(
        s,
        "tradeParty",
        (!parties.is_empty()).then(|| Value::Array(parties)),
    );
    put(
        s,
        "commodities",
        (!commodities.is_empty()).then(|| Value::Array(commodities)),
    );
}

fn commodity(item: &Map<String, Value>) -> Option<Value> {
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
    (!v.is_empty()).then_some(Value::Object(v))
}

/// The transport equipment, each with the departure means' type and its label.
fn equipment(
    consignment: &Map<String, Value>,
    means_type: Option<&str>,
    codes: &CodeLists,
) -> Vec<Value> {
    entries(consignment.get("utilizedTransportEquipment"))
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
        .collect()
}
