//! Phase 1 of a turn: place bodies — eager first (the cacheable prefix), then those a trigger
//! fired, each with its companions — within the agent's context budget.

use super::report::{Activation, Omission, TurnReport};
use crate::view::AgentView;

/// Where the bodies went: the prefix and injected text, which skills are in the prompt, and
/// which were evicted (reported, and not listed again in the catalog).
pub(super) struct Placed {
    pub(super) prefix: String,
    pub(super) injected: String,
    pub(super) present: Vec<bool>,
    pub(super) evicted: Vec<bool>,
}

/// Place the eager skills and the ones whose triggers the (folded) message fires; tokens are
/// counted into `report.tokens.eager` and `.injected`.
pub(super) fn bodies(
    view: &AgentView,
    folded: &str,
    budget: u32,
    report: &mut TurnReport,
) -> Placed {
    let n = view.skills.len();
    let mut present = vec![false; n];
    let mut placer = Placer {
        evicted: vec![false; n],
        view,
        budget,
        used: 0,
        prefix: String::new(),
        injected: String::new(),
    };
    for &i in &view.eager {
        placer.place(i, "eager".into(), true, &mut present, report);
    }
    let eager_tokens = placer.used;
    if !view.triggers.is_empty() {
        // A `when_not_to_use` phrase in the message keeps that skill's triggers from firing.
        let negatives = if view.negatives.is_empty() {
            Vec::new()
        } else {
            view.negatives.find_folded(folded)
        };
        for hit in view.triggers.find_folded(folded) {
            if let Some(neg) = negatives.iter().find(|n| n.skill == hit.skill) {
                if !report
                    .suppressed
                    .iter()
                    .any(|o| o.name == view.skills[hit.skill].name())
                {
                    report.suppressed.push(Omission {
                        name: view.skills[hit.skill].name_ref.clone(),
                        reason: format!(
                            "trigger:{} suppressed: the message holds when_not_to_use '{}'",
                            hit.phrase, neg.phrase
                        )
                        .into(),
                        rank: None,
                    });
                }
                continue;
            }
            placer.place(
                hit.skill,
                format!("trigger:{}", hit.phrase),
                false,
                &mut present,
                report,
            );
        }
    }
    report.tokens.eager = eager_tokens;
    report.tokens.injected = placer.used - eager_tokens;
    Placed {
        prefix: placer.prefix,
        injected: placer.injected,
        present,
        evicted: placer.evicted,
    }
}

struct Placer<'a> {
    view: &'a AgentView,
    /// Skills currently reported in `report.evicted`.
    evicted: Vec<bool>,
    budget: u32,
    used: u32,
    prefix: String,
    injected: String,
}

impl Placer<'_> {
    /// Place a skill with its companions: the unit fits whole or is evicted whole, since half a
    /// procedure is worse than none.
    fn place(
        &mut self,
        root: usize,
        reason: String,
        into_prefix: bool,
        present: &mut [bool],
        report: &mut TurnReport,
    ) {
        let view = self.view;
        if present[root] {
            return;
        }
        let mut unit = vec![(root, reason)];
        for &c in &view.skills[root].companions {
            if !present[c] && !unit.iter().any(|(i, _)| *i == c) {
                unit.push((c, format!("companion:{}", view.skills[root].name())));
            }
        }
        let cost: u32 = unit
            .iter()
            .map(|(i, _)| view.skills[*i].wrapped().1 + 1)
            .sum();
        if self.used + cost > self.budget {
            let left = self.budget.saturating_sub(self.used);
            for (i, r) in unit {
                if std::mem::replace(&mut self.evicted[i], true) {
                    continue;
                }
                report.evicted.push(Omission {
                    name: view.skills[i].name_ref.clone(),
                    reason: format!(
                        "budget: {r} needed {} tokens with its unit ({cost} in all), {left} of {} left",
                        view.skills[i].wrapped().1,
                        self.budget
                    )
                    .into(),
                    rank: None,
                });
            }
            return;
        }
        self.used += cost;
        for (i, r) in unit {
            present[i] = true;
            if std::mem::replace(&mut self.evicted[i], false) {
                // Evicted with an earlier unit, placed with this one: it reached the prompt.
                let name = view.skills[i].name();
                report.evicted.retain(|o| o.name != name);
            }
            let (text, t) = view.skills[i].wrapped();
            let out = if into_prefix {
                &mut self.prefix
            } else {
                &mut self.injected
            };
            out.push_str(text);
            out.push('\n');
            report.activated.push(Activation {
                name: view.skills[i].name().to_owned(),
                reason: r,
                rev: view.skills[i].entry.active_rev,
                tokens: *t,
            });
        }
    }
}
