//! A draft SKILL.md from a mined pattern: steps with the arguments seen, a verification from
//! the calls that followed, and a name, description and triggers from the users' messages of
//! the supporting sessions (keyphrases: words and word pairs frequent in those sessions and rare
//! in the others).

use super::mine::{Pattern, SessionLog, arguments_seen};
use skillbase_format::{Capabilities, SkillDraft, SkillName};
use skillbase_route::lang::Lang;
use skillbase_route::trigger::fold_fast;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Keyphrases of the supporting sessions' messages, best first (at most `n`): each found in at
/// least two of them (or in the only one), scored by how many supporting sessions hold it times
/// how rare it is in all sessions; pairs of adjacent words are preferred to single words, and so
/// are phrases whose words the procedure's tool names share (`refund order` for
/// `issue_refund`, `lookup_order`); a phrase sharing a word with a better one is skipped.
pub fn keyphrases(
    sessions: &[SessionLog],
    supporting: &[usize],
    tools: &[&str],
    n: usize,
) -> Vec<String> {
    // Words match on their first five characters (`refunds` and `refund`), a stemmer's worth.
    let key = |w: &str| -> String { w.chars().take(5).collect() };
    let tool_words: BTreeSet<String> = tools
        .iter()
        .flat_map(|t| t.split(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| w.len() >= 3)
        .map(|w| key(&w.to_ascii_lowercase()))
        .collect();
    let phrases_of = |s: &SessionLog| -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for m in &s.messages {
            let folded = fold_fast(m);
            let mut prev: Option<&str> = None;
            for w in skillbase_route::rank::words(&folded) {
                let content = w.chars().count() >= 3
                    && !w.bytes().any(|b| b.is_ascii_digit())
                    && !Lang::ALL.iter().any(|l| l.is_stopword(w));
                if !content {
                    prev = None;
                    continue;
                }
                out.insert(w.to_owned());
                if let Some(p) = prev {
                    out.insert(format!("{p} {w}"));
                }
                prev = Some(w);
            }
        }
        out
    };
    let mut df_all: HashMap<String, usize> = HashMap::new();
    let mut with_messages = 0usize;
    for s in sessions {
        if s.messages.is_empty() {
            continue;
        }
        with_messages += 1;
        for p in phrases_of(s) {
            *df_all.entry(p).or_default() += 1;
        }
    }
    let mut df_sup: BTreeMap<String, usize> = BTreeMap::new();
    let mut supporters = 0usize;
    for &i in supporting {
        if sessions[i].messages.is_empty() {
            continue;
        }
        supporters += 1;
        for p in phrases_of(&sessions[i]) {
            *df_sup.entry(p).or_default() += 1;
        }
    }
    let need = if supporters <= 1 { 1 } else { 2 };
    let mut scored: Vec<(f64, String)> = df_sup
        .into_iter()
        .filter(|(_, d)| *d >= need)
        .map(|(p, d)| {
            let all = df_all.get(&p).copied().unwrap_or(d) as f64;
            let idf = (1.0 + with_messages as f64 / all).ln();
            let pair = if p.contains(' ') { 1.5 } else { 1.0 };
            let shared = p
                .split(' ')
                .filter(|w| tool_words.contains(&key(w)))
                .count();
            let tooled = 1.0 + 0.5 * shared as f64;
            (d as f64 / supporters.max(1) as f64 * idf * pair * tooled, p)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out: Vec<String> = Vec::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    for (_, p) in scored {
        if out.len() >= n {
            break;
        }
        if p.split(' ').any(|w| used.contains(w)) {
            continue;
        }
        used.extend(p.split(' ').map(str::to_owned));
        out.push(p);
    }
    out
}

/// A skill name from words: lowercase letters and digits joined by single hyphens, at most 64
/// characters; `None` when nothing usable is left.
pub fn slug(words: &str) -> Option<SkillName> {
    let mut s = String::new();
    for w in fold_fast(words).split(|c: char| !c.is_ascii_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        let sep = usize::from(!s.is_empty());
        if s.len() + sep + w.len() > 64 {
            break;
        }
        if sep == 1 {
            s.push('-');
        }
        s.push_str(w);
    }
    SkillName::parse(&s).ok()
}

/// What the drafter is given beside the pattern.
pub struct DraftInput<'a> {
    /// Every session mined (the pattern's occurrences index it).
    pub sessions: &'a [SessionLog],
    /// The pattern.
    pub pattern: &'a Pattern,
    /// The skill's name.
    pub name: SkillName,
    /// Its keyphrases (for the description and triggers).
    pub phrases: &'a [String],
    /// The classes of the pattern's tools that the agent is granted (its `capabilities`).
    pub classes: Vec<String>,
}

/// The miner's draft.
pub fn draft(input: &DraftInput<'_>) -> SkillDraft {
    let p = input.pattern;
    let tools: Vec<&str> = p.steps.iter().map(|s| s.tool.as_str()).collect();
    let what = if input.phrases.is_empty() {
        format!("the {} procedure", tools.join(" → "))
    } else {
        input.phrases.join(", ")
    };
    let description = cut(
        &format!(
            "Use when the task is about {what}. A {}-step procedure ({}) learned from {} sessions that did it.",
            p.steps.len(),
            tools.join(", "),
            p.support()
        ),
        1000,
    );
    let seen = arguments_seen(input.sessions, p);
    let mut body = format!(
        "# {}\n\nA procedure learned by dreaming: these sessions did it the same way: {}.\n\n## Steps\n\n",
        title(input.name.as_str()),
        p.occurrences
            .iter()
            .map(|o| format!("`{}`", input.sessions[o.session].session))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, (step, args)) in p.steps.iter().zip(&seen).enumerate() {
        body.push_str(&format!("{}. Call `{}`", i + 1, step.tool));
        if args.is_empty() {
            body.push_str(" (no arguments).\n");
            continue;
        }
        let parts: Vec<String> = args
            .iter()
            .map(|(k, vals)| {
                let vals: Vec<&str> = vals.iter().map(String::as_str).take(4).collect();
                format!("`{k}` ({})", vals.join(" or "))
            })
            .collect();
        body.push_str(&format!(" with {}.\n", parts.join(", ")));
    }
    // What the sessions did right after: the check a careful run makes.
    let mut next: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &p.occurrences {
        let calls = &input.sessions[o.session].calls;
        if let Some(c) = calls.get(o.start + p.steps.len()) {
            *next.entry(c.tool.as_str()).or_default() += 1;
        }
    }
    body.push_str("\n## Verification\n\n");
    match next.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) {
        Some((tool, n)) if *n * 2 > p.support() => body.push_str(&format!(
            "After the last step, the sessions checked the outcome with `{tool}` ({n} of {}). Read each call's result before the next step; stop and report if one fails.\n",
            p.support()
        )),
        _ => body.push_str(
            "Read each call's result before the next step; stop and report if one fails.\n",
        ),
    }
    let mut d = SkillDraft::new(input.name.clone());
    d.description = description;
    d.body = body;
    d.triggers = input.phrases.to_vec();
    d.capabilities = Capabilities {
        tools: input.classes.clone(),
        vault: Vec::new(),
        hosts: Vec::new(),
    };
    d.metadata = vec![
        ("learned-by".into(), "dreaming".into()),
        ("support".into(), p.support().to_string()),
    ];
    d
}

fn title(name: &str) -> String {
    let mut t = name.replace('-', " ");
    if let Some(c) = t.get(..1) {
        let up = c.to_uppercase();
        t.replace_range(..1, &up);
    }
    t
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dream::mine::{LoggedCall, MineOptions, mine};
    use serde_json::json;

    fn sessions() -> Vec<SessionLog> {
        let mut out: Vec<SessionLog> = (0..4)
            .map(|i| SessionLog {
                session: format!("s{i}"),
                calls: vec![
                    LoggedCall {
                        call_id: format!("c{i}a"),
                        tool: "lookup_order".into(),
                        arguments: json!({"order_id": format!("ord_{i}")}),
                    },
                    LoggedCall {
                        call_id: format!("c{i}b"),
                        tool: "issue_refund".into(),
                        arguments: json!({"order_id": format!("ord_{i}"), "reason": "damaged"}),
                    },
                    LoggedCall {
                        call_id: format!("c{i}c"),
                        tool: "lookup_order".into(),
                        arguments: json!({"order_id": format!("ord_{i}")}),
                    },
                    LoggedCall {
                        call_id: format!("c{i}d"),
                        tool: format!("unrelated_{i}"),
                        arguments: json!({}),
                    },
                    LoggedCall {
                        call_id: format!("c{i}e"),
                        tool: format!("other_{i}"),
                        arguments: json!({}),
                    },
                ],
                messages: vec![format!(
                    "Please refund order {i}, the parcel arrived damaged"
                )],
            })
            .collect();
        out.push(SessionLog {
            session: "other".into(),
            calls: Vec::new(),
            messages: vec!["What is the weather like? The parcel is late".into()],
        });
        out
    }

    #[test]
    fn keyphrases_come_from_the_supporting_sessions_and_prefer_what_is_rare_elsewhere() {
        let s = sessions();
        let k = keyphrases(&s, &[0, 1, 2, 3], &["lookup_order", "issue_refund"], 3);
        assert_eq!(k[0], "refund order", "{k:?}");
        assert!(!k.iter().any(|p| p.contains("please")), "{k:?}");
        assert_eq!(slug(&k[0]).unwrap().as_str(), "refund-order");
        assert!(slug("!!! ...").is_none());
        assert_eq!(slug(&"word ".repeat(40)).unwrap().as_str().len(), 64);
    }

    #[test]
    fn the_draft_cites_its_sessions_and_is_a_valid_skill() {
        let s = sessions();
        let m = mine(&s, MineOptions::default());
        let p = &m.patterns[0];
        let phrases = keyphrases(&s, &[0, 1, 2, 3], &["lookup_order", "issue_refund"], 3);
        let d = draft(&DraftInput {
            sessions: &s,
            pattern: p,
            name: slug(&phrases[0]).unwrap(),
            phrases: &phrases,
            classes: vec!["orders".into()],
        });
        d.check_complete().unwrap();
        let md = d.to_skill_md();
        for want in [
            "`s0`",
            "`s3`",
            "`issue_refund` with",
            "`reason` (`damaged`)",
            "`order_id` (an id)",
            "orders",
            "refund order",
        ] {
            assert!(md.contains(want), "{want}: {md}");
        }
        assert!(!md.contains("ord_1"), "{md}");
        assert!(md.contains("refund-order"), "{md}");
        skillbase_format::Bundle::single(md).expect("a valid skill");
    }
}
