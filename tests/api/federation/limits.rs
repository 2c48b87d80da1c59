//! What one partner node can make this node do: notices per minute, records held per
//! receiving organisation, and what its unreachable datasets cost a list page.

use super::*;

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The dataset ids of an organisation's `ConsignmentShared` notifications.
async fn notified(session: &Session, node: &TestNode) -> Vec<String> {
    let v = get_json(session, node, NOTIFICATIONS).await;
    v["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["type"] == "ConsignmentShared")
        .map(|n| n["datasetId"].as_str().unwrap().to_owned())
        .collect()
}

/// Beyond `--federation-max-notices-per-minute`, a partner node's notices get 429 with
/// `Retry-After` (the spec's GeneralError) and nothing of them is stored; another partner
/// node's notices still go through.
#[tokio::test]
async fn a_partner_nodes_notices_beyond_the_rate_cap_get_429() {
    let (mut ls, hosts) = listeners(3).await;
    let d = federated(ls.pop().unwrap(), &hosts).await;
    let c = federated(ls.pop().unwrap(), &hosts).await;
    let a = federated_with(ls.pop().unwrap(), &hosts, |c| {
        c.federation_max_notices_per_minute = 3;
    })
    .await;
    let agency = Session::new(&a, "officer@kra.example").await;
    let partner = format!("{}:org:0a1b2c3d4e5f", did_of(&c));
    let hex = |n: u32| format!("{n:032x}");
    for n in 0..3 {
        let notice = announce(&partner, &hex(n), agency.org(), &now());
        assert_eq!(
            notify(&c, &partner, &a, &notice).await.status(),
            StatusCode::ACCEPTED
        );
    }
    let notice = announce(&partner, &hex(3), agency.org(), &now());
    let r = notify(&c, &partner, &a, &notice).await;
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "GeneralError").await;
    // Another partner node is not held back by C's notices.
    let other = format!("{}:org:0a1b2c3d4e5f", did_of(&d));
    let notice = announce(&other, &hex(4), agency.org(), &now());
    assert_eq!(
        notify(&d, &other, &a, &notice).await.status(),
        StatusCode::ACCEPTED
    );
    let datasets = notified(&agency, &a).await;
    assert_eq!(datasets.len(), 4, "{datasets:?}");
    let refused = graphs::contribution(&hex(3), &partner).into_string();
    assert!(!datasets.contains(&refused), "{datasets:?}");
}

/// `partner`'s notice withdrawing its share of `hex` with `to`.
fn undo(partner: &str, hex: &str, to: &str) -> Value {
    let mut notice = announce(partner, hex, to, &now());
    notice["type"] = json!("Undo");
    notice
}

/// One partner node holds at most `--federation-max-remote-records` records per receiving
/// organisation, whichever of its organisations shares them: an Announce beyond is refused
/// (and dropped by its sender), nothing of it stored; announcing a held one again, another
/// receiver and a withdrawal that makes room are not held back.
#[tokio::test]
async fn a_partner_node_holds_at_most_the_capped_records_per_organisation() {
    let (mut ls, hosts) = listeners(2).await;
    let c = federated(ls.pop().unwrap(), &hosts).await;
    let a = federated_with(ls.pop().unwrap(), &hosts, |c| {
        c.federation_max_remote_records = 2;
    })
    .await;
    let agency = Session::new(&a, "officer@kra.example").await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let (p1, p2) = (
        format!("{}:org:0a01", did_of(&c)),
        format!("{}:org:0a02", did_of(&c)),
    );
    let hex = |n: u32| format!("{n:032x}");
    for (from, n) in [(&p1, 0), (&p2, 1), (&p1, 0)] {
        let notice = announce(from, &hex(n), agency.org(), &now());
        assert_eq!(
            notify(&c, from, &a, &notice).await.status(),
            StatusCode::ACCEPTED
        );
    }
    let third = announce(&p1, &hex(2), agency.org(), &now());
    let r = notify(&c, &p1, &a, &third).await;
    let body = assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    assert!(
        body["message"].as_str().unwrap().contains("records"),
        "{body}"
    );
    assert_eq!(notified(&agency, &a).await.len(), 2);
    let refused = graphs::contribution(&hex(2), &p1).into_string();
    // The cap is per receiving organisation.
    let to_trader = announce(&p1, &hex(2), trader.org(), &now());
    assert_eq!(
        notify(&c, &p1, &a, &to_trader).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(notified(&trader, &a).await, vec![refused.clone()]);
    // A withdrawal makes room.
    let r = notify(&c, &p1, &a, &undo(&p1, &hex(0), agency.org())).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let r = notify(&c, &p1, &a, &third).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert!(notified(&agency, &a).await.contains(&refused));
}

/// A partner node announces many consignments to an agency and then stops answering: the
/// agency's first page still shows its own consignment and the one a publisher on its node
/// shared with it, with one `discoveryFailed` warning per provider counting the rows it could
/// not fill — not a page of warnings with its own rows pushed behind them.
#[tokio::test]
async fn an_unreachable_partners_rows_do_not_crowd_the_first_page() {
    let (a, c, _) = a_and_a_partner().await;
    let (_operator, trader, agency) = kenya_circle(&a).await;
    trader.publish_example(&a, "create-consignment").await;
    let own = consignment_at(agency.org(), 7, "TZDAR", "2026-12-24T06:00:00Z");
    assert_completed(&agency.publish(&a, &own).await);
    let providers = [
        format!("{}:org:0b01", did_of(&c)),
        format!("{}:org:0b02", did_of(&c)),
    ];
    for n in 0..24u32 {
        let from = &providers[(n % 2) as usize];
        let notice = announce(from, &format!("{n:032x}"), agency.org(), &now());
        assert_eq!(
            notify(&c, from, &a, &notice).await.status(),
            StatusCode::ACCEPTED
        );
    }
    let halted = c.halt().await;
    let list = get_json(&agency, &a, &format!("{LIST}?scope=all&limit=10")).await;
    let ids: Vec<&str> = list["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["globalId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["urn:uuid:00000000-0000-4000-8000-000000000007", GLOBAL_ID],
        "{list:#}"
    );
    let warnings = list["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{list:#}");
    for provider in &providers {
        let warning = warnings
            .iter()
            .find(|w| w["provider"] == *provider)
            .unwrap();
        assert_eq!(warning["code"], "discoveryFailed");
        assert_eq!(warning["rows"], 12, "{warning}");
        assert!(warning["datasetId"].as_str().is_some(), "{warning}");
    }
    assert!(list.get("cursor").is_none(), "{list:#}");
    drop(halted);
}
