//! A turn as cards: its activations, evictions and its Context card. Shown on a session's page
//! and by "try a turn". A leaf: it names no page.

use crate::studio::html::{esc, url};
use serde_json::Value;
use skillbase_runtime::event::{CatalogRecord, Omitted, TokensRecord, TurnRecord};
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
/// report as the turn computed it, after the budget cut), read through its type.
pub(super) fn render_turn(out: &mut String, r: &Value) {
    let Some(t) = TurnRecord::read(r) else {
        return;
    };
    skill_cards(out, &t);
    context_card(out, &t);
}

/// The skills the turn placed (activation cards), evicted, suppressed, offered with unmet
/// requires, or withheld.
fn skill_cards(out: &mut String, t: &TurnRecord) {
    for a in &t.activated {
        activation_card(out, &a.name, &a.reason, a.rev, a.tokens);
    }
    for o in &t.evicted {
        let _ = write!(
            out,
            "<div class=\"card evicted\" data-card=\"evicted\" data-skill=\"{n}\"><span class=\"k\">evicted</span> {n} — {}</div>",
            esc(&o.reason),
            n = esc(&o.name),
        );
    }
    for (key, label, list) in [
        ("suppressed", "trigger suppressed", &t.suppressed),
        (
            "unmet_requires",
            "offered with unmet requires",
            &t.unmet_requires,
        ),
        ("withheld_skills", "withheld", &t.withheld_skills),
    ] {
        for o in list {
            let _ = write!(
                out,
                "<div class=\"card evicted\" data-card=\"{key}\"><span class=\"k\">{label}</span> {} — {}</div>",
                esc(&o.name),
                esc(&o.reason)
            );
        }
    }
}

/// The Context card: the tokens by part, the catalog's entries in full, by name only and left
/// out, and the tools withheld.
fn context_card(out: &mut String, t: &TurnRecord) {
    let c = &t.catalog;
    context_tokens(out, &t.tokens, c);
    in_full(out, c);
    for (key, label, group) in [
        ("name_only", "By name only", &c.name_only),
        ("omitted", "Left out", &c.omitted),
    ] {
        catalog_group(out, key, label, group);
    }
    if !t.withheld_tools.is_empty() {
        let _ = write!(
            out,
            "<p class=\"muted\">Tools withheld (not granted): {}</p>",
            t.withheld_tools
                .iter()
                .map(|o| esc(&o.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("</div>");
}

/// The card's opening: the tokens of each part of the context (`t`), and the catalog's (`c`)
/// against its budget.
fn context_tokens(out: &mut String, t: &TokensRecord, c: &CatalogRecord) {
    let _ = write!(
        out,
        "<div class=\"card context\" data-card=\"context\"><strong>Context</strong> \
         <table><tr><th>eager</th><th>injected</th><th>catalog</th><th>tools</th><th>total</th></tr>\
         <tr><td data-k=\"eager\">{}</td><td data-k=\"injected\">{}</td><td data-k=\"catalog\">{}</td><td data-k=\"tools\">{}</td><td data-k=\"total\">{}</td></tr></table>\
         <p>Catalog: {} of {} tokens{}.</p>",
        t.eager,
        t.injected,
        t.catalog,
        t.tools,
        t.total,
        c.tokens,
        c.budget,
        if c.ranked {
            format!(
                ", ranked by relevance ({})",
                esc(c.stages.as_deref().unwrap_or("lexical"))
            )
        } else {
            String::new()
        }
    );
}

/// The catalog's entries shown in full.
fn in_full(out: &mut String, c: &CatalogRecord) {
    let full: Vec<String> = match &c.full {
        Some(names) => names.iter().map(|n| esc(n)).collect(),
        // A ranked catalog's event keeps the full entries in `shown`, with their ranks.
        None => c
            .shown
            .iter()
            .map(|s| format!("{} (rank {}, {})", esc(&s.name), s.rank, esc(&s.stage)))
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
fn catalog_group(out: &mut String, key: &str, label: &str, s: &Omitted) {
    let count = s.count();
    if count == 0 {
        return;
    }
    let _ = write!(out, "<p data-k=\"{key}\">{label}: {count}");
    for g in s.by_reason() {
        let which = match (&g.names, &g.ranks) {
            (Some(n), _) => format!(
                " ({})",
                n.iter().map(|x| esc(x)).collect::<Vec<_>>().join(", ")
            ),
            (None, Some(r)) => format!(" (ranks {})", esc(r)),
            (None, None) => String::new(),
        };
        let _ = write!(out, " · {} × {}{which}", g.count, esc(&g.reason));
    }
    out.push_str("</p>");
}
