//! What a revision changed in a consignment's description: the JSON paths where the new
//! description differs from the one it replaced.
//!
//! Paths are written `$.a.b[0].c` (JSONPath's dot notation; a key that is not a plain name is
//! bracketed, `$['@type']`). A subtree that appears, disappears or changes type is one path,
//! not one per leaf — a Create is `["$"]` — so the list stays short enough to read and to
//! store as one literal.

use serde_json::Value;

/// A Create: the whole description is new.
pub fn created() -> Vec<String> {
    vec!["$".to_owned()]
}

/// The paths where `new` differs from `old` (`None`: there was no description before).
pub fn paths(old: Option<&Value>, new: &Value) -> Vec<String> {
    let Some(old) = old else { return created() };
    let mut out = Vec::new();
    diff(old, new, &mut "$".to_owned(), &mut out);
    out
}

fn diff(old: &Value, new: &Value, path: &mut String, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let len = path.len();
                push_key(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff(x, y, path, out),
                    _ => out.push(path.clone()),
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => diff(x, y, path, out),
                    _ => out.push(path.clone()),
                }
                path.truncate(len);
            }
        }
        (a, b) if a == b => {}
        _ => out.push(path.clone()),
    }
}

fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str("['");
        path.push_str(&key.replace('\\', "\\\\").replace('\'', "\\'"));
        path.push_str("']");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_create_is_the_whole_description() {
        assert_eq!(paths(None, &json!({"a": 1})), ["$"]);
    }

    #[test]
    fn changed_added_and_removed_leaves_and_subtrees_are_named_once() {
        let old = json!({
            "globalId": "g",
            "ports": [{"code": "KEMBA", "name": "Mombasa"}, {"code": "UGKLA"}],
            "weight": {"value": 10, "unit": "KGM"},
            "gone": {"deep": [1, 2]},
            "@type": "Consignment",
        });
        let new = json!({
            "globalId": "g",
            "ports": [{"code": "TZDAR", "name": "Mombasa"}],
            "weight": {"value": 10, "unit": "KGM"},
            "added": {"x": 1},
            "@type": ["Consignment"],
        });
        assert_eq!(
            paths(Some(&old), &new),
            [
                "$['@type']",
                "$.added",
                "$.gone",
                "$.ports[0].code",
                "$.ports[1]"
            ]
        );
        assert!(paths(Some(&new), &new).is_empty());
    }

    #[test]
    fn keys_that_are_not_plain_names_are_bracketed_and_escaped() {
        let old = json!({"it's": 1, "9lives": 1});
        let new = json!({"it's": 2, "9lives": 2});
        assert_eq!(paths(Some(&old), &new), ["$['9lives']", "$['it\\'s']"]);
    }
}
