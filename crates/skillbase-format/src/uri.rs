//! `skill://` URIs of a skill's files, as the MCP Skills extension names them: the runtime
//! renders them in what `load_skill` returns over MCP, the server serves them.

/// The URI scheme of skill resources.
pub const SCHEME: &str = "skill://";

/// Percent-encode one URI segment: everything but RFC 3986's unreserved characters.
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode a percent-encoded text (the reverse of [`encode_segment`], and of the `%XX` escapes
/// of the OTel variables); `None` for a bad escape or bytes that are not UTF-8.
pub fn decode_segment(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `skill://<name>/<rel>`, each segment percent-encoded.
pub fn file_uri(name: &str, rel: &str) -> String {
    let mut out = format!("{SCHEME}{}", encode_segment(name));
    for seg in rel.split('/') {
        out.push('/');
        out.push_str(&encode_segment(seg));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(file_uri("pdf", "SKILL.md"), "skill://pdf/SKILL.md");
        assert_eq!(file_uri("pdf", "a b/ü.txt"), "skill://pdf/a%20b/%C3%BC.txt");
        assert_eq!(encode_segment("x\"<>&"), "x%22%3C%3E%26");
    }
}
