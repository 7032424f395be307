//! Phases 2 and 3 of a turn: plan the level-1 catalog within the catalog budget, then render
//! it.
//!
//! Everything allowed that is not in the prompt is a candidate, within the turn's cadence. When
//! every candidate fits in full, all are listed in name order. Otherwise the catalog is ranked
//! by relevance (BM25 over the folded message): every candidate listed at least by name when
//! that fits, the most relevant upgraded to full entries with what is left; else full entries
//! for the top ones within half the room, then names while they fit. Whatever is listed by name
//! only or not at all is reported with its rank, and `search_skills` is offered.

use super::TurnOptions;
use super::report::{Omission, TurnReport};
use crate::tokens;
use crate::view::AgentView;

/// The reason of a skill listed by name only.
pub const NAME_ONLY: &str = "budget: listed by name only, below the full entries in relevance rank";
/// The reason of a skill that only an explicit invocation places (`disable-model-invocation`).
pub const EXPLICIT_ONLY: &str = "explicit only (disable-model-invocation): placed only when the user invokes it, as /name or $name";
/// The reason of a skill not listed.
pub const NOT_LISTED: &str =
    "budget: not listed (lowest in relevance rank); found by search_skills and loadable";

const CATALOG_HEAD: &str = "<available_skills>\n";
const CATALOG_TAIL: &str = "</available_skills>\n";
const CATALOG_INTRO: &str = "Skills are procedures written for tasks like the user's. Before acting on a task that matches a skill below, call load_skill with its name and follow what it returns.\n";
const CATALOG_MORE: &str = "More skills are available than are listed here: call search_skills with a few words to find them.\n";

pub(super) fn fixed_tokens() -> (u32, u32) {
    use std::sync::OnceLock;
    static T: OnceLock<(u32, u32)> = OnceLock::new();
    *T.get_or_init(|| {
        (
            tokens::count(&format!("{CATALOG_INTRO}{CATALOG_HEAD}{CATALOG_TAIL}")),
            tokens::count(CATALOG_MORE),
        )
    })
}

/// Approximate tokens of the `load_skill` definition: fixed part plus the enum's names.
pub(super) const LOAD_TOOL_BASE_TOKENS: u32 = 90;
pub(super) const SEARCH_TOOL_TOKENS: u32 = 100;

/// The catalog's candidates, in index order, with the tokens of all of them in full and by
/// name. Skills too slow for the turn are reported as omitted here.
pub(super) struct Candidates {
    pub(super) skills: Vec<usize>,
    pub(super) full_total: u32,
    pub(super) all_names: u32,
}

/// Phase 2a: every allowed skill not in the prompt, not eager and not explicit only (reported
/// as such), within the cadence. A skill already reported as evicted is not listed again (each
/// skill is reported once).
pub(super) fn candidates(
    view: &AgentView,
    present: &[bool],
    evicted: &[bool],
    opts: &TurnOptions,
    report: &mut TurnReport,
) -> Candidates {
    let mut c = Candidates {
        skills: Vec::with_capacity(view.skills.len()),
        full_total: 0,
        all_names: 0,
    };
    for (i, s) in view.skills.iter().enumerate() {
        if present[i] || view.is_eager(i) || evicted[i] {
            continue;
        }
        if view.is_explicit_only(i) {
            report.catalog.omitted.push(Omission {
                name: s.name_ref.clone(),
                reason: EXPLICIT_ONLY.into(),
                rank: None,
            });
            continue;
        }
        if let Some(max) = opts.max_cost
            && s.entry.meta.cost > max
        {
            report.catalog.omitted.push(Omission {
                name: s.name_ref.clone(),
                reason: format!(
                    "cost: {} is slower than this turn's maximum {max}",
                    s.entry.meta.cost
                )
                .into(),
                rank: None,
            });
            continue;
        }
        c.full_total += view.full_tokens[i];
        c.all_names += view.name_only_tokens[i];
        c.skills.push(i);
    }
    c
}

/// What the catalog lists: full entries and names only, each in index (name) order, and the
/// tokens it takes.
pub(super) struct Plan {
    pub(super) full: Vec<usize>,
    pub(super) name_only: Vec<usize>,
    pub(super) tokens: u32,
}

/// Phase 2b: fit the candidates into `budget`, ranking them by relevance to the (folded)
/// message when they do not all fit. Fills `report.catalog` (budget, ranked, name-only and
/// omitted entries with their ranks).
pub(super) fn plan(
    view: &AgentView,
    cands: &Candidates,
    folded: &str,
    semantic: Option<crate::fusion::SemanticQuery<'_>>,
    budget: u32,
    report: &mut TurnReport,
) -> Plan {
    report.catalog.budget = budget;
    let candidates = &cands.skills;
    let (fixed, more) = fixed_tokens();
    let mut full: Vec<usize> = Vec::new();
    let mut name_only: Vec<usize> = Vec::new();
    if candidates.is_empty() {
        // No catalog at all.
        return Plan {
            full,
            name_only,
            tokens: 0,
        };
    }
    if fixed + cands.full_total <= budget {
        return Plan {
            full: candidates.clone(),
            name_only,
            tokens: fixed + cands.full_total,
        };
    }
    report.catalog.ranked = true;
    report.catalog.stages = Some(match &semantic {
        Some(q) if !q.rerank.is_empty() => "lexical+semantic+rerank".into(),
        Some(_) => "lexical+semantic".into(),
        None => "lexical".into(),
    });
    let relevance = view.relevance(folded, semantic);
    let order = relevance_order(candidates, &relevance.scores);
    let mut left = budget.saturating_sub(fixed + more);
    // (1-based relevance rank, skill) of everything not shown in full.
    let mut rest: Vec<(usize, usize)> = Vec::with_capacity(order.len());
    let p = pick_full(view, &order, cands.all_names, &mut left, &mut full);
    let confidence = relevance.confidence(&order, p);
    report.catalog.shown = order[..p]
        .iter()
        .zip(confidence)
        .enumerate()
        .map(|(k, (&i, confidence))| super::report::Ranked {
            name: view.skills[i].name_ref.clone(),
            rank: k + 1,
            stage: relevance.stage(i),
            confidence,
        })
        .collect();
    rest.extend(order[p..].iter().enumerate().map(|(k, &i)| (p + k + 1, i)));
    pick_names(view, &rest, &mut left, &mut name_only, report);
    name_order(view.skills.len(), &mut full, &mut name_only);
    // When not even one name fits, the catalog is the notice that search_skills finds the
    // skills: its tokens are counted as they are, though they exceed the budget.
    let tokens = if full.is_empty() && name_only.is_empty() {
        more
    } else {
        budget.saturating_sub(left)
    };
    Plan {
        full,
        name_only,
        tokens,
    }
}

/// Full entries, in relevance `order`, while they fit: pushed to `full`, their tokens taken
/// from `left`. When every candidate's name fits in `left` (`all_names`), a full entry takes
/// only what the names leave spare; otherwise full entries take at most half of `left`.
/// Returns how many of `order` are shown in full.
fn pick_full(
    view: &AgentView,
    order: &[usize],
    all_names: u32,
    left: &mut u32,
    full: &mut Vec<usize>,
) -> usize {
    // Full entries while they fit in `room` (each taking `cost` of it), in relevance order.
    let mut p = 0;
    if all_names <= *left {
        let mut spare = *left - all_names;
        while p < order.len() {
            let i = order[p];
            let extra = view.full_tokens[i].saturating_sub(view.name_only_tokens[i]);
            if extra > spare {
                break;
            }
            spare -= extra;
            *left -= view.full_tokens[i];
            full.push(i);
            p += 1;
        }
    } else {
        let mut full_room = *left / 2;
        while p < order.len() {
            let i = order[p];
            let t = view.full_tokens[i];
            if t > full_room {
                break;
            }
            full_room -= t;
            *left -= t;
            full.push(i);
            p += 1;
        }
    }
    p
}

/// Names for the `rest` (each `(rank, skill)`, in relevance order) while they fit in `left`:
/// pushed to `name_only` and reported name-only with their rank; the others reported omitted.
fn pick_names(
    view: &AgentView,
    rest: &[(usize, usize)],
    left: &mut u32,
    name_only: &mut Vec<usize>,
    report: &mut TurnReport,
) {
    report
        .catalog
        .name_only
        .start_ranked(&view.names, NAME_ONLY, rest.len());
    report
        .catalog
        .omitted
        .start_ranked(&view.names, NOT_LISTED, rest.len());
    for &(rank, i) in rest {
        let t = view.name_only_tokens[i];
        if t <= *left {
            *left -= t;
            name_only.push(i);
            report.catalog.name_only.push_ranked(i, rank);
        } else {
            report.catalog.omitted.push_ranked(i, rank);
        }
    }
}

/// Back to name order for the block (stable for caching), without sorting: mark and sweep
/// over the view's `len` skills.
fn name_order(len: usize, full: &mut Vec<usize>, name_only: &mut Vec<usize>) {
    let mut mark = vec![0u8; len];
    for &i in full.iter() {
        mark[i] = 1;
    }
    for &i in name_only.iter() {
        mark[i] = 2;
    }
    full.clear();
    name_only.clear();
    for (i, m) in mark.iter().enumerate() {
        match m {
            1 => full.push(i),
            2 => name_only.push(i),
            _ => {}
        }
    }
}

/// Phase 3: the `<available_skills>` block of a plan (`None` when there is nothing to say).
/// When the catalog was ranked and not even one name fits, the model is still told that
/// `search_skills` finds the skills.
pub(super) fn render(
    view: &AgentView,
    plan: &Plan,
    has_candidates: bool,
    ranked: bool,
) -> Option<String> {
    let (full, name_only) = (&plan.full, &plan.name_only);
    if full.is_empty() && name_only.is_empty() {
        return (has_candidates && ranked).then(|| CATALOG_MORE.to_owned());
    }
    let entries: usize = full
        .iter()
        .map(|&i| view.skills[i].catalog_entry.len())
        .chain(name_only.iter().map(|&i| view.skills[i].name_entry.len()))
        .sum();
    let mut c = String::with_capacity(
        entries
            + CATALOG_INTRO.len()
            + CATALOG_HEAD.len()
            + CATALOG_TAIL.len()
            + CATALOG_MORE.len(),
    );
    c.push_str(CATALOG_INTRO);
    c.push_str(CATALOG_HEAD);
    for &i in full {
        c.push_str(&view.skills[i].catalog_entry);
    }
    for &i in name_only {
        c.push_str(&view.skills[i].name_entry);
    }
    c.push_str(CATALOG_TAIL);
    if ranked {
        c.push_str(CATALOG_MORE);
    }
    Some(c)
}

/// Candidates (ascending indices) in relevance order: highest score first, ties by index, then
/// the unscored ones (no word in common with the message) in index order.
fn relevance_order(candidates: &[usize], scores: &[f32]) -> Vec<usize> {
    // One integer key per scored candidate: a positive f32's bits order like the float, so
    // (inverted score bits, index) sorts highest score first, ties by index.
    // Scored: a positive score (not zero, not NaN).
    let scored = |i: usize| scores[i] > 0.0;
    let mut keyed: Vec<u64> = Vec::with_capacity(candidates.len());
    for &i in candidates {
        if scored(i) {
            keyed.push((u64::from(!scores[i].to_bits()) << 32) | i as u64);
        }
    }
    sort_score_keys(&mut keyed);
    let mut order: Vec<usize> = Vec::with_capacity(candidates.len());
    order.extend(keyed.iter().map(|k| (k & 0xffff_ffff) as usize));
    if order.len() < candidates.len() {
        order.extend(candidates.iter().copied().filter(|&i| !scored(i)));
    }
    order
}

/// Sort `(key << 32) | index` words whose indices ascend in input order: a stable LSD radix sort
/// on the upper 32 bits (a byte per pass, passes where every key has the same byte skipped)
/// gives the same order as sorting the whole words, in linear time. Small inputs are sorted
/// directly.
fn sort_score_keys(keys: &mut Vec<u64>) {
    let n = keys.len();
    if n < 128 {
        keys.sort_unstable();
        return;
    }
    let mut counts = [[0u32; 256]; 4];
    for &k in keys.iter() {
        let hi = (k >> 32) as u32;
        counts[0][(hi & 0xff) as usize] += 1;
        counts[1][((hi >> 8) & 0xff) as usize] += 1;
        counts[2][((hi >> 16) & 0xff) as usize] += 1;
        counts[3][(hi >> 24) as usize] += 1;
    }
    let mut src = std::mem::take(keys);
    let mut dst = vec![0u64; n];
    for (pass, c) in counts.iter().enumerate() {
        let shift = 32 + 8 * pass;
        if c[((src[0] >> shift) & 0xff) as usize] as usize == n {
            continue;
        }
        let mut next = [0u32; 256];
        let mut sum = 0;
        for (o, &k) in next.iter_mut().zip(c.iter()) {
            *o = sum;
            sum += k;
        }
        for &k in &src {
            let b = ((k >> shift) & 0xff) as usize;
            dst[next[b] as usize] = k;
            next[b] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    *keys = src;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The radix sort gives the order of a plain sort, ties by index included.
    #[test]
    fn score_keys_sort_like_a_plain_sort() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [0usize, 1, 5, 127, 128, 129, 1000, 5000] {
            for distinct in [1u64, 3, 50, u64::MAX] {
                let scores: Vec<f32> = (0..n)
                    .map(|_| match distinct {
                        u64::MAX => f32::from_bits(next() as u32 & 0x7fff_ffff),
                        d => 0.5 + (next() % d) as f32 * 0.25,
                    })
                    .collect();
                let mut keys: Vec<u64> = scores
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (u64::from(!s.to_bits()) << 32) | i as u64)
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable();
                sort_score_keys(&mut keys);
                assert_eq!(keys, want, "n {n}, distinct {distinct}");
            }
        }
    }

    #[test]
    fn catalog_frame_is_within_the_overflow_bound() {
        // `AgentView::catalog_may_overflow` counts 256 tokens for the catalog's frame.
        assert!(fixed_tokens().0 < 256);
    }

    #[test]
    fn relevance_order_puts_unscored_last_in_index_order() {
        let scores = [0.0, 2.0, 0.0, 3.0, 2.0, f32::NAN];
        assert_eq!(
            relevance_order(&[0, 1, 2, 3, 4, 5], &scores),
            [3, 1, 4, 0, 2, 5]
        );
        assert_eq!(relevance_order(&[0, 2, 4], &scores), [4, 0, 2]);
    }
}
