use super::*;
use crate::jsonld::Expander;
use oxigraph::model::dataset::CanonicalizationAlgorithm;
use oxigraph::model::Graph as RdfGraph;

const CTX: &str = "https://example.org/ctx";

fn contexts() -> Contexts {
    let mut c = Contexts::new();
    c.add(
        CTX,
        &[],
        r#"{"@context": {"ex": "https://example.org/ns#", "xsd": "http://www.w3.org/2001/XMLSchema#",
            "id": "@id", "type": "@type",
            "name": {"@id": "ex:name", "@type": "xsd:string"},
            "flag": {"@id": "ex:flag", "@type": "xsd:boolean"},
            "link": {"@id": "ex:link", "@type": "@id"},
            "code": {"@id": "ex:code", "@type": "@vocab"},
            "items": {"@id": "ex:items", "@container": "@list"},
            "note": "ex:note",
            "Thing": "ex:Thing", "C1": "ex:C1",
            "ex:trap": "https://example.org/elsewhere#trap"}}"#,
    )
    .unwrap();
    c
}

fn ex(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("https://example.org/ns#{local}"))
}

fn canonical(triples: impl IntoIterator<Item = Triple>) -> RdfGraph {
    let mut g: RdfGraph = triples.into_iter().collect();
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

fn round_trip(c: &Contexts, root: &NamedOrBlankNode, triples: &[Triple]) -> Value {
    let compactor = Compactor::new(c, CTX).unwrap();
    let doc = compactor
        .compact(root, triples, |n| n.as_str().ends_with("apart"))
        .unwrap();
    let mut e = Expander::new(c).with_included();
    e.document(doc.as_object().unwrap()).unwrap();
    let back = e.finish();
    assert!(back.dropped.is_empty(), "{:?} in {doc:#}", back.dropped);
    assert_eq!(
        canonical(back.triples),
        canonical(triples.iter().cloned()),
        "{doc:#}"
    );
    doc
}

#[test]
fn every_kind_of_value_round_trips() {
    let c = contexts();
    let root = ex("root");
    let shared = BlankNode::default();
    let once = BlankNode::default();
    let (a, b) = (BlankNode::default(), BlankNode::default());
    let lit = |s: &str, dt: NamedNode| Term::from(Literal::new_typed_literal(s, dt));
    let t = |s: NamedOrBlankNode, p: NamedNode, o: Term| Triple::new(s, p, o);
    let root_s: NamedOrBlankNode = root.clone().into();
    let triples = vec![
        t(root_s.clone(), rdf::TYPE.into_owned(), ex("Thing").into()),
        t(root_s.clone(), rdf::TYPE.into_owned(), ex("Other").into()),
        t(
            root_s.clone(),
            ex("name"),
            Literal::new_simple_literal("n").into(),
        ),
        // A datatype the term does not coerce to: a value object, not the term's type.
        t(root_s.clone(), ex("name"), lit("x", ex("Text"))),
        t(
            root_s.clone(),
            ex("flag"),
            lit("true", xsd::BOOLEAN.into_owned()),
        ),
        t(
            root_s.clone(),
            ex("flag"),
            Literal::new_simple_literal("maybe").into(),
        ),
        t(
            root_s.clone(),
            ex("note"),
            Literal::new_language_tagged_literal("hi", "en")
                .unwrap()
                .into(),
        ),
        t(
            root_s.clone(),
            ex("note"),
            lit("7", xsd::INTEGER.into_owned()),
        ),
        t(
            root_s.clone(),
            ex("note"),
            lit("07", xsd::INTEGER.into_owned()),
        ),
        t(
            root_s.clone(),
            ex("note"),
            lit("1.5E0", xsd::DOUBLE.into_owned()),
        ),
        t(
            root_s.clone(),
            ex("note"),
            lit("false", xsd::BOOLEAN.into_owned()),
        ),
        t(
            root_s.clone(),
            ex("note"),
            lit(
                "{\"a\":1}",
                NamedNode::new_unchecked(crate::vocab::RDF_JSON),
            ),
        ),
        t(root_s.clone(), ex("link"), ex("elsewhere").into()),
        t(root_s.clone(), ex("code"), ex("C1").into()),
        t(root_s.clone(), ex("code"), ex("C2").into()),
        // The compact IRI a naive compactor would write is a term for another IRI.
        t(
            root_s.clone(),
            ex("trap"),
            Literal::new_simple_literal("t").into(),
        ),
        t(
            root_s.clone(),
            NamedNode::new_unchecked("https://other.example/p"),
            once.clone().into(),
        ),
        t(
            once.clone().into(),
            ex("name"),
            Literal::new_simple_literal("nested").into(),
        ),
        t(once.clone().into(), ex("link"), shared.clone().into()),
        t(root_s.clone(), ex("link"), shared.clone().into()),
        t(
            shared.clone().into(),
            ex("name"),
            Literal::new_simple_literal("shared").into(),
        ),
        // A cycle of blank nodes each referenced once, reachable from nothing.
        t(a.clone().into(), ex("next"), b.clone().into()),
        t(b.clone().into(), ex("next"), a.clone().into()),
        // A node kept apart, referencing the root.
        t(ex("apart").into(), ex("about"), root.clone().into()),
        t(root_s.clone(), ex("items"), ex("apart").into()),
    ];
    let doc = round_trip(&c, &root_s, &triples);
    assert_eq!(doc["@context"], CTX);
    assert_eq!(doc["id"], "ex:root");
    assert_eq!(doc["type"], serde_json::json!(["Thing", "ex:Other"]));
    assert_eq!(doc["https://other.example/p"]["name"], "nested", "{doc:#}");
    assert_eq!(doc["code"], serde_json::json!(["C1", "ex:C2"]));
    let included = doc["@included"].as_array().unwrap();
    assert!(included.iter().any(|n| n["id"] == "ex:apart"));
}

#[test]
fn the_d23b_context_round_trips_the_examples() {
    let c = crate::jsonld::load_contexts().unwrap();
    let url = crate::vocab::UNECE_CONTEXT;
    for name in ["create-consignment.json", "add-event.json"] {
        let path = format!(
            "{}/tests/fixtures/examples/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let activity: Value = serde_json::from_str(&text).unwrap();
        let mut object = activity["object"].as_object().unwrap().clone();
        object.insert("@context".into(), Value::String(url.into()));
        let root = NamedNode::new_unchecked("urn:dataspace-node:consignment:0");
        let mut e = Expander::new(&c);
        e.fix_subject("", root.clone().into(), false);
        e.document(&object).unwrap();
        let triples = e.finish().triples;
        assert!(triples.len() >= 3, "{name}");
        let compactor = Compactor::new(&c, url).unwrap();
        let doc = compactor
            .compact(&root.clone().into(), &triples, |_| false)
            .unwrap();
        let mut e = Expander::new(&c).with_included();
        e.document(doc.as_object().unwrap()).unwrap();
        assert_eq!(canonical(e.finish().triples), canonical(triples), "{name}");
        assert!(doc.get("@included").is_none(), "{doc:#}");
    }
}

#[test]
fn a_long_chain_of_nodes_is_cut_into_included_ones_and_round_trips() {
    // 20,000 nodes each naming the next once: embedded one in another, the emitter's
    // recursion ran out of stack.
    let c = contexts();
    let root: NamedOrBlankNode = ex("n0").into();
    let triples: Vec<Triple> = (0..20_000)
        .map(|i| Triple::new(ex(&format!("n{i}")), ex("link"), ex(&format!("n{}", i + 1))))
        .collect();
    let doc = round_trip(&c, &root, &triples);
    let included = doc["@included"].as_array().unwrap();
    assert!(
        included.len() >= 20_000 / (MAX_EMBEDDED + 1),
        "{}",
        included.len()
    );
    let mut deepest = 0;
    let mut node = &doc;
    while let Some(next) = node.get("link").filter(|n| n.is_object()) {
        deepest += 1;
        node = next;
    }
    assert_eq!(deepest, MAX_EMBEDDED);
}
