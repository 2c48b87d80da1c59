//! Identity and trust between nodes: DID documents, node tokens, who a policy may name, and
//! three nodes sharing, pulling and contributing.

use super::*;

#[tokio::test]
async fn did_documents_name_the_key_and_the_federation_endpoint() {
    let node = TestNode::start().await;
    let r = node
        .client
        .get(node.url("/.well-known/did.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let doc = json_body(r).await;
    let did = did_of(&node);
    assert_eq!(doc["id"], did);
    let method = &doc["verificationMethod"][0];
    assert_eq!(method["id"], format!("{did}#node-key"));
    assert_eq!(method["publicKeyJwk"]["crv"], "Ed25519");
    assert_eq!(doc["service"][0]["type"], "DataspaceNodeFederation");
    assert_eq!(
        doc["service"][0]["serviceEndpoint"],
        node.url("/federation")
    );

    let trader = Session::new(&node, "trader@forwarder.example").await;
    let id = trader.org().rsplit(':').next().unwrap().to_owned();
    let r = node
        .client
        .get(node.url(&format!("/org/{id}/did.json")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let org_doc = json_body(r).await;
    assert_eq!(org_doc["id"], trader.org());
    assert_eq!(org_doc["controller"], did);
    assert_eq!(
        org_doc["verificationMethod"][0],
        doc["verificationMethod"][0]
    );
    let r = node
        .client
        .get(node.url("/org/0123456789abcdef0123456789abcdef/did.json"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn three_nodes_share_pull_contribute_and_survive_a_provider_outage() {
    let (mut ls, hosts) = listeners(3).await;
    let c_listener = ls.pop().unwrap();
    let b_listener = ls.pop().unwrap();
    let a_listener = ls.pop().unwrap();
    let a = federated(a_listener, &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    let terminal = Session::new(&c, "ops@kemba-terminal.example").await;
    // A port-health officer on A itself, in the same circle.
    let health = Session::new(&a, "officer@port-health.example").await;
    operator
        .policy(
            &a,
            rule(&a, health.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    operator
        .policy(
            &a,
            rule(&a, agency.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    operator
        .policy(
            &a,
            rule(&a, terminal.org(), "portOfEntry", "eq", json!("KEMBA")),
        )
        .await;
    trader.publish_example(&a, "create-consignment").await;

    // Publishing on A reaches B and C as notifications naming A's dataset.
    let note = eventually("B notified", || shared_notification(&agency, &b)).await;
    assert_eq!(note["provider"], trader.org());
    assert_eq!(note["consignment"]["globalId"], GLOBAL_ID);
    let dataset = note["datasetId"].as_str().unwrap().to_owned();
    let note_c = eventually("C notified", || shared_notification(&terminal, &c)).await;
    assert_eq!(note_c["datasetId"], dataset);
    // Nothing on A itself is notified for organisations that live elsewhere.
    let own = get_json(&trader, &a, NOTIFICATIONS).await;
    assert_eq!(own["entities"], json!([]));

    // B lists and views it with `shared`, pulled from A.
    let list = get_json(&agency, &b, &format!("{LIST}?scope=shared")).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 1, "{list:#}");
    assert_eq!(list["entities"][0]["identifier"], "FWD-2026-000417");
    assert_eq!(list["entities"][0]["portOfEntryCode"], "KEMBA");
    assert!(list.get("warnings").is_none(), "{list:#}");
    assert_eq!(
        get_json(&agency, &b, &format!("{LIST}?scope=own")).await["entities"],
        json!([])
    );
    let view = get_json(&agency, &b, &format!("{LIST}/{GLOBAL_ID}?scope=shared")).await;
    assert_eq!(view["id"], list["entities"][0]["id"]);
    assert!(!view["includedConsignments"].as_array().unwrap().is_empty());
    let r = agency
        .get(&b, &format!("{LIST}/{GLOBAL_ID}?scope=own"))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;

    // A's document reaches B with links on A's node, which serve its bytes.
    let bytes = b"commercial invoice 4711".to_vec();
    let document = add_document(trader.org(), &data_url("text/plain", &bytes), "INV-4711");
    assert_completed(&trader.publish(&a, &document).await);
    let view = get_json(&agency, &b, &format!("{LIST}/{GLOBAL_ID}")).await;
    let record = &view["documents"][0];
    assert_eq!(record["id"], "INV-4711", "{view:#}");
    assert!(
        record["href"].as_str().unwrap().starts_with(&a.base),
        "{record}"
    );
    let docs = get_json(&agency, &b, &format!("{LIST}/{GLOBAL_ID}/documents")).await;
    assert_eq!(docs["entities"][0]["documentId"], "INV-4711", "{docs:#}");
    let one = get_json(
        &agency,
        &b,
        &format!("{LIST}/{GLOBAL_ID}/documents/INV-4711"),
    )
    .await;
    let href = one["href"].as_str().unwrap();
    assert!(href.starts_with(&a.base), "{one}");
    let r = b.client.get(href).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.unwrap().to_vec(), bytes);

    // B adds an inspection event; A then sees it with `all` (offered back, pulled from B).
    assert_completed(&agency.publish(&b, &inspection(agency.org())).await);
    let path = format!("{LIST}/{GLOBAL_ID}/events?scope=all");
    eventually("A sees B's event", || async {
        let events = get_json(&trader, &a, &path).await;
        event_codes(&events)
            .contains(&"kra:inspection-completed".to_owned())
            .then_some(())
    })
    .await;
    let own_events = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}/events?scope=own")).await;
    assert!(!event_codes(&own_events).contains(&"kra:inspection-completed".to_owned()));
    let events_on_b = get_json(&agency, &b, &path).await;
    assert!(event_codes(&events_on_b).contains(&"kra:inspection-completed".to_owned()));
    // C, in the circle on A but not told of B's contribution, sees only what A holds.
    let events_on_c = get_json(&terminal, &c, &path).await;
    assert!(!event_codes(&events_on_c).contains(&"kra:inspection-completed".to_owned()));
    // What a circle member on A contributes reaches B and C with the publisher's dataset.
    assert_completed(
        &health
            .publish(&a, &event_on_example(health.org(), "kph:cleared"))
            .await,
    );
    for (session, node) in [(&agency, &b), (&terminal, &c)] {
        let codes = event_codes(&get_json(session, node, &path).await);
        assert!(codes.contains(&"kph:cleared".to_owned()), "{codes:?}");
    }

    // A stops: B's list still answers, with a warning for A's dataset; its events read keeps
    // B's own event.
    let halted = a.halt().await;
    let list = get_json(&agency, &b, &format!("{LIST}?scope=all")).await;
    assert_eq!(list["entities"], json!([]), "{list:#}");
    assert_eq!(
        list["warnings"],
        json!([{"code": "discoveryFailed", "provider": trader.org(), "datasetId": dataset,
                "rows": 1}])
    );
    let events = get_json(&agency, &b, &path).await;
    assert_eq!(event_codes(&events), vec!["kra:inspection-completed"]);
    let r = terminal.get(&c, &format!("{LIST}/{GLOBAL_ID}")).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;

    // A is back: the warning is gone.
    let a = TestNode::start_again(halted).await;
    let list = get_json(&agency, &b, &format!("{LIST}?scope=all")).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 1, "{list:#}");
    assert!(list.get("warnings").is_none(), "{list:#}");
    drop(a);
}

async fn pull(node: &TestNode, dataset: &str, token: &str) -> reqwest::Response {
    node.client
        .get(node.url("/federation/datasets"))
        .query(&[("id", dataset)])
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn node_tokens_are_verified_and_pulls_need_a_grant() {
    let (mut ls, hosts) = listeners(2).await;
    let b_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let aig = list["entities"][0]["aigId"].as_str().unwrap();
    let dataset = graphs::contribution(aig.trim_start_matches("aig:"), trader.org()).into_string();

    // A real token of B for its agency, but no policy shares the consignment with it.
    let token = token_of(&b, agency.org(), &did_of(&a));
    let r = pull(&a, &dataset, &token).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // The same token again is a replay.
    let r = pull(&a, &dataset, &token).await;
    let body = assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    assert!(body.to_string().contains("replayed"), "{body}");

    // Forged: B's DID, another key.
    let forged = Tokens::new(did_of(&b), &ed25519_dalek::SigningKey::from_bytes(&[9; 32]))
        .unwrap()
        .issue(agency.org(), &did_of(&a))
        .unwrap();
    let r = pull(&a, &dataset, &forged).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // B's key, but acting for an organisation of another node.
    let r = pull(&a, &dataset, &token_of(&b, trader.org(), &did_of(&a))).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Meant for another node.
    let r = pull(&a, &dataset, &token_of(&b, agency.org(), &did_of(&b))).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // A valid token of a node that is not one of A's partners: its DID is never fetched.
    let stranger = TestNode::start().await;
    let outsider = Session::new(&stranger, "someone@elsewhere.example").await;
    let r = pull(
        &a,
        &dataset,
        &token_of(&stranger, outsider.org(), &did_of(&a)),
    )
    .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // A session token is not a node token.
    let r = pull(&a, &dataset, &trader.token).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // A notice claiming to come from an organisation the calling node does not act for.
    let notice = json!({
        "@context": "https://www.w3.org/ns/activitystreams", "type": "Announce",
        "actor": trader.org(), "to": [agency.org()], "published": "2026-11-22T00:00:00Z",
        "object": {"type": "Dataset", "id": dataset, "created": "2026-11-22T00:00:00Z",
                   "consignment": {"globalId": GLOBAL_ID, "identifier": "X", "aigId": aig}}
    });
    let r = b
        .client
        .post(b.url("/federation/inbox"))
        .bearer_auth(token_of(&a, agency.org(), &did_of(&b)))
        .json(&notice)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let r = b
        .client
        .post(b.url("/federation/inbox"))
        .bearer_auth(token_of(&a, agency.org(), &did_of(&b)).replace('.', "x"))
        .json(&notice)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Nothing reached the agency.
    assert_eq!(
        get_json(&agency, &b, NOTIFICATIONS).await["entities"],
        json!([])
    );
}

#[tokio::test]
async fn policies_name_organisations_of_partner_nodes_only() {
    let node =
        TestNode::start_with(|c| c.federation_partners = vec!["partner.example".into()]).await;
    let operator = Operator::new(&node).await;
    operator
        .policy(
            &node,
            rule(
                &node,
                "did:web:partner.example:org:ab12",
                "portOfEntryCountry",
                "eq",
                json!("KE"),
            ),
        )
        .await;
    for stranger in [
        "did:web:elsewhere.example:org:ab12",
        "did:web:partner.example:user:ab12",
    ] {
        let r = operator
            .try_policy(
                &node,
                rule(&node, stranger, "portOfEntryCountry", "eq", json!("KE")),
            )
            .await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert!(body.to_string().contains("assignee"), "{body}");
    }
    // Without partners (the default), only this node's organisations.
    let single = TestNode::start().await;
    let operator = Operator::new(&single).await;
    let r = operator
        .try_policy(
            &single,
            rule(
                &single,
                "did:web:partner.example:org:ab12",
                "portOfEntryCountry",
                "eq",
                json!("KE"),
            ),
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
}
