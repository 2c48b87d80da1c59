//! Notices on their way: kept in the outbox while a receiver is down, withdrawn with their
//! policy.

use super::*;

#[tokio::test]
async fn notices_wait_in_the_outbox_until_the_receiver_is_back() {
    let (a, b, _operator, trader, agency, _) = a_trader_and_a_partners_agency().await;
    let b_halted = b.halt().await;
    // Several, so that their order after the restart is checked too: A's store returns the
    // waiting notices in the order of their ids' hashes, not the order they were queued in.
    let expected = publish_to_mombasa(&trader, &a, 6).await;
    // A restarts while B is still down: the notices are kept in A's store.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a = TestNode::start_again(a.halt().await).await;
    let b = TestNode::start_again(b_halted).await;
    let note = eventually("B notified after coming back", || {
        shared_notification(&agency, &b)
    })
    .await;
    assert_eq!(note["provider"], trader.org());
    // Every one, in the order A's trader published them.
    let at_b = eventually("B told of all six", || shared_ids(&agency, &b, 6)).await;
    assert_eq!(at_b, expected);
    let list = get_json(&agency, &b, LIST).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 6, "{list:#}");
    drop(a);
}

#[tokio::test]
async fn a_partner_that_is_down_holds_back_only_its_own_notices_and_gets_them_in_order() {
    let (mut ls, hosts) = listeners(3).await;
    let c_listener = ls.pop().unwrap();
    let b_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    let port = Session::new(&c, "operator@port.example").await;
    for org in [agency.org(), port.org()] {
        operator
            .policy(&a, rule(&a, org, "portOfEntryCountry", "eq", json!("KE")))
            .await;
    }
    let b_halted = b.halt().await;
    let expected = publish_to_mombasa(&trader, &a, 3).await;
    // C hears of each while B is down, in the order they were shared.
    let at_c = eventually("C told of all three", || shared_ids(&port, &c, 3)).await;
    assert_eq!(at_c, expected);
    // B, back, gets what waited for it, in the same order.
    let b = TestNode::start_again(b_halted).await;
    let at_b = eventually("B told of all three", || shared_ids(&agency, &b, 3)).await;
    assert_eq!(at_b, expected);
    drop(a);
}

/// Deletes the policy `uid` on `node` (204).
async fn delete_policy(operator: &Operator, node: &TestNode, uid: &str) {
    let path = format!("{POLICIES}/{}", percent_encoded(uid));
    let r = operator
        .send(node, reqwest::Method::DELETE, &path, None)
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

/// Deleting the policy that shared a consignment with a partner node's organisation reaches
/// that node: the organisation's circle loses it, as a local agency's does — its lists neither
/// show it nor keep asking the provider for it.
#[tokio::test]
async fn a_deleted_policy_withdraws_the_share_on_the_partner_node() {
    let (a, b, operator, trader, agency, policy) = a_trader_and_a_partners_agency().await;
    trader.publish_example(&a, "create-consignment").await;
    eventually("B notified", || shared_notification(&agency, &b)).await;
    let shared = format!("{LIST}?scope=shared");
    assert_eq!(
        get_json(&agency, &b, &shared).await["entities"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    delete_policy(&operator, &a, policy["uid"].as_str().unwrap()).await;
    // A refuses B's pulls at once; the withdrawal then takes the record out of B's circle, so
    // B's list stops trying (and warning that the provider did not answer).
    eventually("B's list without it, and no failed pull", || async {
        let list = get_json(&agency, &b, &shared).await;
        (list == json!({"entities": []})).then_some(())
    })
    .await;
    let view = agency
        .get(&b, &format!("{LIST}/{GLOBAL_ID}?scope=shared"))
        .await;
    assert_error(view, StatusCode::NOT_FOUND, "GeneralError").await;
}

/// A share withdrawn while its notice still waits for a partner that is down never reaches
/// the partner: the waiting notice is dropped, and the withdrawal changes nothing there.
#[tokio::test]
async fn a_share_withdrawn_before_its_notice_left_never_reaches_the_partner() {
    let (a, b, operator, trader, agency, by_country) = a_trader_and_a_partners_agency().await;
    let b_halted = b.halt().await;
    trader.publish_example(&a, "create-consignment").await;
    delete_policy(&operator, &a, by_country["uid"].as_str().unwrap()).await;
    // A later share by another policy: once B has it, anything queued before it for B
    // would have arrived (notices reach a receiver in the order they were queued).
    operator
        .policy(
            &a,
            rule(&a, agency.org(), "portOfEntry", "eq", json!("KEMBA")),
        )
        .await;
    let later = publish_to_mombasa(&trader, &a, 1).await;
    let b = TestNode::start_again(b_halted).await;
    let at_b = eventually("B told of the later one", || shared_ids(&agency, &b, 1)).await;
    assert_eq!(at_b, later, "only the later share reached B");
    let list = get_json(&agency, &b, &format!("{LIST}?scope=shared")).await;
    let ids: Vec<&Value> = list["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["globalId"])
        .collect();
    assert_eq!(ids, vec![&json!(later[0])], "{list:#}");
    drop(a);
}
