//! An analyst's page: the README's queries to pick from, rows as a table and a chart, who
//! answered, and a syntax error explained.

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use serde_json::json;

use super::sign_in;
use crate::common::{query, Browser, Session, TestNode, EXPENSIVE};

/// The editor's content element, inside its shadow root.
const CONTENT: &str =
    "document.querySelector('#sparql-editor').shadowRoot.querySelector('.cm-content')";

async fn editor_text(b: &Browser) -> String {
    let text = b.run(&format!("return {CONTENT}.innerText")).await;
    text.as_str().unwrap_or_default().to_owned()
}

/// Select-all, then `text`, typed into the focused editor as a person would.
async fn replace_query(b: &Browser, text: &str) {
    b.run(&format!("{CONTENT}.focus()")).await;
    let control = '\u{e009}';
    let mut keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: control })
        .then(KeyAction::Down { value: 'a' })
        .then(KeyAction::Up { value: 'a' })
        .then(KeyAction::Up { value: control });
    for c in text.chars() {
        let c = if c == '\n' { '\u{e007}' } else { c };
        keys = keys
            .then(KeyAction::Down { value: c })
            .then(KeyAction::Up { value: c });
    }
    b.client.perform_actions(keys).await.expect("typing");
    let typed = editor_text(b).await;
    assert_eq!(
        typed.split_whitespace().collect::<Vec<_>>(),
        text.split_whitespace().collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analyst_runs_a_readme_query_charts_a_count_and_reads_a_syntax_error() {
    let node = TestNode::start().await;
    let analyst = Session::new(&node, "analyst@forwarder.example").await;
    for name in ["create-consignment", "add-event", "add-document"] {
        analyst.publish_example(&node, name).await;
    }
    let b = Browser::start("analyst").await;
    let a = &analyst.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.click_text("header.top nav a", "SPARQL").await;
    b.find("#sparql-editor").await;
    assert_eq!(b.unlabelled_fields().await, Vec::<String>::new());
    let label = b
        .run(&format!("return {CONTENT}.getAttribute('aria-label')"))
        .await;
    assert_eq!(label, json!("SPARQL query"));

    // Every README example is offered; the documents one has a row for the added invoice.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let offered = b.texts("select[name=example] option").await;
    let examples = readme.matches("<!-- analyst-query: ").count();
    assert_eq!(offered.len(), examples + 1, "{offered:?}");
    b.find("select[name=example]")
        .await
        .select_by_label("Documents per type")
        .await
        .unwrap();
    assert!(editor_text(&b).await.contains("supersededBy"));
    // Highlighted: a keyword is a span of its own, coloured by the editor's styles.
    let keyword = b
        .run(&format!(
            "const k = Array.from({CONTENT}.querySelectorAll('span')).find(s => s.textContent === 'SELECT'); \
             return k ? getComputedStyle(k).color : null"
        ))
        .await;
    let plain = b
        .run(&format!("return getComputedStyle({CONTENT}).color"))
        .await;
    assert!(
        keyword.is_string() && keyword != plain,
        "no highlighting: {keyword} / {plain}"
    );
    b.click_text("form.sparql button", "Run query").await;
    b.wait_text(".sparql-source", "store").await;
    let rows = b.wait_text("table.results tbody", "").await;
    assert!(
        !b.texts("table.results tbody tr").await.is_empty(),
        "{rows}"
    );
    b.screenshot("readme-query").await;

    // A two-column count is also a bar chart.
    replace_query(
        &b,
        "PREFIX unece: <https://vocabulary.uncefact.org/>\n\
         SELECT ?type (COUNT(?s) AS ?n) WHERE { ?s a ?type } GROUP BY ?type ORDER BY DESC(?n) LIMIT 5",
    )
    .await;
    b.click_text("form.sparql button", "Run query").await;
    b.find("svg.chart rect.bar").await;
    let bars = b.texts("svg.chart rect.bar").await.len();
    let rows = b.texts("table.results tbody tr").await.len();
    assert!(bars > 0 && bars == rows, "{bars} bars for {rows} rows");
    b.screenshot("chart").await;

    replace_query(&b, "SELEC ?s WHERE { ?s ?p ?o }").await;
    b.click_text("form.sparql button", "Run query").await;
    let error = b.wait_text(".results-area .message.error", "refused").await;
    assert!(error.len() > "The query was refused: ".len(), "{error}");
    b.screenshot("syntax-error").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_organisation_and_a_query_over_its_time_limit_are_messages() {
    let node = TestNode::start_with(|c| {
        c.sparql_timeout_secs = 8;
        c.sparql_max_concurrent_per_org = 1;
    })
    .await;
    let analyst = Session::new(&node, "analyst@forwarder.example").await;
    analyst.publish_example(&node, "create-consignment").await;
    let b = Browser::start("analyst-limits").await;
    let a = &analyst.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.click_text("header.top nav a", "SPARQL").await;
    b.find("#sparql-editor").await;
    replace_query(&b, "ASK { ?s ?p ?o }").await;

    // The organisation's one place is taken by a long query of its own: the page says 429.
    let ended = std::sync::atomic::AtomicBool::new(false);
    let long = async {
        let r = query(&node, &analyst, EXPENSIVE, &[]).await;
        ended.store(true, std::sync::atomic::Ordering::SeqCst);
        r
    };
    let probe = async {
        while !ended.load(std::sync::atomic::Ordering::SeqCst) {
            b.click_text("form.sparql button", "Run query").await;
            b.find(".results-area .source, .results-area .message.error")
                .await;
            let shown = b.texts(".results-area").await.join(" ");
            if shown.contains("Too many requests") {
                return Some(shown);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        None
    };
    let (long, busy) = tokio::join!(long, probe);
    assert_eq!(long.status(), 503);
    let busy = busy.expect("the page showed a 429 while the long query ran");
    assert!(busy.contains("try again in"), "{busy}");
    b.screenshot("too-many").await;

    // Over the time limit: 503, a message.
    replace_query(&b, EXPENSIVE).await;
    b.click_text("form.sparql button", "Run query").await;
    let timeout = b
        .wait_text(".results-area .message.error", "could not answer in time")
        .await;
    assert!(timeout.contains("time limit"), "{timeout}");
    b.screenshot("timeout").await;
    b.close().await;
}
