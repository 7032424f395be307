//! What the configuration declares for the gateway, checked and nothing more: a configured
//! [`Value`] (text or a vault entry) and an HTTP tool's [`HttpSpec`]. A leaf: the registry's
//! declarations hold a spec, and `web_fetch` checks header names here.

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A configured value (an upstream's environment or header, an HTTP tool's header): literal
/// text, or a vault entry with an optional prefix (e.g. `Bearer `), never written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// Written in the file.
    Text(String),
    /// `{ vault = "NAME", prefix = "Bearer " }`.
    Vault {
        /// The vault entry.
        vault: String,
        /// Text before the value.
        #[serde(default)]
        prefix: String,
    },
}

impl<'de> Deserialize<'de> for Value {
    /// Text, or a table of `vault` and optionally `prefix` (no other keys), with a message that
    /// says so.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        struct V;
        const WHAT: &str = "text, or { vault = \"NAME\", prefix = \"...\" }";
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(WHAT)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Text(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Value, A::Error> {
                use serde::de::Error;
                let (mut vault, mut prefix) = (None, None);
                while let Some(k) = m.next_key::<String>()? {
                    match k.as_str() {
                        "vault" if vault.is_none() => vault = Some(m.next_value::<String>()?),
                        "prefix" if prefix.is_none() => prefix = Some(m.next_value::<String>()?),
                        "vault" | "prefix" => {
                            return Err(A::Error::custom(format!("`{k}` is given twice")));
                        }
                        other => {
                            return Err(A::Error::custom(format!(
                                "unknown key `{other}` in a vault value; a value is {WHAT}"
                            )));
                        }
                    }
                }
                let vault = vault.ok_or_else(|| {
                    A::Error::custom(format!("a vault value needs `vault`; a value is {WHAT}"))
                })?;
                Ok(Value::Vault {
                    vault,
                    prefix: prefix.unwrap_or_default(),
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Value {
    /// Text without NUL or line breaks; a vault entry's name by the vault's grammar.
    pub fn check(&self) -> Result<(), String> {
        let bad = |t: &str| t.contains(['\0', '\r', '\n']);
        match self {
            Value::Text(t) if bad(t) => Err("values cannot hold NUL or line breaks".into()),
            Value::Text(_) => Ok(()),
            Value::Vault { vault, prefix } => {
                if let Some(why) = skillbase_format::validate::check_vault_name(vault) {
                    return Err(format!("vault entry {why}"));
                }
                if bad(prefix) {
                    return Err("the prefix cannot hold NUL or line breaks".into());
                }
                Ok(())
            }
        }
    }

    /// The vault entry it names, if any.
    pub fn vault_entry(&self) -> Option<&str> {
        match self {
            Value::Vault { vault, .. } => Some(vault),
            Value::Text(_) => None,
        }
    }
}

/// What is sent as the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpBody {
    /// The arguments not used in the URL or the query, as a JSON object.
    Json,
    /// No body.
    None,
}

/// The request an HTTP tool makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// GET (default), HEAD, POST, PUT, PATCH or DELETE.
    #[serde(default = "default_method")]
    pub method: String,
    /// The URL, `http://` or `https://`, with `{name}` placeholders for arguments.
    pub url: String,
    /// Arguments sent as query parameters (when given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<String>,
    /// Request headers: text, or `{ vault = "NAME", prefix = "…" }` resolved through the call's
    /// envelope.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Value>,
    /// The body (default: `json` for POST, PUT and PATCH, `none` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<HttpBody>,
}

fn default_method() -> String {
    "GET".into()
}

/// The `{name}` placeholders of a template, in order; `Err` for an unclosed or empty one.
pub(crate) fn placeholders(template: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| "a `{` in the URL is not closed".to_owned())?;
        let name = &after[..close];
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "URL placeholder '{{{}}}' must name an argument (letters, digits, `_`, `-`)",
                name.escape_debug()
            ));
        }
        out.push(name);
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err("a `}` in the URL has no `{`".into());
    }
    Ok(out)
}

impl HttpSpec {
    pub(crate) fn method(&self) -> Option<Method> {
        Some(match self.method.to_ascii_uppercase().as_str() {
            "GET" => Method::GET,
            "HEAD" => Method::HEAD,
            "POST" => Method::POST,
            "PUT" => Method::PUT,
            "PATCH" => Method::PATCH,
            "DELETE" => Method::DELETE,
            _ => return None,
        })
    }

    pub(crate) fn body(&self) -> HttpBody {
        self.body.unwrap_or(match self.method() {
            Some(Method::POST | Method::PUT | Method::PATCH) => HttpBody::Json,
            _ => HttpBody::None,
        })
    }

    /// Check the declaration: the method, the URL template, header names and vault entries.
    pub fn check(&self) -> Result<(), String> {
        let method = self
            .method()
            .ok_or_else(|| "http.method: use GET, HEAD, POST, PUT, PATCH or DELETE".to_owned())?;
        if self.url.len() > 8192 {
            return Err("http.url: at most 8,192 bytes".into());
        }
        let names = placeholders(&self.url).map_err(|e| format!("http.url: {e}"))?;
        let mut sample = self.url.clone();
        for n in &names {
            sample = sample.replacen(&format!("{{{n}}}"), "x", 1);
        }
        let url = Url::parse(&sample).map_err(|e| format!("http.url: not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err("http.url: use an http:// or https:// URL with a host".into());
        }
        if url.fragment().is_some() {
            return Err("http.url: a URL sent to a server has no `#fragment`".into());
        }
        for (name, v) in &self.headers {
            header_name(name).map_err(|e| format!("http.headers: {e}"))?;
            v.check()
                .map_err(|why| format!("http.headers.{name}: {why}"))?;
            if let Value::Text(t) = v {
                HeaderValue::from_str(t).map_err(|_| {
                    format!("http.headers.{name}: the value cannot be sent in a header")
                })?;
            }
        }
        if self.body() == HttpBody::Json && matches!(method, Method::GET | Method::HEAD) {
            return Err("http.body: GET and HEAD send no body; use `body = \"none\"`".into());
        }
        Ok(())
    }

    /// The vault entries its headers name.
    pub fn vault_entries(&self) -> Vec<&str> {
        self.headers
            .values()
            .filter_map(Value::vault_entry)
            .collect()
    }
}

/// Request headers the caller may not set: the client owns framing, the host and the
/// connection, and proxies are never used.
fn reserved_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "content-length"
            | "transfer-encoding"
            | "connection"
            | "keep-alive"
            | "upgrade"
            | "te"
            | "trailer"
            | "expect"
    ) || name.as_str().starts_with("proxy-")
}

/// A header name a caller may set, or why not.
pub(crate) fn header_name(name: &str) -> Result<HeaderName, String> {
    let n = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| "a header name is not valid: use letters, digits and `-`".to_owned())?;
    if reserved_header(&n) {
        return Err(format!(
            "the '{n}' header is set by web_fetch itself and cannot be given"
        ));
    }
    Ok(n)
}
