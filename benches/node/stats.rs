//! Latency figures: percentiles, and runs of activities one at a time or from concurrent
//! clients.

use std::time::{Duration, Instant};

use crate::client::Sample;

/// The `p` percentile of sorted latencies, in ms; NaN when there are none.
pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// Throughput and latency of one inbox run.
pub struct Run {
    pub per_s: f64,
    pub p50: f64,
    pub p99: f64,
    /// Mean of routing inside the store stage (ms).
    pub route: f64,
    /// Means of the node's stages from Server-Timing (ms): parse, expand, shapes, store.
    pub stages: [f64; 4],
}

pub fn run_of(samples: &[Sample], wall: Duration) -> Run {
    let mut lat: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    lat.sort();
    let n = samples.len() as f64;
    let mean = |i: usize| samples.iter().map(|s| s.stages[i]).sum::<f64>() / n;
    Run {
        per_s: n / wall.as_secs_f64(),
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
        route: mean(4),
        stages: [mean(0), mean(1), mean(2), mean(3)],
    }
}

/// The median of latencies, in ms.
pub fn p50(mut lat: Vec<Duration>) -> f64 {
    lat.sort();
    percentile(&lat, 0.5)
}

/// `per_client` activities from each of `clients` concurrent clients.
pub async fn concurrently<F, Fut>(clients: usize, per_client: usize, f: F) -> Run
where
    F: Fn(usize, usize) -> Fut,
    Fut: std::future::Future<Output = Sample> + Send + 'static,
{
    let t = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let futures: Vec<Fut> = (0..per_client).map(|n| f(c, n)).collect();
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(futures.len());
            for fut in futures {
                out.push(fut.await);
            }
            out
        }));
    }
    let mut samples = Vec::new();
    for t in tasks {
        samples.extend(t.await.unwrap());
    }
    run_of(&samples, t.elapsed())
}

/// `n` activities one after the other; also what the first one wrote (0 when `n` is 0).
pub async fn sequentially<F, Fut>(n: usize, f: F) -> (Run, i64)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Sample>,
{
    let t = Instant::now();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        samples.push(f(i).await);
    }
    let written = samples.first().map_or(0, |s| s.written);
    (run_of(&samples, t.elapsed()), written)
}
