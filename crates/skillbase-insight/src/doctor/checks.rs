//! The checks, pure: findings from the inputs [`super::run`] gathered. One function per code.

use super::names::NameFinder;
use super::{AgentInput, Code, Finding, Inputs, Severity};
use skillbase_format::Capabilities;
use skillbase_store::{AgentName, Grants, Index, NameSet, Scope, SkillEntry, Status};
use std::collections::{BTreeMap, HashMap, HashSet};

/// How many of an agent's newest turns the turn checks (D009's common triggers, D010) read.
pub const RECENT_TURNS: usize = 50;
/// The fewest recent turns (at the agent's current configuration) they judge from.
pub const MIN_TURNS: usize = 10;
/// Description similarity (0 to 1, from the ranker) from which two skills are near-duplicates.
pub const NEAR_DUPLICATE: f32 = 0.8;

/// A finding, filled in by the builder methods below.
fn finding(code: Code, severity: Severity, message: String, fix: String) -> Finding {
    Finding {
        code,
        severity,
        agent: None,
        skill: None,
        scope: None,
        file: None,
        line: None,
        related: None,
        message,
        fix,
    }
}

impl Finding {
    fn agent(mut self, a: &AgentName) -> Finding {
        self.agent = Some(a.to_string());
        self
    }

    fn skill(mut self, e: &SkillEntry) -> Finding {
        self.skill = Some(e.name.clone());
        self.scope = Some(e.scope.to_string());
        self.file = Some("SKILL.md".into());
        self
    }

    fn line(mut self, line: Option<u32>) -> Finding {
        self.line = line;
        self
    }

    fn related(mut self, r: impl Into<String>) -> Finding {
        self.related = Some(r.into());
        self
    }
}

/// `--scope` as the CLI takes it, for fixes that name a command.
fn scope_flag(scope: &Scope) -> String {
    match scope {
        Scope::Shared => String::new(),
        Scope::Agent(a) => format!(" --scope agent:{a}"),
    }
}

/// Every check, in code order, then sorted (errors first) and limited to the focus agent.
pub(super) fn all(inputs: &Inputs, unchecked: &mut Vec<String>) -> Vec<Finding> {
    let mut out = Vec::new();
    let finders = Finders::new(&inputs.index);
    for a in &inputs.agents {
        out.extend(d001(a, &finders));
    }
    out.extend(d002(inputs));
    if !inputs.own_only {
        out.extend(d003(inputs, &finders));
    }
    for a in &inputs.agents {
        out.extend(d004(a));
        out.extend(d014(a, &inputs.index));
    }
    if !inputs.own_only {
        out.extend(d005(&inputs.index));
    }
    for a in &inputs.agents {
        out.extend(d006(a));
    }
    out.extend(d007(inputs));
    for a in &inputs.agents {
        out.extend(d008(inputs, a));
    }
    let mut few = Vec::new();
    for a in &inputs.agents {
        out.extend(d009_shared(a));
        if a.turns.len() >= MIN_TURNS {
            out.extend(d009_common(a));
            out.extend(d010(a));
        } else {
            few.push(format!("{} has {}", a.agent().name, a.turns.len()));
        }
    }
    if !few.is_empty() {
        unchecked.push(format!(
            "the turn checks (D009 common triggers, D010 catalog overflow) need {MIN_TURNS} recent turns at the agent's current configuration: {}",
            few.join(", ")
        ));
    }
    out.extend(d011(inputs));
    out.extend(d012(inputs));
    out.extend(d015(inputs));
    for a in &inputs.agents {
        out.extend(d013(a));
    }
    finish(inputs, out)
}

/// The prompt checks alone (an ad hoc prompt).
pub(super) fn prompts_only(inputs: &Inputs) -> Vec<Finding> {
    let finders = Finders::new(&inputs.index);
    let out = inputs
        .agents
        .iter()
        .flat_map(|a| d001(a, &finders))
        .collect();
    finish(inputs, out)
}

/// Limit to the focus agent (its findings, and those of the records it holds; an agent token
/// only its own), then sort.
fn finish(inputs: &Inputs, mut out: Vec<Finding>) -> Vec<Finding> {
    if let Some(focus) = &inputs.focus {
        let agent = inputs.all_agents.iter().find(|a| a.name == *focus);
        out.retain(|f| {
            if f.agent.as_deref() == Some(focus.as_str()) {
                return true;
            }
            if inputs.own_only {
                return false;
            }
            let shared_level = f.agent.is_none() || f.code == Code::D002;
            shared_level
                && agent.is_some_and(|a| {
                    holds(&inputs.index, a, f.scope.as_deref(), f.skill.as_deref())
                })
        });
    }
    out.sort_by(|a, b| {
        (
            a.severity, a.code, &a.agent, &a.skill, &a.scope, a.line, &a.related,
        )
            .cmp(&(
                b.severity, b.code, &b.agent, &b.skill, &b.scope, b.line, &b.related,
            ))
    });
    out.dedup();
    out
}

/// Whether `agent` holds the record (`scope`, `name`): allowed, and what the name resolves to
/// for it.
fn holds(
    index: &Index,
    agent: &skillbase_store::Agent,
    scope: Option<&str>,
    name: Option<&str>,
) -> bool {
    let (Some(scope), Some(name)) = (scope, name) else {
        return false;
    };
    agent.config.skills.contains(name)
        && index
            .resolve(&agent.name, name)
            .is_some_and(|e| e.scope.to_string() == scope)
}

/// Name finders over the catalog: the shared scope's names, and each agent scope's.
struct Finders {
    shared: NameFinder,
    agents: HashMap<AgentName, NameFinder>,
}

impl Finders {
    fn new(index: &Index) -> Finders {
        let names = |scope: &Scope| -> Vec<String> {
            let mut v: Vec<String> = index
                .scope(scope)
                .filter(|e| e.status != Status::Retired)
                .map(|e| e.name.clone())
                .collect();
            v.sort();
            v
        };
        let mut scopes: Vec<AgentName> = index
            .all()
            .filter_map(|e| match &e.scope {
                Scope::Agent(a) => Some(a.clone()),
                Scope::Shared => None,
            })
            .collect();
        scopes.sort();
        scopes.dedup();
        Finders {
            shared: NameFinder::new(names(&Scope::Shared), "skill:"),
            agents: scopes
                .into_iter()
                .map(|a| {
                    let f = NameFinder::new(names(&Scope::Agent(a.clone())), "skill:");
                    (a, f)
                })
                .collect(),
        }
    }

    /// Every catalog name `text` names for a reader in `scope` (the shared names, and its own
    /// scope's), with the line of its first mention, by line.
    fn find(&self, scope: &Scope, text: &str, first_line: u32) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self
            .shared
            .find(text, first_line)
            .into_iter()
            .map(|n| (self.shared.name(n.name).to_owned(), n.line))
            .collect();
        if let Scope::Agent(a) = scope
            && let Some(f) = self.agents.get(a)
        {
            for n in f.find(text, first_line) {
                let name = f.name(n.name);
                match out.iter_mut().find(|(x, _)| x == name) {
                    Some(found) => found.1 = found.1.min(n.line),
                    None => out.push((name.to_owned(), n.line)),
                }
            }
        }
        out.sort_by_key(|(n, l)| (*l, n.clone()));
        out
    }
}

/// D001: a prompt names a skill the agent may not load (not in its allowlist). Names are the
/// shared scope's and the agent's own; another agent's private skills are never looked for.
fn d001(a: &AgentInput, finders: &Finders) -> Vec<Finding> {
    let agent = a.agent();
    let own = Scope::Agent(agent.name.clone());
    let mut out = Vec::new();
    for p in &a.prompts {
        for (name, line) in finders.find(&own, &p.text, 1) {
            if agent.config.skills.contains(&name) {
                continue;
            }
            out.push(Finding {
                file: Some(p.label.clone()),
                line: Some(line),
                ..finding(
                    Code::D001,
                    Severity::Error,
                    format!(
                        "the prompt names skill '{name}', which agent {} may not load (it is not in the agent's skills): the model is told to use something it cannot",
                        agent.name
                    ),
                    format!(
                        "delete the hand-written routing (the <available_skills> list is generated from the allowlist), or add '{name}' to the skills of agent {}",
                        agent.name
                    ),
                )
                .agent(&agent.name)
                .related(name)
            });
        }
    }
    out
}

/// The agents holding a shared record: allowed it, and with no record of their own by that name.
fn holders<'a>(inputs: &'a Inputs, e: &SkillEntry) -> Vec<&'a skillbase_store::Agent> {
    inputs
        .all_agents
        .iter()
        .filter(|a| {
            a.config.skills.contains(&e.name)
                && inputs
                    .index
                    .get(&Scope::Agent(a.name.clone()), &e.name)
                    .is_none()
        })
        .collect()
}

/// D002: a shared skill held by several agents whose body names one of them.
fn d002(inputs: &Inputs) -> Vec<Finding> {
    let names: Vec<String> = inputs
        .all_agents
        .iter()
        .map(|a| a.name.to_string())
        .collect();
    let finder = NameFinder::new(names, "agent:");
    let mut out = Vec::new();
    for e in inputs
        .index
        .scope(&Scope::Shared)
        .filter(|e| e.status != Status::Retired)
    {
        let holders = holders(inputs, e);
        if holders.len() < 2 {
            continue;
        }
        for n in finder.find(&e.body, e.lines.body) {
            let named = finder.name(n.name);
            let Some(h) = holders.iter().find(|h| h.name.as_str() == named) else {
                continue;
            };
            out.push(
                finding(
                    Code::D002,
                    Severity::Warning,
                    format!(
                        "shared skill '{}' names agent {named}, one of the agents that hold it: the others are served text written for {named}",
                        e.name
                    ),
                    format!(
                        "specialize it for {named} (write its own version into scope agent:{named}: `skillbase put FOLDER --scope agent:{named}`) and keep the shared body free of any one agent"
                    ),
                )
                .agent(&h.name)
                .skill(e)
                .line(Some(n.line)),
            );
        }
    }
    out
}

/// D003: a body names another catalog skill without declaring it a companion.
fn d003(inputs: &Inputs, finders: &Finders) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in inputs.index.all().filter(|e| e.status != Status::Retired) {
        for (name, line) in finders.find(&e.scope, &e.body, e.lines.body) {
            if name == e.name || e.meta.companions.iter().any(|c| c.as_str() == name) {
                continue;
            }
            out.push(
                finding(
                    Code::D003,
                    Severity::Warning,
                    format!(
                        "the body of '{}' names skill '{name}' without declaring it a companion: the two can arrive apart",
                        e.name
                    ),
                    format!(
                        "if '{}' cannot work without '{name}', add it to `companions:`; otherwise take the name out of the body",
                        e.name
                    ),
                )
                .skill(e)
                .line(Some(line))
                .related(name),
            );
        }
    }
    out
}

/// D004: a skill the agent sees declares a companion the agent cannot load.
fn d004(a: &AgentInput) -> Vec<Finding> {
    let agent = a.agent();
    let mut out = Vec::new();
    for (skill, companion) in &a.view.companions_not_allowed {
        let Some(s) = a.view.get(skill) else {
            continue;
        };
        let (message, fix) = if agent.config.skills.contains(companion) {
            (
                format!(
                    "skill '{skill}' declares companion '{companion}', which agent {} allows but cannot load (no active skill of that name): '{skill}' arrives without it",
                    agent.name
                ),
                format!(
                    "create (or enable) '{companion}', or remove it from the companions of '{skill}'"
                ),
            )
        } else {
            (
                format!(
                    "skill '{skill}' declares companion '{companion}', which agent {} does not allow: the pair cannot travel for it, and the allowlist is never widened",
                    agent.name
                ),
                format!(
                    "add '{companion}' to the skills of agent {}, or remove it from the companions of '{skill}'",
                    agent.name
                ),
            )
        };
        out.push(
            finding(Code::D004, Severity::Warning, message, fix)
                .agent(&agent.name)
                .skill(&s.entry)
                .line(s.entry.lines.key("companions"))
                .related(companion.clone()),
        );
    }
    out
}

/// D014: a skill the agent allows declares `requires:` the agent cannot meet: it is offered
/// with the reasons (the agent's `unmet_requires = "offer"`) or withheld. The reasons are the
/// view's, decided from mechanical inputs (the agent's view and grants, the registered tools,
/// the upstream servers with tools listed, `PATH`).
fn d014(a: &AgentInput, index: &Index) -> Vec<Finding> {
    let agent = a.agent();
    let mut out = Vec::new();
    let fix = |skill: &str, withheld: bool| {
        format!(
            "meet them (allow or raise the required skill, grant the tool class, connect the server, install the program), or {}",
            if withheld {
                format!("drop '{skill}' from the skills of agent {}", agent.name)
            } else {
                format!(
                    "withhold the skill: `skillbase agent set {} --unmet-requires withhold`",
                    agent.name
                )
            }
        )
    };
    for &i in &a.view.unmet {
        let s = &a.view.skills[i];
        out.push(
            finding(
                Code::D014,
                Severity::Warning,
                format!(
                    "skill '{}' is offered to agent {} although its requirements are unmet: {}",
                    s.name(),
                    agent.name,
                    s.unmet.join("; ")
                ),
                fix(s.name(), false),
            )
            .agent(&agent.name)
            .skill(&s.entry)
            .line(s.entry.lines.key("requires")),
        );
    }
    for (name, why) in &a.view.withheld {
        let Some(e) = index.resolve(&agent.name, name) else {
            continue;
        };
        out.push(
            finding(
                Code::D014,
                Severity::Warning,
                format!(
                    "skill '{name}' is withheld from agent {} (unmet_requires = withhold): {}",
                    agent.name,
                    why.join("; ")
                ),
                fix(name, true),
            )
            .agent(&agent.name)
            .skill(e)
            .line(e.lines.key("requires")),
        );
    }
    out
}

/// D005: a skill declares `eager:` in its frontmatter (ignored).
fn d005(index: &Index) -> Vec<Finding> {
    index
        .all()
        .filter(|e| e.status != Status::Retired && e.frontmatter.contains_key("eager"))
        .map(|e| {
            finding(
                Code::D005,
                Severity::Warning,
                format!(
                    "skill '{}' declares `eager:` in its frontmatter, which is ignored: whether a skill is always in the prompt is each agent's setting",
                    e.name
                ),
                format!(
                    "remove the key, and list '{}' in the `eager` setting of the agents that need it every turn",
                    e.name
                ),
            )
            .skill(e)
            .line(e.lines.key("eager"))
        })
        .collect()
}

/// D006: an agent marks eager a name it does not allow (a no-op).
fn d006(a: &AgentInput) -> Vec<Finding> {
    let agent = a.agent();
    let NameSet::Names(eager) = &agent.config.eager else {
        return Vec::new();
    };
    eager
        .iter()
        .filter(|n| !agent.config.skills.contains(n.as_str()))
        .map(|n| {
            finding(
                Code::D006,
                Severity::Warning,
                format!(
                    "agent {} marks '{n}' eager but does not allow it: the name is a no-op",
                    agent.name
                ),
                format!(
                    "add '{n}' to the skills of agent {0}, or remove it from its eager list",
                    agent.name
                ),
            )
            .agent(&agent.name)
            .related(n.to_string())
        })
        .collect()
}

/// D007: a seed folder changed after its skill was edited in the store (the store won).
fn d007(inputs: &Inputs) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &inputs.diverged {
        let Some(e) = inputs.index.get(&d.scope, &d.name) else {
            continue;
        };
        let path = skillbase_format::text::escape_controls(&d.seed_path).into_owned();
        let seen = if d.read_now {
            "differs from"
        } else {
            "differed, when last synced, from"
        };
        out.push(
            finding(
                Code::D007,
                Severity::Warning,
                format!(
                    "the seed folder {path} of '{}' {seen} the store's revision {}: the skill was edited in the store, so the store won and the folder's changes are not applied",
                    e.name, e.active_rev
                ),
                format!(
                    "see the difference: `skillbase export {0}{1} --out /tmp/{0}-store && diff -ru /tmp/{0}-store '{path}'`; then take the folder's version (`skillbase put '{path}'{1}`) or bring the folder in line with the store",
                    e.name,
                    scope_flag(&e.scope)
                ),
            )
            .skill(e),
        );
    }
    out
}

/// D008: a skill the agent sees declares what the agent is not granted (every call needing it
/// is refused), a vault entry the vault does not hold, or a tool class no tool provides.
fn d008(inputs: &Inputs, a: &AgentInput) -> Vec<Finding> {
    let agent = a.agent();
    let grants = &agent.config.grants;
    let mut out = Vec::new();
    for s in &a.view.skills {
        let caps = &s.entry.meta.capabilities;
        if caps.is_empty() {
            continue;
        }
        let line = s.entry.lines.key("capabilities");
        let (refused, unknown) = d008_excess(inputs, grants, caps);
        let name = s.name();
        let about = |f: Finding| f.agent(&agent.name).skill(&s.entry).line(line);
        if !refused.is_empty() {
            out.push(about(d008_refused(&agent.name, name, &refused)).related(refused.join(", ")));
        }
        if !unknown.is_empty() {
            out.push(about(d008_unknown(name, &unknown)).related(unknown.join(", ")));
        }
        let missing: Vec<&str> = caps
            .vault
            .iter()
            .filter(|v| grants.vault.contains(v) && !inputs.vault.contains(v.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            out.push(about(d008_missing(&agent.name, name, &missing)).related(missing.join(", ")));
        }
    }
    out
}

/// What `caps` declares beyond `grants`: (what the agent is refused, as `kind:value`; the tool
/// classes no tool provides and no agent is granted).
fn d008_excess(
    inputs: &Inputs,
    grants: &Grants,
    caps: &Capabilities,
) -> (Vec<String>, Vec<String>) {
    let granted_anywhere = |class: &str| {
        inputs
            .all_agents
            .iter()
            .any(|x| x.config.grants.tools.iter().any(|t| t == class))
    };
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let excess = skillbase_runtime::grants_excess(
        grants,
        &strs(&caps.tools),
        &strs(&caps.vault),
        &strs(&caps.hosts),
    );
    let mut unknown = Vec::new();
    let mut refused = Vec::new();
    for x in excess {
        match x.strip_prefix("tools:") {
            Some(class) if !inputs.classes.contains(class) && !granted_anywhere(class) => {
                unknown.push(class.to_owned())
            }
            _ => refused.push(x),
        }
    }
    (refused, unknown)
}

/// D008's finding for skill `name` declaring `refused`, which agent `agent` is not granted.
fn d008_refused(agent: &AgentName, name: &str, refused: &[String]) -> Finding {
    finding(
        Code::D008,
        Severity::Error,
        format!(
            "skill '{name}' declares what agent {agent} is not granted ({}): every call that needs it while '{name}' drives is refused",
            refused.join(", ")
        ),
        format!(
            "grant it to agent {agent} (its `grants`), or remove it from the capabilities of '{name}' if the skill does not need it"
        ),
    )
}

/// D008's finding for skill `name` declaring the tool classes `unknown`, which no tool
/// provides.
fn d008_unknown(name: &str, unknown: &[String]) -> Finding {
    finding(
        Code::D008,
        Severity::Error,
        format!(
            "skill '{name}' declares tool class {}, which no tool here provides and no agent is granted",
            unknown.join(", ")
        ),
        format!(
            "fix the class in the capabilities of '{name}' (a typo?), or declare the tool that provides it"
        ),
    )
}

/// D008's finding for skill `name` declaring the vault entries `missing`, granted to agent
/// `agent` but not in the vault.
fn d008_missing(agent: &AgentName, name: &str, missing: &[&str]) -> Finding {
    finding(
        Code::D008,
        Severity::Error,
        format!(
            "skill '{name}' declares vault entry {}, granted to agent {agent} but not in the vault: every lookup fails",
            missing.join(", ")
        ),
        format!("set it: `skillbase vault set {}`", missing[0]),
    )
}

/// Whether one of `x` and `y` declares the other a companion (they travel together).
fn paired(x: &SkillEntry, y: &SkillEntry) -> bool {
    x.meta.companions.iter().any(|c| c.as_str() == y.name)
        || y.meta.companions.iter().any(|c| c.as_str() == x.name)
}

/// D009 (shared): two skills the agent sees (neither eager, not companions) with the same trigger
/// phrase: every message that fires one fires both.
fn d009_shared(a: &AgentInput) -> Vec<Finding> {
    let view = &a.view;
    let mut by_phrase: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for (i, phrase) in view.triggers.folded_phrases() {
        if view.is_eager(i) {
            continue;
        }
        let as_written = view.skills[i]
            .entry
            .meta
            .triggers
            .iter()
            .find(|t| skillbase_route::trigger::fold_for_matching(t.trim()) == phrase)
            .cloned()
            .unwrap_or_else(|| phrase.clone());
        let list = by_phrase.entry(phrase).or_default();
        if !list.iter().any(|(j, _)| *j == i) {
            list.push((i, as_written));
        }
    }
    let mut out = Vec::new();
    for (_, list) in by_phrase {
        let mut list = list;
        list.sort_by(|x, y| view.skills[x.0].name().cmp(view.skills[y.0].name()));
        // Pairs that do not travel together.
        let first = &view.skills[list[0].0];
        let others: Vec<&str> = list[1..]
            .iter()
            .map(|(j, _)| &view.skills[*j])
            .filter(|s| !paired(&first.entry, &s.entry))
            .map(|s| s.name())
            .collect();
        if others.is_empty() {
            continue;
        }
        let phrase = &list[0].1;
        out.push(
            finding(
                Code::D009,
                Severity::Warning,
                format!(
                    "skills '{}' and '{}' that agent {} sees share the trigger '{phrase}': every message that fires one injects both",
                    first.name(),
                    others.join("', '"),
                    a.agent().name
                ),
                format!(
                    "keep '{phrase}' on the one skill that can finish such a turn alone, and give the others triggers of their own (or none)"
                ),
            )
            .agent(&a.agent().name)
            .skill(&first.entry)
            .line(first.entry.lines.key("triggers"))
            .related(others.join(", ")),
        );
    }
    out
}

/// D009 (common): a trigger of a skill the agent sees fired on most of its recent turns.
fn d009_common(a: &AgentInput) -> Vec<Finding> {
    let view = &a.view;
    let n = a.turns.len();
    let mut fired: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for t in &a.turns {
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        for (skill, phrase) in &t.triggers {
            if seen.insert((skill, phrase)) {
                *fired.entry((skill, phrase)).or_default() += 1;
            }
        }
    }
    let mut out = Vec::new();
    for ((skill, phrase), k) in fired {
        if k * 2 <= n {
            continue;
        }
        // Still a trigger of the skill as the agent sees it now.
        let Some(&i) = view.by_name.get(skill) else {
            continue;
        };
        let s = &view.skills[i];
        if view.is_eager(i) || !s.entry.meta.triggers.iter().any(|t| t.trim() == phrase) {
            continue;
        }
        out.push(
            finding(
                Code::D009,
                Severity::Info,
                format!(
                    "the trigger '{phrase}' of '{skill}' fired on {k} of the last {n} turns of agent {}: it fires on most messages",
                    a.agent().name
                ),
                format!(
                    "if every turn needs '{skill}', make it eager for agent {} instead; otherwise narrow the trigger to words that name its task",
                    a.agent().name
                ),
            )
            .agent(&a.agent().name)
            .skill(&s.entry)
            .line(s.entry.lines.key("triggers"))
            .related(phrase.to_owned()),
        );
    }
    out
}

/// D010: the catalog overflowed the agent's budget on most of its recent turns (and still would).
fn d010(a: &AgentInput) -> Vec<Finding> {
    let agent = a.agent();
    let n = a.turns.len();
    let over: Vec<(usize, usize)> = a
        .turns
        .iter()
        .filter_map(|t| t.overflow)
        .filter(|(by_name, left_out)| by_name + left_out > 0)
        .collect();
    let need = skillbase_runtime::full_catalog_tokens(&a.view);
    if over.len() * 2 <= n || need <= agent.config.catalog_budget {
        return Vec::new();
    }
    let by_name = over.iter().map(|o| o.0).max().unwrap_or(0);
    let left_out = over.iter().map(|o| o.1).max().unwrap_or(0);
    vec![
        finding(
            Code::D010,
            Severity::Warning,
            format!(
                "the catalog of agent {} overflowed its budget of {} tokens on {} of its last {n} turns: up to {by_name} skills listed by name only and {left_out} not listed",
                agent.name,
                agent.config.catalog_budget,
                over.len()
            ),
            format!(
                "a catalog_budget of {need} tokens lists every skill of agent {} in full; raise it, or narrow the agent's skills",
                agent.name
            ),
        )
        .agent(&agent.name)
        .related(need.to_string()),
    ]
}

/// D011: a revision disabled for drift and not reviewed since; revisions waiting for approval.
fn d011(inputs: &Inputs) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &inputs.drift {
        let Some(e) = inputs.index.get(&d.scope, &d.name) else {
            continue;
        };
        out.push(
            finding(
                Code::D011,
                Severity::Warning,
                format!(
                    "skill '{}' was disabled for drift ({}) and nobody has reviewed it since: no agent is offered it",
                    e.name, d.why
                ),
                format!(
                    "read its runs (`skillbase runs {0}{1}`), then revert to a good revision (`skillbase revert {0} N{1}`), enable it again, or retire it",
                    e.name,
                    scope_flag(&e.scope)
                ),
            )
            .skill(e),
        );
    }
    for p in &inputs.pending {
        let Some(e) = inputs.index.get(&p.scope, &p.name) else {
            continue;
        };
        let revs: Vec<String> = p
            .revs
            .iter()
            .map(|(r, author)| format!("{r} by {author}"))
            .collect();
        out.push(
            finding(
                Code::D011,
                Severity::Info,
                format!(
                    "skill '{}' has revisions waiting for approval: {}",
                    e.name,
                    revs.join(", ")
                ),
                format!(
                    "read it (`skillbase show {0} --rev {1}{2}`), then approve it (`skillbase approve {0} {1}{2}`) or write a new revision",
                    e.name,
                    p.revs.last().map_or(0, |r| r.0),
                    scope_flag(&e.scope)
                ),
            )
            .skill(e),
        );
    }
    out
}

/// D012: a stored revision holds the value of a current vault entry (served scrubbed, stored in
/// clear).
fn d012(inputs: &Inputs) -> Vec<Finding> {
    inputs
        .secrets
        .iter()
        .map(|m| {
            let (file, what) = match &m.file {
                Some(f) => (f.clone(), format!("its file {f}")),
                None => ("message".to_owned(), "its message".to_owned()),
            };
            Finding {
                skill: Some(m.name.clone()),
                scope: Some(m.scope.to_string()),
                file: Some(file),
                ..finding(
                    Code::D012,
                    Severity::Error,
                    format!(
                        "revision {} of '{}' holds the value of vault entry {} in {what}: it is served scrubbed, but stored in clear, and revisions are never deleted",
                        m.rev, m.name, m.found
                    ),
                    format!(
                        "rotate the secret (a new value at its provider, then `skillbase vault set {}`): the stored copy is then no longer a live credential",
                        m.found
                    ),
                )
            }
            .related(m.found.clone())
        })
        .collect()
}

/// D015: a skill whose active revision has high or critical scan findings (served: it was
/// let through by policy, a trusted signer or an approval), or that was never scanned (written
/// before the gate). Retired skills are left out; a run that did not read scans says nothing.
fn d015(inputs: &Inputs) -> Vec<Finding> {
    use skillbase_store::scan::Severity as Level;
    let mut out = Vec::new();
    let Some(scans) = &inputs.scans else {
        return out;
    };
    for e in inputs.index.all().filter(|e| e.status != Status::Retired) {
        let key = (e.scope.to_string(), e.name.clone());
        let Some(scan) = scans.get(&key) else {
            out.push(
                finding(
                    Code::D015,
                    Severity::Info,
                    format!(
                        "skill '{}' revision {} was never scanned (written before the scanning gate)",
                        e.name, e.active_rev
                    ),
                    "scan the store (`skillbase scan --store`)".into(),
                )
                .skill(e),
            );
            continue;
        };
        let Some(worst) = scan.findings.iter().max_by_key(|f| f.severity) else {
            continue;
        };
        if worst.severity < Level::High {
            continue;
        }
        let severity = if worst.severity == Level::Critical {
            Severity::Error
        } else {
            Severity::Warning
        };
        out.push(
            Finding {
                file: Some(worst.file.clone()),
                line: u32::try_from(worst.line).ok().filter(|l| *l > 0),
                ..finding(
                    Code::D015,
                    severity,
                    format!(
                        "skill '{}' revision {} is served with a {} scan finding: {} ({}); {} findings in all",
                        e.name,
                        e.active_rev,
                        worst.severity,
                        worst.rule,
                        worst.why,
                        scan.findings.len()
                    ),
                    format!(
                        "{} Read the findings (`skillbase show {}{}`); retire the skill if it is hostile",
                        worst.fix,
                        e.name,
                        scope_flag(&e.scope)
                    ),
                )
                .skill(e)
            }
            .related(worst.rule.clone()),
        );
    }
    out
}

/// Description similarity between the view's skills, from the ranker: each skill's name and
/// description scored against the skills that can reach the bar, divided by its score
/// against itself. Per skill, the
/// others it reads as at least [`NEAR_DUPLICATE`] (kept sparse: a view may hold thousands).
fn near(view: &skillbase_runtime::AgentView) -> Vec<Vec<(usize, f32)>> {
    view.skills
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let query = format!(
                "{} {}",
                s.name().replace('-', " "),
                s.entry.meta.description
            );
            // Only the skills that can reach the bar are scored: a score per skill, per skill,
            // is quadratic in a library of thousands.
            let (own, scores) = view.bm25.scoring_near(&query, i as u32, NEAR_DUPLICATE);
            if own <= 0.0 {
                return Vec::new();
            }
            scores
                .iter()
                .map(|&(j, sc)| (j as usize, sc))
                .filter(|&(j, _)| j != i)
                .map(|(j, sc)| (j, (sc / own).min(1.0)))
                .filter(|&(_, r)| r >= NEAR_DUPLICATE)
                .collect()
        })
        .collect()
}

/// D013: near-duplicate skills the agent sees — for each, the other it is most likely to be
/// confused with, when each reads as the other with a similarity of at least
/// [`NEAR_DUPLICATE`] (the pair's similarity is the smaller direction; companions excepted).
fn d013(a: &AgentInput) -> Vec<Finding> {
    let view = &a.view;
    let near = near(view);
    let mut pairs: Vec<(usize, usize, f32)> = Vec::new();
    for (i, list) in near.iter().enumerate() {
        let best = list
            .iter()
            .filter(|(j, _)| !paired(&view.skills[i].entry, &view.skills[*j].entry))
            .filter_map(|&(j, r)| {
                let back = near[j].iter().find(|(k, _)| *k == i)?.1;
                Some((j, r.min(back)))
            })
            .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)));
        if let Some((j, sim)) = best {
            let (x, y) = if i < j { (i, j) } else { (j, i) };
            if !pairs.iter().any(|p| p.0 == x && p.1 == y) {
                pairs.push((x, y, sim));
            }
        }
    }
    pairs
        .into_iter()
        .map(|(x, y, sim)| {
            let (sx, sy) = (&view.skills[x], &view.skills[y]);
            finding(
                Code::D013,
                Severity::Warning,
                format!(
                    "skills '{}' and '{}' that agent {} sees are near-duplicates (description similarity {:.2}): the model is likely to load one for the other",
                    sx.name(),
                    sy.name(),
                    a.agent().name,
                    sim
                ),
                format!(
                    "merge them, or rewrite their descriptions to say what sets each apart (or keep only one in the skills of agent {})",
                    a.agent().name
                ),
            )
            .agent(&a.agent().name)
            .skill(&sx.entry)
            .line(sx.entry.lines.key("description"))
            .related(sy.name().to_owned())
        })
        .collect()
}
