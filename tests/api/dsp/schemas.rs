//! The DSP 2025-1 JSON Schemas (`tests/fixtures/dsp`), each registered under its `$id`, and a
//! check of a message against the schema of its type — with an independent validator (the
//! `jsonschema` crate), not the node's code.

use std::sync::OnceLock;

use serde_json::Value;

const DIRS: [&str; 4] = ["common", "catalog", "negotiation", "transfer"];

struct Schemas {
    registry: jsonschema::Registry<'static>,
    files: Vec<(String, Value)>,
}

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut files = Vec::new();
        for dir in DIRS {
            let path = format!("{}/tests/fixtures/dsp/{dir}", env!("CARGO_MANIFEST_DIR"));
            for entry in std::fs::read_dir(path).unwrap() {
                let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
                // Upstream's three `#definitions/…` references, as a JSON Pointer (SOURCE.md).
                let text = text.replace(".json#definitions/", ".json#/definitions/");
                let schema: Value = serde_json::from_str(&text).unwrap();
                let id = schema["$id"].as_str().unwrap().to_owned();
                files.push((id, schema));
            }
        }
        let registry = jsonschema::Registry::new()
            .extend(
                files
                    .iter()
                    .map(|(id, s)| (id.clone(), jsonschema::Resource::from_contents(s.clone()))),
            )
            .unwrap()
            .prepare()
            .unwrap();
        Schemas { registry, files }
    })
}

/// Asserts that `message` is valid against the schema `<dir>/<file>` (e.g.
/// `catalog/catalog-schema.json`).
pub fn assert_valid(schema: &str, message: &Value) {
    let s = schemas();
    let id = format!("https://w3id.org/dspace/2025/1/{schema}");
    let (_, contents) = s
        .files
        .iter()
        .find(|(i, _)| *i == id)
        .unwrap_or_else(|| panic!("no schema {schema}"));
    let validator = jsonschema::options()
        .with_registry(&s.registry)
        .build(contents)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(message)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{schema}: {errors:?}\n{message:#}");
}

#[test]
fn the_schemas_tell_a_valid_message_from_an_invalid_one() {
    let good = serde_json::json!({
        "@context": ["https://w3id.org/dspace/2025/1/context.jsonld"],
        "@type": "CatalogError", "code": "404", "reason": ["no such dataset"]
    });
    assert_valid("catalog/catalog-error-schema.json", &good);
    let s = schemas();
    let (_, contents) = s
        .files
        .iter()
        .find(|(i, _)| i.ends_with("catalog/catalog-error-schema.json"))
        .unwrap();
    let validator = jsonschema::options()
        .with_registry(&s.registry)
        .build(contents)
        .unwrap();
    let mut bad = good.clone();
    bad["@context"] = serde_json::json!("https://w3id.org/dspace/2025/1/context.jsonld");
    assert!(
        !validator.is_valid(&bad),
        "a bare string @context must fail"
    );
}
