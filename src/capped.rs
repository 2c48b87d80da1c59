//! Response bodies from other hosts — partner nodes' DID documents, datasets and answers,
//! fetched documents — read with a cap that holds while they stream.
//!
//! A cap checked once the whole body is in memory holds nothing: a partner answering with an
//! endless chunked body grew the node by 1.44 GB within the 2 s federation timeout.
//! `Content-Length` is checked first when there is one, then every chunk as it arrives; past
//! the cap the response is dropped, which closes the connection.

use std::convert::Infallible;
use std::fmt;

/// Why a body was not read whole.
#[derive(Debug)]
pub enum BodyError<E = Infallible> {
    /// More than the cap, announced or sent.
    TooLarge { max: u64 },
    /// The transfer failed (reset, timeout, bad chunking).
    Read(reqwest::Error),
    /// The sink refused a chunk.
    Sink(E),
}

impl<E: fmt::Display> fmt::Display for BodyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { max } => write!(f, "the body is larger than {max} bytes"),
            Self::Read(e) => write!(f, "reading the body failed: {e}"),
            Self::Sink(e) => e.fmt(f),
        }
    }
}

/// Hands `response`'s body to `sink` chunk by chunk, at most `max` bytes in all; the number
/// of bytes read.
pub async fn stream<E>(
    response: &mut reqwest::Response,
    max: u64,
    mut sink: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<u64, BodyError<E>> {
    if response.content_length().is_some_and(|n| n > max) {
        return Err(BodyError::TooLarge { max });
    }
    let mut read = 0u64;
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        read += chunk.len() as u64;
        if read > max {
            return Err(BodyError::TooLarge { max });
        }
        sink(&chunk).map_err(BodyError::Sink)?;
    }
    Ok(read)
}

/// `response`'s whole body, at most `max` bytes.
pub async fn bytes(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    let announced = response.content_length().unwrap_or(0).min(max as u64);
    let mut body = Vec::with_capacity(announced as usize);
    stream(&mut response, max as u64, |chunk| {
        body.extend_from_slice(chunk);
        Ok::<_, Infallible>(())
    })
    .await?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A one-shot server answering `head` and then `chunks` chunks of 1 KiB, chunked.
    async fn server(head: &'static str, chunks: usize) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(head.as_bytes()).await;
            let mut chunk = b"400\r\n".to_vec();
            chunk.extend([b'x'; 1024]);
            chunk.extend(b"\r\n");
            for _ in 0..chunks {
                if s.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = s.write_all(b"0\r\n\r\n").await;
        });
        format!("http://{addr}/")
    }

    const CHUNKED: &str = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

    async fn get(url: &str) -> reqwest::Response {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
            .get(url)
            .send()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_body_within_the_cap_is_read_whole() {
        let body = bytes(get(&server(CHUNKED, 4).await).await, 4096)
            .await
            .unwrap();
        assert_eq!(body.len(), 4096);
    }

    #[tokio::test]
    async fn a_body_past_the_cap_fails_without_reading_on() {
        let r = get(&server(CHUNKED, 1_000_000).await).await;
        let err = bytes(r, 10_000).await.unwrap_err();
        assert!(matches!(err, BodyError::TooLarge { max: 10_000 }), "{err}");
    }

    #[tokio::test]
    async fn an_announced_length_past_the_cap_fails_before_reading() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n";
        let mut seen = 0;
        let mut r = get(&server(head, 0).await).await;
        let err = stream(&mut r, 1000, |c| {
            seen += c.len();
            Ok::<_, Infallible>(())
        })
        .await
        .unwrap_err();
        assert!(matches!(err, BodyError::TooLarge { max: 1000 }));
        assert_eq!(seen, 0);
    }

    #[tokio::test]
    async fn a_sink_error_stops_the_read() {
        let mut r = get(&server(CHUNKED, 4).await).await;
        let err = stream(&mut r, 1 << 20, |_| Err("disk full"))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}
