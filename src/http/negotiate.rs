//! Content negotiation: the one place an endpoint's offered media types meet `Accept`.

use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};

/// Picks the offer the client prefers: the highest `q`, then the most specific matching
/// range, then the endpoint's order. No `Accept` (or `*/*`) gets the first offer. Nothing
/// acceptable is 406, listing the offers.
pub fn negotiate<T: Copy>(
    headers: &HeaderMap,
    offers: &[(&'static str, T)],
) -> Result<(&'static str, T)> {
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    if accept.is_empty() {
        return offers
            .first()
            .copied()
            .ok_or_else(|| Error::internal("no offers"));
    }
    let ranges: Vec<(String, f32)> = accept.iter().map(|r| media_range(r)).collect();
    let mut best: Option<(f32, u8, usize)> = None;
    for (i, (offer, _)) in offers.iter().enumerate() {
        // The most specific range that matches this offer decides its q (RFC 9110 12.5.1).
        let mut matched: Option<(u8, f32)> = None;
        for (range, q) in &ranges {
            let specificity = if range == offer {
                3
            } else if range
                .strip_suffix("/*")
                .is_some_and(|t| offer.split('/').next() == Some(t))
            {
                2
            } else if range == "*/*" {
                1
            } else {
                continue;
            };
            if matched.is_none_or(|(s, _)| specificity > s) {
                matched = Some((specificity, *q));
            }
        }
        let Some((specificity, q)) = matched else {
            continue;
        };
        if q <= 0.0 {
            continue;
        }
        let better = match best {
            None => true,
            Some((bq, bs, _)) => q > bq || (q == bq && specificity > bs),
        };
        if better {
            best = Some((q, specificity, i));
        }
    }
    match best {
        Some((_, _, i)) => Ok(offers[i]),
        None => Err(Error::NotAcceptable(
            offers
                .iter()
                .map(|(m, _)| *m)
                .collect::<Vec<_>>()
                .join(", "),
        )),
    }
}

/// A negotiated answer: `body` as `media_type`, marked as varying with `Accept`.
pub fn negotiated(media_type: &'static str, body: impl IntoResponse) -> Response {
    (
        [(header::CONTENT_TYPE, media_type), (header::VARY, "accept")],
        body,
    )
        .into_response()
}

/// `type/subtype` (lower case, parameters other than `q` dropped) and its `q` (default 1).
fn media_range(text: &str) -> (String, f32) {
    let mut parts = text.split(';');
    let range = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let q = parts
        .filter_map(|p| p.trim().strip_prefix("q="))
        .filter_map(|v| v.trim().parse::<f32>().ok())
        .next()
        .unwrap_or(1.0);
    (range, q.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const OFFERS: &[(&str, u8)] = &[
        ("application/sparql-results+json", 0),
        ("application/sparql-results+xml", 1),
        ("text/csv", 2),
    ];

    fn pick(accept: &str) -> Result<u8> {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        negotiate(&h, OFFERS).map(|(_, v)| v)
    }

    #[test]
    fn preferences() {
        assert_eq!(negotiate(&HeaderMap::new(), OFFERS).unwrap().1, 0);
        assert_eq!(pick("*/*").unwrap(), 0);
        assert_eq!(pick("text/csv").unwrap(), 2);
        assert_eq!(
            pick("text/*, application/sparql-results+xml;q=0.5").unwrap(),
            2
        );
        assert_eq!(
            pick("application/sparql-results+xml, */*;q=0.1").unwrap(),
            1
        );
        assert_eq!(pick("TEXT/CSV;charset=utf-8").unwrap(), 2);
        assert_eq!(pick("*/*, text/csv;q=0").unwrap(), 0);
        assert!(matches!(pick("image/png"), Err(Error::NotAcceptable(_))));
        assert!(matches!(pick("text/csv;q=0"), Err(Error::NotAcceptable(_))));
    }
}
