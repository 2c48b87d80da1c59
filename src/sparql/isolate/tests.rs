use super::*;
use spargebra::SparqlParser;

fn rewritten(q: &str) -> String {
    let query = SparqlParser::new().parse_query(q).unwrap();
    let readable = |g: &str| g == "urn:ok";
    rewrite(query, &readable, &Sources::default())
        .unwrap()
        .to_string()
}

#[test]
fn default_graph_patterns_are_confined_one_graph_variable_each() {
    let q = rewritten("SELECT ?s WHERE { ?s a ?t . ?s <urn:p> ?o }");
    assert_eq!(q.matches(IN_DEFAULT).count(), 2, "{q}");
    assert!(
        q.contains("GRAPH ?dsn_g1") && q.contains("GRAPH ?dsn_g2"),
        "{q}"
    );
}

#[test]
fn a_later_pattern_in_the_same_graph_is_not_checked_again() {
    let query = SparqlParser::new()
        .parse_query("SELECT ?s WHERE { ?s <urn:p> ?o . ?s <urn:q> ?x . ?x <urn:r> ?y }")
        .unwrap();
    let sse = rewrite(query, &|_| false, &Sources::default())
        .unwrap()
        .to_sse();
    // One filter over the flat join of the three graph patterns (the optimiser orders the
    // join as it would the caller's BGP): no filter between joins.
    let filter = sse.find("(filter").expect(&sse);
    assert!(
        sse[filter..].contains(
            "(join (join (graph ?dsn_g1 (bgp (triple ?s <urn:p> ?o))) \
             (graph ?dsn_g2 (bgp (triple ?s <urn:q> ?x)))) \
             (graph ?dsn_g3 (bgp (triple ?x <urn:r> ?y))))"
        ),
        "{sse}"
    );
    assert_eq!(sse.matches("(filter").count(), 1, "{sse}");
    // The first graph always checked; the second unless it is the first; the third unless
    // it is the first or the second.
    assert!(sse.contains(&format!("( <{IN_DEFAULT}> ?dsn_g1)")), "{sse}");
    assert!(
        sse.contains(&format!(
            "(if (sameTerm ?dsn_g2 ?dsn_g1) {TRUE} ( <{IN_DEFAULT}> ?dsn_g2))"
        )),
        "{sse}"
    );
    assert!(
        sse.contains(&format!(
            "(if (|| (sameTerm ?dsn_g3 ?dsn_g1) (sameTerm ?dsn_g3 ?dsn_g2)) {TRUE} \
             ( <{IN_DEFAULT}> ?dsn_g3))"
        )),
        "{sse}"
    );
}

const TRUE: &str = "\"true\"^^<http://www.w3.org/2001/XMLSchema#boolean>";

#[test]
fn the_most_selective_pattern_is_checked_first_and_joined_groups_share_checks() {
    // `?s a <urn:T>` is the optimiser's first pattern: its graph is the one always checked.
    let q = rewritten("SELECT ?s WHERE { ?s ?p ?o . ?s a <urn:T> }");
    assert!(
        q.contains(&format!(
            "<{IN_DEFAULT}>(?dsn_g2) && IF(sameTerm(?dsn_g1, ?dsn_g2)"
        )),
        "{q}"
    );
    // Unconnected patterns (a product, held in memory by a hash join): each checked.
    let q = rewritten("SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?c ?x ?y }");
    assert_eq!(q.matches("sameTerm").count(), 1, "{q}");
    assert!(q.contains("IF(sameTerm(?dsn_g3, ?dsn_g1)"), "{q}");
    assert!(q.contains(&format!("<{IN_DEFAULT}>(?dsn_g2)")), "{q}");
    // A BGP and a property path joined: one filter, the path's graph compared with the
    // BGP's. Inside OPTIONAL, MINUS, EXISTS, a sub-query: a filter of their own.
    let query = SparqlParser::new()
        .parse_query(
            "SELECT * WHERE { ?s <urn:p> ?o . ?o <urn:q>+ ?x \
             OPTIONAL { ?x <urn:r> ?y } MINUS { ?s <urn:m> ?m } \
             FILTER NOT EXISTS { ?s <urn:e> ?e } }",
        )
        .unwrap();
    let sse = rewrite(query, &|_| false, &Sources::default())
        .unwrap()
        .to_sse();
    // (The filter's EXISTS is rewritten first: ?dsn_g1.)
    assert!(
        sse.contains("(if (sameTerm ?dsn_g3 ?dsn_g2)"),
        "the path's graph is compared with the BGP's: {sse}"
    );
    for g in ["?dsn_g1", "?dsn_g4", "?dsn_g5"] {
        assert!(
            sse.contains(&format!("(filter ( <{IN_DEFAULT}> {g})")),
            "{g} checked where it is: {sse}"
        );
        assert!(
            !sse.contains(&format!("(sameTerm {g}")),
            "{g} compared with nothing outside its group: {sse}"
        );
    }
}

#[test]
fn named_graphs_are_checked_or_dropped() {
    let q = rewritten("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }");
    assert!(q.contains(IN_NAMED), "{q}");
    assert!(
        !q.contains(IN_DEFAULT),
        "patterns inside GRAPH read the checked graph: {q}"
    );
    let q = rewritten("SELECT * WHERE { GRAPH <urn:secret> { ?s ?p ?o } }");
    assert!(!q.contains("urn:secret"), "{q}");
    let q = rewritten("SELECT * WHERE { GRAPH <urn:ok> { ?s ?p ?o } }");
    assert!(q.contains("<urn:ok>"), "{q}");
}

#[test]
fn exists_subqueries_paths_and_describe_are_confined() {
    let q = rewritten(
        "SELECT ?s WHERE { ?s <urn:p>+ ?o FILTER NOT EXISTS { ?o <urn:q> ?x } \
         { SELECT ?s WHERE { ?s <urn:r> ?y } } }",
    );
    assert_eq!(q.matches(IN_DEFAULT).count(), 3, "{q}");
    let q = rewritten("DESCRIBE <urn:thing>");
    assert!(q.starts_with("CONSTRUCT"), "{q}");
    assert!(q.contains(IN_DEFAULT), "{q}");
    let text = "SELECT * FROM <urn:a> FROM NAMED <urn:b> WHERE { ?s ?p ?o }";
    let asked = requested(&SparqlParser::new().parse_query(text).unwrap());
    assert_eq!(asked.default, Some(vec!["urn:a".to_owned()]));
    assert_eq!(asked.named, Some(vec!["urn:b".to_owned()]));
    assert!(!rewritten(text).contains("FROM"));
}

fn with_markers(q: &str) -> String {
    let m = Markers {
        graph: NamedNode::new_unchecked("urn:marks"),
        predicate: NamedNode::new_unchecked("urn:in"),
        object: NamedNode::new_unchecked("urn:all"),
    };
    let sources = Sources {
        default: Some(m.clone()),
        named: Some(m),
        portable: None,
    };
    let query = SparqlParser::new().parse_query(q).unwrap();
    rewrite(query, &|_| false, &sources).unwrap().to_sse()
}

const MARKERS: &str = "(graph <urn:marks> (bgp (triple ";

#[test]
fn a_broad_group_joins_its_first_graph_with_the_markers() {
    let sse = with_markers("SELECT ?s WHERE { ?s <urn:p> ?o . ?s <urn:q> ?x }");
    // The markers of ?dsn_g1 joined with the group (a sub-query each: a hash join), the
    // second graph still compared with the first, else checked.
    assert!(
        sse.contains(&format!(
            "(join (project (?dsn_g1) {MARKERS}?dsn_g1 <urn:in> <urn:all>))))"
        )),
        "{sse}"
    );
    assert!(
        !sse.contains(&format!("( <{IN_DEFAULT}> ?dsn_g1)")),
        "{sse}"
    );
    assert!(
        sse.contains(&format!(
            "(if (sameTerm ?dsn_g2 ?dsn_g1) {TRUE} ( <{IN_DEFAULT}> ?dsn_g2))"
        )),
        "{sse}"
    );
    // GRAPH ?g over everything: the same join on ?g.
    let sse = with_markers("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }");
    assert!(
        sse.contains(&format!("(project (?g) {MARKERS}?g <urn:in> <urn:all>))))")),
        "{sse}"
    );
    assert!(!sse.contains(IN_NAMED), "{sse}");
}

#[test]
fn selective_and_correlated_groups_keep_the_per_solution_check() {
    for q in [
        // A constant subject: a few solutions.
        "SELECT * WHERE { <urn:s> ?p ?o }",
        "SELECT * WHERE { GRAPH ?g { <urn:s> ?p ?o } }",
        // Evaluated per solution of what they are joined with.
        "SELECT * WHERE { <urn:s> <urn:p> ?o OPTIONAL { ?o ?q ?r } }",
        "SELECT * WHERE { <urn:s> <urn:p> ?o MINUS { ?o ?q ?r } }",
        "SELECT * WHERE { <urn:s> <urn:p> ?o FILTER EXISTS { ?o ?q ?r } }",
        "SELECT * WHERE { <urn:s> <urn:p> ?o { ?o ?q ?r FILTER(?r != 1) } }",
        "SELECT * WHERE { <urn:s> <urn:p> ?g GRAPH ?g { ?x ?q ?r } }",
        // Joined with a VALUES (or anything but patterns): bound from there.
        "SELECT * WHERE { VALUES ?s { <urn:a> } ?s ?p ?o }",
        "DESCRIBE <urn:thing>",
    ] {
        let sse = with_markers(q);
        assert!(!sse.contains("<urn:marks>"), "{q}: {sse}");
    }
    // Without markers (a dataset narrowed by FROM): checked as before.
    let q = rewritten("SELECT * WHERE { ?s ?p ?o }");
    assert!(q.contains(IN_DEFAULT), "{q}");
}

#[test]
fn service_and_extension_functions_are_refused_and_fresh_variables_do_not_collide() {
    let query = SparqlParser::new()
        .parse_query("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
        .unwrap();
    assert_eq!(
        rewrite(query, &|_| true, &Sources::default()).unwrap_err(),
        Refused::Service
    );
    for (query, iri) in [
        ("SELECT (<bif:aref>(1, 0) AS ?x) {}", "bif:aref"),
        (
            "SELECT * { ?s ?p ?o FILTER(<sql:SPARQL_EVAL>(\"x\")) }",
            "sql:SPARQL_EVAL",
        ),
        (
            "SELECT (<urn:dataspace-node:fn:inDefaultGraph>(<urn:g>) AS ?x) {}",
            IN_DEFAULT,
        ),
        (
            "SELECT (<http://example.org/agg>(?o) AS ?x) { ?s ?p ?o }",
            "http://example.org/agg",
        ),
        (
            "SELECT * { ?s ?p ?o FILTER EXISTS { ?s ?p ?x FILTER(<bif:exec>(\"select 1\")) } }",
            "bif:exec",
        ),
    ] {
        let query = SparqlParser::new().parse_query(query).unwrap();
        assert_eq!(
            rewrite(query, &|_| true, &Sources::default()).unwrap_err(),
            Refused::Function(iri.to_owned())
        );
    }
    // The casts stay callable.
    let q = rewritten(
        "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> \
         SELECT (xsd:integer(?o) AS ?n) (xsd:dateTime(?o) AS ?d) { ?s ?p ?o }",
    );
    assert!(q.contains("XMLSchema#integer"), "{q}");
    let q = rewritten("SELECT ?dsn_g1 WHERE { ?dsn_g1 ?p ?o }");
    assert!(q.contains("?dsn_g_1"), "{q}");
}
