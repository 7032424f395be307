//! The grammars of the names a skill declares and an operator grants: tool classes, MCP
//! server names, programs, vault entries and hosts. One definition each, used by validation,
//! `requires:`, grants, the registry, the gateway and authoring (and restated as patterns by the
//! server's OpenAPI document, whose tests compare the two). A leaf module.

/// A tool class (what grants and `capabilities.tools` name): 1-64 lowercase letters, digits, `_`
/// and `-`. The one grammar: validation, grants, the registry and authoring all use it.
pub fn check_tool_class(s: &str) -> Option<&'static str> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    (!ok).then_some("is not a tool class (lowercase letters, digits, `_` and `-`)")
}

/// An upstream MCP server's name (what `[mcp_servers.<name>]` and `requires.mcp` name): 1-32
/// lowercase letters, digits, `_` and `-`, starting with a letter or digit. The one grammar: the
/// gateway's configuration and validation use it.
pub fn check_server_name(s: &str) -> Option<&'static str> {
    let ok = !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    (!ok).then_some(
        "is not an MCP server name (1-32 lowercase letters, digits, `_` and `-`, starting with a letter or digit)",
    )
}

/// A program `requires.bins` names: 1-64 letters, digits, `_`, `-`, `.` and `+`, not starting
/// with `.` or `-` — a name looked up on `PATH`, never a path.
pub fn check_program_name(s: &str) -> Option<&'static str> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && !s.starts_with(['.', '-'])
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+'));
    (!ok).then_some(
        "is not a program name (letters, digits, `_`, `-`, `.` and `+`; the name looked up on PATH, not a path)",
    )
}

/// A vault entry name: 1-128 letters, digits, `_`, `-` and `.`. The one grammar: validation,
/// grants, the vault and authoring all use it.
pub fn check_vault_name(s: &str) -> Option<&'static str> {
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    (!ok).then_some("is not a vault entry name (letters, digits, `_`, `-` and `.`)")
}

/// A host pattern split into its host and its port text: `api.x.com:8443` → (`api.x.com`,
/// `8443`), `[::1]:80` → (`[::1]`, `80`), `[::1]` and `api.x.com` → no port. A bare IPv6
/// address without brackets has no port. The one reading, for validation, grants, authoring and
/// calls.
pub fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if s.starts_with('[') {
        return match s.find(']') {
            Some(end) => match s[end + 1..].strip_prefix(':') {
                Some(port) => (&s[..=end], Some(port)),
                None => (s, None),
            },
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

/// A destination host: a DNS name or IPv4 address, or an IPv6 address in brackets (hex groups,
/// no embedded IPv4 or zone), optionally `:port` (1-65535, written without a sign or leading
/// zeros); `*.` before a DNS name allows its subdomains. The server's OpenAPI document states
/// the same grammar as a pattern (its tests compare the two).
pub fn check_host(s: &str) -> Option<&'static str> {
    if s.contains("://") || s.contains('/') {
        return Some("must be a host, not a URL (drop the scheme and path)");
    }
    let (host, port) = split_host_port(s);
    if let Some(p) = port {
        let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !p.starts_with('0');
        if !digits || p.parse::<u16>().is_err() {
            return Some("has an invalid port (1-65535)");
        }
    }
    if host.starts_with('[') && host.ends_with(']') {
        let inner = &host[1..host.len() - 1];
        return (inner.contains('.') || inner.parse::<std::net::Ipv6Addr>().is_err())
            .then_some("is not a valid IPv6 literal (hex groups in brackets)");
    }
    let host = host.strip_prefix("*.").unwrap_or(host);
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    (!ok).then_some("is not a valid host name")
}
