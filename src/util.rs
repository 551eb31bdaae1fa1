//! Small helpers shared by the demo server and the wire-fixture tools.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex, ignoring poison: the maps these tools keep stay consistent when a holder
/// panics, so a panic elsewhere must not take the server down with it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The proleptic Gregorian date `days` days after 1970-01-01, as (year, month 1-12, day 1-31)
/// (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are in range by construction: 1..=31 and 1..=12.
    (year, month as u32, day as u32)
}
