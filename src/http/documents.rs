//! `GET /supply-chain/data-space/blobs/{blobId}` (a signed link is the only credential, and
//! serves only while the organisation it was signed for may read the document) and
//! `GET /supply-chain/data-space/attestations/{id}` (public: anyone may verify a document).

use std::collections::HashMap;
use std::io::SeekFrom;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio_util::io::ReaderStream;

use super::extract::{PathParams, QueryParams};
use super::reads::{blocking, other_share};
use crate::error::{Error, Result};
use crate::node::Node;

const NO_LONGER_VALID: &str =
    "this download link is no longer valid; read the document again for a new one";

/// Whether the download link in `params` opens blob `hex`: signed by the node, not expired,
/// and its organisation may still read a document with these bytes (a grant revoked since
/// ends it at once).
async fn link_opens(node: &Arc<Node>, hex: &str, params: &HashMap<String, String>) -> Result<()> {
    let param = |k: &str| params.get(k).map(String::as_str);
    let granted = node
        .documents
        .links()
        .verify(
            hex,
            param("type"),
            param("expires"),
            param("org"),
            param("signature"),
        )
        .map_err(|refused| Error::Forbidden(refused.message().into()))?;
    let (reading, blob) = (node.clone(), hex.to_owned());
    let shared = super::reads::org_share(node, &granted.org);
    if !blocking(shared, move || {
        reading.views.may_download(&granted.org, &blob)
    })
    .await?
    {
        // As an expired link: the holder learns nothing of why (a grant revoked, say).
        return Err(Error::Forbidden(NO_LONGER_VALID.into()));
    }
    Ok(())
}

/// The `Range` asked for, if any and if `If-Range` (when sent) names this version.
fn wanted_range(headers: &HeaderMap, etag: &str, len: u64) -> Option<Range> {
    headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .filter(|_| {
            // A range of another version would splice two contents: If-Range must match.
            headers
                .get(header::IF_RANGE)
                .is_none_or(|v| v.as_bytes() == etag.as_bytes())
        })
        .map(|v| parse_range(v, len))
}

pub async fn blob(
    State(node): State<Arc<Node>>,
    PathParams(hex): PathParams<String>,
    QueryParams(params): QueryParams<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response> {
    link_opens(&node, &hex, &params).await?;
    let param = |k: &str| params.get(k).map(String::as_str);
    let path = node
        .documents
        .blobs()
        .path(&hex)
        .ok_or_else(|| Error::NotFound("no blob with this id".into()))?;
    let mut file = tokio::fs::File::open(&path).await?;
    let len = file.metadata().await?.len();
    // Content-addressed: the hash is a strong validator.
    let etag = format!("\"{hex}\"");
    let content_type = param("type")
        .and_then(|t| HeaderValue::from_str(t).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));

    let mut response = Response::builder()
        .header(header::ETAG, &etag)
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CACHE_CONTROL, "private, max-age=0")
        // The bytes are a trader's: never rendered or sniffed in the node's origin.
        .header(header::CONTENT_DISPOSITION, "attachment")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'",
        );
    if matches_etag(headers.get(header::IF_NONE_MATCH), &etag) {
        return response
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .map_err(Error::internal);
    }
    let (status, start, count) = match wanted_range(&headers, &etag, len) {
        None | Some(Range::Ignored) => (StatusCode::OK, 0, len),
        Some(Range::Unsatisfiable) => {
            return response
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .body(Body::empty())
                .map_err(Error::internal);
        }
        Some(Range::Bytes { start, end }) => {
            response = response.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"));
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
    };
    file.seek(SeekFrom::Start(start)).await?;
    let body = Body::from_stream(ReaderStream::new(file.take(count)));
    response
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CONTENT_LENGTH, count)
        .body(body)
        .map_err(Error::internal)
}

pub async fn attestation(
    State(node): State<Arc<Node>>,
    PathParams(id): PathParams<String>,
) -> Result<Response> {
    let value: Value = blocking(other_share(&node, None), move || {
        node.documents.attestation(&id)
    })
    .await?;
    Ok(Json(value).into_response())
}

fn matches_etag(header: Option<&HeaderValue>, etag: &str) -> bool {
    let Some(value) = header.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    value
        .split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == etag)
}

#[derive(Debug, PartialEq, Eq)]
enum Range {
    /// Inclusive byte positions.
    Bytes {
        start: u64,
        end: u64,
    },
    Unsatisfiable,
    /// Not a single byte range (a multi-range, another unit, bad syntax): served whole, as
    /// RFC 9110 allows.
    Ignored,
}

/// One `Range: bytes=…` of a `len`-byte representation.
fn parse_range(header: &str, len: u64) -> Range {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return Range::Ignored;
    };
    if spec.contains(',') {
        return Range::Ignored;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Range::Ignored;
    };
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim(), last.trim()) {
        ("", suffix) => match number(suffix) {
            Some(0) => Range::Unsatisfiable,
            Some(n) if len > 0 => Range::Bytes {
                start: len.saturating_sub(n),
                end: len - 1,
            },
            Some(_) => Range::Unsatisfiable,
            None => Range::Ignored,
        },
        (first, last) => {
            let Some(start) = number(first) else {
                return Range::Ignored;
            };
            let end = match last {
                "" => None,
                l => match number(l) {
                    Some(e) if e >= start => Some(e),
                    _ => return Range::Ignored,
                },
            };
            if start >= len {
                return Range::Unsatisfiable;
            }
            Range::Bytes {
                start,
                end: end.map_or(len - 1, |e| e.min(len - 1)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges() {
        let r = |h: &str| parse_range(h, 100);
        assert_eq!(r("bytes=0-9"), Range::Bytes { start: 0, end: 9 });
        assert_eq!(r("bytes=90-"), Range::Bytes { start: 90, end: 99 });
        assert_eq!(r("bytes=90-500"), Range::Bytes { start: 90, end: 99 });
        assert_eq!(r("bytes=-10"), Range::Bytes { start: 90, end: 99 });
        assert_eq!(r("bytes=-500"), Range::Bytes { start: 0, end: 99 });
        assert_eq!(r("bytes=100-"), Range::Unsatisfiable);
        assert_eq!(r("bytes=-0"), Range::Unsatisfiable);
        assert_eq!(r("bytes=5-1"), Range::Ignored);
        assert_eq!(r("bytes=0-1,5-6"), Range::Ignored);
        assert_eq!(r("items=0-1"), Range::Ignored);
        assert_eq!(r("bytes=a-b"), Range::Ignored);
        assert_eq!(parse_range("bytes=0-", 0), Range::Unsatisfiable);
    }

    #[test]
    fn etags_match_lists_and_weak_forms() {
        let h = |s: &'static str| HeaderValue::from_static(s);
        assert!(matches_etag(Some(&h("\"a\", \"b\"")), "\"b\""));
        assert!(matches_etag(Some(&h("W/\"b\"")), "\"b\""));
        assert!(matches_etag(Some(&h("*")), "\"b\""));
        assert!(!matches_etag(Some(&h("\"c\"")), "\"b\""));
        assert!(!matches_etag(None, "\"b\""));
    }
}
