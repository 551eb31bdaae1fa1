//! Overload: a request answered 429 (Too Many Requests, RFC 6585 section 4) or 503 (Service
//! Unavailable, RFC 9110 section 15.6.4), the server's `Retry-After` (RFC 9110 section
//! 10.2.3: delay-seconds or an HTTP-date), and when a request that may be sent again is, within
//! its deadline, a bounded number of times, after the server's wait or a capped jittered
//! backoff.
//!
//! Pure: the clock comes in as `now` (an [`Instant`]) and, for an HTTP-date, as a
//! [`WallClock`] reading the driver took with the response head; the jitter is a number the
//! caller draws from its seeded source. A request the server refused this way did not run
//! (both statuses say the server did not handle it), so whether it may be sent again is only
//! a question of whether sending it twice could do harm: the connection machine marks the
//! idempotent ones (the era probe, `initialize`, listings, `tasks/get`) with a deadline, and a
//! `tools/call` never.

use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};

use crate::session::{Delivery, Failure, FailureKind};

/// The wall-clock time at which a response head arrived, in seconds since the Unix epoch:
/// read by the driver (the sans-IO layers never read a clock), used only to turn a
/// `Retry-After` HTTP-date into a wait when the response carries no `Date` of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct WallClock(pub(crate) u64);

/// How a request that may be sent again is retried after a 429 or 503.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OverloadPolicy {
    /// The most times one request is sent again (so at most `max_retries + 1` attempts).
    pub max_retries: u32,
    /// The first backoff when the server gave no `Retry-After`.
    pub initial_delay: Duration,
    /// The longest backoff without a `Retry-After`. A server's own `Retry-After` is honoured
    /// as given (coming back sooner is what it asked us not to do); only the request's
    /// deadline bounds it.
    pub max_delay: Duration,
}

impl Default for OverloadPolicy {
    fn default() -> Self {
        OverloadPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
        }
    }
}

/// Why a request refused for overload is not sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GiveUp {
    /// The request may not be sent twice (a `tools/call`), or the policy allows no retry.
    NotRetried,
    /// It was sent again as often as the policy allows.
    Attempts(u32),
    /// The wait would end at or past the request's deadline.
    Deadline,
}

impl OverloadPolicy {
    /// The backoff after `retries` earlier retries, with "equal jitter" (half fixed, half
    /// drawn from `jitter` in `[0, 1)`), so that clients refused together do not all come back
    /// together, and a wait never collapses to zero.
    pub(crate) fn backoff(&self, retries: u32, jitter: f64) -> Duration {
        let backoff = self
            .initial_delay
            .saturating_mul(1 << retries.min(16))
            .min(self.max_delay);
        backoff / 2 + backoff.mul_f64(jitter.clamp(0.0, 1.0) / 2.0)
    }

    /// When to send a refused request again, or why not: after `retry_after` (the server's)
    /// or the backoff, if that is before `deadline` and fewer than `max_retries` retries were
    /// made. `deadline` is `None` for a request that may not be sent twice.
    pub(crate) fn next_attempt(
        &self,
        retries: u32,
        retry_after: Option<Duration>,
        now: Instant,
        deadline: Option<Instant>,
        jitter: f64,
    ) -> Result<Instant, GiveUp> {
        let Some(deadline) = deadline.filter(|_| self.max_retries > 0) else {
            return Err(GiveUp::NotRetried);
        };
        if retries >= self.max_retries {
            return Err(GiveUp::Attempts(retries + 1));
        }
        let wait = retry_after.unwrap_or_else(|| self.backoff(retries, jitter));
        match now.checked_add(wait) {
            // Sent again only with time left for an answer: a retry at the deadline itself
            // could only time out.
            Some(at) if at < deadline => Ok(at),
            _ => Err(GiveUp::Deadline),
        }
    }
}

/// The jitter source of the backoffs: a xorshift64 sequence from a seed the driver gives
/// (randomness is an input, like time), so that a test's seed replays the same waits.
#[derive(Clone, Debug)]
pub(crate) struct Jitter(u64);

impl Jitter {
    /// A sequence from `seed` (any value). One splitmix64 step spreads a small seed over all
    /// the bits, so that seeds 1, 2, 3... do not all start the xorshift sequence near zero.
    pub(crate) fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Jitter((z ^ (z >> 31)) | 1)
    }

    /// The next number in `[0, 1)`.
    pub(crate) fn next(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Whether `status` says the server is overloaded and did not handle the request.
pub(crate) fn is_overload(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    )
}

/// The wait a response's `Retry-After` asks for: delay-seconds as given, an HTTP-date as its
/// distance from the response's `Date` (the server's own clock, so a skewed client clock does
/// not matter) or, without a readable `Date`, from `wall`; a date already past is no wait.
/// `None` when there is no `Retry-After`, or it is neither form (RFC 9110 section 10.2.3).
pub(crate) fn retry_after(headers: &HeaderMap, wall: WallClock) -> Option<Duration> {
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A number too large for u64 is a wait longer than any deadline.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = parse_http_date(value)?;
    let reference = headers
        .get(http::header::DATE)
        .and_then(|date| date.to_str().ok())
        .and_then(parse_http_date)
        .unwrap_or(wall.0);
    Some(Duration::from_secs(at.saturating_sub(reference)))
}

/// An HTTP-date (RFC 9110 section 5.6.7) as seconds since the Unix epoch. All three forms a
/// recipient must accept: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850
/// form (`Sunday, 06-Nov-94 08:49:37 GMT`, a two-digit year read as the 1900s from 70 on,
/// else the 2000s) and asctime (`Sun Nov  6 08:49:37 1994`). The weekday is not checked
/// against the date (a recipient gains nothing by refusing a mismatch).
pub(crate) fn parse_http_date(text: &str) -> Option<u64> {
    let text = text.trim();
    let (weekday, rest) = text.split_once([',', ' '])?;
    if weekday.len() < 3 || !weekday.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let (day, month, year, time) = match fields.as_slice() {
        // IMF-fixdate: `, 06 Nov 1994 08:49:37 GMT`.
        [day, month, year, time, "GMT"] if text.as_bytes().get(3) == Some(&b',') => (
            number(day, 2)?,
            month_number(month)?,
            number(year, 4)?,
            *time,
        ),
        // RFC 850: `, 06-Nov-94 08:49:37 GMT`.
        [date, time, "GMT"] if weekday.len() > 3 => {
            let mut parts = date.split('-');
            let day = number(parts.next()?, 2)?;
            let month = month_number(parts.next()?)?;
            let year = number(parts.next()?, 2)?;
            if parts.next().is_some() {
                return None;
            }
            let year = if year >= 70 { 1900 + year } else { 2000 + year };
            (day, month, year, *time)
        }
        // asctime: ` Nov  6 08:49:37 1994` (the day padded with a space, or not).
        [month, day, time, year] if weekday.len() == 3 && text.as_bytes().get(3) == Some(&b' ') => {
            let day = match day.len() {
                1 | 2 => day
                    .parse()
                    .ok()
                    .filter(|_| day.bytes().all(|b| b.is_ascii_digit()))?,
                _ => return None,
            };
            (day, month_number(month)?, number(year, 4)?, *time)
        }
        _ => return None,
    };
    let mut clock = time.split(':');
    let hour = number(clock.next()?, 2)?;
    let minute = number(clock.next()?, 2)?;
    let second = number(clock.next()?, 2)?;
    if clock.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    if !(1..=days_in_month(year, month)).contains(&day) || year < 1970 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Exactly `digits` ASCII digits.
fn number(text: &str, digits: usize) -> Option<u64> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn month_number(name: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // Month names are case-sensitive in the grammar; servers write them as listed.
    MONTHS
        .iter()
        .position(|month| *month == name)
        .map(|index| index as u64 + 1)
}

fn is_leap(year: u64) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date (from 1970 on): the years' days, then the months'.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let years: u64 = (1970..year)
        .map(|y| if is_leap(y) { 366 } else { 365 })
        .sum();
    let months: u64 = (1..month).map(|m| days_in_month(year, m)).sum();
    years + months + day - 1
}

/// The failure of a request refused for overload and not sent again: `status`, the server's
/// `retry_after` and why it was given up on (`given_up`, already worded).
pub(crate) fn rate_limited(
    status: StatusCode,
    retry_after: Option<Duration>,
    given_up: &str,
) -> Failure {
    let after = match retry_after {
        Some(wait) => format!(", Retry-After {} s", wait.as_secs()),
        None => String::new(),
    };
    Failure::new(
        FailureKind::RateLimited {
            status: status.as_u16(),
            retry_after,
        },
        // Both statuses say the server did not handle the request: it did not run.
        Delivery::Refused,
        format!("the server is overloaded ({status}{after}); the request did not run{given_up}"),
    )
}

/// How a [`GiveUp`] reads at the end of a failure's detail.
pub(crate) fn given_up(why: GiveUp, retry_after: Option<Duration>) -> String {
    match why {
        GiveUp::NotRetried => String::new(),
        GiveUp::Attempts(attempts) => format!(" after {attempts} attempts"),
        GiveUp::Deadline if retry_after.is_some() => {
            "; the server's wait ends past the request's deadline".to_owned()
        }
        GiveUp::Deadline => "; no time is left before the request's deadline".to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
