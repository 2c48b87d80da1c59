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
    /// The replica cannot run this query (a 400, its SPARQL compiler's error, an answer cut
    /// or unreadable): the store answers it, and the replica stays in use for the others.
    Query(String),
    /// No answer within the request's time limit.
    TimedOut,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unavailable(why) => write!(f, "replica unavailable: {why}"),
            Failure::Refused(why) => write!(f, "replica refused the request: {why}"),
            Failure::Query(why) => write!(f, "the replica cannot run this query: {why}"),
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
        let password = match (&config.replica_password, &config.replica_password_file) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(file)) => Some(read_password(file)?),
            (None, None) => None,
        };
        let credentials = config
            .replica_user
            .as_ref()
            .map(|u| (u.clone(), password.unwrap_or_default()));
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
            // Only what a message needs: an error body is read under a small cap.
            let text = crate::capped::bytes(response, ERROR_BODY_BYTES)
                .await
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let text: String = text.chars().take(300).collect();
            let why = format!("{status}: {}", text.trim());
            return Err(classify(status, why));
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

/// Most of a refusal's body read (its first 300 characters are kept).
const ERROR_BODY_BYTES: usize = 4096;

/// A failed request by its status and the replica's message (`"<status>: <body>"`): a 400,
/// or a server error of Virtuoso's SPARQL compiler or of the query's own data (SQL states
/// 37000 syntax, 42000 and 42S.. semantics, 22... data), says the query cannot run there;
/// other 4xx say the node's requests are refused (credentials, endpoint); other 5xx that
/// the replica is unwell.
fn classify(status: StatusCode, why: String) -> Failure {
    let body = why.split_once(": ").map_or("", |(_, b)| b);
    let query_error = [
        "Virtuoso 37000",
        "Virtuoso 42000",
        "Virtuoso 42S",
        "Virtuoso 22",
    ]
    .iter()
    .any(|state| body.starts_with(state));
    if status == StatusCode::BAD_REQUEST || (status.is_server_error() && query_error) {
        Failure::Query(why)
    } else if status.is_server_error() {
        Failure::Unavailable(why)
    } else {
        Failure::Refused(why)
    }
}

fn transport(e: reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::TimedOut
    } else {
        Failure::Unavailable(e.to_string())
    }
}

/// The password of `--replica-password-file`: its first line.
fn read_password(file: &std::path::Path) -> crate::error::Result<String> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        crate::error::Error::internal(format!("--replica-password-file {}: {e}", file.display()))
    })?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_the_replica_cannot_run_is_told_from_a_replica_that_is_unwell() {
        let query = |status: u16, body: &str| {
            let status = StatusCode::from_u16(status).unwrap();
            classify(status, format!("{status}: {body}"))
        };
        assert!(matches!(query(400, "bad"), Failure::Query(_)));
        let compiler = "Virtuoso 37000 Error SP030: SPARQL compiler, line 1: syntax error";
        assert!(matches!(query(500, compiler), Failure::Query(_)));
        assert!(matches!(
            query(500, "Virtuoso 42000 Error SR..."),
            Failure::Query(_)
        ));
        assert!(matches!(
            query(500, "Virtuoso 08C01 Error CL..."),
            Failure::Unavailable(_)
        ));
        assert!(matches!(query(503, ""), Failure::Unavailable(_)));
        assert!(matches!(query(404, "Not found"), Failure::Refused(_)));
        assert!(matches!(query(403, ""), Failure::Refused(_)));
    }
}
