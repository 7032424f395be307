//! Phase 1 of a turn: place bodies — eager first (the cacheable prefix), then the skills the user
//! invoked, then those the turn's paths and a trigger fired, each with its companions — within
//! the agent's context budget.

use super::report::{Activation, Omission, TurnReport};
use crate::invoke::{Form, Invocation, MAX_INVOCATIONS};
use crate::view::AgentView;

/// What the turn asks for besides the ranking: the folded message (triggers), the skills the
/// user invoked, the file paths it names.
pub(super) struct Asked<'a> {
    pub(super) folded: &'a str,
    pub(super) invocations: Vec<Invocation>,
    pub(super) paths: Vec<&'a str>,
}

/// Where the bodies went: the prefix and injected text, which skills are in the prompt, and
/// which were evicted (reported, and not listed again in the catalog).
pub(super) struct Placed {
    pub(super) prefix: String,
    pub(super) injected: String,
    pub(super) present: Vec<bool>,
    pub(super) evicted: Vec<bool>,
}

/// Place the eager skills, the invoked ones, and those the paths and the (folded) message's
/// triggers fire; tokens are counted into `report.tokens.eager` and `.injected`.
pub(super) fn bodies(
    view: &AgentView,
    asked: &Asked<'_>,
    budget: u32,
    report: &mut TurnReport,
) -> Placed {
    let folded = asked.folded;
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
    invoked(&mut placer, &asked.invocations, &mut present, report);
    if !view.paths.is_empty() && !asked.paths.is_empty() {
        for (i, glob) in view.paths.find(&asked.paths) {
            placer.place(i, format!("path:{glob}"), false, &mut present, report);
        }
    }
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

/// Place the skills the user invoked (reason `explicit`), their arguments substituted; a name
/// the view does not hold is reported only when written as a slash command (a `$name` may be
/// anything), in the same words whether the skill does not exist or the agent may not use it.
fn invoked(
    placer: &mut Placer<'_>,
    invocations: &[Invocation],
    present: &mut [bool],
    report: &mut TurnReport,
) {
    let view = placer.view;
    let mut placed = 0;
    for inv in invocations {
        let Some(&i) = view.by_name.get(inv.name.as_str()) else {
            if inv.form == Form::Slash {
                report.warnings.push(Omission {
                    name: inv.name.as_str().into(),
                    reason: "explicit: no skill of that name is available to this agent".into(),
                    rank: None,
                });
            }
            continue;
        };
        let skill = &view.skills[i];
        if !skill.entry.meta.user_invocable {
            report.warnings.push(Omission {
                name: skill.name_ref.clone(),
                reason: "explicit: not invoked, the skill says user-invocable: false".into(),
                rank: None,
            });
            continue;
        }
        if placed == MAX_INVOCATIONS {
            report.warnings.push(Omission {
                name: skill.name_ref.clone(),
                reason: format!(
                    "explicit: not invoked, at most {MAX_INVOCATIONS} skills per message"
                )
                .into(),
                rank: None,
            });
            continue;
        }
        placed += 1;
        let body = crate::invoke::substitute(
            &skill.entry.body,
            &inv.arguments,
            &skill.entry.meta.arguments,
        );
        let text = crate::view::wrap_body_for(&skill.entry, &body, None, false, &skill.unmet);
        let tokens = crate::tokens::count(&text);
        placer.place_with(i, "explicit".into(), Some((text, tokens)), present, report);
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
        self.place_unit(root, reason, into_prefix, None, present, report);
    }

    /// Place an invoked skill, its body as substituted (`body`: the wrapped text and its
    /// tokens), into the injected bodies.
    fn place_with(
        &mut self,
        root: usize,
        reason: String,
        body: Option<(String, u32)>,
        present: &mut [bool],
        report: &mut TurnReport,
    ) {
        self.place_unit(root, reason, false, body, present, report);
    }

    /// A unit: the root (with `body` in place of its wrapped body when given) and its
    /// companions not yet present; an explicit-only companion comes along only with a root the
    /// user invoked.
    fn place_unit(
        &mut self,
        root: usize,
        reason: String,
        into_prefix: bool,
        body: Option<(String, u32)>,
        present: &mut [bool],
        report: &mut TurnReport,
    ) {
        let view = self.view;
        if present[root] {
            return;
        }
        let explicit = body.is_some();
        let mut unit = vec![(root, reason)];
        for &c in &view.skills[root].companions {
            if !present[c]
                && !unit.iter().any(|(i, _)| *i == c)
                && (explicit || !view.is_explicit_only(c))
            {
                unit.push((c, format!("companion:{}", view.skills[root].name())));
            }
        }
        let text_of = |i: usize| text_of(view, &body, root, i);
        let cost: u32 = unit.iter().map(|(i, _)| text_of(*i).1 + 1).sum();
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
                        text_of(i).1,
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
            let (text, t) = text_of(i);
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
                tokens: t,
            });
        }
    }
}

/// The wrapped body placed for `skills[i]`: `body` for the root when given, else its own.
fn text_of<'b>(
    view: &'b AgentView,
    body: &'b Option<(String, u32)>,
    root: usize,
    i: usize,
) -> (&'b str, u32) {
    match body {
        Some((t, n)) if i == root => (t.as_str(), *n),
        _ => {
            let (t, n) = view.skills[i].wrapped();
            (t.as_str(), *n)
        }
    }
}
