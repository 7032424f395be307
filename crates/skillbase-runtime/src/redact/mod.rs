//! Redaction: every vault value, and its base64, hex, URL-encoded and JSON-escaped forms, scrubbed
//! from text in one pass however many secrets there are.
//!
//! For a value of [`LOOSE_MIN_CHARS`] characters or more, every form and the value reversed are
//! matched loosely ([`matcher`]): in any ASCII case, and with any whitespace or line breaks
//! inside them, which is how a destination that was sent a value most cheaply reflects it back
//! changed. Shorter values are matched exactly (Aho-Corasick), since loosening them would hit
//! innocent text.
//!
//! **Redact, then cut.** Anything that cuts text to a cap (a body at `max_bytes`, a result at its
//! token limit, a URL in a message) redacts the whole text first and then trims the cut end with
//! [`Redactor::trim_partial`], so that no output ends in the first characters of a secret (in any
//! of the loose forms too). Cutting first would let a caller choose the cut to recover all but the
//! last character of a value.
//!
//! Not covered (and not promised): a value split into parts with other text between them,
//! encrypted, hashed or otherwise re-encoded forms, non-ASCII case changes, and partial values in
//! the middle of a text.

mod matcher;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use matcher::{Loose, fold};
use std::borrow::Cow;
use std::sync::Arc;

/// Shortest encoded form worth matching; shorter cores would hit innocent text.
const MIN_FORM_LEN: usize = 6;
/// Shortest prefix of a form that a cut text may not end in ([`Redactor::trim_partial`]).
pub const MIN_PARTIAL_LEN: usize = 4;
/// Values of at least this many characters are also matched reversed, in any ASCII case and with
/// whitespace inside them.
pub const LOOSE_MIN_CHARS: usize = 8;

/// A compiled set of secrets to scrub.
#[derive(Clone, Default)]
pub struct Redactor {
    /// The loose forms of the long values; pattern ids index `owners`.
    loose: Loose,
    /// The exact forms of the short values.
    exact: Option<AhoCorasick>,
    /// Per exact pattern: its index in `owners`.
    exact_owner: Vec<usize>,
    /// Exact forms longer than [`MIN_PARTIAL_LEN`], for [`Redactor::trim_partial`].
    exact_forms: Vec<Vec<u8>>,
    /// The vault entries, one per secret.
    owners: Vec<Arc<str>>,
    longest_exact: usize,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.owners.len())
            .field("exact_patterns", &self.exact_owner.len())
            .finish()
    }
}

/// The value with its characters in reverse order (bytes, when it is not UTF-8).
fn reversed(value: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(value) {
        Ok(s) => s.chars().rev().collect::<String>().into_bytes(),
        Err(_) => value.iter().rev().copied().collect(),
    }
}

/// The forms a secret can take in a tool result, an error or a log line.
pub fn forms(value: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![value.to_vec()];
    let hex_lower: String = value.iter().map(|b| format!("{b:02x}")).collect();
    out.push(hex_lower.to_uppercase().into_bytes());
    out.push(hex_lower.into_bytes());
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(value).into_bytes());
    }
    // Inside a longer base64 stream the secret may start at any of three alignments: keep the
    // characters that depend only on the secret's own bytes.
    for shift in 1..3usize {
        let mut padded = vec![0u8; shift];
        padded.extend_from_slice(value);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let enc = engine.encode(&padded);
            // The first `shift` bytes affect the first ceil(shift*8/6) characters; the last group
            // may depend on what follows the secret.
            let skip = (shift * 8).div_ceil(6);
            let end = ((shift + value.len()) * 8 / 6).saturating_sub(1);
            if end > skip {
                out.push(enc.as_bytes()[skip..end].to_vec());
            }
        }
    }
    {
        let enc = STANDARD_NO_PAD.encode(value);
        // Aligned but followed by more data: drop the last (possibly merged) character.
        if enc.len() > 1 {
            out.push(enc.as_bytes()[..enc.len() - 1].to_vec());
        }
    }
    let mut url = String::new();
    let mut url_plus = String::new();
    for &b in value {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            url.push(b as char);
            url_plus.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
            if b == b' ' {
                url_plus.push('+');
            } else {
                url_plus.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out.push(url.to_lowercase_hex());
    out.push(url.clone().into_bytes());
    out.push(url_plus.into_bytes());
    if let Ok(text) = std::str::from_utf8(value) {
        out.extend(json_forms(text));
    }
    out.retain(|f| f.len() >= MIN_FORM_LEN || f.as_slice() == value);
    out.sort();
    out.dedup();
    out
}

/// The value as it appears inside a JSON string: escaped as serde_json and JavaScript write it
/// (`"`, `\` and control characters escaped, other characters as they are) and as Python's
/// `json.dumps` writes it (every non-ASCII character as `\uXXXX`, in lower and upper case hex),
/// each also with `/` written `\/` (PHP). Only the forms that differ from the value itself.
fn json_forms(value: &str) -> Vec<Vec<u8>> {
    fn escape(value: &str, ascii: bool, upper: bool, slash: bool) -> String {
        let mut out = String::with_capacity(value.len() + 8);
        for c in value.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '/' if slash => out.push_str("\\/"),
                c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        if upper {
                            out.push_str(&format!("\\u{u:04X}"));
                        } else {
                            out.push_str(&format!("\\u{u:04x}"));
                        }
                    }
                }
                c => out.push(c),
            }
        }
        out
    }
    let mut out = Vec::new();
    for ascii in [false, true] {
        for upper in [false, true] {
            for slash in [false, true] {
                let f = escape(value, ascii, upper, slash);
                if f != value {
                    out.push(f.into_bytes());
                }
            }
        }
    }
    out
}

trait LowerHex {
    fn to_lowercase_hex(&self) -> Vec<u8>;
}

impl LowerHex for String {
    /// `%2F` written `%2f`.
    fn to_lowercase_hex(&self) -> Vec<u8> {
        let b = self.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push(b'%');
                out.push(b[i + 1].to_ascii_lowercase());
                out.push(b[i + 2].to_ascii_lowercase());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    }
}

impl Redactor {
    /// Build from `(entry name, value)` pairs.
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Redactor {
        let mut owners: Vec<Arc<str>> = Vec::new();
        let mut loose: Vec<(Vec<u8>, usize)> = Vec::new();
        let mut exact: Vec<Vec<u8>> = Vec::new();
        let mut exact_owner: Vec<usize> = Vec::new();
        for (name, value) in secrets {
            if value.is_empty() {
                continue;
            }
            let owner = owners.len();
            owners.push(Arc::from(name));
            let chars = std::str::from_utf8(value).map_or(value.len(), |s| s.chars().count());
            let mut all = forms(value);
            if chars >= LOOSE_MIN_CHARS {
                all.push(reversed(value));
            }
            for f in all {
                let folded = fold(&f);
                if chars >= LOOSE_MIN_CHARS && folded.len() >= matcher::KEY {
                    loose.push((folded, owner));
                } else {
                    exact.push(f);
                    exact_owner.push(owner);
                }
            }
        }
        let ac = if exact.is_empty() {
            None
        } else {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&exact)
                .ok()
        };
        let longest_exact = exact.iter().map(Vec::len).max().unwrap_or(0);
        let mut exact_forms = exact;
        exact_forms.retain(|f| f.len() > MIN_PARTIAL_LEN);
        exact_forms.sort();
        exact_forms.dedup();
        Redactor {
            loose: Loose::new(loose),
            exact: ac,
            exact_owner,
            exact_forms,
            owners,
            longest_exact,
        }
    }

    /// Every match in `bytes` as `(start, end, owner)`: leftmost first, longest at each start,
    /// none overlapping; `f` returns `false` to stop.
    fn each_match(&self, bytes: &[u8], mut f: impl FnMut(usize, usize, usize) -> bool) {
        let Some(ac) = &self.exact else {
            self.loose.scan(bytes, |h| f(h.start, h.end, h.pattern));
            return;
        };
        let mut all: Vec<(usize, usize, usize)> = ac
            .find_iter(bytes)
            .map(|m| (m.start(), m.end(), self.exact_owner[m.pattern().as_usize()]))
            .collect();
        self.loose.scan(bytes, |h| {
            all.push((h.start, h.end, h.pattern));
            true
        });
        all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut last = 0;
        for (s, e, o) in all {
            if s >= last {
                if !f(s, e, o) {
                    return;
                }
                last = e;
            }
        }
    }

    /// `text` without a trailing piece that begins a secret (in any of its forms, loose ones
    /// included) and is at least `MIN_PARTIAL_LEN` bytes long: what a text cut at a cap must be
    /// trimmed to, after it was redacted whole. Repeats until the end is clean (trimming may
    /// expose another beginning).
    pub fn trim_partial<'t>(&self, text: &'t str) -> &'t str {
        let mut end = text.len();
        loop {
            let t = &text.as_bytes()[..end];
            let loose = self.loose.partial_tail(t, MIN_PARTIAL_LEN);
            let cut = match (loose, self.exact_partial(t)) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(c) => c,
                    None => return &text[..end],
                },
            };
            end = cut;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
        }
    }

    /// Where `t` must be cut so that it does not end in a proper prefix (of [`MIN_PARTIAL_LEN`]
    /// bytes or more) of an exact form.
    fn exact_partial(&self, t: &[u8]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for f in &self.exact_forms {
            let longest = (f.len() - 1).min(t.len());
            let window = &t[t.len() - longest..];
            let head = &f[..MIN_PARTIAL_LEN];
            let found = (0..(window.len() + 1).saturating_sub(MIN_PARTIAL_LEN))
                .find(|&i| &window[i..i + MIN_PARTIAL_LEN] == head && f.starts_with(&window[i..]));
            if let Some(i) = found {
                let cut = t.len() - (window.len() - i);
                best = Some(best.map_or(cut, |b| b.min(cut)));
            }
        }
        best
    }

    /// `text` redacted whole, then cut to at most `max_bytes` (on a character boundary) and
    /// trimmed of a trailing partial secret; and whether it was cut.
    pub fn redact_and_cut(&self, text: &str, max_bytes: usize) -> (String, bool) {
        let full = self.redact(text);
        if full.len() <= max_bytes {
            return (full.into_owned(), false);
        }
        let mut end = max_bytes;
        while !full.is_char_boundary(end) {
            end -= 1;
        }
        (self.trim_partial(&full[..end]).to_owned(), true)
    }

    /// How far past a cap a text must be read for redaction to see a value that straddles the
    /// cap (0 without secrets): the longest form, doubled for the loose forms, which may have
    /// whitespace inside them.
    pub fn longest_form(&self) -> usize {
        (self.loose.longest() * 2).max(self.longest_exact)
    }

    /// Number of secrets (vault entries with a non-empty value), not of the forms matched.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether there is no secret: redaction then returns every text unchanged.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// The vault entry whose value (in any form) occurs in `bytes`, if any.
    pub fn find(&self, bytes: &[u8]) -> Option<&str> {
        let mut found = None;
        self.each_match(bytes, |_, _, o| {
            found = Some(o);
            false
        });
        found.map(|o| &*self.owners[o])
    }

    /// `bytes` with every secret form replaced by `[REDACTED:<entry>]`, or `None` when it holds
    /// none (for stored files, which need not be text).
    pub fn redact_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        let mut last = 0;
        self.each_match(bytes, |start, end, o| {
            let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            out.extend_from_slice(&bytes[last..start]);
            out.extend_from_slice(b"[REDACTED:");
            out.extend_from_slice(self.owners[o].as_bytes());
            out.push(b']');
            last = end;
            true
        });
        let mut out = out?;
        out.extend_from_slice(&bytes[last..]);
        Some(out)
    }

    /// `text` with every secret form replaced by `[REDACTED:<entry>]`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out: Option<String> = None;
        let mut last = 0;
        self.each_match(text.as_bytes(), |start, end, o| {
            // Matches are on bytes; keep UTF-8 intact by widening to char boundaries.
            let mut start = start.max(last);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let start = start.max(last);
            let mut end = end;
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[last..start]);
            out.push_str("[REDACTED:");
            out.push_str(&self.owners[o]);
            out.push(']');
            last = end;
            true
        });
        match out {
            None => Cow::Borrowed(text),
            Some(mut out) => {
                out.push_str(&text[last..]);
                Cow::Owned(out)
            }
        }
    }

    /// The shared empty redactor (no secrets), for callers without a vault: cloning it is one
    /// reference count, not an allocation.
    pub fn empty() -> Arc<Redactor> {
        static EMPTY: std::sync::OnceLock<Arc<Redactor>> = std::sync::OnceLock::new();
        EMPTY.get_or_init(Arc::default).clone()
    }

    /// [`Redactor::redact_json`] on a value the caller owns: redacted in place, so a value
    /// without secrets (and every value when there are none) is returned without a copy.
    pub fn redact_json_owned(&self, mut v: serde_json::Value) -> serde_json::Value {
        if !self.is_empty() {
            self.redact_in_place(&mut v);
        }
        v
    }

    fn redact_in_place(&self, v: &mut serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.redact_in_place(x)),
            Value::Object(o) => {
                if o.keys().any(|k| matches!(self.redact(k), Cow::Owned(_))) {
                    // Rebuilt in order, as `redact_json` collects it (a later key redacted to an
                    // earlier one's text replaces its value in that place).
                    let old = std::mem::take(o);
                    for (k, x) in old {
                        o.insert(self.redact(&k).into_owned(), x);
                    }
                }
                o.values_mut().for_each(|x| self.redact_in_place(x));
            }
            _ => {}
        }
    }

    /// Every string in a JSON value (keys too) redacted.
    pub fn redact_json(&self, v: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        if self.is_empty() {
            return v.clone();
        }
        match v {
            Value::String(s) => Value::String(self.redact(s).into_owned()),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.redact_json(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (self.redact(k).into_owned(), self.redact_json(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t-P@ss/word+42";

    fn r() -> Redactor {
        Redactor::new([
            ("LOGIN", SECRET.as_bytes()),
            ("TOKEN", b"tok_ABCDEF123456".as_slice()),
        ])
    }

    #[test]
    fn scrubs_every_form() {
        let r = r();
        let b64 = STANDARD.encode(SECRET);
        let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
        let url = "s3cr3t-P%40ss%2Fword%2B42";
        for text in [
            format!("the password is {SECRET}."),
            format!("encoded: {b64}"),
            format!("hex={hex}"),
            format!("HEX={}", hex.to_uppercase()),
            format!("?p={url}&x=1"),
            "?p=s3cr3t-P%40ss%2fword%2b42&x=1".to_owned(),
            format!("json {{\"auth\":\"{}\"}}", URL_SAFE_NO_PAD.encode(SECRET)),
        ] {
            let out = r.redact(&text);
            assert!(out.contains("[REDACTED:LOGIN]"), "{text} -> {out}");
            assert!(!out.contains(SECRET), "{out}");
        }
        assert_eq!(r.redact("nothing here"), "nothing here");
    }

    #[test]
    fn scrubs_secrets_inside_longer_base64_at_any_alignment() {
        let r = r();
        for prefix in ["", "a", "ab", "abc", "user:"] {
            for suffix in ["", "x", "xy", "@host"] {
                let blob = STANDARD.encode(format!("{prefix}{SECRET}{suffix}"));
                let out = r.redact(&blob);
                assert!(
                    out.contains("[REDACTED:LOGIN]"),
                    "{prefix}|{suffix}: {blob} -> {out}"
                );
            }
        }
    }

    #[test]
    fn names_the_entry_and_redacts_json() {
        let r = r();
        assert_eq!(r.find(b"Bearer tok_ABCDEF123456"), Some("TOKEN"));
        let v = serde_json::json!({"a": ["tok_ABCDEF123456"], SECRET: 1});
        let out = r.redact_json(&v).to_string();
        assert!(
            !out.contains("tok_ABCDEF123456") && !out.contains(SECRET),
            "{out}"
        );
    }

    #[test]
    fn owned_redaction_is_the_same() {
        let r = r();
        let b64 = STANDARD.encode(SECRET);
        for v in [
            serde_json::json!({"a": ["tok_ABCDEF123456", 1, null, {"x": b64}], SECRET: 1, "b": true}),
            serde_json::json!({SECRET: 1, "tok_ABCDEF123456": 2, "[REDACTED:LOGIN]": 3, "z": SECRET}),
            serde_json::json!("plain"),
            serde_json::json!([{"k": "v"}, "x tok_ABCDEF123456 y"]),
        ] {
            let want = r.redact_json(&v);
            assert_eq!(r.redact_json_owned(v.clone()), want);
            assert_eq!(
                serde_json::to_string(&r.redact_json_owned(v)).unwrap(),
                serde_json::to_string(&want).unwrap()
            );
        }
        let none = Redactor::empty();
        let v = serde_json::json!({"a": SECRET});
        assert_eq!(none.redact_json_owned(v.clone()), v);
    }

    #[test]
    fn scrubs_json_escaped_values() {
        // A value with a quote, a backslash, a slash and non-ASCII, reflected as serde_json,
        // JavaScript, Python's json.dumps (ensure_ascii) and PHP write it.
        let value = "pa\"ss\\wörd/€😀-42";
        let r = Redactor::new([("V", value.as_bytes())]);
        for reflected in [
            serde_json::to_string(value).unwrap(),
            r#""pa\"ss\\w\u00f6rd/\u20ac\ud83d\ude00-42""#.to_owned(),
            r#""pa\"ss\\w\u00F6rd/\u20AC\uD83D\uDE00-42""#.to_owned(),
            r#""pa\"ss\\w\u00f6rd\/\u20ac\ud83d\ude00-42""#.to_owned(),
            serde_json::json!({"echo": {"nested": value}}).to_string(),
        ] {
            let out = r.redact(&reflected);
            assert!(out.contains("[REDACTED:V]"), "{reflected} -> {out}");
            assert!(!out.contains("ss\\\\w"), "{out}");
        }
        // The write guard's lookup sees the same forms.
        assert_eq!(
            r.find(br#"{"token": "pa\"ss\\w\u00f6rd/\u20ac\ud83d\ude00-42"}"#),
            Some("V")
        );
    }

    #[test]
    fn a_cut_never_ends_in_the_start_of_a_secret() {
        let secret = "Zq7vN2pLx9RtK4mW8sYb3cFh6jDg1aQe";
        let r = Redactor::new([("KEY", secret.as_bytes())]);
        let body = format!("token={secret}; more text after it");
        // Every cut inside the value, in every form: nothing of 4 or more characters survives.
        for form in forms(secret.as_bytes()) {
            let form = String::from_utf8(form).unwrap();
            let text = format!("token={form}; tail");
            for cut in 0..text.len() {
                let (out, _) = r.redact_and_cut(&text, cut);
                assert!(out.len() <= cut);
                for k in MIN_PARTIAL_LEN..form.len() {
                    assert!(!out.ends_with(&form[..k]), "cut {cut}: {out}");
                }
            }
        }
        // Cut after the value: redacted whole, nothing trimmed beyond the cap.
        let (out, cut) = r.redact_and_cut(&body, 30);
        assert!(cut && out.starts_with("token=[REDACTED:KEY]"), "{out}");
        // Text that merely starts like a secret is kept when under 4 characters.
        assert_eq!(r.trim_partial("abc Zq7"), "abc Zq7");
        assert_eq!(r.trim_partial("abc Zq7v"), "abc ");
        // Trimming repeats when the trimmed end begins a secret again.
        let r2 = Redactor::new([
            ("A", b"abcdXYZW1234".as_slice()),
            ("B", b"wxyzabcdQQQQ".as_slice()),
        ]);
        assert_eq!(r2.trim_partial("-- abcdwxyz"), "-- ");
        assert_eq!(r2.trim_partial("plain text"), "plain text");
        assert_eq!(Redactor::default().trim_partial("abcd"), "abcd");
    }

    #[test]
    fn scrubs_reversed_case_changed_and_split_reflections() {
        let secret = "sk_live_9f8E7d6C5b4A";
        let r = Redactor::new([("KEY", secret.as_bytes()), ("PIN", b"4711".as_slice())]);
        let rev: String = secret.chars().rev().collect();
        let b64 = STANDARD.encode(secret);
        for text in [
            format!("echo: {rev}"),
            format!("echo: {}", secret.to_uppercase()),
            format!("echo: {}", secret.to_lowercase()),
            format!("echo: {}\n{}", &secret[..9], &secret[9..]),
            format!("echo: {}\r\n  {}", &secret[..5], &secret[5..]),
            format!("echo: {} {}", &secret[..12], &secret[12..]),
            format!(
                "echo: {}",
                secret.chars().map(|c| format!("{c} ")).collect::<String>()
            ),
            format!("echo: {}", rev.to_uppercase()),
            format!("b64: {}\n{}", &b64[..10], &b64[10..]),
            format!(
                "hex: {}",
                secret
                    .bytes()
                    .map(|b| format!("{b:02X} "))
                    .collect::<String>()
            ),
        ] {
            let out = r.redact(&text);
            assert!(out.contains("[REDACTED:KEY]"), "{text:?} -> {out}");
            assert!(!out.to_lowercase().contains("9f8e7d"), "{out}");
            assert_eq!(r.find(text.as_bytes()), Some("KEY"), "{text:?}");
        }
        // A short value is matched as it is, never loosely (it would hit innocent text).
        assert_eq!(r.redact("pin 4711"), "pin [REDACTED:PIN]");
        assert_eq!(r.redact("1174 and 47 11"), "1174 and 47 11");
        // Innocent text is left alone.
        let plain = "the quick brown fox: sk_live_ is a prefix, nothing more";
        assert_eq!(r.redact(plain), plain);
    }

    #[test]
    fn a_cut_never_ends_in_the_start_of_a_transformed_value() {
        let secret = "Zq7vN2pLx9RtK4mW8sYb3cFh6jDg1aQe";
        let r = Redactor::new([("KEY", secret.as_bytes())]);
        let rev: String = secret.chars().rev().collect();
        let split = format!("{}\n{}", &secret[..10], &secret[10..]);
        for form in [
            secret.to_uppercase(),
            rev.clone(),
            rev.to_lowercase(),
            split,
        ] {
            let text = format!("echo={form}; tail");
            for cut in 0..text.len() {
                let (out, _) = r.redact_and_cut(&text, cut);
                assert!(out.len() <= cut);
                let kept = fold(out.as_bytes());
                for k in MIN_PARTIAL_LEN..form.len() {
                    let head = fold(&form.as_bytes()[..k]);
                    if head.len() >= MIN_PARTIAL_LEN {
                        assert!(!kept.ends_with(&head), "cut {cut}: {out:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn keeps_utf8_valid() {
        let r = Redactor::new([("X", "pässwörd".as_bytes())]);
        assert_eq!(r.redact("é pässwörd é"), "é [REDACTED:X] é");
    }
}
