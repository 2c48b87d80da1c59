//! Port derivation, exactly the spec's five rules: the port of exit is
//! `atDepartureTransportMovement.departureEvent[0].occurrenceLogisticsLocation`, the port of
//! entry `atArrivalTransportMovement.arrivalEvent[0].occurrenceLogisticsLocation`; only index 0
//! counts; the name is the display value; the code is a UN/LOCODE and its first two letters are
//! the country. A malformed or missing UN/LOCODE gives no code and no country; the location then
//! still has a display value (its name, else its identifier's value, whatever its type), and
//! the publisher is told by a warning on the task ([`warnings`]).
//!
//! Works on the JSON payload, not the RDF: JSON-LD arrays are unordered in RDF, and "index 0"
//! is an order.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const UN_LOCODE_TYPE: &str = "https://ref.gs1.org/voc/LocationID_Type-UN_LOCODE";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Port {
    /// The display value: the location `name`, else its identifier's value (an IATA code, a
    /// GLN, a malformed UN/LOCODE: whatever was sent).
    pub name: Option<String>,
    /// A well-formed UN/LOCODE.
    pub code: Option<String>,
    /// ISO 3166 alpha-2, from the code.
    pub country: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ports {
    pub exit: Option<Port>,
    pub entry: Option<Port>,
    /// `departureEvent[0].scheduledOccurrenceDateTime`.
    pub departure_date: Option<String>,
    /// `arrivalEvent[0].scheduledOccurrenceDateTime`.
    pub arrival_date: Option<String>,
}

/// The first entry of a JSON-LD value: an array's first element, or the value itself.
fn first(value: Option<&Value>) -> Option<&Value> {
    match value? {
        Value::Array(items) => items.first(),
        Value::Null => None,
        v => Some(v),
    }
}

/// The string of a plain string or of a value object's `@value`.
pub fn string_value(value: Option<&Value>) -> Option<&str> {
    match value? {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("@value").and_then(Value::as_str),
        _ => None,
    }
}

fn event<'a>(
    consignment: &'a Map<String, Value>,
    movement: &str,
    events: &str,
) -> Option<&'a Map<String, Value>> {
    first(consignment.get(movement))?
        .as_object()
        .and_then(|m| first(m.get(events)))
        .and_then(Value::as_object)
}

/// Checks the UN/LOCODE form: an ISO 3166 alpha-2 country of `countries` followed by three of
/// `[A-Z2-9]`.
pub fn is_locode(code: &str, countries: &HashSet<String>) -> bool {
    code.len() == 5
        && code.is_ascii()
        && countries.contains(&code[..2])
        && code[2..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || ('2'..='9').contains(&c))
}

fn port(event: &Map<String, Value>, countries: &HashSet<String>) -> Option<Port> {
    let location = first(event.get("occurrenceLogisticsLocation"))?.as_object()?;
    let identifier = first(location.get("identifier"));
    let candidate = match identifier {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Object(o)) => {
            let typed_locode = match o.get("@type") {
                None => true,
                Some(Value::String(t)) => t == UN_LOCODE_TYPE,
                Some(_) => false,
            };
            o.get("@value")
                .and_then(Value::as_str)
                .filter(|_| typed_locode)
        }
        _ => None,
    };
    let code = candidate
        .filter(|c| is_locode(c, countries))
        .map(str::to_owned);
    let country = code.as_ref().map(|c| c[..2].to_owned());
    let name = string_value(first(location.get("name")))
        .or_else(|| string_value(identifier))
        .map(str::to_owned);
    Some(Port {
        name,
        code,
        country,
    })
}

/// What the publisher is told about its ports (`Task.warnings`, an addition to the spec's
/// Task): a port without a well-formed UN/LOCODE has no country, so no rule on it can match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub path: String,
    pub message: String,
}

pub fn warnings(consignment: &Map<String, Value>, ports: &Ports) -> Vec<Warning> {
    let movements = ["atDepartureTransportMovement", "atArrivalTransportMovement"];
    if !movements
        .iter()
        .any(|m| first(consignment.get(*m)).is_some())
    {
        return vec![Warning {
            path: "object".into(),
            message: "the consignment has no transport movements: no port of exit or entry, \
                      not routed"
                .into(),
        }];
    }
    let mut out = Vec::new();
    let sides = [
        (
            "atArrivalTransportMovement.arrivalEvent[0]",
            "entry",
            &ports.entry,
        ),
        (
            "atDepartureTransportMovement.departureEvent[0]",
            "exit",
            &ports.exit,
        ),
    ];
    for (at, which, port) in sides {
        let (path, message) = match port {
            None => (
                format!("object.{at}"),
                format!("{at} has no occurrenceLogisticsLocation: no port of {which}, not routed"),
            ),
            Some(p) if p.code.is_none() => (
                format!("object.{at}.occurrenceLogisticsLocation.identifier"),
                format!("{at} has no UN/LOCODE: no port of {which} country, not routed"),
            ),
            Some(_) => continue,
        };
        out.push(Warning { path, message });
    }
    out
}

pub fn derive(consignment: &Map<String, Value>, countries: &HashSet<String>) -> Ports {
    let departure = event(
        consignment,
        "atDepartureTransportMovement",
        "departureEvent",
    );
    let arrival = event(consignment, "atArrivalTransportMovement", "arrivalEvent");
    let date = |e: Option<&Map<String, Value>>| {
        e.and_then(|e| string_value(first(e.get("scheduledOccurrenceDateTime"))))
            .map(str::to_owned)
    };
    Ports {
        exit: departure.and_then(|e| port(e, countries)),
        entry: arrival.and_then(|e| port(e, countries)),
        departure_date: date(departure),
        arrival_date: date(arrival),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn countries() -> HashSet<String> {
        ["BR", "KE", "TZ"].iter().map(|s| s.to_string()).collect()
    }

    fn location(name: &str, code: Value) -> Value {
        json!({"type": "LogisticsLocation", "name": name, "identifier": code})
    }

    fn consignment(departures: Vec<Value>, arrivals: Vec<Value>) -> Map<String, Value> {
        let ev = |l: &Value| json!({"type": "TransportEvent", "scheduledOccurrenceDateTime": "2026-12-01T08:00:00Z", "occurrenceLogisticsLocation": l});
        json!({
            "atDepartureTransportMovement": {"departureEvent": departures.iter().map(ev).collect::<Vec<_>>()},
            "atArrivalTransportMovement": {"arrivalEvent": arrivals.iter().map(ev).collect::<Vec<_>>()},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn locode(v: &str) -> Value {
        json!({"@type": UN_LOCODE_TYPE, "@value": v})
    }

    #[test]
    fn only_index_zero_counts() {
        let c = consignment(
            vec![
                location("Santos", locode("BRSSZ")),
                location("Other", locode("KEMBA")),
            ],
            vec![
                location("Mombasa", locode("KEMBA")),
                location("Dar", locode("TZDAR")),
            ],
        );
        let p = derive(&c, &countries());
        let exit = p.exit.unwrap();
        assert_eq!(
            (
                exit.name.as_deref(),
                exit.code.as_deref(),
                exit.country.as_deref()
            ),
            (Some("Santos"), Some("BRSSZ"), Some("BR"))
        );
        let entry = p.entry.unwrap();
        assert_eq!(
            (entry.code.as_deref(), entry.country.as_deref()),
            (Some("KEMBA"), Some("KE"))
        );
        assert_eq!(p.arrival_date.as_deref(), Some("2026-12-01T08:00:00Z"));
    }

    #[test]
    fn malformed_or_missing_locode_gives_no_country() {
        for bad in [
            locode("KEMB"),
            locode("kemba"),
            locode("XXMBA"),
            locode("KEMB1"),
            locode("KE MBA"),
            json!({"@type": "https://ref.gs1.org/voc/LocationID_Type-IATA_CODE", "@value": "KEMBA"}),
            Value::Null,
        ] {
            let c = consignment(vec![], vec![location("Mombasa", bad.clone())]);
            let ports = derive(&c, &countries());
            let entry = ports.entry.clone().unwrap();
            assert_eq!(entry.name.as_deref(), Some("Mombasa"));
            assert_eq!(entry.code, None, "{bad}");
            assert_eq!(entry.country, None, "{bad}");
            let warned = warnings(&c, &ports);
            assert!(
                warned.iter().any(|w| w.path
                    == "object.atArrivalTransportMovement.arrivalEvent[0].occurrenceLogisticsLocation.identifier"
                    && w.message.contains("no port of entry country")),
                "{warned:?}"
            );
        }
        // Without a name, the identifier's value is the display value, whatever its type.
        let iata = json!({"type": "LogisticsLocation", "identifier": {"@type": "https://ref.gs1.org/voc/LocationID_Type-IATA_CODE", "@value": "NBO"}});
        let c = consignment(vec![], vec![iata]);
        let entry = derive(&c, &countries()).entry.unwrap();
        assert_eq!((entry.name.as_deref(), entry.code), (Some("NBO"), None));
        // A plain string UN/LOCODE is accepted.
        let c = consignment(vec![], vec![location("Mombasa", json!("KEMBA"))]);
        assert_eq!(
            derive(&c, &countries()).entry.unwrap().country.as_deref(),
            Some("KE")
        );
    }

    #[test]
    fn no_movements_no_ports() {
        let p = derive(
            json!({"identifier": "x"}).as_object().unwrap(),
            &countries(),
        );
        assert_eq!(p, Ports::default());
        let warned = warnings(json!({"identifier": "x"}).as_object().unwrap(), &p);
        assert_eq!(warned.len(), 1);
        assert!(warned[0].message.contains("no transport movements"));
        assert!(is_locode("TZDA2", &countries()));
        assert!(!is_locode("TZDA1", &countries()));
    }
}
