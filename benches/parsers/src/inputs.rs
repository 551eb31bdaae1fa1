//! Deterministic inputs: every byte and every chunk boundary comes from a seeded xorshift, so two
//! runs (and every contender within a run) see exactly the same bytes in exactly the same pieces.

/// xorshift64 (Marsaglia 2003). Plenty for picking words and chunk sizes.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform-enough integer in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// An SSE byte stream plus what a correct decoder must report for it.
pub struct SseInput {
    pub bytes: Vec<u8>,
    pub events: u64,
    pub data_bytes: u64,
}

/// Line ending used when generating an SSE stream.
#[derive(Clone, Copy)]
pub enum Eol {
    Lf,
    CrLf,
}

impl Eol {
    fn as_bytes(self) -> &'static [u8] {
        match self {
            Eol::Lf => b"\n",
            Eol::CrLf => b"\r\n",
        }
    }
}

pub const SMALL_EVENTS: u64 = 100_000;
pub const BIG_LINE_BYTES: usize = 10 * 1024 * 1024;

/// Workload (a): 100,000 MCP progress notifications, one SSE event each.
pub fn small_events(eol: Eol) -> SseInput {
    let nl = eol.as_bytes();
    let mut bytes = Vec::with_capacity(16 << 20);
    let mut data_bytes = 0u64;
    for n in 1..=SMALL_EVENTS {
        let data = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"call-1","progress":{n},"total":{SMALL_EVENTS},"message":"step {n}"}}}}"#
        );
        data_bytes += data.len() as u64;
        bytes.extend_from_slice(b"event: message");
        bytes.extend_from_slice(nl);
        bytes.extend_from_slice(b"data: ");
        bytes.extend_from_slice(data.as_bytes());
        bytes.extend_from_slice(nl);
        bytes.extend_from_slice(nl);
    }
    SseInput {
        bytes,
        events: SMALL_EVENTS,
        data_bytes,
    }
}

const WORDS: &[&str] = &[
    "the",
    "tool",
    "returned",
    "rows",
    "from",
    "table",
    "users",
    "where",
    "id",
    "=",
    "42",
    "status",
    "active",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "0.75",
    "null",
    "true",
    "false",
    "\\\"quoted\\\"",
    "path/to/file.rs",
    "line",
    "column",
    "error",
    "warning",
    "ok",
];

/// Workload (b): one event whose single `data:` line is exactly 10 MiB of JSON-looking ASCII.
pub fn big_line() -> SseInput {
    let mut rng = XorShift::new(0x005E_EDB1_611E);
    let head = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""#;
    let tail = br#""}],"isError":false}}"#;
    let mut data = Vec::with_capacity(BIG_LINE_BYTES);
    data.extend_from_slice(head);
    while data.len() < BIG_LINE_BYTES - tail.len() {
        data.extend_from_slice(WORDS[rng.range(0, WORDS.len() - 1)].as_bytes());
        data.push(b' ');
    }
    data.truncate(BIG_LINE_BYTES - tail.len());
    // Never end the text on a lone backslash: that would escape the closing quote.
    while data.last() == Some(&b'\\') {
        data.pop();
        data.push(b' ');
    }
    data.extend_from_slice(tail);
    assert_eq!(data.len(), BIG_LINE_BYTES);
    assert!(!data.contains(&b'\n') && !data.contains(&b'\r'));

    let mut bytes = Vec::with_capacity(BIG_LINE_BYTES + 64);
    bytes.extend_from_slice(b"event: message\ndata: ");
    bytes.extend_from_slice(&data);
    bytes.extend_from_slice(b"\n\n");
    SseInput {
        bytes,
        events: 1,
        data_bytes: BIG_LINE_BYTES as u64,
    }
}

/// How the bytes of a stream are handed to a decoder.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    Whole,
    Chunks16K,
    Random1To64,
}

impl Feed {
    pub const ALL: [Feed; 3] = [Feed::Whole, Feed::Chunks16K, Feed::Random1To64];

    pub fn label(self) -> &'static str {
        match self {
            Feed::Whole => "whole",
            Feed::Chunks16K => "16 KiB chunks",
            Feed::Random1To64 => "1-64 B chunks",
        }
    }

    /// The name used by `--filter` and `--profile`.
    pub fn short(self) -> &'static str {
        match self {
            Feed::Whole => "whole",
            Feed::Chunks16K => "16k",
            Feed::Random1To64 => "1-64",
        }
    }

    /// Split `bytes` into the chunks every contender will be fed.
    pub fn split(self, bytes: &[u8]) -> Vec<&[u8]> {
        match self {
            Feed::Whole => vec![bytes],
            Feed::Chunks16K => bytes.chunks(16 * 1024).collect(),
            Feed::Random1To64 => {
                let mut rng = XorShift::new(0xC0FF_EE00_1234_5678);
                let mut out = Vec::with_capacity(bytes.len() / 32 + 1);
                let mut rest = bytes;
                while !rest.is_empty() {
                    let n = rng.range(1, 64).min(rest.len());
                    let (chunk, tail) = rest.split_at(n);
                    out.push(chunk);
                    rest = tail;
                }
                out
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC messages
// ---------------------------------------------------------------------------------------------

/// A JSON-RPC message plus a check value every contender must reproduce from it.
pub struct JsonInput {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    /// progress for the notification, number of tools, text length, image data length.
    pub check: u64,
}

pub fn progress_notification() -> JsonInput {
    let bytes = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"call-17","progress":4242,"total":100000,"message":"step 4242 of 100000"}}"#.to_vec();
    JsonInput {
        name: "progress notification",
        bytes,
        check: 4242,
    }
}

pub const TOOLS: usize = 100;

/// A `tools/list` result with 100 tools whose input schemas look like real servers' schemas.
pub fn tools_list() -> JsonInput {
    let mut rng = XorShift::new(0x7001_5115_7000_0001);
    let kinds = ["string", "integer", "number", "boolean"];
    let nouns = [
        "issue", "file", "repo", "query", "branch", "user", "table", "page", "ticket", "doc",
    ];
    let verbs = [
        "get", "list", "create", "update", "delete", "search", "merge", "read",
    ];
    let mut tools = Vec::with_capacity(TOOLS);
    for i in 0..TOOLS {
        let verb = verbs[rng.range(0, verbs.len() - 1)];
        let noun = nouns[rng.range(0, nouns.len() - 1)];
        let nprops = rng.range(2, 8);
        let mut props = Vec::new();
        let mut required = Vec::new();
        for p in 0..nprops {
            let kind = kinds[rng.range(0, kinds.len() - 1)];
            let name = format!("{noun}_{p}");
            let extra = match kind {
                "string" if rng.range(0, 2) == 0 => {
                    r#","enum":["open","closed","all"],"default":"open""#.to_string()
                }
                "string" => r#","minLength":1,"maxLength":256"#.to_string(),
                "integer" => format!(r#","minimum":0,"maximum":{}"#, rng.range(10, 10_000)),
                "number" => r#","minimum":0.0,"exclusiveMaximum":1.0"#.to_string(),
                _ => r#","default":false"#.to_string(),
            };
            props.push(format!(
                r#""{name}":{{"type":"{kind}","description":"The {noun} {kind} parameter number {p}, used to narrow the {verb} operation."{extra}}}"#
            ));
            if rng.range(0, 1) == 0 {
                required.push(format!(r#""{name}""#));
            }
        }
        let array_prop = r#""labels":{"type":"array","items":{"type":"string"},"description":"Labels to filter by."}"#;
        tools.push(format!(
            r#"{{"name":"{verb}_{noun}_{i}","title":"{verb} {noun} #{i}","description":"{verb} a {noun}. Returns the matching {noun} objects as JSON; fails with an error result when the {noun} does not exist or access is denied.","inputSchema":{{"type":"object","properties":{{{props},{array_prop}}},"required":[{required}],"additionalProperties":false}},"annotations":{{"readOnlyHint":{ro},"destructiveHint":{de},"idempotentHint":true,"openWorldHint":false}}}}"#,
            props = props.join(","),
            required = required.join(","),
            ro = verb == "get" || verb == "list" || verb == "search" || verb == "read",
            de = verb == "delete",
        ));
    }
    let bytes = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{}],"nextCursor":"page-2"}}}}"#,
        tools.join(",")
    )
    .into_bytes();
    JsonInput {
        name: "tools/list, 100 tools",
        bytes,
        check: TOOLS as u64,
    }
}

/// A `tools/call` result with one ~1 MiB text block: log-like lines, JSON-escaped newlines and
/// quotes, so a decoder has to unescape it.
pub fn text_result() -> JsonInput {
    let mut rng = XorShift::new(0x7E47_0000_0000_0003);
    let mut text = String::with_capacity(1 << 20);
    let mut unescaped_len = 0u64;
    while text.len() < (1 << 20) - 128 {
        let words = rng.range(4, 14);
        for w in 0..words {
            if w > 0 {
                text.push(' ');
                unescaped_len += 1;
            }
            let word = WORDS[rng.range(0, WORDS.len() - 1)];
            text.push_str(word);
            // `\"` in WORDS is two bytes of JSON for one byte of text.
            unescaped_len += (word.len() - word.matches("\\\"").count()) as u64;
        }
        text.push_str("\\n");
        unescaped_len += 1;
    }
    let bytes = format!(
        r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#
    )
    .into_bytes();
    JsonInput {
        name: "tools/call, 1 MiB text",
        bytes,
        check: unescaped_len,
    }
}

/// A `tools/call` result with one ~1 MiB base64 PNG-ish image block.
pub fn image_result() -> JsonInput {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = XorShift::new(0x1A4A_6E00_0000_0004);
    let len = (1 << 20) - 128;
    let mut data = String::with_capacity(len);
    while data.len() < len {
        let r = rng.next_u64();
        for k in 0..10 {
            data.push(B64[((r >> (k * 6)) & 63) as usize] as char);
        }
    }
    data.truncate(len - len % 4);
    let check = data.len() as u64;
    let bytes = format!(
        r#"{{"jsonrpc":"2.0","id":4,"result":{{"content":[{{"type":"image","data":"{data}","mimeType":"image/png"}}],"isError":false}}}}"#
    )
    .into_bytes();
    JsonInput {
        name: "tools/call, 1 MiB image",
        bytes,
        check,
    }
}
