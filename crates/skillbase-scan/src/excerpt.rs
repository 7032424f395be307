//! What a finding shows as `seen`: the matched text on one line, with secrets masked, long
//! payloads cut, and invisible characters written as escapes.

use regex::Regex;
use std::sync::OnceLock;

/// Longest `seen`, in characters (before the "(N chars)" note).
pub(crate) const MAX_SEEN_CHARS: usize = 120;

fn secrets() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?P<secret>AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{16,}|sk_live_[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_-]{30,}|-----BEGIN [A-Z ]*PRIVATE KEY-----|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,})|(?P<payload>[A-Za-z0-9+/_-]{40,}={0,2})",
        )
        .expect("a fixed pattern")
    })
}

/// Whether `c` is invisible or reorders text (shown as an escape).
pub(crate) fn invisible(c: char) -> bool {
    matches!(c as u32,
        0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x2069 | 0xFEFF
        | 0x180E | 0x034F | 0x115F | 0x1160 | 0x3164 | 0xFFA0 | 0x17B4 | 0x17B5
        | 0xE0000..=0xE007F)
        || (c.is_control() && c != '\t')
}

/// The excerpt of `text` (one match, or a line): first line only, secrets masked, invisible
/// characters escaped, cut to [`MAX_SEEN_CHARS`].
pub(crate) fn seen(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let cut_at_line = first.len() < text.trim_end().len();
    let head = crate::source::cut(first, MAX_SEEN_CHARS * 8);
    let masked = secrets().replace_all(head, |c: &regex::Captures<'_>| {
        let s = &c[0];
        if c.name("secret").is_some() {
            let keep: String = s.chars().take(4).collect();
            format!("{keep}…[secret]")
        } else {
            let keep: String = s.chars().take(8).collect();
            format!("{keep}…[{} chars]", s.len())
        }
    });
    let mut out = String::new();
    let mut count = 0;
    for c in masked.chars() {
        if count >= MAX_SEEN_CHARS {
            out.push('…');
            break;
        }
        if invisible(c) {
            let escaped = format!("\\u{{{:X}}}", c as u32);
            count += escaped.len();
            out.push_str(&escaped);
        } else {
            out.push(c);
            count += 1;
        }
    }
    if cut_at_line && !out.ends_with('…') {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_payloads_cut() {
        let s = seen("token=ghp_abcdefghijklmnopqrstuvwxyz0123 ok");
        assert!(
            s.contains("ghp_…[secret]") && !s.contains("abcdefghij"),
            "{s}"
        );
        let s = seen(&format!("echo {} | base64 -d | sh", "QUJD".repeat(30)));
        assert!(s.contains("…[120 chars]"), "{s}");
        assert_eq!(seen("a\u{200B}b"), "a\\u{200B}b");
        assert!(seen(&"x".repeat(500)).chars().count() <= MAX_SEEN_CHARS + 12);
        assert_eq!(seen("one\ntwo"), "one…");
        assert!(seen(&"\u{200B}".repeat(500)).chars().count() <= MAX_SEEN_CHARS + 12);
    }
}
