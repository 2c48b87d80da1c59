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

/// Paths a revision lists at most; past them the whole description counts as changed (`$`).
/// Every path is stored with the revision and answered by the history: an Update appending
/// 300,000 items deep in the description stored 520 MB of paths.
pub const MAX_PATHS: usize = 1_000;
/// Items appearing at the end of an array, or gone from it, named one by one at most; more
/// are the array's path once.
const ITEMS_NAMED: usize = 16;
/// Characters of a key a path shows.
const KEY_SHOWN: usize = 64;

/// The paths where `new` differs from `old` (`None`: there was no description before).
pub fn paths(old: Option<&Value>, new: &Value) -> Vec<String> {
    let Some(old) = old else { return created() };
    let mut out = Vec::new();
    diff(old, new, &mut "$".to_owned(), &mut out);
    if out.len() > MAX_PATHS {
        return created();
    }
    out
}

fn diff(old: &Value, new: &Value, path: &mut String, out: &mut Vec<String>) {
    if out.len() > MAX_PATHS {
        return;
    }
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
        (Value::Array(a), Value::Array(b)) if a.len().abs_diff(b.len()) > ITEMS_NAMED => {
            out.push(path.clone());
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
    // A long key shows its start, bracketed with an ellipsis (no key can be that name).
    let (key, cut) = match key.char_indices().nth(KEY_SHOWN) {
        Some((end, _)) => (&key[..end], true),
        None => (key, false),
    };
    let plain = !cut
        && !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str("['");
        path.push_str(&key.replace('\\', "\\\\").replace('\'', "\\'"));
        if cut {
            path.push('…');
        }
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

    #[test]
    fn many_changes_are_named_by_what_holds_them_and_long_keys_by_their_start() {
        let items = |n: usize| json!({"a": {"list": (0..n).collect::<Vec<_>>()}});
        assert_eq!(paths(Some(&items(2)), &items(19)), ["$.a.list"]);
        assert_eq!(
            paths(Some(&items(2)), &items(4)),
            ["$.a.list[2]", "$.a.list[3]"]
        );
        let wide = |v: usize| {
            let map: serde_json::Map<String, Value> = (0..MAX_PATHS + 1)
                .map(|i| (format!("k{i}"), json!(v)))
                .collect();
            Value::Object(map)
        };
        assert_eq!(paths(Some(&wide(1)), &wide(2)), ["$"]);
        let key = "x".repeat(100);
        let long = |v: u8| json!({ key.as_str(): v });
        assert_eq!(
            paths(Some(&long(1)), &long(2)),
            [format!("$['{}…']", &key[..64])]
        );
    }
}
