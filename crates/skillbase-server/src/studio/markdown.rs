//! A skill's body as HTML: CommonMark (tables, strikethrough) rendered by `pulldown-cmark`, with
//! everything a hostile body could use made inert. Raw HTML in the body is shown as text; a
//! link whose scheme is not `http`, `https` or `mailto` (a `javascript:` one, say) points
//! nowhere; an image is rendered as a link to it, so opening a page fetches nothing the body
//! names.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

/// `body` as HTML that runs nothing and loads nothing.
pub fn render(body: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let events = Parser::new_ext(body, opts).map(|e| match e {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        // An image is a link to it: nothing the body names is fetched.
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::End(pulldown_cmark::TagEnd::Image) => Event::End(pulldown_cmark::TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(body.len() + body.len() / 4);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// `url` when it is relative or `http`, `https` or `mailto`; else `#`.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let u = url.trim();
    let scheme_end = u.find(':');
    let path_start = u.find(['/', '?', '#']);
    let has_scheme = match (scheme_end, path_start) {
        (Some(c), Some(p)) => c < p,
        (Some(_), None) => true,
        _ => false,
    };
    if !has_scheme {
        return url;
    }
    let scheme = u[..scheme_end.unwrap_or(0)].to_ascii_lowercase();
    if matches!(scheme.as_str(), "http" | "https" | "mailto") {
        url
    } else {
        CowStr::Borrowed("#")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_rendered_and_hostile_parts_are_inert() {
        let h = render(
            "# Refunds\n\n1. Check **the order**.\n2. Refund it.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(
            h.contains("<h1>Refunds</h1>") && h.contains("<strong>the order</strong>"),
            "{h}"
        );
        assert!(h.contains("<ol>") && h.contains("<table>"), "{h}");
        for hostile in [
            "<script>alert(1)</script>",
            "text <img src=x onerror=alert(2)> more",
            "[click](javascript:alert(3))",
            "[click](JaVaScRiPt:alert(3))",
            "[click]( javascript:alert(3))",
            "[d](data:text/html,<script>alert(4)</script>)",
            "![pixel](https://tracker.example/p.gif)",
            "<a href=\"javascript:alert(5)\">x</a>",
        ] {
            let h = render(hostile);
            assert!(!h.contains("<script"), "{hostile}: {h}");
            assert!(!h.contains("<img"), "{hostile}: {h}");
            // As markup (escaped text showing the same characters is harmless).
            let lower = h.to_ascii_lowercase();
            for tag in [
                "<a href=\"javascript",
                "<a href=\"data:",
                "<a href=\" javascript",
            ] {
                assert!(!lower.contains(tag), "{hostile}: {h}");
            }
        }
        assert!(render("[ok](https://example.com/x)").contains("href=\"https://example.com/x\""));
        assert!(
            render("[rel](references/REFERENCE.md)").contains("href=\"references/REFERENCE.md\"")
        );
        assert!(render("[m](mailto:ops@example.com)").contains("href=\"mailto:ops@example.com\""));
        assert!(
            render("![pic](https://x.example/a.png)")
                .contains("<a href=\"https://x.example/a.png\">pic</a>")
        );
    }
}
