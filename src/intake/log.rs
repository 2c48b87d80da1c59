//! The activity log entry the inbox answers with (spec: ActivityLogEntry, Task, Task.error).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::shapes::Failure;
use crate::consignment::ports::Warning;

/// `dataspaceAppId` of the task that applies activities to consignments.
pub const APP_ID: &str = "dataspace-node:consignments";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskError {
    pub name: String,
    pub source: String,
    pub message: String,
    pub cause: Value,
}

/// Failures a ValidationError lists at most.
pub const MAX_FAILURES: usize = 200;

impl TaskError {
    fn new(
        name: &str,
        message: &str,
        cause_name: &str,
        cause_message: String,
        properties: Option<Value>,
    ) -> Self {
        let mut cause = Map::new();
        cause.insert("name".into(), json!(cause_name));
        cause.insert("message".into(), json!(cause_message));
        if let Some(p) = properties {
            cause.insert("properties".into(), p);
        }
        Self {
            name: name.into(),
            source: APP_ID.into(),
            message: message.into(),
            cause: Value::Object(cause),
        }
    }

    /// A shape failure: `UnprocessableError` wrapping `ValidationError`, every failure listed
    /// (up to [`MAX_FAILURES`], then counted).
    pub fn validation(failures: &[Failure]) -> Self {
        const LISTED: usize = 5;
        let mut parts: Vec<String> = failures
            .iter()
            .take(LISTED)
            .map(|f| match &f.value {
                Some(value) if !f.message.contains(value.as_str()) => {
                    format!("{} (value {value:?})", f.message)
                }
                _ => f.message.clone(),
            })
            .collect();
        if failures.len() > LISTED {
            parts.push(format!("and {} more", failures.len() - LISTED));
        }
        // Every failure up to a bound: the entry is stored and answered, and an activity can
        // fail in as many places as its body has values.
        let mut properties = json!({ "failures": &failures[..failures.len().min(MAX_FAILURES)] });
        if failures.len() > MAX_FAILURES {
            properties["failuresNotListed"] = json!(failures.len() - MAX_FAILURES);
        }
        Self::new(
            "UnprocessableError",
            "dataspaceDataPlaneService.activitySemanticError",
            "ValidationError",
            parts.join("; "),
            Some(properties),
        )
    }

    /// An `Add` whose target names consignments of several publishers: nothing is stored, and
    /// the candidates are listed (`aigId`, `publisher`) so that `target.globalId` can name one
    /// by its aig id.
    pub fn ambiguous<'a>(
        key: &str,
        candidates: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let candidates: Vec<Value> = candidates
            .into_iter()
            .map(|(aig, publisher)| json!({"aigId": format!("aig:{aig}"), "publisher": publisher}))
            .collect();
        Self::new(
            "ConflictError",
            "dataspaceDataPlaneService.activityConflict",
            "ConflictError",
            format!(
                "{key:?} names consignments of more than one publisher shared with your \
                 organisation; name one by its aig id in target.globalId"
            ),
            Some(json!({ "candidates": candidates })),
        )
    }

    pub fn conflict(message: String) -> Self {
        Self::new(
            "ConflictError",
            "dataspaceDataPlaneService.activityConflict",
            "ConflictError",
            message,
            None,
        )
    }

    /// A document whose content the node could not take (bad `data:` URL, failed or oversized
    /// fetch): nothing of the activity is stored.
    pub fn document(message: String) -> Self {
        Self::new(
            "UnprocessableError",
            "dataspaceDataPlaneService.documentUnavailable",
            "DocumentError",
            message,
            None,
        )
    }

    pub fn not_found(message: String) -> Self {
        Self::new(
            "NotFoundError",
            "dataspaceDataPlaneService.consignmentNotFound",
            "NotFoundError",
            message,
            None,
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub task_id: String,
    pub dataspace_app_id: String,
    /// The number of RDF statements the task wrote (0 when it failed).
    pub result: i64,
    pub start_date: String,
    pub end_date: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
    /// What the node understood differently from what a publisher may expect (a port without
    /// a UN/LOCODE, so not routed); an addition to the spec's Task, present only when any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: String,
    pub status: String,
    pub generator: String,
    pub date_created: String,
    pub date_modified: String,
    pub tasks: Vec<Task>,
    /// The node's attestation of the applied activity (its trust credential, a JWS signed with
    /// the node's Ed25519 key); read with the entry, never stored in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<String>,
}

impl Entry {
    pub fn new(
        id: String,
        generator: String,
        started: String,
        ended: String,
        outcome: Result<i64, TaskError>,
        warnings: Vec<Warning>,
    ) -> Self {
        let (status, result, error) = match outcome {
            Ok(statements) => ("success", statements, None),
            Err(e) => ("failed", 0, Some(e)),
        };
        Self {
            status: if error.is_some() {
                "error"
            } else {
                "completed"
            }
            .into(),
            tasks: vec![Task {
                task_id: uuid::Uuid::new_v4().to_string(),
                dataspace_app_id: APP_ID.into(),
                result,
                start_date: started.clone(),
                end_date: ended.clone(),
                status: status.into(),
                error,
                warnings,
            }],
            id,
            generator,
            date_created: started,
            date_modified: ended,
            attestation: None,
        }
    }

    pub fn failed(&self) -> bool {
        self.status == "error"
    }
}
