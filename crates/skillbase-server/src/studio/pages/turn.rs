//! A turn as cards: its activations, evictions and its Context card. Shown on a session's page
//! and by "try a turn". A leaf: it names no page.

use crate::studio::html::{esc, url};
use serde_json::Value;
use std::fmt::Write as _;

pub(super) fn activation_card(out: &mut String, name: &str, reason: &str, rev: i64, tokens: u64) {
    let _ = write!(
        out,
        "<div class=\"card\" data-card=\"activation\" data-skill=\"{n}\" data-reason=\"{r}\" data-rev=\"{rev}\" data-tokens=\"{tokens}\">\
         <span class=\"k\">skill</span> <a href=\"/studio/skills/{u}\">{n}</a> · <span class=\"k\">reason</span> <code>{r}</code> · \
         <span class=\"k\">revision</span> {rev} · {tokens} tokens</div>",
        n = esc(name),
        u = url(name),
        r = esc(reason),
    );
}

/// A turn's activation cards, evictions and its Context card, from its `turn` event (the
/// report as the turn computed it, after the budget cut).
pub(super) fn render_turn(out: &mut String, r: &Value) {
    skill_cards(out, r);
    context_card(out, r);
}

/// The skills the turn placed (activation cards), evicted, suppressed, offered with unmet
/// requires, or withheld.
fn skill_cards(out: &mut String, r: &Value) {
    for a in r["activated"].as_array().into_iter().flatten() {
        activation_card(
            out,
            a["name"].as_str().unwrap_or(""),
            a["reason"].as_str().unwrap_or(""),
            a["rev"].as_i64().unwrap_or(0),
            a["tokens"].as_u64().unwrap_or(0),
        );
    }
    for o in r["evicted"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<div class=\"card evicted\" data-card=\"evicted\" data-skill=\"{n}\"><span class=\"k\">evicted</span> {n} — {}</div>",
            esc(o["reason"].as_str().unwrap_or("")),
            n = esc(o["name"].as_str().unwrap_or("")),
        );
    }
    for (key, label) in [
        ("suppressed", "trigger suppressed"),
        ("unmet_requires", "offered with unmet requires"),
        ("withheld_skills", "withheld"),
    ] {
        for o in r[key].as_array().into_iter().flatten() {
            let _ = write!(
                out,
                "<div class=\"card evicted\" data-card=\"{key}\"><span class=\"k\">{label}</span> {} — {}</div>",
                esc(o["name"].as_str().unwrap_or("")),
                esc(o["reason"].as_str().unwrap_or(""))
            );
        }
    }
}

/// A count from the report, 0 when absent.
fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The Context card: the tokens by part, the catalog's entries in full, by name only and left
/// out, and the tools withheld.
fn context_card(out: &mut String, r: &Value) {
    let c = &r["catalog"];
    context_tokens(out, &r["tokens"], c);
    in_full(out, c);
    for (key, label) in [("name_only", "By name only"), ("omitted", "Left out")] {
        catalog_group(out, key, label, &c[key]);
    }
    if let Some(w) = r["withheld_tools"].as_array().filter(|w| !w.is_empty()) {
        let _ = write!(
            out,
            "<p class=\"muted\">Tools withheld (not granted): {}</p>",
            w.iter()
                .filter_map(|o| o["name"].as_str().map(esc))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("</div>");
}

/// The card's opening: the tokens of each part of the context (`t`), and the catalog's (`c`)
/// against its budget.
fn context_tokens(out: &mut String, t: &Value, c: &Value) {
    let _ = write!(
        out,
        "<div class=\"card context\" data-card=\"context\"><strong>Context</strong> \
         <table><tr><th>eager</th><th>injected</th><th>catalog</th><th>tools</th><th>total</th></tr>\
         <tr><td data-k=\"eager\">{}</td><td data-k=\"injected\">{}</td><td data-k=\"catalog\">{}</td><td data-k=\"tools\">{}</td><td data-k=\"total\">{}</td></tr></table>\
         <p>Catalog: {} of {} tokens{}.</p>",
        num(&t["eager"]),
        num(&t["injected"]),
        num(&t["catalog"]),
        num(&t["tools"]),
        num(&t["total"]),
        num(&c["tokens"]),
        num(&c["budget"]),
        if c["ranked"] == true {
            format!(
                ", ranked by relevance ({})",
                esc(c["stages"].as_str().unwrap_or("lexical"))
            )
        } else {
            String::new()
        }
    );
}

/// The catalog's entries shown in full.
fn in_full(out: &mut String, c: &Value) {
    let full: Vec<String> = match c["full"].as_array() {
        Some(names) => names.iter().filter_map(|n| n.as_str().map(esc)).collect(),
        // A ranked catalog's event keeps the full entries in `shown`, with their ranks.
        None => c["shown"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                format!(
                    "{} (rank {}, {})",
                    esc(s["name"].as_str().unwrap_or("")),
                    s["rank"],
                    esc(s["stage"].as_str().unwrap_or(""))
                )
            })
            .collect(),
    };
    let _ = write!(
        out,
        "<p data-k=\"full\">In full: {}</p>",
        if full.is_empty() {
            "none".into()
        } else {
            full.join(", ")
        }
    );
}

/// The catalog's entries shown by name only, or left out (`s`, under `key`): how many, and
/// how many for each reason; nothing when there are none.
fn catalog_group(out: &mut String, key: &str, label: &str, s: &Value) {
    let count = num(&s["count"]);
    if count == 0 {
        return;
    }
    let _ = write!(out, "<p data-k=\"{key}\">{label}: {count}");
    for g in s["by_reason"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            " · {} × {}{}",
            num(&g["count"]),
            esc(g["reason"].as_str().unwrap_or("")),
            g["names"]
                .as_array()
                .map(|n| format!(
                    " ({})",
                    n.iter()
                        .filter_map(|x| x.as_str().map(esc))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .or_else(|| g["ranks"].as_str().map(|r| format!(" (ranks {})", esc(r))))
                .unwrap_or_default()
        );
    }
    out.push_str("</p>");
}
