//! Intake writes: the activities the benchmark posts and what each answer tells (latency,
//! statements written, the stages of Server-Timing).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Ports of entry of the fill-up consignments.
pub const PORTS: &[&str] = &[
    "KEMBA", "TZDAR", "NLRTM", "SGSIN", "BEANR", "DEHAM", "CNSHA", "USNYC",
];

pub const EXAMPLE: &str = include_str!("../../tests/fixtures/examples/create-consignment.json");
const ADD_DOCUMENT: &str = include_str!("../../tests/fixtures/examples/add-document.json");

pub struct Sample {
    pub latency: Duration,
    /// Statements the node wrote for the activity (the task's `result`).
    pub written: i64,
    /// parse, expand, shapes, store, route, fetch (ms), from Server-Timing.
    pub stages: [f64; 6],
}

fn stages(header: Option<&reqwest::header::HeaderValue>) -> [f64; 6] {
    let mut out = [0.0; 6];
    let Some(text) = header.and_then(|h| h.to_str().ok()) else {
        return out;
    };
    for part in text.split(',') {
        let (name, dur) = part.trim().split_once(";dur=").unwrap_or(("", "0"));
        let i = match name {
            "parse" => 0,
            "expand" => 1,
            "shapes" => 2,
            "store" => 3,
            "route" => 4,
            "fetch" => 5,
            _ => continue,
        };
        out[i] = dur.parse().unwrap_or(0.0);
    }
    out
}

/// The benchmark organisation's user, posting to the inbox.
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub key: String,
    pub token: String,
    pub org: String,
}

impl Client {
    pub async fn create(&self, n: usize) -> Sample {
        self.create_with_id(n, &format!("urn:uuid:{}", uuid::Uuid::new_v4()))
            .await
    }

    pub async fn create_with_id(&self, n: usize, global_id: &str) -> Sample {
        self.post(&self.consignment(n, global_id)).await
    }

    fn consignment(&self, n: usize, global_id: &str) -> Value {
        let mut activity: Value = serde_json::from_str(EXAMPLE).unwrap();
        activity["actor"]["registeredId"]["@value"] = json!(self.org);
        activity["object"]["globalId"] = json!(global_id);
        activity["object"]["identifier"] =
            json!(format!("BENCH-{n}-{}", uuid::Uuid::new_v4().simple()));
        activity
    }

    /// A `Create` (or, with `kind` "Update", an update) of the consignment with these ids; the
    /// description carries `n` so that every update changes it.
    pub async fn change(&self, kind: &str, global_id: &str, identifier: &str, n: usize) -> Sample {
        let mut activity: Value = serde_json::from_str(EXAMPLE).unwrap();
        activity["type"] = json!(kind);
        activity["actor"]["registeredId"]["@value"] = json!(self.org);
        activity["object"]["globalId"] = json!(global_id);
        activity["object"]["identifier"] = json!(identifier);
        activity["object"]["summaryDescription"] = json!(format!("bench revision {n}"));
        self.post(&activity).await
    }

    /// An event `Add` to consignment `global_id`.
    pub async fn add_event(&self, global_id: &str, n: usize) -> Sample {
        let activity = json!({
            "@context": "https://www.w3.org/ns/activitystreams",
            "type": "Add",
            "actor": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                      "type": "TradeParty",
                      "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": self.org}},
            "object": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                       "type": "SupplyChainEvent", "typeCode": format!("bench:event-{n}"),
                       "occurrenceDateTime": "2026-12-24T10:00:00Z"},
            "target": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                       "type": "Consignment", "globalId": global_id}
        });
        self.post(&activity).await
    }

    /// The benchmark consignment with another port of arrival.
    pub async fn create_to_port(&self, n: usize, port: &str) -> Sample {
        let mut activity = self.consignment(n, &format!("urn:uuid:{}", uuid::Uuid::new_v4()));
        activity["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]
            ["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!(port);
        self.post(&activity).await
    }

    /// A consignment entering at one of a few ports on one of 365 days (the fill-up for the
    /// read measurements, so that aggregates have groups).
    pub async fn create_varied(&self, n: usize) -> Sample {
        self.post(&self.varied(n)).await
    }

    /// Fill-up consignment `n` created, then updated `updates` times (a new summary
    /// description each time).
    pub async fn create_revised(&self, n: usize, updates: usize) -> Sample {
        let mut activity = self.varied(n);
        let created = self.post(&activity).await;
        activity["type"] = json!("Update");
        for k in 0..updates {
            activity["object"]["summaryDescription"] = json!(format!("bench revision {k}"));
            self.post(&activity).await;
        }
        created
    }

    /// The `Create` of fill-up consignment `n`: one of eight ports of entry, one of 365 days.
    /// Its ids come from the organisation and `n`, so the same `n` is the same activity: a
    /// bulk load stopped mid-way and run again answers what it had applied as replays.
    pub fn varied(&self, n: usize) -> Value {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(format!("{}:{n}", self.org));
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        );
        let mut activity = self.consignment(n, &format!("urn:uuid:{uuid}"));
        activity["object"]["identifier"] = json!(format!("BENCH-{n}-{}", &hex[..12]));
        let arrival = &mut activity["object"]["atArrivalTransportMovement"]["arrivalEvent"][0];
        arrival["occurrenceLogisticsLocation"]["identifier"]["@value"] =
            json!(PORTS[n % PORTS.len()]);
        let day = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()
            + chrono::Days::new((n % 365) as u64);
        arrival["scheduledOccurrenceDateTime"] = json!(format!("{day}T06:00:00Z"));
        activity
    }

    /// Adds document `n` (fresh random bytes, a `data:` URL) to consignment `global_id`.
    pub async fn add_document(&self, n: usize, global_id: &str, size: usize) -> Sample {
        use base64::Engine;
        use rand::RngCore;
        let mut bytes = vec![0u8; size];
        rand::thread_rng().fill_bytes(&mut bytes);
        let mut activity: Value = serde_json::from_str(ADD_DOCUMENT).unwrap();
        activity["actor"]["registeredId"]["@value"] = json!(self.org);
        activity["target"]["globalId"] = json!(global_id);
        activity["object"]["identifier"] = json!(format!("DOC-{n}"));
        activity["object"]["uRIId"] = json!(format!(
            "data:application/pdf;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        ));
        self.post(&activity).await
    }

    /// An activity's JSON `body` posted to the inbox as this client: the answer, whatever its
    /// status.
    pub async fn send(&self, body: Vec<u8>) -> reqwest::Response {
        self.http
            .post(&self.url)
            .header("x-api-key", &self.key)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request")
    }

    async fn post(&self, activity: &Value) -> Sample {
        let body = serde_json::to_vec(activity).unwrap();
        let t = Instant::now();
        let r = self.send(body).await;
        let status = r.status();
        let stages = stages(r.headers().get("server-timing"));
        let entry: Value = r.json().await.expect("entry");
        let latency = t.elapsed();
        assert!(status.is_success(), "{status} {entry}");
        assert_eq!(entry["status"], "completed", "{entry}");
        let written = entry["tasks"][0]["result"].as_i64().unwrap_or(0);
        Sample {
            latency,
            written,
            stages,
        }
    }
}
