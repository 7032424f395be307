//! HTML, written by hand: every piece of text goes through [`esc`], and a page is the layout
//! around a body built with `write!`. No template engine, no JavaScript framework, nothing from
//! a CDN: one stylesheet and a few lines of script, both inline.

use std::fmt::Write as _;

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    skillbase_format::prompt::html_escape(s, &mut out);
    out
}

/// `s` escaped for a URL path segment or a query value.
pub fn url(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A Unix-millisecond time as `2026-12-02 17:05:03Z`.
pub fn time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}\
header{background:#1d2330;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center}\
header a{color:#cfe1ff;text-decoration:none}header .who{margin-left:auto;opacity:.8}\
main{padding:1rem 1.2rem;max-width:1200px}h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:1.6rem}\
table{border-collapse:collapse;width:100%;background:#fff}td,th{border:1px solid #dde1e7;padding:.3rem .5rem;text-align:left;vertical-align:top}\
th{background:#eef1f5}.card{background:#fff;border:1px solid #dde1e7;border-left:4px solid #4b7bec;border-radius:4px;padding:.5rem .8rem;margin:.5rem 0}\
.card.evicted{border-left-color:#e67e22}.card.refused{border-left-color:#e74c3c}.card.call{border-left-color:#95a5a6}\
.card.context{border-left-color:#27ae60}.card .k{color:#5b6475}.turn{margin:1rem 0;padding:.4rem 0;border-top:2px solid #dde1e7}\
pre{background:#fff;border:1px solid #dde1e7;padding:.6rem;overflow:auto;white-space:pre-wrap}\
.del{color:#b03a2e}.add{color:#1e8449}form.inline{display:inline}button{cursor:pointer}\
.muted{color:#5b6475}.warn{background:#fff4e5;border:1px solid #f0c27b;padding:.5rem .8rem}\
progress{width:24rem;max-width:100%;height:1rem;vertical-align:middle}";

/// Reload the page when the session's event stream says something happened (debounced), so a
/// session page follows the session live.
pub const LIVE_SCRIPT: &str = "(function(){var el=document.getElementById('live');if(!el||!window.EventSource)return;\
var t=null,es=new EventSource(el.dataset.src);es.onmessage=es.onerror=null;\
es.addEventListener('message',function(){});\
['turn','skill_activated','call_started','call_finished','call_refused','user_message','run_ended'].forEach(function(k){\
es.addEventListener(k,function(){if(t)return;t=setTimeout(function(){location.reload();},400);});});})();";

/// A whole page: the navigation, who is signed in, and `body`.
pub fn page(title: &str, who: &str, body: &str, script: Option<&str>) -> String {
    let mut out = String::with_capacity(body.len() + 2048);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Skillbase studio</title>\
         <meta name=\"viewport\" content=\"width=device-width\"><style>{STYLE}</style></head><body>\
         <header><strong>Skillbase studio</strong><a href=\"/studio/sessions\">Sessions</a>\
         <a href=\"/studio/skills\">Skills</a><a href=\"/studio/agents\">Agents</a><a href=\"/studio/approvals\">Approvals</a><a href=\"/studio/health\">Health</a>\
         <span class=\"who\">{}</span><a href=\"/studio/logout\">Sign out</a></header><main>{body}</main>",
        esc(title),
        esc(who)
    );
    if let Some(s) = script {
        let _ = write!(out, "<script>{s}</script>");
    }
    out.push_str("</body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_urls_are_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
        );
        assert_eq!(url("a b/c?d"), "a%20b%2Fc%3Fd");
        assert_eq!(time(0), "1970-01-01 00:00:00Z");
        assert_eq!(time(1_764_694_503_000), "2025-12-02 16:55:03Z");
    }
}
