//! What a write committed, as typed events, and the read models that follow them.
//!
//! A write collects [`Committed`] events while it builds its transaction; once the transaction
//! committed and a sync made it durable, [`Store::commit`](super::Store::commit) hands them, in
//! order, to every registered [`ReadModel`] — one commit after the other, in commit order
//! ([`super::group`]), so a reader never sees a later commit's effect without the earlier ones. The
//! writers do not know which models exist: the list order, the row cache, the shared lists,
//! the notification index, the policy index and the federation outbox register themselves at
//! start-up (`node.rs`).

use std::time::Duration;

use serde_json::Value;

/// One fact a committed write changed that an in-memory model mirrors.
#[derive(Debug, Clone, PartialEq)]
pub enum Committed {
    /// A consignment published on this node: it joins its publisher's list.
    ConsignmentCreated {
        publisher: String,
        /// The list key: creation time (ms since the epoch) and `aig:<hex>`.
        created_ms: i64,
        aig: String,
    },
    /// A consignment's list row changed (description replaced, event added, document
    /// revised): a cached row of it is stale.
    RowChanged { aig_hex: String },
    /// A consignment became readable to `org` through a grant (or a partner's share).
    Shared {
        org: String,
        created_ms: i64,
        aig: String,
    },
    /// The last grant sharing a consignment with `org` went.
    Unshared {
        org: String,
        created_ms: i64,
        aig: String,
    },
    /// Notification number `seq` was written for `org`.
    NotificationWritten { org: String, seq: u64 },
    /// A notice to a partner node was stored in the outbox (the notice's stored JSON form).
    NoticeQueued { notice: Value },
    /// A policy was stored (its stored JSON state).
    PolicyStored { state: Value },
    /// The policy with this uid was deleted.
    PolicyRemoved { uid: String },
    /// The consignment's circle or contributors changed without a row or share event (a
    /// partner node's organisation contributed): its readable-graph markers changed.
    CircleChanged { aig_hex: String },
    /// An applied activity changed a consignment (its subscribers are told: `webhooks`).
    ConsignmentChanged(Box<Change>),
    /// A webhook delivery was queued for a subscription.
    DeliveriesQueued { queued: Vec<(String, String)> },
    /// A webhook subscription was stored (its stored JSON state, secrets included).
    SubscriptionStored { state: Value },
    /// The webhook subscription with this id was deleted.
    SubscriptionRemoved { id: String },
    /// Entry `seq` of the replication log was written (`replica::log`), at `ms`.
    ReplicationLogged { seq: u64, ms: i64 },
    /// Audit entry `seq` was written, about `org` (`None`: about the node as a whole).
    Audited { seq: u64, org: Option<String> },
    /// A Dataspace Protocol negotiation or transfer has a message to send to its consumer.
    DspQueued { pid: String },
}

/// What an applied activity did to a consignment, as its subscribers are told.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The webhook event type: `consignment.created`, `.updated`, `.event_added`,
    /// `.document_added`.
    pub kind: &'static str,
    pub aig_hex: String,
    pub global_id: String,
    pub identifier: String,
    pub publisher: String,
    /// The organisation whose activity it was.
    pub organization: String,
    /// The activity's log entry, which also names the revision.
    pub entry_id: String,
    /// The description's JSON paths an update changed.
    pub changed: Vec<String>,
    /// The write's time (the revision's instant) and what it made: the consignment's aig id,
    /// or the added event's or document's node.
    pub at: String,
    pub object_id: String,
    /// For a document's Add: its document id and the number of the revision it made.
    pub document: Option<(String, i64)>,
}

impl Committed {
    /// The aig hex of the consignment whose replicated graphs (contribution graphs and their
    /// markers) this event changed, if any.
    pub fn consignment(&self) -> Option<&str> {
        match self {
            Committed::ConsignmentCreated { aig, .. }
            | Committed::Shared { aig, .. }
            | Committed::Unshared { aig, .. } => Some(aig.strip_prefix("aig:").unwrap_or(aig)),
            Committed::RowChanged { aig_hex } | Committed::CircleChanged { aig_hex } => {
                Some(aig_hex)
            }
            Committed::NotificationWritten { .. }
            | Committed::NoticeQueued { .. }
            | Committed::PolicyStored { .. }
            | Committed::PolicyRemoved { .. }
            | Committed::ConsignmentChanged(_)
            | Committed::DeliveriesQueued { .. }
            | Committed::SubscriptionStored { .. }
            | Committed::SubscriptionRemoved { .. }
            | Committed::ReplicationLogged { .. }
            | Committed::Audited { .. }
            | Committed::DspQueued { .. } => None,
        }
    }
}

impl Committed {
    /// Whether a writer, under the writer lock, reads the model this event changes (routing
    /// reads the policies, the webhook journal the subscriptions): such a commit's events are
    /// applied before the lock passes on ([`super::group`]), so the next writer works with them.
    pub fn read_by_writers(&self) -> bool {
        match self {
            Committed::PolicyStored { .. }
            | Committed::PolicyRemoved { .. }
            | Committed::SubscriptionStored { .. }
            | Committed::SubscriptionRemoved { .. } => true,
            Committed::ConsignmentCreated { .. }
            | Committed::RowChanged { .. }
            | Committed::Shared { .. }
            | Committed::Unshared { .. }
            | Committed::NotificationWritten { .. }
            | Committed::NoticeQueued { .. }
            | Committed::CircleChanged { .. }
            | Committed::ConsignmentChanged(_)
            | Committed::DeliveriesQueued { .. }
            | Committed::ReplicationLogged { .. }
            | Committed::Audited { .. }
            | Committed::DspQueued { .. } => false,
        }
    }
}

/// The events one write collects, plus how long its routing took (reported to the caller,
/// not applied to any model).
#[derive(Debug, Default, Clone)]
pub struct Events {
    list: Vec<Committed>,
    pub routing: Duration,
}

impl Events {
    pub fn push(&mut self, event: Committed) {
        self.list.push(event);
    }

    /// Drops what was collected: the write's task failed and nothing of it counts.
    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// Adds another write's events after these (writes committed together).
    pub fn append(&mut self, other: Events) {
        self.list.extend(other.list);
        self.routing += other.routing;
    }

    pub fn iter(&self) -> impl Iterator<Item = &Committed> {
        self.list.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Something written in the committing transaction itself, from the write's events, before
/// the commit: kept exactly when the write is (the replication log).
pub trait Journal: Send + Sync {
    /// Adds to `tx` what `events` call for; may add events of its own.
    fn record(
        &self,
        tx: &mut oxigraph::store::Transaction<'_>,
        events: &mut Events,
    ) -> crate::error::Result<()>;
}

/// An in-memory model of some of the store's facts, kept current by commit events.
pub trait ReadModel: Send + Sync {
    /// Applies one committed event (ignoring those the model does not mirror). Called in
    /// commit order, one commit at a time, once the commit is synced — for most commits after
    /// the writer lock passed on ([`Committed::read_by_writers`]): keep it to in-memory work.
    fn apply(&self, event: &Committed);
}
