//! The node's public base URL and the `did:web` identifiers derived from it.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use url::Url;

use crate::error::{Error, Result};

/// did:web encodes the port's colon; keep every other host character as it is.
const DID_HOST: &AsciiSet = &CONTROLS.add(b':').add(b'%').add(b'/');

/// Where the Dataspace Protocol 2025-1 endpoints are, under the base URL. Ending in the
/// version, as Eclipse EDC addresses a provider either way (with or without appending it).
pub const DSP_PATH: &str = "/dsp/2025-1";

#[derive(Debug, Clone)]
pub struct NodeIdentity {
    base_url: Url,
    /// `host%3Aport[:path:segments]`, the method-specific id of the node's did:web.
    did_id: String,
}

impl NodeIdentity {
    pub fn new(base_url: &str) -> Result<Self> {
        let parsed = Url::parse(base_url)
            .map_err(|e| Error::internal(format!("base URL {base_url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(Error::internal(format!(
                "base URL {base_url:?} must be an http(s) URL with a host"
            )));
        }
        let host = parsed.host_str().unwrap_or_default();
        let mut did_id = match parsed.port() {
            Some(port) => utf8_percent_encode(&format!("{host}:{port}"), DID_HOST).to_string(),
            None => host.to_owned(),
        };
        for segment in parsed.path_segments().into_iter().flatten() {
            if !segment.is_empty() {
                did_id.push(':');
                did_id.push_str(segment);
            }
        }
        Ok(Self {
            base_url: parsed,
            did_id,
        })
    }

    /// The base URL without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.base_url.as_str().trim_end_matches('/')
    }

    /// The base of this node's Dataspace Protocol 2025-1 endpoints (`/.well-known/dspace-version`
    /// names its path): what a connector's `counterPartyAddress` is.
    pub fn dsp_base(&self) -> String {
        format!("{}{DSP_PATH}", self.base_url())
    }

    pub fn is_https(&self) -> bool {
        self.base_url.scheme() == "https"
    }

    /// The one ODRL `target` of this node's policies: the collection of its consignments (the
    /// IRI their list is served at).
    pub fn policy_target(&self) -> String {
        format!("{}/supply-chain/data-space/consignments", self.base_url())
    }

    /// The method-specific part of the node's DID (`host%3Aport`).
    pub fn did_id(&self) -> &str {
        &self.did_id
    }

    pub fn node_did(&self) -> String {
        format!("did:web:{}", self.did_id)
    }

    pub fn organization_did(&self, id: &str) -> String {
        format!("did:web:{}:org:{id}", self.did_id)
    }

    pub fn user_did(&self, id: &str) -> String {
        format!("did:web:{}:user:{id}", self.did_id)
    }

    /// The id of one of this node's organisations, from its DID; `None` for anyone else's.
    pub fn local_organization<'a>(&self, did: &'a str) -> Option<&'a str> {
        did.strip_prefix("did:web:")?
            .strip_prefix(self.did_id.as_str())?
            .strip_prefix(":org:")
            .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_is_percent_encoded_and_path_becomes_segments() {
        let id = NodeIdentity::new("http://127.0.0.1:8080").unwrap();
        assert_eq!(id.node_did(), "did:web:127.0.0.1%3A8080");
        assert_eq!(id.organization_did("ab"), "did:web:127.0.0.1%3A8080:org:ab");
        let id = NodeIdentity::new("https://node.example.com/dataspace/").unwrap();
        assert_eq!(
            id.user_did("u1"),
            "did:web:node.example.com:dataspace:user:u1"
        );
        assert!(id.is_https());
        assert_eq!(id.base_url(), "https://node.example.com/dataspace");
        assert!(NodeIdentity::new("ftp://x").is_err());
        let id = NodeIdentity::new("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            id.local_organization("did:web:127.0.0.1%3A8080:org:ab"),
            Some("ab")
        );
        assert_eq!(
            id.local_organization("did:web:127.0.0.1%3A8081:org:ab"),
            None
        );
        assert_eq!(id.local_organization("did:web:127.0.0.1%3A8080:org:"), None);
        assert_eq!(
            id.local_organization("did:web:127.0.0.1%3A8080:org:a:b"),
            None
        );
    }
}
