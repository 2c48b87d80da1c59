//! The OpenAPI document: served without credentials, OpenAPI 3.1, and covering every route of
//! the router with each of its methods.

use std::collections::BTreeSet;

use regex::Regex;
use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

/// The router's source: the routes are read from it, so a new route without documentation
/// fails here.
const ROUTER: &str = include_str!("../../src/http/mod.rs");

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `(path, method)` of every `.route("<path>", <method>(…)[.<method>(…)]…)` in the router.
fn router_routes() -> BTreeSet<(String, String)> {
    let start = Regex::new(r#"\.route\(\s*"([^"]+)"\s*,"#).unwrap();
    // A method router: `get(` at the start or after `.`, never a path like `ops::get(`.
    let method =
        Regex::new(r"(?:^|[\s.(,])(get|put|post|delete|options|head|patch|trace)\s*\(").unwrap();
    let mut routes = BTreeSet::new();
    for caps in start.captures_iter(ROUTER) {
        // A catch-all `{*rest}` is documented as the template `{rest}` (OpenAPI has no
        // multi-segment variable; its description says so).
        let path = caps[1].replace("{*", "{");
        // The rest of this `.route(` call: up to its closing parenthesis.
        let rest = &ROUTER[caps.get(0).unwrap().end()..];
        let mut depth = 1usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let call = &rest[..end];
        let before = routes.len();
        for m in method.captures_iter(call) {
            routes.insert((path.clone(), m[1].to_string()));
        }
        assert!(
            routes.len() > before,
            "no method found for route {path}: {call}"
        );
    }
    routes
}

async fn document() -> Value {
    let node = TestNode::start().await;
    // No x-api-key, no session.
    let r = node
        .client
        .get(node.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    json_body(r).await
}

/// Every operation of the document: `(path, method, operation)`.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                out.push((path.clone(), method.clone(), op));
            }
        }
    }
    out
}

/// Follows a local `$ref`, if the value is one.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(doc, doc.pointer(&r[1..]).expect("resolvable $ref")),
        None => value,
    }
}

fn collect_refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn openapi_document_is_served_without_credentials_and_is_3_1() {
    let doc = document().await;
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "openapi: {}",
        doc["openapi"]
    );
    assert!(doc["info"]["title"].is_string());
    assert!(doc["info"]["version"].is_string());

    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["apiKey"]["type"], "apiKey");
    assert_eq!(schemes["apiKey"]["in"], "header");
    assert_eq!(schemes["apiKey"]["name"], "x-api-key");
    assert_eq!(schemes["bearer"]["type"], "http");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["bearer"]["bearerFormat"], "JWT");
    assert_eq!(schemes["cookie"]["type"], "apiKey");
    assert_eq!(schemes["cookie"]["in"], "cookie");
    assert_eq!(schemes["cookie"]["name"], "access_token");

    for name in ["GeneralError", "UnauthorizedError", "InternalServerError"] {
        let schema = &doc["components"]["schemas"][name];
        assert_eq!(schema["properties"]["name"]["const"], name);
    }
    assert_eq!(
        doc["components"]["schemas"]["GeneralError"]["required"],
        serde_json::json!(["name", "message", "properties"])
    );
}

#[tokio::test]
async fn openapi_documents_every_router_route_with_each_method() {
    let routes = router_routes();
    // The parser must see the router, not silently find nothing.
    assert!(routes.len() >= 20, "routes: {routes:?}");
    for expected in [
        ("/health", "get"),
        ("/openapi.json", "get"),
        ("/authentication/login", "post"),
        ("/supply-chain/data-space/policies", "post"),
        ("/supply-chain/data-space/policies/{uid}", "delete"),
    ] {
        assert!(
            routes.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} not parsed from the router: {routes:?}"
        );
    }

    let doc = document().await;
    let missing: Vec<_> = routes
        .iter()
        .filter(|(path, method)| doc["paths"][path.as_str()][method.as_str()].is_null())
        .collect();
    assert!(
        missing.is_empty(),
        "routes not in /openapi.json: {missing:?}"
    );
}

#[tokio::test]
async fn openapi_operations_have_errors_parameters_and_known_security() {
    let doc = document().await;
    let schemes = doc["components"]["securitySchemes"]
        .as_object()
        .expect("security schemes");
    let template = Regex::new(r"\{([^}]+)\}").unwrap();
    let mut ids = BTreeSet::new();
    for (path, method, op) in operations(&doc) {
        let at = format!("{} {path}", method.to_uppercase());
        let responses = op["responses"].as_object().expect("responses");
        assert!(
            responses.keys().any(|code| code.starts_with('4')),
            "{at} documents no 4xx response"
        );
        if let Some(id) = op["operationId"].as_str() {
            assert!(ids.insert(id.to_string()), "{at}: operationId {id} twice");
        }

        // Each path template variable is a required path parameter of the operation.
        let path_params: BTreeSet<&str> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(
                doc["paths"][path.as_str()]["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
            .map(|p| resolve(&doc, p))
            .filter(|p| p["in"] == "path")
            .inspect(|p| assert_eq!(p["required"], true, "{at}: {p}"))
            .filter_map(|p| p["name"].as_str())
            .collect();
        let variables: BTreeSet<&str> = template
            .captures_iter(&path)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert_eq!(path_params, variables, "{at}: path parameters");

        // Security names only defined schemes; public operations say so explicitly.
        let security = op["security"]
            .as_array()
            .expect("security on every operation");
        for requirement in security {
            for name in requirement.as_object().expect("requirement").keys() {
                assert!(schemes.contains_key(name), "{at}: unknown scheme {name}");
            }
        }
    }

    let public = [
        "/health",
        "/openapi.json",
        "/ns",
        "/shapes/{name}",
        "/supply-chain/data-space/attestations/{id}",
        "/supply-chain/data-space/blobs/{blob_id}",
    ];
    for path in public {
        assert_eq!(
            doc["paths"][path]["get"]["security"],
            serde_json::json!([]),
            "{path} needs no credentials"
        );
    }
    let session = serde_json::json!([{"apiKey": [], "bearer": []}, {"apiKey": [], "cookie": []}]);
    for (path, method, op) in operations(&doc) {
        if path.starts_with("/supply-chain/") && !public.contains(&path.as_str()) {
            assert_eq!(op["security"], session, "{method} {path}");
        }
    }
}

#[tokio::test]
async fn openapi_refs_all_resolve_inside_the_document() {
    let doc = document().await;
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external $ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "unresolved $ref {r}");
    }
}
