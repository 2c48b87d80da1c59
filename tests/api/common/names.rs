//! Endpoint paths and the ids of the example consignment (tests/fixtures/examples).

pub const INBOX: &str = "/supply-chain/data-space/inbox";
pub const VALIDATE: &str = "/supply-chain/data-space/inbox/validate";
pub const LIST: &str = "/supply-chain/data-space/consignments";
pub const NOTIFICATIONS: &str = "/supply-chain/data-space/notifications";
pub const POLICIES: &str = "/supply-chain/data-space/policies";
pub const SPARQL: &str = "/supply-chain/data-space/sparql";

/// The `globalId` of the example consignment.
pub const GLOBAL_ID: &str = "urn:uuid:7d1f8f3e-5b3c-4c1e-9a51-2f6a1f0b9c11";
/// The `identifier` of the example consignment.
pub const IDENTIFIER: &str = "FWD-2026-000417";
