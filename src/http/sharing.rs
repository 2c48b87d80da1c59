//! Policies (`/policies`), notifications (`/notifications`) and their Server-Sent Events stream.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::watch;

use super::extract::{Body, PathParams, QueryParams};
use super::reads::{blocking, page_body, paging, share, Share};
use crate::accounts::audit::Audited;
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::node::Node;

type Params = QueryParams<HashMap<String, String>>;

/// Policy management is the node operator's: its account's session with its API key.
fn operator(caller: &Caller) -> Result<()> {
    if caller.operator {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "managing policies needs the operator account's session and the node operator's \
             API key as x-api-key"
                .into(),
        ))
    }
}

pub async fn create_policy(
    State(node): State<Arc<Node>>,
    caller: Caller,
    body: Body,
) -> Result<impl IntoResponse> {
    operator(&caller)?;
    let value = Value::Object(body.json_object()?);
    let stored = blocking(share(&node, &caller), move || {
        let (log, actor) = (&node.accounts.audit, &caller.actor());
        node.sharing.create_policy(&value, Audited { log, actor })
    })
    .await?;
    Ok((StatusCode::CREATED, Json(stored)))
}

pub async fn list_policies(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Response> {
    let (limit, cursor) = paging(&params)?;
    let page = node.sharing.policies(&caller, limit, cursor.as_deref())?;
    Ok(page_body(page))
}

pub async fn get_policy(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(uid): PathParams<String>,
) -> Result<Json<Value>> {
    Ok(Json(node.sharing.policy(&caller, &uid)?))
}

pub async fn delete_policy(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(uid): PathParams<String>,
) -> Result<StatusCode> {
    operator(&caller)?;
    blocking(share(&node, &caller), move || {
        let (log, actor) = (&node.accounts.audit, &caller.actor());
        node.sharing.delete_policy(&uid, Audited { log, actor })
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn notifications(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Response> {
    let (limit, cursor) = paging(&params)?;
    let page = blocking(share(&node, &caller), move || {
        node.sharing
            .notification_page(&caller, limit, cursor.as_deref())
    })
    .await?;
    Ok(page_body(page))
}

/// What a stream has sent and waits on.
struct Feed {
    node: Arc<Node>,
    org: String,
    share: Share,
    last: u64,
    wake: watch::Receiver<u64>,
    closing: watch::Receiver<bool>,
    pending: VecDeque<(u64, Value)>,
    /// Whose stream it is: it ends when the caller's session does (a logout, the user
    /// disabled, the key revoked), woken by `ended`.
    caller: Caller,
    ended: watch::Receiver<u64>,
    /// When the caller's session expires: a stream carries nothing past it (the caller's
    /// other reads are 401 by then).
    expires: tokio::time::Instant,
}

/// `GET /notifications/stream`: new notifications as they are committed. A client that
/// reconnects with `Last-Event-ID` first gets every notification numbered after it.
pub async fn stream(
    State(node): State<Arc<Node>>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = std::result::Result<Event, Infallible>>>> {
    // Subscribe before reading the position: a notification committed in between wakes us.
    let mut wake = node.sharing.notifications.subscribe();
    wake.borrow_and_update();
    let last = match headers.get("last-event-id") {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Error::invalid_field("Last-Event-ID", "must be the id of an event of this stream")
            })?,
        None => node.sharing.notifications.latest(&caller.organization),
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    // The token is taken through the whole second of its `exp` (`expiry_ms`), as every other
    // read takes it, and no longer.
    let until_ms = (caller.expiry_ms.max(0) as u64).saturating_add(1000);
    let left = std::time::Duration::from_millis(until_ms.saturating_sub(now_ms));
    let feed = Feed {
        ended: node.accounts.watch_ended(),
        caller: caller.clone(),
        expires: tokio::time::Instant::now() + left,
        closing: node.closing.subscribe(),
        share: share(&node, &caller),
        org: caller.organization,
        node,
        last,
        wake,
        pending: VecDeque::new(),
    };
    let events = futures_util::stream::unfold(feed, next_event);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

async fn next_event(mut feed: Feed) -> Option<(std::result::Result<Event, Infallible>, Feed)> {
    loop {
        if tokio::time::Instant::now() >= feed.expires || !feed.node.auth.stands(&feed.caller) {
            return None;
        }
        if let Some((seq, json)) = feed.pending.pop_front() {
            let event = Event::default().id(seq.to_string()).data(json.to_string());
            return Some((Ok(event), feed));
        }
        if *feed.closing.borrow() {
            return None;
        }
        let (node, org, last) = (feed.node.clone(), feed.org.clone(), feed.last);
        // Point look-ups in RocksDB: off the async threads.
        let share = feed.share.clone();
        match blocking(share, move || {
            node.sharing.notifications_after(&org, last, 100)
        })
        .await
        {
            Ok(batch) if !batch.is_empty() => {
                feed.last = batch.last().map_or(feed.last, |(seq, _)| *seq);
                feed.pending.extend(batch);
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "notification stream ended");
                return None;
            }
        }
        tokio::select! {
            changed = feed.wake.changed() => if changed.is_err() { return None },
            _ = feed.closing.changed() => return None,
            _ = feed.ended.changed() => {}
            _ = tokio::time::sleep_until(feed.expires) => return None,
        }
    }
}
