//! HTTP Digest authentication (RFC 7616, MD5 with `qop=auth`), which Virtuoso's `/sparql-auth`
//! asks for and reqwest does not speak.

use md5::{Digest, Md5};

/// A server's `WWW-Authenticate: Digest …` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub realm: String,
    pub nonce: String,
    pub opaque: Option<String>,
    /// The server offered `qop=auth` (else the RFC 2069 form without `nc`/`cnonce`).
    pub qop_auth: bool,
}

/// The Digest challenge of a `WWW-Authenticate` value, if it is one (MD5 only).
pub fn parse(header: &str) -> Option<Challenge> {
    let rest = header.trim().strip_prefix("Digest")?.trim_start();
    let params = params(rest);
    let get = |k: &str| {
        params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    if let Some(algorithm) = get("algorithm") {
        if !algorithm.eq_ignore_ascii_case("MD5") {
            return None;
        }
    }
    Some(Challenge {
        realm: get("realm")?,
        nonce: get("nonce")?,
        opaque: get("opaque"),
        qop_auth: get("qop").is_some_and(|q| q.split(',').any(|q| q.trim() == "auth")),
    })
}

/// `key=value` pairs, values quoted (with `\` escapes) or tokens, separated by commas.
fn params(mut s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = s.find('=') else { break };
        let key = s[..eq].trim().to_owned();
        s = &s[eq + 1..];
        let mut value = String::new();
        if let Some(quoted) = s.strip_prefix('"') {
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            s = &quoted[end.min(quoted.len())..];
        } else {
            let end = s.find(',').unwrap_or(s.len());
            value = s[..end].trim().to_owned();
            s = &s[end..];
        }
        out.push((key, value));
    }
    out
}

fn md5_hex(s: &str) -> String {
    hex::encode(Md5::digest(s.as_bytes()))
}

/// The `Authorization` value answering `c` for `method` on `uri` (path and query), request
/// number `nc` under this nonce, with client nonce `cnonce`.
pub fn authorization(
    c: &Challenge,
    user: &str,
    password: &str,
    method: &str,
    uri: &str,
    nc: u32,
    cnonce: &str,
) -> String {
    let ha1 = md5_hex(&format!("{user}:{}:{password}", c.realm));
    let ha2 = md5_hex(&format!("{method}:{uri}"));
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = format!(
        "Digest username=\"{}\", realm=\"{}\", nonce=\"{}\", uri=\"{}\", algorithm=MD5",
        quote(user),
        quote(&c.realm),
        quote(&c.nonce),
        quote(uri)
    );
    if c.qop_auth {
        let nc = format!("{nc:08x}");
        let response = md5_hex(&format!("{ha1}:{}:{nc}:{cnonce}:auth:{ha2}", c.nonce));
        out.push_str(&format!(
            ", qop=auth, nc={nc}, cnonce=\"{cnonce}\", response=\"{response}\""
        ));
    } else {
        let response = md5_hex(&format!("{ha1}:{}:{ha2}", c.nonce));
        out.push_str(&format!(", response=\"{response}\""));
    }
    if let Some(opaque) = &c.opaque {
        out.push_str(&format!(", opaque=\"{}\"", quote(opaque)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_virtuosos_challenge() {
        let c = parse(
            r#"Digest realm="SPARQL", domain="/sparql-auth", nonce="3c1ae6c1, x", opaque="5ebe2294ecd0e0f08eab7690d2a6ee69", stale="false", qop="auth", algorithm="MD5""#,
        )
        .unwrap();
        assert_eq!(c.realm, "SPARQL");
        assert_eq!(c.nonce, "3c1ae6c1, x");
        assert_eq!(
            c.opaque.as_deref(),
            Some("5ebe2294ecd0e0f08eab7690d2a6ee69")
        );
        assert!(c.qop_auth);
        assert!(parse(r#"Basic realm="x""#).is_none());
        assert!(parse(r#"Digest realm="x", nonce="n", algorithm=SHA-256"#).is_none());
    }

    #[test]
    fn answers_the_rfc_2617_example() {
        // RFC 2617 §3.5: Mufasa / "Circle Of Life", qop=auth, nc=1, cnonce 0a4f113b.
        let c = Challenge {
            realm: "testrealm@host.com".into(),
            nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093".into(),
            opaque: Some("5ccc069c403ebaf9f0171e9517f40e41".into()),
            qop_auth: true,
        };
        let header = authorization(
            &c,
            "Mufasa",
            "Circle Of Life",
            "GET",
            "/dir/index.html",
            1,
            "0a4f113b",
        );
        assert!(header.contains(r#"response="6629fae49393a05397450978507c4ef1""#));
        assert!(header.contains("nc=00000001"));
    }
}
