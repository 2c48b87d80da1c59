//! The layers of `docs/ARCHITECTURE.md` ("Layers"), checked against the code: every top-level
//! module of `src/` is in exactly one layer, and every `crate::…` path in its code (comments
//! aside) names a module of a lower layer. Imports that only go down cannot close a cycle.
//! The table is read from the document, so the picture and the code cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Files that wire the whole crate together and may name any module.
const WIRING: &[&str] = &["lib.rs", "main.rs", "bin"];

/// Names `lib.rs` re-exports, by the module they come from.
const REEXPORTS: &[(&str, &str)] = &[
    ("Error", "error"),
    ("Result", "error"),
    ("Config", "config"),
];

/// Layer number (1 = top) of each module, from the document's table.
fn layers() -> BTreeMap<String, usize> {
    let doc = fs::read_to_string("docs/ARCHITECTURE.md").unwrap();
    let section = doc
        .split("\n## Layers\n")
        .nth(1)
        .expect("docs/ARCHITECTURE.md has a \"## Layers\" section");
    let mut out = BTreeMap::new();
    for line in section.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(n) = cells.get(1).and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            assert!(
                out.insert(module.to_owned(), n).is_none(),
                "{module} is in two layers"
            );
        }
    }
    assert!(
        out.len() > 10,
        "the layer table lists {} modules",
        out.len()
    );
    out
}

/// The code of a Rust file without its comments (line, doc and block comments) and without
/// the contents of its string literals.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            // The character literal '"' opens no string.
            ('\'', Some('"')) => {
                out.push(c);
                out.extend(chars.next());
            }
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Top-level modules a file's code names: `crate::m…` and `crate::{m…, n…}`.
fn named(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        // `dataspace_node::` inside the crate is not used; `super::` stays within a module.
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_imports_only_from_the_layers_below_it() {
    let layers = layers();
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let mut modules = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix("src").unwrap();
        let top = relative.iter().next().unwrap().to_str().unwrap();
        if WIRING.contains(&top) {
            continue;
        }
        let module = top.trim_end_matches(".rs").to_owned();
        let Some(&own) = layers.get(&module) else {
            panic!("src/{top} is in no layer of docs/ARCHITECTURE.md");
        };
        modules.insert(module.clone());
        let text = fs::read_to_string(file).unwrap();
        for name in named(&code(&text)) {
            let target = REEXPORTS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(name.as_str(), |(_, m)| m);
            if target == module {
                continue;
            }
            match layers.get(target) {
                Some(&layer) if layer > own => {}
                Some(&layer) => wrong.push(format!(
                    "{} (layer {own}) names crate::{name} (layer {layer})",
                    file.display()
                )),
                None => wrong.push(format!(
                    "{} names crate::{name}, in no layer",
                    file.display()
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
    let listed: BTreeSet<String> = layers.keys().cloned().collect();
    let stale: Vec<_> = listed.difference(&modules).collect();
    assert!(
        stale.is_empty(),
        "the table lists modules src/ does not have: {stale:?}"
    );
}

#[test]
fn comments_and_strings_do_not_count_as_imports() {
    let text = "use crate::store::X; // crate::http\n/// [`crate::views`]\n/* crate::node */ let s = \"crate::intake\"; crate::{a::b, c};";
    let names: Vec<String> = named(&code(text)).into_iter().collect();
    assert_eq!(names, ["a", "c", "store"]);
}
