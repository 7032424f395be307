//! Redaction: every vault value, and its base64, hex and URL-encoded forms, scrubbed from text in
//! one pass however many secrets there are (one Aho-Corasick automaton over all forms).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use std::borrow::Cow;
use std::sync::Arc;

/// Shortest encoded form worth matching; shorter cores would hit innocent text.
const MIN_FORM_LEN: usize = 6;

/// A compiled set of secrets to scrub.
#[derive(Clone, Default)]
pub struct Redactor {
    ac: Option<AhoCorasick>,
    /// Per pattern: the vault entry it belongs to.
    owners: Vec<Arc<str>>,
    count: usize,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.count)
            .field("patterns", &self.owners.len())
            .finish()
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
    out.retain(|f| f.len() >= MIN_FORM_LEN || f.as_slice() == value);
    out.sort();
    out.dedup();
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
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut owners: Vec<Arc<str>> = Vec::new();
        let mut count = 0;
        for (name, value) in secrets {
            if value.is_empty() {
                continue;
            }
            count += 1;
            let owner: Arc<str> = Arc::from(name);
            for f in forms(value) {
                patterns.push(f);
                owners.push(owner.clone());
            }
        }
        let ac = if patterns.is_empty() {
            None
        } else {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .ok()
        };
        Redactor { ac, owners, count }
    }

    /// Number of secrets.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The vault entry whose value (in any form) occurs in `bytes`, if any.
    pub fn find(&self, bytes: &[u8]) -> Option<&str> {
        let ac = self.ac.as_ref()?;
        ac.find(bytes)
            .map(|m| &*self.owners[m.pattern().as_usize()])
    }

    /// `text` with every secret form replaced by `[REDACTED:<entry>]`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(ac) = &self.ac else {
            return Cow::Borrowed(text);
        };
        let mut it = ac.find_iter(text).peekable();
        if it.peek().is_none() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for m in it {
            // Matches are on byte patterns; keep UTF-8 intact by widening to char boundaries.
            let mut start = m.start();
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = m.end();
            while !text.is_char_boundary(end) {
                end += 1;
            }
            if start < last {
                start = last;
            }
            out.push_str(&text[last..start]);
            out.push_str("[REDACTED:");
            out.push_str(&self.owners[m.pattern().as_usize()]);
            out.push(']');
            last = end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
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
        if self.ac.is_some() {
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
        if self.ac.is_none() {
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
    fn keeps_utf8_valid() {
        let r = Redactor::new([("X", "pässwörd".as_bytes())]);
        assert_eq!(r.redact("é pässwörd é"), "é [REDACTED:X] é");
    }
}
