//! `/organizations/*`: an organisation's API keys and users, managed by its admins and the
//! operator; `/operations/operator` and `/operations/audit`.
//!
//! An organisation is named in the path by its DID (percent-encoded) or by the id at its end
//! (`…:org:{id}`), a user likewise. Another organisation's admin gets 404, as for anything it
//! cannot see; a member of the organisation gets 403.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::extract::{ApiKey, Body, Fields, PathParams, QueryParams};
use super::reads::{blocking, page_body, paging, share};
use crate::accounts::people::Role;
use crate::accounts::users::UserChange;
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::node::Node;

type Params = QueryParams<HashMap<String, String>>;

/// A DID as named in a path: whole, or the id after `:org:` / `:user:`.
fn did(node: &Node, named: &str, kind: &str) -> String {
    if named.starts_with("did:") {
        named.to_owned()
    } else if kind == "org" {
        node.identity.organization_did(named)
    } else {
        node.identity.user_did(named)
    }
}

/// The organisation `named` if the caller manages it: the operator account any of the node's,
/// an admin its own.
fn managed(node: &Node, caller: &Caller, named: &str) -> Result<String> {
    let org = did(node, named, "org");
    let not_found = || Error::NotFound(format!("no organisation {named} you manage"));
    if caller.operator {
        return if node.accounts.organization_known(&org) {
            Ok(org)
        } else {
            Err(not_found())
        };
    }
    if caller.organization != org {
        return Err(not_found());
    }
    match node.accounts.person(&caller.user).map(|p| p.role) {
        Some(Role::Admin) => Ok(org),
        _ => Err(Error::Forbidden(
            "an organisation's keys and users are managed by its admins".into(),
        )),
    }
}

fn only_operator(caller: &Caller, what: &str) -> Result<()> {
    if caller.operator {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "{what} the node operator's: its account's session with the operator key"
        )))
    }
}

/// `GET /organizations`: the node's organisations (the operator).
pub async fn list(State(node): State<Arc<Node>>, caller: Caller) -> Result<Json<Value>> {
    only_operator(&caller, "the list of organisations is")?;
    Ok(Json(json!({"entities": node.accounts.organization_list()})))
}

/// `GET /organizations/{id}/keys`
pub async fn keys(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(named): PathParams<String>,
) -> Result<Json<Value>> {
    let org = managed(&node, &caller, &named)?;
    Ok(Json(json!({"entities": node.accounts.keys_of(&org)})))
}

/// `POST /organizations/{id}/keys` `{name}` → 201 with the key, shown this once.
pub async fn create_key(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(named): PathParams<String>,
    body: Body,
) -> Result<Response> {
    let org = managed(&node, &caller, &named)?;
    let object = body.json_object()?;
    only_fields(&object, &["name"])?;
    let name = Fields(&object).required_str("name")?;
    let actor = caller.actor();
    let worker = node.clone();
    let (mut described, key) = blocking(share(&node, &caller), move || {
        worker.accounts.create_key(&actor, &org, &name)
    })
    .await?;
    described["apiKey"] = Value::String(key);
    Ok((StatusCode::CREATED, Json(described)).into_response())
}

/// `DELETE /organizations/{id}/keys/{keyId}`: the key, and every session made with it, is
/// refused from now on.
pub async fn revoke_key(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams((named, key_id)): PathParams<(String, String)>,
) -> Result<StatusCode> {
    let org = managed(&node, &caller, &named)?;
    let actor = caller.actor();
    let worker = node.clone();
    blocking(share(&node, &caller), move || {
        worker.accounts.revoke_key(&actor, &org, &key_id)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /organizations/{id}/users`
pub async fn users(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams(named): PathParams<String>,
) -> Result<Json<Value>> {
    let org = managed(&node, &caller, &named)?;
    let users: Vec<Value> = node
        .accounts
        .standing()
        .users_of(&org)
        .iter()
        .map(|p| p.public())
        .collect();
    Ok(Json(json!({"entities": users})))
}

/// `PATCH /organizations/{id}/users/{userId}` `{role?, disabled?}`
pub async fn update_user(
    State(node): State<Arc<Node>>,
    caller: Caller,
    PathParams((named, user)): PathParams<(String, String)>,
    body: Body,
) -> Result<Json<Value>> {
    let org = managed(&node, &caller, &named)?;
    let user = did(&node, &user, "user");
    let object = body.json_object()?;
    only_fields(&object, &["role", "disabled"])?;
    let mut change = UserChange::default();
    if let Some(role) = Fields(&object).optional_str("role")? {
        change.role = Some(match Role::parse(&role) {
            Some(r @ (Role::Admin | Role::Member)) => r,
            _ => return Err(Error::invalid_field("role", "admin or member")),
        });
    }
    match object.get("disabled") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => change.disabled = Some(*b),
        Some(_) => return Err(Error::invalid_field("disabled", "must be true or false")),
    }
    if change.role.is_none() && change.disabled.is_none() {
        return Err(Error::bad_request(
            "nothing to change: give role or disabled",
        ));
    }
    let actor = caller.actor();
    let worker = node.clone();
    let person = blocking(share(&node, &caller), move || {
        worker.accounts.update_user(&actor, &org, &user, change)
    })
    .await?;
    Ok(Json(person.public()))
}

/// Refuses fields the endpoint does not know, naming the first.
fn only_fields(object: &serde_json::Map<String, Value>, known: &[&str]) -> Result<()> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(Error::invalid_field(
            k,
            format!("not a field of this request ({})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

/// `POST /operations/operator` `{email, password}` with the operator key alone: the operator
/// account, once.
pub async fn create_operator(
    State(node): State<Arc<Node>>,
    ApiKey(key): ApiKey,
    body: Body,
) -> Result<Response> {
    node.auth.key_holder(key.as_deref())?;
    let object = body.json_object()?;
    let fields = Fields(&object);
    let email = fields.required_str("email")?;
    let password = fields.required_str("password")?;
    let created = node
        .auth
        .create_operator(key.as_deref(), &email, password)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "identity": created.identity,
            "organizationId": created.organization,
            "role": "operator",
        })),
    )
        .into_response())
}

/// `GET /operations/audit`: every entry for the operator (or one organisation's, with
/// `organizationId`), an organisation's own for its admins; newest first.
pub async fn audit(
    State(node): State<Arc<Node>>,
    caller: Caller,
    QueryParams(params): Params,
) -> Result<Response> {
    let (limit, cursor) = paging(&params)?;
    let org = match (caller.operator, params.get("organizationId")) {
        (true, None) => None,
        (true, Some(named)) => Some(did(&node, named, "org")),
        (false, named) => {
            let own = caller.organization.clone();
            let org = managed(&node, &caller, named.map_or(&own, |n| n))?;
            Some(org)
        }
    };
    let worker = node.clone();
    let page = blocking(share(&node, &caller), move || {
        worker
            .accounts
            .audit
            .page(&worker.store, org.as_deref(), limit, cursor.as_deref())
    })
    .await?;
    Ok(page_body(page))
}
