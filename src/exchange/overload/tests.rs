//! Retry-After, HTTP dates and the retry decision, on a fake clock.

use super::*;

#[allow(clippy::disallowed_methods)] // The fake clock needs one instant to start from.
fn origin() -> Instant {
    Instant::now()
}

#[test]
fn the_three_http_date_forms_are_read() {
    // RFC 9110 section 5.6.7's own example, in each form: 1994-11-06T08:49:37Z.
    const AT: u64 = 784_111_777;
    assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(AT));
    assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), Some(AT));
    assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), Some(AT));
    assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(
        parse_http_date("Tue, 29 Feb 2028 23:59:59 GMT"),
        Some(1_835_481_599)
    );
    assert_eq!(
        parse_http_date("Wednesday, 01-Jan-69 00:00:00 GMT"),
        Some(3_124_224_000)
    );
}

#[test]
fn what_is_no_http_date_is_refused() {
    for text in [
        "",
        "tomorrow",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 29 Feb 2027 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1969 08:49:37 GMT",
        "Sun 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 106 08:49:37 1994",
    ] {
        assert_eq!(parse_http_date(text), None, "{text:?}");
    }
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).expect("name"),
            value.parse().expect("value"),
        );
    }
    map
}

#[test]
fn retry_after_is_seconds_or_a_date_from_the_server_clock() {
    let wall = WallClock(784_111_777);
    let secs = |n| Some(Duration::from_secs(n));
    assert_eq!(
        retry_after(&headers(&[("retry-after", "120")]), wall),
        secs(120)
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "0")]), wall),
        secs(0)
    );
    assert_eq!(
        retry_after(
            &headers(&[("retry-after", "99999999999999999999999")]),
            wall
        ),
        secs(u64::MAX)
    );
    // Against the wall clock when the response has no Date.
    let date = [("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT")];
    assert_eq!(retry_after(&headers(&date), wall), secs(30));
    // Against the response's Date when it has one: the client's clock is an hour off.
    let dated = [
        ("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT"),
        ("date", "Sun, 06 Nov 1994 08:49:57 GMT"),
    ];
    assert_eq!(
        retry_after(&headers(&dated), WallClock(wall.0 + 3600)),
        secs(10)
    );
    // A date gone by is no wait; nonsense is no Retry-After.
    let past = [("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")];
    assert_eq!(retry_after(&headers(&past), wall), secs(0));
    assert_eq!(retry_after(&headers(&[("retry-after", "-5")]), wall), None);
    assert_eq!(
        retry_after(&headers(&[("retry-after", "soon")]), wall),
        None
    );
    assert_eq!(retry_after(&headers(&[]), wall), None);
}

#[test]
fn the_backoff_grows_is_capped_and_jittered() {
    let policy = OverloadPolicy::default();
    assert_eq!(policy.backoff(0, 0.0), Duration::from_millis(250));
    assert!(policy.backoff(0, 0.999) < Duration::from_millis(500));
    assert_eq!(policy.backoff(1, 0.0), Duration::from_millis(500));
    assert_eq!(policy.backoff(2, 0.5), Duration::from_millis(1500));
    // Capped at max_delay (8 s), half of it fixed.
    assert_eq!(policy.backoff(10, 0.0), Duration::from_secs(4));
    assert_eq!(policy.backoff(40, 1.0), Duration::from_secs(8));
}

#[test]
fn retries_stop_at_the_deadline_and_after_max_retries() {
    let policy = OverloadPolicy::default();
    let now = origin();
    let deadline = Some(now + Duration::from_secs(10));
    let wait = Some(Duration::from_secs(2));
    assert_eq!(
        policy.next_attempt(0, wait, now, deadline, 0.0),
        Ok(now + Duration::from_secs(2))
    );
    assert_eq!(
        policy.next_attempt(3, wait, now, deadline, 0.0),
        Err(GiveUp::Attempts(4))
    );
    // A server's wait that ends at or past the deadline: given up at once.
    assert_eq!(
        policy.next_attempt(0, Some(Duration::from_secs(10)), now, deadline, 0.0),
        Err(GiveUp::Deadline)
    );
    assert_eq!(
        policy.next_attempt(0, Some(Duration::from_secs(u64::MAX)), now, deadline, 0.0),
        Err(GiveUp::Deadline)
    );
    // A request that may not be sent twice never is.
    assert_eq!(
        policy.next_attempt(0, wait, now, None, 0.0),
        Err(GiveUp::NotRetried)
    );
    // Without a Retry-After, the backoff.
    assert_eq!(
        policy.next_attempt(1, None, now, deadline, 0.0),
        Ok(now + Duration::from_millis(500))
    );
}

/// Checks that `failure` is a refusal for overload with `status` and the server's wait of
/// `retry_after` seconds: refused before it ran, so its outcome is known.
#[track_caller]
pub(crate) fn assert_rate_limited(failure: &Failure, status: u16, retry_after: Option<u64>) {
    assert_eq!(
        failure.kind,
        FailureKind::RateLimited {
            status,
            retry_after: retry_after.map(Duration::from_secs),
        },
        "{failure}"
    );
    assert_eq!(failure.delivery, Delivery::Refused);
    assert!(!failure.outcome_unknown(), "refused before it ran");
}

/// Checks that `waits` are the default policy's first backoffs with equal jitter: in
/// [0.25, 0.5), [0.5, 1), [1, 2) seconds.
#[track_caller]
pub(crate) fn assert_jittered_backoff(waits: &[Duration]) {
    assert_eq!(waits.len(), 3, "{waits:?}");
    for (wait, base) in waits.iter().zip([500u64, 1000, 2000]) {
        let base = Duration::from_millis(base);
        assert!(*wait >= base / 2 && *wait < base, "{wait:?} for {base:?}");
    }
}
