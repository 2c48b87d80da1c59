//! The replica's two SPARQL endpoints over HTTP, with Basic or Digest authentication as the
//! replica asks for (its `401` challenge), remembered so later requests authenticate at once.

use std::sync::Mutex;
use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode};

use super::digest::{self, Challenge};
use crate::config::ReplicaConfig;

/// Why a request to the replica did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Not reachable, 5xx, or an answer that could not be read: worth trying again later.
    Unavailable(String),
    /// The replica refused the request (4xx other than an answered challenge).
    Refused(String),
    /// No answer within the request's time limit.
    TimedOut,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unavailable(why) => write!(f, "replica unavailable: {why}"),
            Failure::Refused(why) => write!(f, "replica refused the request: {why}"),
            Failure::TimedOut => write!(f, "the replica did not answer in time"),
        }
    }
}

/// How requests authenticate, learnt from the replica's challenge.
#[derive(Debug, Clone)]
enum Scheme {
    Unknown,
    Basic,
    Digest { challenge: Challenge, count: u32 },
}

pub struct Client {
    http: reqwest::Client,
    query_url: reqwest::Url,
    update_url: reqwest::Url,
    credentials: Option<(String, String)>,
    scheme: Mutex<Scheme>,
}

/// Time limit of one update request (a batch, or a chunk of the initial sync).
const UPDATE_TIMEOUT: Duration = Duration::from_secs(120);

impl Client {
    /// The client for `config`, or `None` when no replica is configured.
    pub fn new(config: &ReplicaConfig) -> crate::error::Result<Option<Self>> {
        let Some(query) = config.replica_query_url.as_deref() else {
            return Ok(None);
        };
        let parse = |name: &str, url: &str| {
            reqwest::Url::parse(url).map_err(|e| {
                crate::error::Error::internal(format!("--{name} {url:?} is not a URL: {e}"))
            })
        };
        let query_url = parse("replica-query-url", query)?;
        let update_url = match config.replica_update_url.as_deref() {
            Some(u) => parse("replica-update-url", u)?,
            None => query_url.clone(),
        };
        let credentials = match (&config.replica_user, &config.replica_password) {
            (Some(u), p) => Some((u.clone(), p.clone().unwrap_or_default())),
            _ => None,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // The replica is the operator's own service, named by configuration: no redirects
            // to anywhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| crate::error::Error::internal(format!("HTTP client: {e}")))?;
        Ok(Some(Self {
            http,
            query_url,
            update_url,
            credentials,
            scheme: Mutex::new(Scheme::Unknown),
        }))
    }

    pub fn query_url(&self) -> &str {
        self.query_url.as_str()
    }

    /// Runs a SPARQL 1.1 Update (`application/sparql-update`).
    pub async fn update(&self, text: String) -> Result<(), Failure> {
        let response = self
            .send(
                &self.update_url,
                "application/sparql-update",
                "application/sparql-results+json",
                text.into_bytes(),
                UPDATE_TIMEOUT,
            )
            .await?;
        // Drain the body, so the connection is reused.
        response
            .bytes()
            .await
            .map_err(|e| Failure::Unavailable(e.to_string()))?;
        Ok(())
    }

    /// Runs a query (form-encoded POST), answered in `accept`; the response once its headers
    /// came (the caller reads the body within `timeout`).
    pub async fn query(
        &self,
        text: &str,
        accept: &str,
        timeout: Duration,
    ) -> Result<reqwest::Response, Failure> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("query", text)
            .finish();
        self.send(
            &self.query_url,
            "application/x-www-form-urlencoded",
            accept,
            body.into_bytes(),
            timeout,
        )
        .await
    }

    async fn send(
        &self,
        url: &reqwest::Url,
        content_type: &'static str,
        accept: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<reqwest::Response, Failure> {
        // At most one answered challenge per request (a second 401 means wrong credentials).
        for _ in 0..2 {
            let mut request = self
                .http
                .post(url.clone())
                .timeout(timeout)
                .header(CONTENT_TYPE, content_type)
                .header(ACCEPT, accept)
                .body(body.clone());
            if let Some(value) = self.authorization(url) {
                request = request.header(AUTHORIZATION, value);
            }
            let response = request.send().await.map_err(transport)?;
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED && self.learn(&response) {
                continue;
            }
            if status.is_success() {
                return Ok(response);
            }
            let text = response.text().await.unwrap_or_default();
            let text: String = text.chars().take(300).collect();
            let why = format!("{status}: {}", text.trim());
            return Err(if status.is_server_error() {
                Failure::Unavailable(why)
            } else {
                Failure::Refused(why)
            });
        }
        Err(Failure::Refused(
            "401: the replica refused the configured credentials".into(),
        ))
    }

    /// Takes the scheme of a `401` challenge; whether the request is worth sending again.
    fn learn(&self, response: &reqwest::Response) -> bool {
        if self.credentials.is_none() {
            return false;
        }
        let mut scheme = self.scheme.lock().unwrap_or_else(|p| p.into_inner());
        for value in response.headers().get_all(WWW_AUTHENTICATE) {
            let Ok(value) = value.to_str() else { continue };
            if let Some(challenge) = digest::parse(value) {
                // A new nonce (the old one expired) is worth one more try; the same one not.
                if let Scheme::Digest { challenge: old, .. } = &*scheme {
                    if old.nonce == challenge.nonce {
                        return false;
                    }
                }
                *scheme = Scheme::Digest {
                    challenge,
                    count: 0,
                };
                return true;
            }
            if value.trim_start().starts_with("Basic") && !matches!(*scheme, Scheme::Basic) {
                *scheme = Scheme::Basic;
                return true;
            }
        }
        false
    }

    fn authorization(&self, url: &reqwest::Url) -> Option<HeaderValue> {
        let (user, password) = self.credentials.as_ref()?;
        let mut scheme = self.scheme.lock().unwrap_or_else(|p| p.into_inner());
        let value = match &mut *scheme {
            Scheme::Unknown => return None,
            Scheme::Basic => {
                use base64::Engine;
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                format!("Basic {token}")
            }
            Scheme::Digest { challenge, count } => {
                *count += 1;
                let uri = match url.query() {
                    Some(q) => format!("{}?{q}", url.path()),
                    None => url.path().to_owned(),
                };
                let cnonce = hex::encode(rand::random::<[u8; 8]>());
                digest::authorization(
                    challenge,
                    user,
                    password,
                    Method::POST.as_str(),
                    &uri,
                    *count,
                    &cnonce,
                )
            }
        };
        HeaderValue::from_str(&value).ok()
    }
}

fn transport(e: reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::TimedOut
    } else {
        Failure::Unavailable(e.to_string())
    }
}
