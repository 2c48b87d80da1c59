//! What a partner's dataset may say: a partner node speaks for its own organisations and users
//! only, inside every part it sends.

use super::fake::FakePartner;
use super::*;

const AT: &str = "2026-11-27T10:00:00Z";

/// A system event as a node renders one: `source` the user who acted, with its organisation.
fn system_event(id: &str, user: &str, org: &str) -> Value {
    json!({"id": id, "at": AT, "json": {
        "@context": "https://www.w3.org/ns/activitystreams", "id": id, "type": "SystemEvent",
        "typeCode": "CREATE",
        "source": {"id": user, "type": "Person", "detail": {"organizationId": org}},
        "object": {"id": id, "type": "Consignment", "detail": {}},
        "target": {"id": id, "type": "Consignment", "detail": {}},
        "date": AT}})
}

fn event(id: &str, extra: Value) -> Value {
    let mut json = json!({"type": "SupplyChainEvent", "typeCode": "fake:inspected",
                          "occurrenceDateTime": AT});
    json.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"id": id, "at": AT, "json": json})
}

/// A document revision and the DocumentRecord its node renders, by `org` and `user`.
fn document(id: &str, org: &str, user: &str) -> Value {
    json!({"id": format!("urn:fake:{id}"), "at": AT,
           "json": {"documentId": id, "documentTypeCode": "unece:DocumentCodeList#380",
                    "documentRevision": 0, "dateCreated": AT, "dateModified": AT,
                    "organizationIdentity": org, "userIdentity": user, "contentKey": id},
           "partner": {"record": {"type": "Document", "id": id, "documentRevision": 0,
                                  "dateCreated": AT, "dateModified": AT,
                                  "organizationIdentity": org, "userIdentity": user},
                       "attachment": {"id": format!("urn:fake:{id}"), "documentId": id,
                                      "documentRevision": 0, "history": []}}})
}

fn ids(view: &Value, key: &str) -> Vec<String> {
    view[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A partner in a consignment's circle offers its contribution back to the publisher. Its
/// dataset carries, beside its own parts, a CREATE whose source is the publisher's user, a
/// system event of its own user for the publisher's organisation, an event whose actor is the
/// publisher and a document recorded by the publisher's organisation and user: none of them
/// reaches the publisher's or the local agency's view, and what the partner says of itself
/// does.
#[tokio::test]
async fn a_partners_dataset_names_only_its_own_organisations_and_users() {
    let (mut ls, hosts) = listeners(2).await;
    let fake = FakePartner::serve(ls.pop().unwrap()).await;
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&a, "officer@kra.example").await;
    for org in [agency.org(), fake.org.as_str()] {
        operator
            .policy(&a, rule(&a, org, "portOfEntryCountry", "eq", json!("KE")))
            .await;
    }
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let aig = list["entities"][0]["aigId"].as_str().unwrap().to_owned();
    let dataset = graphs::contribution(aig.trim_start_matches("aig:"), &fake.org).into_string();
    let (publisher, user) = (trader.org(), trader.account.identity.as_str());
    let (own_org, own_user) = (fake.org.as_str(), fake.user());
    fake.serve_dataset(
        &dataset,
        json!({
            "datasetId": dataset, "provider": fake.org,
            "consignment": {"aigId": aig, "globalId": GLOBAL_ID, "identifier": IDENTIFIER,
                            "created": AT, "updated": AT},
            "events": [
                event("urn:fake:event:own", json!({})),
                event("urn:fake:event:as-publisher", json!({"actor": publisher})),
            ],
            "systemEvents": [
                system_event("urn:fake:system:own", &own_user, own_org),
                system_event("urn:fake:system:as-publisher", user, publisher),
                system_event("urn:fake:system:for-publisher", &own_user, publisher),
            ],
            "documents": [
                document("FAKE-OWN", own_org, &own_user),
                document("FAKE-AS-PUBLISHER", publisher, user),
            ],
        }),
    );
    let offer = json!({
        "@context": "https://www.w3.org/ns/activitystreams", "type": "Offer",
        "actor": fake.org, "to": [publisher], "published": AT,
        "object": {"type": "Dataset", "id": dataset, "created": AT,
                   "consignment": {"globalId": GLOBAL_ID, "identifier": IDENTIFIER,
                                   "aigId": aig}}
    });
    assert_eq!(fake.notify(&a, &offer).await.status(), StatusCode::ACCEPTED);

    for reader in [&trader, &agency] {
        let view = get_json(reader, &a, &format!("{LIST}/{GLOBAL_ID}?scope=all")).await;
        let system = ids(&view, "systemEvents");
        assert!(system.contains(&"urn:fake:system:own".into()), "{view:#}");
        assert!(
            system.iter().all(|id| !id.ends_with("publisher")),
            "{system:?}"
        );
        assert_eq!(ids(&view, "events"), ["urn:fake:event:own"], "{view:#}");
        assert_eq!(ids(&view, "documents"), ["FAKE-OWN"], "{view:#}");
    }
}
