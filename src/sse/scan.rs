//! Byte scanning for the decoder: where lines end, and whether appended input is ASCII.
//!
//! Two searches, each tuned for what the decoder asks most often:
//! - [`LineEnds::find`]: the next CR or LF in decoded text, called once per line;
//! - [`scan_appended`]: just-appended input checked to be ASCII (so that it needs no UTF-8
//!   decoding) and its first and last line end found, called once per push. A short push, the
//!   common case on a network stream, is classified in one step of four SSE2 compares.

/// The first and the last CR or LF of a stretch of input, as absolute buffer positions.
pub(super) type FirstAndLast = (usize, usize);

/// Finds the next CR or LF. On x86-64 an AVX2 (or else SSE2) searcher is built once per
/// process and called directly: most lines are short, and `memchr::memchr2`'s per-call
/// dispatch and setup cost more than scanning them (measured with callgrind on the parser
/// bench: 78 instructions a call). The searchers are shared rather than held by each decoder:
/// they hold 32-byte-aligned vectors, which would make every decoder (and whatever embeds one)
/// an over-aligned allocation, the allocator's slow path.
#[derive(Clone, Copy, Debug)]
pub(super) struct LineEnds(&'static Searchers);

#[derive(Debug)]
struct Searchers {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
    /// Always `Some` on x86-64, where SSE2 is part of the baseline.
    #[cfg(target_arch = "x86_64")]
    sse2: Option<memchr::arch::x86_64::sse2::memchr::Two>,
}

static SEARCHERS: std::sync::OnceLock<Searchers> = std::sync::OnceLock::new();

impl LineEnds {
    pub(super) fn new() -> Self {
        LineEnds(SEARCHERS.get_or_init(|| Searchers {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'\r', b'\n'),
            #[cfg(target_arch = "x86_64")]
            sse2: memchr::arch::x86_64::sse2::memchr::Two::new(b'\r', b'\n'),
        }))
    }

    /// The offset of the first CR or LF in `haystack`.
    #[inline]
    pub(super) fn find(&self, haystack: &[u8]) -> Option<usize> {
        // AVX2 pays off on long haystacks; on short ones it only adds a step down to SSE2.
        #[cfg(target_arch = "x86_64")]
        if let Some(searcher) = self.0.avx2.as_ref().filter(|_| haystack.len() >= 64) {
            return searcher.find(haystack);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(searcher) = &self.0.sse2 {
            return searcher.find(haystack);
        }
        memchr::memchr2(b'\r', b'\n', haystack)
    }

    /// The first and last CR or LF of `buf[start..]`, as positions in `buf`.
    pub(super) fn first_and_last(&self, buf: &[u8], start: usize) -> Option<FirstAndLast> {
        let tail = buf.get(start..)?;
        let first = self.find(tail)?;
        let last = memchr::memrchr2(b'\r', b'\n', &tail[first..]).unwrap_or(0) + first;
        Some((start + first, start + last))
    }
}

/// Input that is not all ASCII: it has to go through the UTF-8 decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NotAscii;

/// The longest append [`scan_short`] takes: four blocks of 16 bytes.
pub(super) const SHORT_BYTES: usize = 64;

/// Checks that `buf[start..]`, just appended, is ASCII, and finds its first and last line end.
#[inline]
pub(super) fn scan_appended(
    buf: &[u8],
    start: usize,
    line_ends: &LineEnds,
) -> Result<Option<FirstAndLast>, NotAscii> {
    if buf.len() - start <= SHORT_BYTES {
        return scan_short(buf, start);
    }
    // Longer input has many line ends; classifying every byte costs more than three passes
    // that stop early or are vectorised (`is_ascii` is, in `std`).
    if !buf[start..].is_ascii() {
        return Err(NotAscii);
    }
    Ok(line_ends.first_and_last(buf, start))
}

/// [`scan_appended`] for at most [`SHORT_BYTES`]. The buffer's last 64 bytes are classified
/// at once, with the bytes before `start` masked off: no loop and no branch per byte. Only a
/// buffer shorter than that (at the start of a stream) is taken block by block or byte by byte.
#[inline(always)]
pub(super) fn scan_short(buf: &[u8], start: usize) -> Result<Option<FirstAndLast>, NotAscii> {
    let len = buf.len();
    debug_assert!(len - start <= SHORT_BYTES);
    let Some(base) = len.checked_sub(SHORT_BYTES) else {
        return scan_blocks(buf, start);
    };
    let Some(window) = buf[base..].first_chunk::<SHORT_BYTES>() else {
        return scan_blocks(buf, start);
    };
    let (blocks, _) = window.as_chunks::<16>();
    let (mut non_ascii, mut line_ends) = (0u64, 0u64);
    for (i, block) in blocks.iter().enumerate() {
        let (high, ends) = classify(block);
        non_ascii |= u64::from(high) << (16 * i);
        line_ends |= u64::from(ends) << (16 * i);
    }
    // Only the appended bytes count (none when nothing was appended).
    let appended = u64::MAX.checked_shl((start - base) as u32).unwrap_or(0);
    if non_ascii & appended != 0 {
        return Err(NotAscii);
    }
    let line_ends = line_ends & appended;
    if line_ends == 0 {
        return Ok(None);
    }
    let first = base + line_ends.trailing_zeros() as usize;
    let last = base + 63 - line_ends.leading_zeros() as usize;
    Ok(Some((first, last)))
}

/// [`scan_short`] for a buffer shorter than its window: 16-byte blocks, the last one
/// overlapping what was already seen.
fn scan_blocks(buf: &[u8], start: usize) -> Result<Option<FirstAndLast>, NotAscii> {
    let len = buf.len();
    if len < 16 {
        return scan_bytewise(buf, start);
    }
    let mut ends: Option<FirstAndLast> = None;
    let mut at = start;
    while at < len {
        let base = if len - at >= 16 { at } else { len - 16 };
        let Some(block) = buf[base..].first_chunk::<16>() else {
            break;
        };
        // Only bytes from `at` on are new.
        let new = u32::MAX << (at - base);
        let (high, line_ends) = classify(block);
        if high & new != 0 {
            return Err(NotAscii);
        }
        let line_ends = line_ends & new;
        if line_ends != 0 {
            let last = base + 31 - line_ends.leading_zeros() as usize;
            let first = base + line_ends.trailing_zeros() as usize;
            ends = Some(ends.map_or((first, last), |(first, _)| (first, last)));
        }
        at = base + 16;
    }
    Ok(ends)
}

/// [`scan_blocks`] for a buffer shorter than one block.
fn scan_bytewise(buf: &[u8], start: usize) -> Result<Option<FirstAndLast>, NotAscii> {
    let mut ends: Option<FirstAndLast> = None;
    for (position, &byte) in buf.iter().enumerate().skip(start) {
        match byte {
            b'\r' | b'\n' => {
                ends = Some(ends.map_or((position, position), |(first, _)| (first, position)));
            }
            byte if !byte.is_ascii() => return Err(NotAscii),
            _ => {}
        }
    }
    Ok(ends)
}

/// Two masks of `block`: bit `i` of the first is set when `block[i]` is not ASCII, of the
/// second when it is a CR or LF.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify(block: &[u8; 16]) -> (u32, u32) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    #[allow(unsafe_code)]
    // SAFETY: SSE2 is part of the x86-64 baseline, so these intrinsics exist on every CPU this
    // code can run on; the unaligned load reads exactly the 16 bytes that `block` borrows.
    let (high, ends) = unsafe {
        let bytes = _mm_loadu_si128(block.as_ptr().cast());
        let ends = _mm_or_si128(
            _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\r' as i8)),
            _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\n' as i8)),
        );
        (_mm_movemask_epi8(bytes), _mm_movemask_epi8(ends))
    };
    // `movemask` sets only the low 16 bits.
    (high as u32, ends as u32)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify(block: &[u8; 16]) -> (u32, u32) {
    classify_portable(block)
}

/// The same masks without SIMD: the fallback off x86-64, and the reference in tests.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn classify_portable(block: &[u8; 16]) -> (u32, u32) {
    block
        .iter()
        .enumerate()
        .fold((0, 0), |(high, ends), (i, &byte)| {
            (
                high | (u32::from(!byte.is_ascii()) << i),
                ends | (u32::from(matches!(byte, b'\r' | b'\n')) << i),
            )
        })
}

/// Appends `input` to `buf` and, in the same pass, checks it is ASCII and finds its first and
/// last line end: one read of input that is not in cache yet, where copying and then scanning
/// the copy would read it twice more. For a long line arriving in large pieces. `None` when
/// the CPU has no AVX2 (the caller copies and scans instead). On `Err`, `buf` is unchanged.
pub(super) fn append_scanning(
    buf: &mut Vec<u8>,
    input: &[u8],
) -> Option<Result<Option<FirstAndLast>, NotAscii>> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        buf.reserve(input.len());
        #[allow(unsafe_code)]
        // SAFETY: AVX2 was detected at run time just above.
        return Some(unsafe { append_scanning_avx2(buf, input) });
    }
    let _ = (buf, input);
    None
}

/// [`append_scanning`] with AVX2: 32 bytes loaded, stored into the buffer's spare capacity
/// and classified at a time (one compare finds every byte below 14 as a signed byte, that
/// is every non-ASCII byte and every control up to CR; only a block with one is looked at
/// closely). The length is set only once every byte is written and found to be ASCII.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
unsafe fn append_scanning_avx2(
    buf: &mut Vec<u8>,
    input: &[u8],
) -> Result<Option<FirstAndLast>, NotAscii> {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_storeu_si256,
    };
    let start = buf.len();
    let spare = buf.spare_capacity_mut();
    assert!(spare.len() >= input.len(), "room reserved for the input");
    let dst = spare.as_mut_ptr().cast::<u8>();
    let special_below = _mm256_set1_epi8(14);
    let cr = _mm256_set1_epi8(b'\r' as i8);
    let lf = _mm256_set1_epi8(b'\n' as i8);
    let mut ends: Option<FirstAndLast> = None;
    // Looks closely at a 32-byte block at `at` that holds a byte below 14.
    let mut classify_block = |bytes: __m256i, at: usize| -> Result<(), NotAscii> {
        if _mm256_movemask_epi8(bytes) != 0 {
            return Err(NotAscii);
        }
        let line_ends = _mm256_movemask_epi8(_mm256_or_si256(
            _mm256_cmpeq_epi8(bytes, cr),
            _mm256_cmpeq_epi8(bytes, lf),
        )) as u32;
        if line_ends != 0 {
            let first = start + at + line_ends.trailing_zeros() as usize;
            let last = start + at + 31 - line_ends.leading_zeros() as usize;
            ends = Some(ends.map_or((first, last), |(first, _)| (first, last)));
        }
        Ok(())
    };
    let mut at = 0;
    // Two blocks a round: one test of both for the common case of nothing special.
    while let Some(pair) = input.get(at..at + 64) {
        // SAFETY: `pair` is 64 readable bytes; `dst + at .. dst + at + 64` lies within the
        // spare capacity, which holds at least `input.len()` bytes (asserted above).
        let (low, high) = unsafe {
            let low = _mm256_loadu_si256(pair.as_ptr().cast::<__m256i>());
            let high = _mm256_loadu_si256(pair.as_ptr().add(32).cast::<__m256i>());
            _mm256_storeu_si256(dst.add(at).cast::<__m256i>(), low);
            _mm256_storeu_si256(dst.add(at + 32).cast::<__m256i>(), high);
            (low, high)
        };
        let special = _mm256_or_si256(
            _mm256_cmpgt_epi8(special_below, low),
            _mm256_cmpgt_epi8(special_below, high),
        );
        if _mm256_movemask_epi8(special) != 0 {
            classify_block(low, at)?;
            classify_block(high, at + 32)?;
        }
        at += 64;
    }
    while let Some(block) = input.get(at..at + 32) {
        // SAFETY: as above, for 32 bytes.
        let bytes = unsafe {
            let bytes = _mm256_loadu_si256(block.as_ptr().cast::<__m256i>());
            _mm256_storeu_si256(dst.add(at).cast::<__m256i>(), bytes);
            bytes
        };
        if _mm256_movemask_epi8(_mm256_cmpgt_epi8(special_below, bytes)) != 0 {
            classify_block(bytes, at)?;
        }
        at += 32;
    }
    for (offset, &byte) in input.iter().enumerate().skip(at) {
        if !byte.is_ascii() {
            return Err(NotAscii);
        }
        // SAFETY: `offset < input.len()`, within the spare capacity.
        unsafe { dst.add(offset).write(byte) };
        if matches!(byte, b'\r' | b'\n') {
            let position = start + offset;
            ends = Some(ends.map_or((position, position), |(first, _)| (first, position)));
        }
    }
    // SAFETY: the `input.len()` bytes after the old length are written (every 32-byte block,
    // then the rest byte by byte), within the capacity.
    unsafe { buf.set_len(start + input.len()) };
    Ok(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simd_classes_match_the_portable_ones_for_every_byte_at_every_position() {
        for byte in 0..=u8::MAX {
            for position in 0..16 {
                let mut block = [b'a'; 16];
                block[position] = byte;
                assert_eq!(
                    classify(&block),
                    classify_portable(&block),
                    "byte {byte:#04x} at {position}"
                );
            }
        }
    }

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// The obvious scan, for comparison.
    fn reference(buf: &[u8], start: usize) -> Result<Option<FirstAndLast>, NotAscii> {
        let tail = &buf[start..];
        if !tail.is_ascii() {
            return Err(NotAscii);
        }
        let ends: Vec<usize> = (start..buf.len())
            .filter(|&i| matches!(buf[i], b'\r' | b'\n'))
            .collect();
        Ok(ends
            .first()
            .map(|&first| (first, *ends.last().unwrap_or(&first))))
    }

    #[test]
    fn scan_appended_matches_the_obvious_scan_for_every_start_and_length() {
        let alphabet = [b'a', b'\r', b'\n', b'\t', 0, 13, 14, 0x7F, 0x80, 0xC3, 0xFF];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            let state = xorshift(&mut state);
            let len = (state % 150) as usize;
            let buf: Vec<u8> = (0..len)
                .map(|i| {
                    let pick = (state >> (i % 50)) as usize ^ i.wrapping_mul(31);
                    // Mostly plain letters, so that runs without specials occur.
                    if pick.is_multiple_of(4) {
                        alphabet[pick / 4 % alphabet.len()]
                    } else {
                        b'x'
                    }
                })
                .collect();
            for start in 0..=len {
                let expected = reference(&buf, start);
                assert_eq!(
                    scan_appended(&buf, start, &LineEnds::new()),
                    expected,
                    "{buf:?} from {start}"
                );
                // The short scan's fallback, which only a buffer under 64 bytes reaches.
                assert_eq!(
                    scan_blocks(&buf, start),
                    expected,
                    "blocks: {buf:?} from {start}"
                );
            }
        }
    }

    #[test]
    fn append_scanning_matches_copy_then_scan() {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        for _ in 0..2_000 {
            let state = xorshift(&mut state);
            let len = (state % 200) as usize;
            let input: Vec<u8> = (0..len)
                .map(|i| match (state >> (i % 61)) % 23 {
                    0 => b'\n',
                    1 => b'\r',
                    2 if state.is_multiple_of(5) => 0xC3,
                    3 => b'\t',
                    _ => b'a' + (i % 26) as u8,
                })
                .collect();
            let prefix = b"data: earlier".to_vec();
            let mut buf = prefix.clone();
            let Some(result) = append_scanning(&mut buf, &input) else {
                return; // no AVX2 on this CPU: nothing to compare
            };
            let mut copied = prefix.clone();
            copied.extend_from_slice(&input);
            let expected = reference(&copied, prefix.len());
            assert_eq!(result, expected, "{input:?}");
            match result {
                Ok(_) => assert_eq!(buf, copied),
                Err(NotAscii) => assert_eq!(buf, prefix, "unchanged on error"),
            }
        }
    }

    #[test]
    fn first_and_last_finds_the_outermost_line_ends() {
        let ends = LineEnds::new();
        let buf = b"ab\r\ncd\nef";
        assert_eq!(ends.first_and_last(buf, 0), Some((2, 6)));
        assert_eq!(ends.first_and_last(buf, 4), Some((6, 6)));
        assert_eq!(ends.first_and_last(buf, 7), None);
        assert_eq!(ends.first_and_last(buf, 9), None);
    }
}
