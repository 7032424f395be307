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
