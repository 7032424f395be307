//! The grammars of the names a skill declares and an operator grants: tool classes, MCP
//! server names, programs, vault entries and hosts. One definition each, used by validation,
//! `requires:`, grants, the registry, the gateway and authoring. Each check has its `*_PATTERN`
//! beside it: the same grammar as a regular expression (JSON Schema's, for the server's OpenAPI
//! document), which the tests below hold to the check. A leaf module.

/// [`check_tool_class`] as a regular expression.
pub const TOOL_CLASS_PATTERN: &str = "^[a-z0-9_-]{1,64}$";

/// [`check_server_name`] as a regular expression.
pub const SERVER_NAME_PATTERN: &str = "^[a-z0-9][a-z0-9_-]{0,31}$";

/// [`check_vault_name`] as a regular expression.
pub const VAULT_NAME_PATTERN: &str = "^[A-Za-z0-9_.-]{1,128}$";

/// [`check_host`] as a regular expression: a DNS name (labels of 1-63, 253 in all) or IPv4
/// address, optionally after `*.`, or an IPv6 address in brackets (the eight forms of hex
/// groups), then optionally `:port` (1-65535, no sign or leading zero).
pub const HOST_PATTERN: &str = r"^(?:(?:\*\.)?(?=[^:]{1,253}(?::|$))[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|(?:[0-9A-Fa-f]{1,4}:){1,7}:|(?:[0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}|(?:[0-9A-Fa-f]{1,4}:){1,5}(?::[0-9A-Fa-f]{1,4}){1,2}|(?:[0-9A-Fa-f]{1,4}:){1,4}(?::[0-9A-Fa-f]{1,4}){1,3}|(?:[0-9A-Fa-f]{1,4}:){1,3}(?::[0-9A-Fa-f]{1,4}){1,4}|(?:[0-9A-Fa-f]{1,4}:){1,2}(?::[0-9A-Fa-f]{1,4}){1,5}|[0-9A-Fa-f]{1,4}:(?::[0-9A-Fa-f]{1,4}){1,6}|:(?:(?::[0-9A-Fa-f]{1,4}){1,7}|:))\])(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

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
/// zeros); `*.` before a DNS name allows its subdomains. [`HOST_PATTERN`] is the same grammar.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `pattern` (as JSON Schema reads it) matches `s`.
    fn matches(pattern: &str, s: &str) -> bool {
        let schema = serde_json::json!({"type": "string", "pattern": pattern});
        jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&serde_json::json!(s))
    }

    /// Each pattern accepts exactly what its check accepts, on good and bad names alike.
    #[test]
    fn patterns_are_the_checks() {
        let long = |c: &str, n: usize| c.repeat(n);
        let label = long("a", 63);
        let mut samples: Vec<String> = [
            "a",
            "web_fetch",
            "a-b",
            "a.b",
            "A",
            "Web",
            "OPENAI_KEY",
            "a b",
            "a/b",
            "mcp/x",
            "-a",
            "_a",
            "0x",
            "é",
            "ключ",
            "a\n",
            "",
            "api.x.com",
            "API.X.COM",
            "api.x.com:8443",
            "a.com:65535",
            "*.x.com",
            "*.x.com:443",
            "127.0.0.1",
            "localhost",
            "[::1]",
            "[::]",
            "[::1]:8080",
            "[2001:db8::8a2e:370:7334]",
            "[1:2:3:4:5:6:7:8]",
            "[1:2:3:4:5:6:7::]",
            "[::2:3:4:5:6:7:8]",
            "a..com",
            "-a.com",
            "a-.com",
            "a_b.com",
            "a.com:0",
            "a.com:+80",
            "a.com:080",
            "a.com:65536",
            "a.com:",
            "a.com:http",
            "https://a.com",
            "a.com/x",
            "*.*.a.com",
            "*.[::1]",
            "[::1",
            "[1:2:3:4:5:6:7:8:9]",
            "[1:2:3:4::5:6:7:8]",
            "[::ffff:1.2.3.4]",
            "[fe80::1%eth0]",
            "[12345::]",
            "bücher.example",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for n in [31, 32, 33, 63, 64, 65, 127, 128, 129] {
            samples.push(long("a", n));
            samples.push(long("K", n));
        }
        samples.push(format!("{label}.com"));
        samples.push(format!("{}.com", long("a", 64)));
        samples.push([label.as_str(); 4].join("."));
        samples.push(format!("{}.a", [label.as_str(); 4].join(".")));
        type Check = fn(&str) -> Option<&'static str>;
        let grammars: [(&str, Check); 4] = [
            (TOOL_CLASS_PATTERN, check_tool_class),
            (SERVER_NAME_PATTERN, check_server_name),
            (VAULT_NAME_PATTERN, check_vault_name),
            (HOST_PATTERN, check_host),
        ];
        for (pattern, check) in grammars {
            for s in &samples {
                assert_eq!(
                    matches(pattern, s),
                    check(s).is_none(),
                    "{pattern} and its check disagree on {s:?}"
                );
            }
        }
    }
}
