//! One delivery attempt over HTTP, as Standard Webhooks has it: `webhook-id`,
//! `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
//! "<id>.<timestamp>.<body>">`, one per secret that signs, space-separated). Destinations are
//! judged when the node connects (the guarded resolver of document fetches, over the
//! `--webhook-allow-http` list), redirects are not followed, and the answer is read under a
//! small cap.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use url::{Host, Url};

use super::queue::Delivery;
use super::Subscription;
use crate::documents::source::{forbidden, AllowList, GuardedResolver};

/// How much of a receiver's answer is read (it only goes into `lastError`).
const ANSWER_CAP: usize = 4096;

/// How deliveries are retried and timed.
#[derive(Debug, Clone)]
pub struct Settings {
    pub retry_base: Duration,
    pub max_failures: u32,
    pub timeout: Duration,
    /// How long a delivered delivery stays in the log.
    pub keep_delivered: Duration,
}

/// What an attempt found.
#[derive(Debug, Default)]
pub struct Answer {
    pub status: Option<u16>,
    pub error: Option<String>,
    /// The receiver's `Retry-After` on a 429 or 503.
    pub retry_after: Option<Duration>,
}

impl Answer {
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    fn failed(why: String) -> Self {
        Self {
            error: Some(why),
            ..Self::default()
        }
    }
}

/// The client deliveries go out through: names resolved by the guarded resolver, no proxy
/// from the environment, no redirects, one time limit for the whole exchange.
pub fn client(allow: Arc<AllowList>, timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .dns_resolver(Arc::new(GuardedResolver::new(allow)))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("dataspace-node/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

/// `v1,<signature>` for each secret that signs at `timestamp`, space-separated.
pub fn signatures(s: &Subscription, id: &str, timestamp: i64, body: &str) -> String {
    s.signing(timestamp * 1000)
        .iter()
        .map(|secret| {
            let mut mac =
                Hmac::<Sha256>::new_from_slice(&secret.key()).expect("HMAC takes any key length");
            mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
            format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub async fn send(
    client: &reqwest::Client,
    allow: &AllowList,
    s: &Subscription,
    d: &Delivery,
) -> Answer {
    let Ok(url) = Url::parse(&s.url) else {
        return Answer::failed(format!("{} is not a URL", s.url));
    };
    // An address given as such never reaches the resolver: judged here, at every attempt.
    let ip = match url.host() {
        Some(Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
        _ => None,
    };
    if ip.is_some_and(|ip| forbidden(ip) && !allow.lists_ip(ip)) {
        return Answer::failed(format!("{url} is an address the node may not send to"));
    }
    let timestamp = chrono::Utc::now().timestamp();
    let request = client
        .post(url.clone())
        .header("content-type", "application/json")
        .header("webhook-id", &d.id)
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            signatures(s, &d.id, timestamp, &d.body),
        )
        .body(d.body.clone());
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            return Answer::failed(format!(
                "sending to {url} failed: {}",
                crate::error::chain(&e)
            ))
        }
    };
    let status = response.status().as_u16();
    let retry_after = matches!(status, 429 | 503)
        .then(|| response.headers().get("retry-after"))
        .flatten()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let answer = crate::capped::bytes(response, ANSWER_CAP).await;
    let error = (!(200..300).contains(&status)).then(|| {
        let text = answer
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .chars()
                    .take(200)
                    .collect::<String>()
            })
            .unwrap_or_default();
        format!("the receiver answered {status} {}", text.trim())
            .trim()
            .to_owned()
    });
    Answer {
        status: Some(status),
        error,
        retry_after,
    }
}
