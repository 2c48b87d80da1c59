//! Where a document's bytes come from: a `data:` URL (always), or an http(s) URL whose host is
//! on the operator's allow-list. The node never contacts any other host: such a URL stays an
//! external reference.
//!
//! The guards of a fetch: the allow-list is checked for the URL and for every redirect; host
//! names are resolved by the node itself and link-local or cloud-metadata addresses dropped
//! unless the address itself is listed; no proxy from the environment; one time limit for the
//! whole exchange; a size cap checked against `Content-Length` and while streaming.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::alphabet;
use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::{Attempt, Policy};
use url::{Host, Url};

use super::blobs::{Blob, Blobs};
use super::media;
use crate::capped::{self, BodyError};

/// Base64 as `data:` URLs carry it: padding optional.
const DATA_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

const MAX_REDIRECTS: usize = 5;

/// A decoded `data:` URL.
#[derive(Debug, PartialEq, Eq)]
pub struct Data {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// Decodes `data:[<media type>][;base64],<data>` (RFC 2397), refusing more than `max` bytes.
pub fn decode_data_url(url: &str, max: u64) -> Result<Data, String> {
    let rest = url
        .get(..5)
        .filter(|s| s.eq_ignore_ascii_case("data:"))
        .map(|_| &url[5..])
        .ok_or("not a data: URL")?;
    let (header, body) = rest
        .split_once(',')
        .ok_or("a data: URL needs a ',' before its data")?;
    let header = header.trim();
    let (media_type, base64) = match header.len().checked_sub(7) {
        Some(i) if header.is_char_boundary(i) && header[i..].eq_ignore_ascii_case(";base64") => {
            (&header[..i], true)
        }
        _ => (header, false),
    };
    let media_type = if media_type.is_empty() || media_type.starts_with(';') {
        "text/plain".to_owned()
    } else {
        media::essence(media_type)
            .ok_or_else(|| format!("the data: URL's media type {media_type:?} is not valid"))?
    };
    let too_big = || format!("the document is larger than the node's limit of {max} bytes");
    let decoded = percent_encoding::percent_decode_str(body).collect::<Vec<u8>>();
    let bytes = if base64 {
        let text: Vec<u8> = decoded
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        if (text.len() as u64 / 4) * 3 > max + 3 {
            return Err(too_big());
        }
        DATA_BASE64
            .decode(&text)
            .map_err(|e| format!("the data: URL's base64 is not valid: {e}"))?
    } else {
        decoded
    };
    if bytes.len() as u64 > max {
        return Err(too_big());
    }
    Ok(Data { media_type, bytes })
}

/// One allow-list entry: `host`, `host:port`, `[v6]:port` or `*.domain`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: String,
    port: Option<u16>,
    /// `*.domain`: any host below `domain` (not `domain` itself).
    suffix: bool,
}

/// The hosts the operator allows the node to fetch from.
#[derive(Debug, Default, Clone)]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl AllowList {
    pub fn parse(items: &[String]) -> Result<Self, String> {
        let mut entries = Vec::new();
        for raw in items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let bad =
                || format!("fetch allow-list entry {raw:?} is not host, host:port or *.domain");
            let (host, port) = if let Some(v6) = raw.strip_prefix('[') {
                let (addr, after) = v6.split_once(']').ok_or_else(bad)?;
                let port = match after.strip_prefix(':') {
                    Some(p) => Some(p.parse().map_err(|_| bad())?),
                    None if after.is_empty() => None,
                    None => return Err(bad()),
                };
                (addr.to_owned(), port)
            } else if raw.matches(':').count() == 1 {
                let (h, p) = raw.split_once(':').ok_or_else(bad)?;
                (h.to_owned(), Some(p.parse().map_err(|_| bad())?))
            } else {
                (raw.to_owned(), None)
            };
            let (host, suffix) = match host.strip_prefix("*.") {
                Some(domain) => (domain.to_owned(), true),
                None => (host, false),
            };
            if host.is_empty() || host.contains(['/', '*', '@', ' ']) {
                return Err(bad());
            }
            entries.push(Entry {
                host: host.to_ascii_lowercase(),
                port,
                suffix,
            });
        }
        Ok(Self { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the node may fetch `url`: http(s), and its host (and port) listed.
    pub fn allows(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https")
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return false;
        }
        let Some(host) = host_text(url) else {
            return false;
        };
        let port = url.port_or_known_default();
        self.entries.iter().any(|e| {
            let host_ok = if e.suffix {
                host.strip_suffix(&e.host)
                    .is_some_and(|head| head.ends_with('.'))
            } else {
                host == e.host
            };
            host_ok && e.port.is_none_or(|p| Some(p) == port)
        })
    }

    /// Whether `ip` itself is listed for every port (which admits a forbidden address — a
    /// loopback, private, link-local or metadata one — to the names on the list). An address
    /// listed with a port does not: names are resolved without their port, and one listed port
    /// of the node's own host must not open the others (the replica's) to any listed name.
    pub fn lists_ip(&self, ip: IpAddr) -> bool {
        self.entries
            .iter()
            .any(|e| e.port.is_none() && e.host.parse::<IpAddr>().is_ok_and(|listed| listed == ip))
    }
}

/// The URL's host as allow-list entries spell it (IPv6 without brackets, lower case).
fn host_text(url: &Url) -> Option<String> {
    Some(match url.host()? {
        Host::Domain(d) => d.to_ascii_lowercase(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
    })
}

/// Addresses no fetch may reach unless the address itself is listed: the node's own host and
/// its private networks (loopback, RFC 1918, shared and unique-local addresses: where the
/// SPARQL replica and other internal services answer, to whoever the node fetches for — a
/// listed name of a caller's domain may resolve to any of them), link-local (where cloud
/// metadata services live), known metadata addresses, and addresses that are not one host.
/// IPv4 addresses inside IPv6 forms (mapped, NAT64, 6to4) are judged as IPv4.
pub fn forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => forbidden_v4(v4),
            None => {
                let first = v6.segments()[0];
                (first & 0xffc0) == 0xfe80
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfec0
                    || v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
            }
        },
    }
}

/// The IPv4 address an IPv6 one stands for: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`, and the local-use `64:ff9b:1::/48` with the
/// address in its last 32 bits), 6to4 (`2002:aabb:ccdd::`), Teredo (`2001:0::/32`, whose
/// client address is hidden: judged as `0.0.0.0`, i.e. refused).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) > (0, 1) => Some(v4(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] | [0x64, 0xff9b, 1, _, _, _, hi, lo] => Some(v4(hi, lo)),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        [0x2001, 0, ..] => Some(Ipv4Addr::UNSPECIFIED),
        _ => None,
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (18..20).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || a >= 240
}

/// Resolves names itself so that no listed name can lead to a forbidden address (document
/// fetches and webhook deliveries).
pub struct GuardedResolver {
    allow: Arc<AllowList>,
}

impl GuardedResolver {
    pub fn new(allow: Arc<AllowList>) -> Self {
        Self { allow }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| !forbidden(a.ip()) || allow.lists_ip(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(format!(
                    "{host} resolves to no address the node may fetch from (loopback, \
                     private, link-local and metadata addresses are refused unless listed as \
                     addresses)"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// Fetches allowed URLs into the blob store.
pub struct Fetcher {
    client: reqwest::Client,
    allow: Arc<AllowList>,
}

/// A fetched document.
#[derive(Debug)]
pub struct Fetched {
    pub blob: Blob,
    /// The essence of the response's `Content-Type`, when it had a valid one.
    pub media_type: Option<String>,
}

impl Fetcher {
    pub fn new(allow: AllowList, timeout: Duration) -> Result<Self, String> {
        let allow = Arc::new(allow);
        let redirects = allow.clone();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout)
            .dns_resolver(Arc::new(GuardedResolver {
                allow: allow.clone(),
            }))
            .redirect(Policy::custom(move |attempt: Attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS {
                    attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
                } else if redirects.allows(attempt.url()) {
                    attempt.follow()
                } else {
                    let to = attempt.url().to_string();
                    attempt.error(format!(
                        "redirected to {to}, which is not on the node's fetch allow-list"
                    ))
                }
            }))
            .user_agent(concat!("dataspace-node/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("document fetch client: {e}"))?;
        Ok(Self { client, allow })
    }

    pub fn allows(&self, url: &Url) -> bool {
        self.allow.allows(url)
    }

    /// Fetches `url` (which must be allowed) into `blobs`; at most `max` bytes.
    pub async fn fetch(&self, url: &Url, blobs: &Blobs, max: u64) -> Result<Fetched, String> {
        let failed =
            |e: reqwest::Error| format!("fetching {url} failed: {}", crate::error::chain(&e));
        let mut response = self.client.get(url.clone()).send().await.map_err(failed)?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "fetching {url} failed: the server answered {status}"
            ));
        }
        let media_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(media::essence);
        let store_failed = |e: std::io::Error| {
            tracing::error!(error = %e, "blob store write failed");
            "the node could not store the document".to_owned()
        };
        // Blocking file writes are fine here: intake runs on a blocking thread.
        let mut writer = blobs.writer().map_err(store_failed)?;
        capped::stream(&mut response, max, |chunk| writer.write_all(chunk))
            .await
            .map_err(|e| match e {
                BodyError::TooLarge { .. } => {
                    format!("{url} is larger than the node's limit of {max} bytes")
                }
                BodyError::Read(e) => failed(e),
                BodyError::Sink(e) => store_failed(e),
            })?;
        let blob = writer.finish().map_err(store_failed)?;
        Ok(Fetched { blob, media_type })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls() {
        let d = decode_data_url("data:application/pdf;base64,SGVsbG8=", 100).unwrap();
        assert_eq!(d.media_type, "application/pdf");
        assert_eq!(d.bytes, b"Hello");
        let d = decode_data_url("DATA:;BASE64,SGVsbG8", 100).unwrap();
        assert_eq!(
            (d.media_type.as_str(), d.bytes.as_slice()),
            ("text/plain", &b"Hello"[..])
        );
        let d = decode_data_url("data:text/csv;charset=utf-8,a%2Cb%0A1", 100).unwrap();
        assert_eq!(
            (d.media_type.as_str(), d.bytes.as_slice()),
            ("text/csv", &b"a,b\n1"[..])
        );
        let d = decode_data_url("data:,", 100).unwrap();
        assert!(d.bytes.is_empty());
        assert!(decode_data_url("data:text/plain;base64,@@@", 100).is_err());
        assert!(decode_data_url("data:text/plain", 100).is_err());
        assert!(decode_data_url("data:bad type,x", 100).is_err());
        assert!(decode_data_url("data:,123456", 5)
            .unwrap_err()
            .contains("limit of 5"));
        assert!(decode_data_url("data:;base64,MTIzNDU2", 5).is_err());
        assert!(decode_data_url("http://x", 5).is_err());
    }

    fn list(items: &[&str]) -> AllowList {
        AllowList::parse(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn allow_list_matches_host_port_and_subdomains() {
        let l = list(&[
            "docs.example.com",
            "127.0.0.1:8081",
            "*.carrier.test",
            "[::1]:9000",
        ]);
        let ok = |u: &str| l.allows(&Url::parse(u).unwrap());
        assert!(ok("https://docs.example.com/a.pdf"));
        assert!(ok("http://DOCS.example.com:8080/a.pdf"));
        assert!(ok("http://127.0.0.1:8081/x"));
        assert!(!ok("http://127.0.0.1:8082/x"));
        assert!(ok("https://files.carrier.test/x"));
        assert!(!ok("https://carrier.test/x"));
        assert!(!ok("https://evilcarrier.test/x"));
        assert!(ok("http://[::1]:9000/x"));
        assert!(!ok("ftp://docs.example.com/x"));
        assert!(!ok("https://user@docs.example.com/x"));
        assert!(!ok("https://:secret@docs.example.com/x"));
        assert!(!ok("https://docs.example.com.evil.test/x"));
        assert!(AllowList::parse(&["a/b".into()]).is_err());
        assert!(AllowList::parse(&["a:notaport".into()]).is_err());
        assert!(list(&[]).is_empty());
    }

    #[test]
    fn private_link_local_and_metadata_addresses_are_forbidden_unless_listed() {
        for ip in [
            "169.254.169.254",
            "169.254.1.1",
            "fe80::1",
            "fd00:ec2::254",
            "100.100.100.200",
            "::ffff:169.254.169.254",
            "0.0.0.0",
            "127.0.0.1",
            "127.8.9.10",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "100.64.0.1",
            "198.18.0.1",
            "::1",
            "fd12:3456::1",
            "fec0::1",
            "::ffff:127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "::7f00:1",
            "64:ff9b:1::a00:1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "192.0.0.8",
            "240.1.2.3",
        ] {
            assert!(forbidden(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "100.128.0.1",
            "172.32.0.1",
            "2606:2800:220:1::1",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
            assert!(!forbidden(ip.parse().unwrap()), "{ip}");
        }
        assert!(list(&["127.0.0.1"]).lists_ip("127.0.0.1".parse().unwrap()));
        assert!(!list(&["127.0.0.1:8080"]).lists_ip("127.0.0.1".parse().unwrap()));
        assert!(list(&["169.254.169.254"]).lists_ip("169.254.169.254".parse().unwrap()));
        assert!(!list(&["example.com"]).lists_ip("169.254.169.254".parse().unwrap()));
    }
}
