//! Timing: one probe run per contender (warm-up, correctness check, and a deadline so a
//! quadratic contender cannot stall everything), then `runs` interleaved rounds (A, B, C, A, B,
//! C, ...) so machine noise lands on every contender alike. Reported: the median.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// The library under test.
    Mcpwire,
    /// A comparison crate doing the same work.
    Rival,
    /// A lower bound that does less than a decoder (newline scan, copy).
    Baseline,
}

/// How a contender's single run went.
pub enum Timing {
    /// Timed in every round.
    Median {
        median: Duration,
        min: Duration,
        max: Duration,
    },
    /// Finished its probe (always a single decode), but too slowly to repeat within the time
    /// budget: that one run is reported.
    Once(Duration),
    /// Did not finish its probe before the deadline; `progress` says how far it got.
    Dnf { after: Duration, progress: Progress },
}

impl Timing {
    /// Best estimate of one run's duration (a lower bound for `Dnf`).
    pub fn time(&self) -> Option<Duration> {
        match self {
            Timing::Median { median, .. } => Some(*median),
            Timing::Once(d) => Some(*d),
            Timing::Dnf { .. } => None,
        }
    }
}

pub struct Result {
    pub name: &'static str,
    pub role: Role,
    pub timing: Timing,
}

#[derive(Clone, Copy)]
pub struct Config {
    pub runs: usize,
    /// A probe still running after this is stopped and reported as DNF.
    pub probe_deadline: Duration,
    /// A contender whose probe took longer than this is reported from that one run.
    pub max_repeat: Duration,
}

/// Median of a non-empty slice (sorts it).
pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2
    }
}

/// How far a probe got before its deadline: a fraction of the expected output decoded, or (when
/// nothing had come out yet) a fraction of the input fed.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    Decoded(f64),
    Fed(f64),
}

/// One contender of a cell: `probe(deadline)` returns `(value, None)` or, when it stopped at the
/// deadline, `(partial value, Some(progress))`; `run()` returns the value. Values must be equal
/// across runs (checked every run).
pub struct Contender<'a, V> {
    pub name: &'static str,
    pub role: Role,
    pub probe: Box<dyn FnMut(Instant) -> (V, Option<Progress>) + 'a>,
    pub run: Box<dyn FnMut() -> V + 'a>,
    /// Decodes per timed run (1 for SSE; calibrated for the small JSON messages).
    pub iters: u64,
}

/// Measure one cell. `check(name, role, value)` validates each probe's value (and panics on a
/// disagreement); later runs must reproduce the probe's value exactly.
pub fn measure<V: PartialEq + std::fmt::Debug + Clone>(
    cfg: Config,
    mut contenders: Vec<Contender<'_, V>>,
    mut check: impl FnMut(&'static str, Role, &V),
) -> Vec<Result> {
    let mut timings: Vec<Option<Timing>> = Vec::new();
    let mut expected: Vec<Option<V>> = Vec::new();
    for c in contenders.iter_mut() {
        let start = Instant::now();
        let (value, stopped) = (c.probe)(start + cfg.probe_deadline);
        let took = start.elapsed();
        if let Some(progress) = stopped {
            timings.push(Some(Timing::Dnf {
                after: took,
                progress,
            }));
            expected.push(None);
            continue;
        }
        check(c.name, c.role, &value);
        if took > cfg.max_repeat {
            timings.push(Some(Timing::Once(took)));
            expected.push(None);
        } else {
            timings.push(None);
            expected.push(Some(value));
        }
    }

    let timed: Vec<usize> = (0..contenders.len())
        .filter(|&i| timings[i].is_none())
        .collect();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(cfg.runs); contenders.len()];
    // One extra untimed round of warm-up (the probe was the first), then the timed rounds.
    for round in 0..=cfg.runs {
        for &i in &timed {
            let c = &mut contenders[i];
            let start = Instant::now();
            let value = (c.run)();
            let took = start.elapsed();
            assert_eq!(
                Some(&value),
                expected[i].as_ref(),
                "{}: result changed between runs",
                c.name
            );
            if round > 0 {
                samples[i].push(took / c.iters as u32);
            }
        }
    }

    contenders
        .iter()
        .zip(timings)
        .zip(samples.iter_mut())
        .map(|((c, timing), s)| Result {
            name: c.name,
            role: c.role,
            timing: timing.unwrap_or_else(|| {
                let min = *s.iter().min().expect("samples");
                let max = *s.iter().max().expect("samples");
                Timing::Median {
                    median: median(s),
                    min,
                    max,
                }
            }),
        })
        .collect()
}

/// Pick how many decodes one timed run does so that it lasts about `target`.
pub fn calibrate(mut once: impl FnMut(), target: Duration) -> u64 {
    // Warm up, then time a growing batch until it is long enough to extrapolate from.
    once();
    let mut n = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..n {
            once();
        }
        let took = start.elapsed();
        if took >= target / 10 || n >= 1 << 24 {
            let per = took.as_secs_f64() / n as f64;
            return ((target.as_secs_f64() / per).ceil() as u64).max(1);
        }
        n *= 4;
    }
}

pub fn fmt_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

pub fn mib_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / (1024.0 * 1024.0)
}
