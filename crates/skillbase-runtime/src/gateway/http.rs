//! HTTP tools: a `[[tools]]` entry that is one HTTP request.
//!
//! ```toml
//! [[tools]]
//! name = "get_order"
//! description = "Look up an order by id"
//! class = "orders"
//! parameters = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
//! [tools.http]
//! method = "GET"
//! url = "https://api.example.com/orders/{id}"     # `{arg}`: the argument, percent-encoded
//! query = ["expand"]                              # arguments sent as query parameters
//! headers = { Authorization = { vault = "ORDERS_TOKEN", prefix = "Bearer " } }
//! ```
//!
//! The request is made by `web_fetch`'s client under the call's destination policy (the host
//! must be granted, and declared by a driving skill; internal addresses refused unless granted;
//! redirects checked hop by hop), and a header naming a vault entry is resolved through the
//! call's envelope (granted ∩ declared), so an HTTP tool reaches nothing its caller could not.
//! The other arguments go as a JSON body (`body = "json"`, the default for POST, PUT and PATCH)
//! or not at all (`body = "none"`). The result is `web_fetch`'s: status, final URL, a few
//! headers, the body as text (cut, redacted).

use super::spec::{HttpBody, HttpSpec, Value, placeholders};
use crate::tool::{CallContext, ToolError, ToolFuture, ToolHandler};
use crate::web_fetch::{self, WebFetch};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, Url};
use std::sync::Arc;

/// Everything but the unreserved characters, percent-encoded (a value can never add a path
/// segment, a query, a fragment or user info).
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl HttpSpec {
    /// The request for one call's (schema-checked) arguments.
    fn request(
        &self,
        args: &serde_json::Value,
        cap: usize,
    ) -> Result<web_fetch::Request, ToolError> {
        let empty = serde_json::Map::new();
        let args = args.as_object().unwrap_or(&empty);
        let text = |name: &str| -> Option<String> {
            match args.get(name)? {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            }
        };
        let names = placeholders(&self.url).map_err(ToolError::new)?;
        let mut url = self.url.clone();
        for n in &names {
            let v = text(n).ok_or_else(|| {
                ToolError::new(format!(
                    "the URL needs the argument '{n}', which was not given"
                ))
            })?;
            url = url.replacen(&format!("{{{n}}}"), &encode(&v), 1);
        }
        let mut url = Url::parse(&url)
            .map_err(|e| ToolError::new(format!("the request URL is not valid: {e}")))?;
        for q in &self.query {
            if let Some(v) = text(q) {
                url.query_pairs_mut().append_pair(q, &v);
            }
        }
        let mut headers = HeaderMap::new();
        let mut auth = Vec::new();
        for (name, v) in &self.headers {
            let n = web_fetch::header_name(name)?;
            match v {
                Value::Text(t) => {
                    let value = HeaderValue::from_str(t)
                        .map_err(|_| ToolError::new("a declared header value is not valid"))?;
                    headers.insert(n, value);
                }
                Value::Vault { vault, prefix } => auth.push((n, vault.clone(), prefix.clone())),
            }
        }
        let body = match self.body() {
            HttpBody::None => None,
            HttpBody::Json => {
                let rest: serde_json::Map<String, serde_json::Value> = args
                    .iter()
                    .filter(|(k, _)| {
                        !names.contains(&k.as_str()) && !self.query.iter().any(|q| q == *k)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                headers.insert(
                    reqwest::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                Some(serde_json::to_vec(&rest).unwrap_or_default())
            }
        };
        Ok(web_fetch::Request {
            method: self.method().unwrap_or(Method::GET),
            url,
            headers,
            body,
            auth,
            cap,
        })
    }
}

/// The handler of an HTTP tool: its request, made by a shared `web_fetch` client.
pub struct HttpTool {
    spec: HttpSpec,
    client: Arc<WebFetch>,
}

impl HttpTool {
    /// A handler for a checked spec, making its requests with `client`.
    pub fn new(spec: HttpSpec, client: Arc<WebFetch>) -> HttpTool {
        HttpTool { spec, client }
    }
}

impl ToolHandler for HttpTool {
    fn call(&self, ctx: CallContext, args: serde_json::Value) -> ToolFuture {
        let client = self.client.client();
        let max_redirects = self.client.max_redirects();
        let request = self.spec.request(&args, ctx.max_response_bytes);
        Box::pin(async move {
            let client = client?;
            web_fetch::execute(&client, max_redirects, &ctx, request?).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> HttpSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn declarations_are_checked() {
        let ok = spec("url = \"https://api.example.com/orders/{id}\"\nquery = [\"expand\"]");
        ok.check().unwrap();
        for (text, wanted) in [
            ("url = \"ftp://h/\"", "http:// or https://"),
            ("url = \"https://h/{id\"", "not closed"),
            ("url = \"https://h/{}\"", "must name an argument"),
            ("url = \"https://h/}\"", "has no `{`"),
            ("url = \"https://h/\"\nmethod = \"TRACE\"", "http.method"),
            ("url = \"https://h/#x\"", "fragment"),
            (
                "url = \"https://h/\"\nbody = \"json\"",
                "GET and HEAD send no body",
            ),
            (
                "url = \"https://h/\"\nheaders = { Host = \"x\" }",
                "set by web_fetch",
            ),
            (
                "url = \"https://h/\"\nheaders = { A = { vault = \"no spaces\" } }",
                "vault entry",
            ),
        ] {
            let e = spec(text).check().expect_err(text);
            assert!(e.contains(wanted), "{text}: {e}");
        }
    }

    #[test]
    fn arguments_fill_the_url_query_and_body_and_cannot_escape_the_path() {
        let s = spec(
            "method = \"POST\"\nurl = \"https://api.example.com/orders/{id}/notes\"\nquery = [\"lang\"]\nheaders = { Authorization = { vault = \"TOKEN\", prefix = \"Bearer \" }, X-Team = \"ops\" }",
        );
        s.check().unwrap();
        let r = s
            .request(
                &serde_json::json!({"id": "../../admin?x=1#f", "lang": "en", "text": "hi"}),
                1000,
            )
            .unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://api.example.com/orders/..%2F..%2Fadmin%3Fx%3D1%23f/notes?lang=en"
        );
        assert_eq!(r.url.host_str(), Some("api.example.com"));
        assert_eq!(r.body.as_deref(), Some(&br#"{"text":"hi"}"#[..]));
        assert_eq!(r.auth[0].1, "TOKEN");
        assert_eq!(r.headers["x-team"], "ops");
        let missing = s.request(&serde_json::json!({}), 1000).err().unwrap();
        assert!(
            missing.message.contains("needs the argument 'id'"),
            "{}",
            missing.message
        );
    }
}
