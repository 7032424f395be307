//! Why a skill was missed: `skillbase eval --explain SKILL`.
//!
//! For every labelled case that expects the skill and did not rank it first, the same routing
//! order [`crate::eval`] measures is taken apart: which skill won instead (and whether a trigger
//! injected it), the words of the message that scored for each of the two (the lexical stage's
//! own shares, [`skillbase_route::rank::Bm25::explain`]), the words the winner had that the
//! skill lacks, a `when_not_to_use` phrase of the skill the message held, and the two skills'
//! similarity to the message when the semantic stage ran. An author reads it to learn which
//! words to add to the description and which sibling to tell apart in `when_not_to_use`.
//!
//! Cases that expect another skill but ranked this one first are listed too: they are the
//! other half of a confusion between siblings.

use crate::eval::{EvalCase, EvalError};
use serde::Serialize;
use skillbase_route::fusion::SemanticQuery;
pub use skillbase_route::rank::TermScore;
use skillbase_runtime::{AgentView, QueryVectors, TurnOptions, resolve_with};

/// Characters of a message kept in an explanation (the rest is cut at a word).
const MESSAGE_CHARS: usize = 160;
/// Words listed per list (scoring words, deciding words, lacking words).
const WORDS: usize = 8;

/// Why one case did not rank the skill first.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    /// The case's number in its file (1-based).
    pub case: usize,
    /// The message, shortened.
    pub message: String,
    /// The skill's place in the routing order (`None`: not ranked at all, no word in common
    /// and no similarity above the rest).
    pub rank: Option<usize>,
    /// The skill ranked first instead.
    pub winner: String,
    /// The trigger phrase that injected the winner, when a trigger did.
    pub winner_trigger: Option<String>,
    /// The skill's `when_not_to_use` phrase found in the message (it lowers the skill's rank).
    pub suppressed_by: Option<String>,
    /// The lexical scores of the skill and of the winner.
    pub lexical: (f32, f32),
    /// Their similarities to the message, when the semantic stage ran.
    pub semantic: Option<(f32, f32)>,
    /// The reranker's logits for the skill and the winner, when it read this message (`None`
    /// inside: not among the candidates it read).
    pub rerank: Option<(Option<f32>, Option<f32>)>,
    /// The message's words that scored for the skill, largest share first.
    pub skill_words: Vec<TermScore>,
    /// The message's words that scored for the winner, largest share first.
    pub winner_words: Vec<TermScore>,
    /// The words that decided: what each adds to the winner beyond the skill, largest first.
    pub decided_by: Vec<TermScore>,
    /// Words of the message the winner matched and the skill has nowhere in its text.
    pub lacks: Vec<String>,
}

/// Why a skill was or was not ranked first over a set of cases.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The skill explained.
    pub skill: String,
    /// Cases that expect it.
    pub expected: usize,
    /// Of those, how many ranked it first.
    pub first: usize,
    /// The others, each taken apart.
    pub misses: Vec<Miss>,
    /// Cases that expect another skill (or none) but ranked this one first: (case, expected).
    pub taken: Vec<(usize, Option<String>)>,
}

/// Explain how `skill` fares on `cases` in `view` (with the semantic stage when `vectors` holds
/// the cases' vectors). The skill must be one the view holds.
pub fn explain(
    view: &AgentView,
    cases: &[EvalCase],
    opts: &TurnOptions,
    vectors: Option<&QueryVectors>,
    skill: &str,
) -> Result<Explanation, EvalError> {
    let Some(&target) = view.by_name.get(skill) else {
        return Err(EvalError::Explain(format!(
            "agent '{}' does not see a skill named '{skill}'; `skillbase list --agent {}` shows \
             the skills it sees",
            view.agent.name, view.agent.name
        )));
    };
    let mut out = Explanation {
        skill: skill.to_owned(),
        expected: 0,
        first: 0,
        misses: Vec::new(),
        taken: Vec::new(),
    };
    for (n, case) in cases.iter().enumerate() {
        let semantic = vectors.and_then(|v| v.query(n));
        let (order, triggered) = order_of(view, &case.message, opts, semantic);
        let expects = case.expected.as_deref() == Some(skill);
        let first = order.first().copied();
        if !expects {
            if first == Some(target) {
                out.taken.push((n + 1, case.expected.clone()));
            }
            continue;
        }
        out.expected += 1;
        match first {
            Some(w) if w == target => out.first += 1,
            winner => out.misses.push(miss(
                view,
                n + 1,
                &case.message,
                target,
                winner,
                (&order, &triggered),
                semantic,
            )),
        }
    }
    Ok(out)
}

/// The routing order of a message as view indices (as [`crate::eval`] ranks), and the trigger
/// phrase of each skill a trigger injected.
fn order_of(
    view: &AgentView,
    message: &str,
    opts: &TurnOptions,
    semantic: Option<SemanticQuery<'_>>,
) -> (Vec<usize>, Vec<(usize, String)>) {
    let ctx = resolve_with(view, message, opts, semantic);
    let mut order: Vec<usize> = Vec::new();
    let mut triggered = Vec::new();
    for a in &ctx.report.activated {
        let Some(&i) = view.by_name.get(&a.name) else {
            continue;
        };
        if let Some(phrase) = a.reason.strip_prefix("trigger:") {
            triggered.push((i, phrase.to_owned()));
        } else if !a.reason.starts_with("companion:") {
            continue;
        }
        if !order.contains(&i) {
            order.push(i);
        }
    }
    let folded = skillbase_route::trigger::fold_fast(message);
    for (i, score) in view.relevance(&folded, semantic).order() {
        let i = i as usize;
        if score <= 0.0 {
            break;
        }
        if !view.is_eager(i) && !order.contains(&i) {
            order.push(i);
        }
    }
    (order, triggered)
}

/// Take one missed case apart.
fn miss(
    view: &AgentView,
    case: usize,
    message: &str,
    target: usize,
    winner: Option<usize>,
    (order, triggered): (&[usize], &[(usize, String)]),
    semantic: Option<SemanticQuery<'_>>,
) -> Miss {
    let rank = order.iter().position(|&i| i == target).map(|p| p + 1);
    let folded = skillbase_route::trigger::fold_fast(message);
    let suppressed_by = view
        .negatives
        .find_folded(&folded)
        .into_iter()
        .find(|h| h.skill == target)
        .map(|h| h.phrase.to_string());
    let Some(w) = winner else {
        let words = view.bm25.explain(message, &[target]).remove(0);
        return Miss {
            case,
            message: shorten(message),
            rank,
            winner: String::new(),
            winner_trigger: None,
            suppressed_by,
            lexical: (total(&words), 0.0),
            semantic: None,
            rerank: None,
            skill_words: head(words),
            winner_words: Vec::new(),
            decided_by: Vec::new(),
            lacks: Vec::new(),
        };
    };
    let mut both = view.bm25.explain(message, &[target, w]);
    let winner_words = both.pop().unwrap_or_default();
    let skill_words = both.pop().unwrap_or_default();
    let lexical = (total(&skill_words), total(&winner_words));
    let mut decided_by: Vec<TermScore> = winner_words
        .iter()
        .map(|t| {
            let own = skill_words
                .iter()
                .find(|s| s.term == t.term)
                .map_or(0.0, |s| s.score);
            TermScore {
                score: t.score - own,
                ..t.clone()
            }
        })
        .filter(|t| t.score > 0.0)
        .collect();
    decided_by.sort_by(|a, b| b.score.total_cmp(&a.score));
    let lacks = winner_words
        .iter()
        .filter(|t| !skill_words.iter().any(|s| s.term == t.term))
        .map(|t| t.word.clone())
        .take(WORDS)
        .collect();
    let rerank = semantic.filter(|q| !q.rerank.is_empty()).map(|q| {
        let logit = |i: usize| q.rerank.iter().find(|r| r.0 as usize == i).map(|r| r.1);
        (logit(target), logit(w))
    });
    let semantic = semantic.and_then(|q| {
        let sims = q.cosines();
        Some((*sims.get(target)?, *sims.get(w)?))
    });
    Miss {
        case,
        message: shorten(message),
        rank,
        winner: view.skills[w].name().to_owned(),
        winner_trigger: triggered
            .iter()
            .find(|(i, _)| *i == w)
            .map(|(_, p)| p.clone()),
        suppressed_by,
        lexical,
        semantic,
        rerank,
        skill_words: head(skill_words),
        winner_words: head(winner_words),
        decided_by: head(decided_by),
        lacks,
    }
}

/// The sum of the shares (0, not the empty sum's -0, when none).
fn total(words: &[TermScore]) -> f32 {
    words.iter().map(|t| t.score).sum::<f32>() + 0.0
}

/// The first [`WORDS`] entries.
fn head(mut v: Vec<TermScore>) -> Vec<TermScore> {
    v.truncate(WORDS);
    v
}

/// A message cut to about [`MESSAGE_CHARS`] characters at a word, on one line.
fn shorten(message: &str) -> String {
    let flat: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MESSAGE_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(MESSAGE_CHARS).collect();
    let at = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", &cut[..at])
}
