use super::*;
use crate::jsonld::expand::values::canonical_double;

fn contexts() -> Contexts {
    let mut c = Contexts::new();
    c.add(
        "https://example.org/ctx",
        &["https://example.org/ctx-alias"],
        r#"{"@context": {"ex": "https://example.org/ns#", "id": "@id", "type": "@type",
            "name": {"@id": "ex:name", "@type": "ex:Text"},
            "link": {"@id": "ex:link", "@type": "@id"},
            "code": {"@id": "ex:code", "@type": "@vocab"},
            "items": {"@id": "ex:items", "@container": "@list"},
            "Thing": "ex:Thing"}}"#,
    )
    .unwrap();
    c
}

fn expand(c: &Contexts, doc: &str) -> Result<Expansion, JsonLdError> {
    let v: Value = serde_json::from_str(doc).unwrap();
    let mut e = Expander::new(c);
    e.document(v.as_object().unwrap())?;
    Ok(e.finish())
}

#[test]
fn coercions_prefixes_and_lists() {
    let c = contexts();
    let out = expand(
        &c,
        r#"{"@context": "https://example.org/ctx-alias", "id": "https://x.example/1", "type": "Thing",
            "name": "n", "link": "ex:other", "code": "ex:C1", "items": ["a", "b"],
            "unknown": "dropped", "ex:count": 3, "ex:ratio": 1.5, "ex:flag": true}"#,
    )
    .unwrap();
    let text: Vec<String> = out.triples.iter().map(|t| t.to_string()).collect();
    let has = |needle: &str| text.iter().any(|t| t.contains(needle));
    assert!(has("<https://x.example/1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <https://example.org/ns#Thing>"));
    assert!(has(
        "<https://example.org/ns#name> \"n\"^^<https://example.org/ns#Text>"
    ));
    assert!(has(
        "<https://example.org/ns#link> <https://example.org/ns#other>"
    ));
    assert!(has(
        "<https://example.org/ns#code> <https://example.org/ns#C1>"
    ));
    assert!(has("\"3\"^^<http://www.w3.org/2001/XMLSchema#integer>"));
    assert!(has("\"1.5E0\"^^<http://www.w3.org/2001/XMLSchema#double>"));
    assert!(has("\"true\"^^<http://www.w3.org/2001/XMLSchema#boolean>"));
    assert!(has("rdf-syntax-ns#first> \"a\""));
    assert_eq!(out.dropped, vec!["unknown".to_string()]);
}

#[test]
fn unknown_and_inline_contexts_are_refused() {
    let c = contexts();
    let e = expand(&c, r#"{"@context": "https://evil.example/ctx", "ex:a": 1}"#).unwrap_err();
    assert!(e.message.contains("https://evil.example/ctx"));
    assert!(e.message.contains("https://example.org/ctx"));
    let e = expand(
        &c,
        r#"{"@context": {"Thing": "https://evil.example/Thing"}}"#,
    )
    .unwrap_err();
    assert!(e.message.contains("inline"));
    for keyword in ["@graph", "@reverse", "@included", "@nest", "@index"] {
        let doc = format!(r#"{{"@context": "https://example.org/ctx", "{keyword}": {{}}}}"#);
        assert!(expand(&c, &doc).is_err(), "{keyword} accepted");
    }
}

#[test]
fn doubles_are_canonical() {
    assert_eq!(canonical_double(1.5), "1.5E0");
    assert_eq!(canonical_double(0.1), "1.0E-1");
    assert_eq!(canonical_double(1e21), "1.0E21");
    assert_eq!(canonical_double(-2.25e-7), "-2.25E-7");
}

#[test]
fn a_context_named_again_counts_at_its_last_place_and_every_chain_stays_cached() {
    let c = crate::jsonld::load_contexts().unwrap();
    let (a, u) = (crate::vocab::AS_CONTEXT, crate::vocab::UNECE_CONTEXT);
    let empty = c.empty();
    let aua = c.extend(&empty, &serde_json::json!([a, u, a]), "").unwrap();
    let ua = c.extend(&empty, &serde_json::json!([u, a]), "").unwrap();
    assert!(std::sync::Arc::ptr_eq(&aua, &ua));
    // Every stack of the two documents up to the longest accepted, on top of every other.
    for n in 1..=super::super::MAX_CHAIN {
        for bits in 0..(1u32 << n) {
            let chain: Vec<&str> = (0..n)
                .map(|i| if bits >> i & 1 == 1 { a } else { u })
                .collect();
            let first = c
                .extend(&empty, &serde_json::json!(chain[..1]), "")
                .unwrap();
            c.extend(&first, &serde_json::json!(chain[1..]), "")
                .unwrap();
        }
    }
    assert!(c.merged.read().unwrap().len() <= 4);
}
