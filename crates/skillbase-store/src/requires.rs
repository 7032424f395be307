//! The store's check of `requires.skills` at write and import time: each required skill must
//! be a record the writing scope resolves (an agent's own scope, then the shared one) that is
//! active and whose `version` is in the range. An unmet requirement is a warning on the write,
//! never a refusal: the required skill may arrive in a later import, and what an agent is
//! offered is decided per agent by the runtime (see `skillbase_runtime::requires`).

use crate::index::Index;
use crate::model::{Scope, Status};
use crate::records::{WriteKind, WriteOutcome};
use skillbase_format::SkillMeta;

/// Why each of `meta`'s required skills is not met for a record in `scope`, read from `index`
/// (empty when all are).
pub fn unmet_skills(index: &Index, scope: &Scope, meta: &SkillMeta) -> Vec<String> {
    let mut out = Vec::new();
    for r in &meta.requires.skills {
        let found = match scope {
            Scope::Shared => index.get(&Scope::Shared, r.name.as_str()),
            Scope::Agent(a) => index.resolve(a, r.name.as_str()),
        };
        let why = match found {
            None => format!(
                "requires skill '{}', which the store does not hold{}",
                r.describe(),
                match scope {
                    Scope::Shared => " in the shared scope",
                    Scope::Agent(_) => " in this agent's scope or the shared one",
                }
            ),
            Some(e) if e.status != Status::Active => {
                format!("requires skill '{}', which is {}", r.describe(), e.status)
            }
            Some(e) => {
                let v = e.meta.semver();
                if r.accepts(v.as_ref()) {
                    continue;
                }
                match v {
                    Some(v) => format!(
                        "requires skill '{}', and the store holds version {v}",
                        r.describe()
                    ),
                    None => format!(
                        "requires skill '{}', and the store's revision declares no version",
                        r.describe()
                    ),
                }
            }
        };
        out.push(why);
    }
    out
}

/// Add to each written outcome the warnings of its unmet required skills, read from `index`
/// after the writes are in it (so skills imported together satisfy each other).
pub(crate) fn warn_unmet(index: &Index, outcomes: &mut [WriteOutcome]) {
    for o in outcomes.iter_mut() {
        if !matches!(o.kind, WriteKind::Created | WriteKind::Modified) {
            continue;
        }
        let Some(e) = index.get(&o.scope, &o.name) else {
            continue;
        };
        if e.active_rev != o.rev || e.meta.requires.skills.is_empty() {
            continue;
        }
        o.warnings.extend(unmet_skills(index, &o.scope, &e.meta));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::SkillEntry;
    use crate::model::AgentName;

    fn entry(scope: Scope, name: &str, fm: &str) -> SkillEntry {
        let text = format!("---\nname: {name}\ndescription: d\n{fm}---\nbody\n");
        SkillEntry::from_skill_md(scope, &text, "human:t").unwrap()
    }

    #[test]
    fn required_skills_resolve_in_the_writing_scope_then_the_shared_one() {
        let a = AgentName::parse("a").unwrap();
        let own = Scope::Agent(a.clone());
        let needs = "requires:\n  skills:\n    - name: lib\n      version: \"^1.2\"\n    - plain\n    - off\n";
        let mut off = entry(Scope::Shared, "off", "");
        off.status = Status::Disabled;
        let index = Index::from_entries(
            [
                entry(Scope::Shared, "needs", needs),
                entry(own.clone(), "needs", needs),
                entry(Scope::Shared, "lib", "version: \"1.1.0\"\n"),
                entry(own.clone(), "lib", "version: \"1.3.0\"\n"),
                off,
            ],
            1,
        );
        let shared = index.get(&Scope::Shared, "needs").unwrap();
        assert_eq!(
            unmet_skills(&index, &Scope::Shared, &shared.meta),
            [
                "requires skill 'lib (^1.2)', and the store holds version 1.1.0",
                "requires skill 'plain', which the store does not hold in the shared scope",
                "requires skill 'off', which is disabled",
            ]
        );
        // The agent's own lib is 1.3.0: met there.
        let mine = index.get(&own, "needs").unwrap();
        assert_eq!(
            unmet_skills(&index, &own, &mine.meta),
            [
                "requires skill 'plain', which the store does not hold in this agent's scope or the shared one",
                "requires skill 'off', which is disabled",
            ]
        );
        let free = entry(Scope::Shared, "free", "");
        assert!(unmet_skills(&index, &Scope::Shared, &free.meta).is_empty());
    }
}
