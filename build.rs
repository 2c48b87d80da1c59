//! Embeds the web console (`console/dist`, built by `npm run build` in `console/`; `.ci/node`
//! and `.ci/test` do it) into the binary, so the node serves it with nothing beside it. A build
//! without it serves a page saying how to build it.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dist = Path::new(&manifest).join("console").join("dist");
    // Building the console replaces dist/ and its files; until it is built, cargo looks again
    // at every build.
    println!(
        "cargo:rerun-if-changed={}",
        dist.join("index.html").display()
    );
    println!("cargo:rerun-if-changed={}", dist.join("assets").display());
    let mut code = String::new();
    let index = dist.join("index.html");
    let assets = dist.join("assets");
    if index.is_file() && assets.is_dir() {
        writeln!(
            code,
            "pub static INDEX: Option<&[u8]> = Some(include_bytes!({:?}));",
            index.display()
        )
        .unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&assets)
            .expect("console/dist/assets is readable")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".gz"))
            .collect();
        names.sort();
        code.push_str("pub static ASSETS: &[super::Asset] = &[\n");
        for name in names {
            let plain = assets.join(&name);
            let gz = assets.join(format!("{name}.gz"));
            let gz = if gz.is_file() {
                format!("Some(include_bytes!({:?}))", gz.display())
            } else {
                "None".to_owned()
            };
            writeln!(
                code,
                "    super::Asset {{ name: {name:?}, plain: include_bytes!({:?}), gz: {gz} }},",
                plain.display()
            )
            .unwrap();
        }
        code.push_str("];\n");
    } else {
        code.push_str("pub static INDEX: Option<&[u8]> = None;\n");
        code.push_str("pub static ASSETS: &[super::Asset] = &[];\n");
    }
    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("console_assets.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
