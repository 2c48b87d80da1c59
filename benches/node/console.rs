//! The console: each page loaded afresh in headless chromium (the same browser and driver the
//! tests use), timed from navigation to its first paint and to its data on screen (the
//! console's `console:drawn` mark), on the main run's store as its organisation sees it.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../tests/api/common/browser.rs"]
#[allow(dead_code)]
mod browser;

use crate::cli::Args;
use crate::node::{spawn, wait_healthy, Loaded, PASSWORD, STATE_FILE};
use crate::progress;
use crate::report::Table;
use crate::stats::percentile;

/// Navigation start → first contentful paint, and → the page's data drawn, in ms.
async fn timed_load(b: &browser::Browser, url: &str) -> (f64, f64) {
    b.goto(url).await;
    let began = Instant::now();
    loop {
        let t = b
            .run(
                "const d = performance.getEntriesByName('console:drawn')[0]; \
                 const p = performance.getEntriesByName('first-contentful-paint')[0]; \
                 return d && p ? [p.startTime, d.startTime] : null",
            )
            .await;
        if let Value::Array(v) = t {
            return (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "{url} was not drawn"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn phase(args: &Args, dir: &Path, table: &mut Table, t0: Instant) {
    let state: Loaded = serde_json::from_slice(
        &std::fs::read(dir.join(STATE_FILE)).expect("the main run's bench-state.json"),
    )
    .unwrap();
    let (mut child, base, _) = spawn(dir);
    let http = reqwest::Client::new();
    wait_healthy(&http, &base).await;
    let b = browser::Browser::start("bench").await;
    b.goto(&format!("{base}/console/sign-in")).await;
    b.find("input[name=apiKey]").await;
    let sizes = b
        .run(
            "return performance.getEntriesByType('resource').filter(e => e.name.includes('/console/assets/')) \
             .reduce((n, e) => n + e.encodedBodySize, 0)",
        )
        .await;
    table.add(
        "console assets, compressed as sent (first load)",
        sizes.as_f64().unwrap_or(f64::NAN) / 1024.0,
        "KiB",
    );
    b.find("input[name=apiKey]")
        .await
        .send_keys(&state.api_key)
        .await
        .unwrap();
    b.find("input[name=email]")
        .await
        .send_keys(&state.email)
        .await
        .unwrap();
    b.find("input[name=password]")
        .await
        .send_keys(PASSWORD)
        .await
        .unwrap();
    b.find("form.sign-in button").await.click().await.unwrap();
    b.find("table.list tbody tr a").await;
    let first = b
        .run("return document.querySelector('table.list tbody tr a').getAttribute('href')")
        .await;
    let consignment = first
        .as_str()
        .expect("a consignment in the list")
        .to_owned();
    progress(t0, "console: signed in");
    let pages = [
        ("list page (25 rows)", "/console/consignments".to_owned()),
        ("consignment page", consignment),
        ("notifications page", "/console/notifications".to_owned()),
        ("SPARQL page", "/console/sparql".to_owned()),
    ];
    for (name, path) in pages {
        let url = format!("{base}{path}");
        timed_load(&b, &url).await; // assets into the cache, as a returning user has them
        let (mut paint, mut drawn) = (Vec::new(), Vec::new());
        for _ in 0..args.console_loads {
            let (p, d) = timed_load(&b, &url).await;
            paint.push(Duration::from_secs_f64(p / 1000.0));
            drawn.push(Duration::from_secs_f64(d / 1000.0));
        }
        paint.sort();
        drawn.sort();
        table.add(
            format!("console {name}: first paint p50"),
            percentile(&paint, 0.5),
            "ms",
        );
        table.add(
            format!("console {name}: data drawn p50"),
            percentile(&drawn, 0.5),
            "ms",
        );
        table.add(
            format!("console {name}: data drawn max"),
            percentile(&drawn, 1.0),
            "ms",
        );
    }
    progress(t0, "console: pages");
    b.close().await;
    child.stop();
}
