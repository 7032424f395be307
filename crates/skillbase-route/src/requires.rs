//! `requires:` per agent: which of a skill's declared requirements the agent cannot meet, in
//! words, from mechanical inputs only — the agent's view (the skills it may load and their
//! versions), its grants, and what the environment [`Provides`]: tool classes, upstream MCP
//! servers with their tools' classes, programs. The runtime answers those from its tool table
//! and `PATH` (the one I/O, kept there); the decisions here only ask.
//!
//! A view decides once when it is built ([`crate::view::AgentView::build`]): a skill with unmet
//! requirements is offered with the reasons (in the turn report, and in its body so the model
//! knows before it starts) or, under the agent's `unmet_requires = "withhold"` policy, withheld
//! from everything the model sees. A skill that requires a withheld skill is itself unmet, to a
//! fixed point. The environment's answers are kept with the view, and the runtime builds the
//! view again when [`answers_hold`] says they changed (a server connected, a program
//! installed).

use crate::agent::{Agent, NameSet, UnmetRequires};
use crate::index::{Index, SkillEntry, Status};
use crate::tooldef::ACTIVATION_CLASS;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// What the process skills run in provides that they may require, as the decisions ask it.
pub trait Provides {
    /// Whether some tool (built-in or registered) provides tool class `class`.
    fn class(&self, class: &str) -> bool;
    /// The classes of the tools of upstream MCP server `server`, when it has tools listed.
    fn server(&self, server: &str) -> Option<&BTreeSet<String>>;
    /// Whether `program` is installed where skills run (on `PATH`).
    fn program(&self, program: &str) -> bool;
}

impl<P: Provides + ?Sized> Provides for Arc<P> {
    fn class(&self, class: &str) -> bool {
        (**self).class(class)
    }
    fn server(&self, server: &str) -> Option<&BTreeSet<String>> {
        (**self).server(server)
    }
    fn program(&self, program: &str) -> bool {
        (**self).program(program)
    }
}

/// One environment question a view's requirements asked: its answer is kept with the view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Need {
    /// A tool class some granted tool must provide.
    Class(String),
    /// An upstream MCP server with tools of a granted class.
    Server(String),
    /// A program on `PATH`.
    Program(String),
}

/// The answer to a [`Need`] for one agent: `None` when met, else why not.
pub type Answer = Option<String>;

impl Need {
    /// Ask `env` this question for `agent`.
    pub fn answer(&self, agent: &Agent, env: &dyn Provides) -> Answer {
        let granted =
            |c: &str| c == ACTIVATION_CLASS || agent.config.grants.tools.iter().any(|t| t == c);
        match self {
            Need::Class(c) if !granted(c) => Some(format!(
                "requires tool class '{c}', which this agent is not granted"
            )),
            Need::Class(c) if !env.class(c) => Some(format!(
                "requires tool class '{c}', which no tool of this server provides"
            )),
            Need::Class(_) => None,
            Need::Server(s) => match env.server(s) {
                None => Some(format!(
                    "requires MCP server '{s}', which has no tools listed here (not configured in [mcp_servers], or not connected)"
                )),
                Some(classes) if !classes.iter().any(|c| granted(c)) => Some(format!(
                    "requires MCP server '{s}', whose tools (class {}) this agent is not granted",
                    classes
                        .iter()
                        .map(|c| format!("'{c}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Some(_) => None,
            },
            Need::Program(p) => (!env.program(p))
                .then(|| format!("requires the program '{p}', which is not on this server's PATH")),
        }
    }
}

/// The environment questions a skill's requirements ask.
pub fn needs(entry: &SkillEntry) -> impl Iterator<Item = Need> + '_ {
    let r = &entry.meta.requires;
    r.tools
        .iter()
        .map(|c| Need::Class(c.clone()))
        .chain(r.mcp.iter().map(|s| Need::Server(s.clone())))
        .chain(r.bins.iter().map(|p| Need::Program(p.clone())))
}

/// What a skill requires that this process provides to no agent: a tool class no tool
/// provides, an upstream server with no tools listed, a program not on `PATH` — the warnings of
/// a write or an import (agents' grants and allowlists are the view's and the doctor's).
pub fn environment_unmet(meta: &skillbase_format::SkillMeta, env: &dyn Provides) -> Vec<String> {
    let r = &meta.requires;
    let mut out = Vec::new();
    for c in &r.tools {
        if c != ACTIVATION_CLASS && !env.class(c) {
            out.push(format!(
                "requires tool class '{c}', which no tool of this server provides"
            ));
        }
    }
    for s in &r.mcp {
        if env.server(s).is_none() {
            out.push(format!(
                "requires MCP server '{s}', which has no tools listed here (not configured in [mcp_servers], or not connected)"
            ));
        }
    }
    for p in &r.bins {
        if !env.program(p) {
            out.push(format!(
                "requires the program '{p}', which is not on this server's PATH"
            ));
        }
    }
    out
}

/// The requirements of an agent's skills, decided: which are offered with unmet requirements
/// (and why), which are withheld (and why), and the environment answers it rests on.
#[derive(Debug, Default)]
pub struct Decided {
    /// Skills offered although requirements are unmet: name → reasons.
    pub offered: HashMap<String, Vec<String>>,
    /// Skills withheld by the agent's policy, by name, with the reasons (sorted by name).
    pub withheld: Vec<(String, Vec<String>)>,
    /// Every environment question asked, with its answer.
    pub answers: Vec<(Need, Answer)>,
}

/// Decide the requirements of `allowed` (the agent's visible skills, sorted by name) for
/// `agent`: environment needs first, then required skills against what stays visible, to a
/// fixed point when unmet skills are withheld.
pub fn decide(
    agent: &Agent,
    index: &Index,
    allowed: &[Arc<SkillEntry>],
    env: &dyn Provides,
) -> Decided {
    let mut d = Decided::default();
    if allowed.iter().all(|e| e.meta.requires.is_empty()) {
        return d;
    }
    let withhold = agent.config.policies.unmet_requires == UnmetRequires::Withhold;
    // Environment questions, each asked once.
    let mut asked: HashMap<Need, Answer> = HashMap::new();
    let env_reasons: Vec<Vec<String>> = allowed
        .iter()
        .map(|e| {
            needs(e)
                .filter_map(|need| {
                    asked
                        .entry(need.clone())
                        .or_insert_with(|| need.answer(agent, env))
                        .clone()
                })
                .collect()
        })
        .collect();
    let by_name: HashMap<&str, usize> = allowed
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), i))
        .collect();
    // Required skills, against the visible set, which shrinks as skills are withheld: passes
    // until none is withheld anew (one pass when unmet skills are offered).
    let mut reasons: Vec<Vec<String>> = vec![Vec::new(); allowed.len()];
    let mut out = vec![false; allowed.len()];
    loop {
        let mut changed = false;
        for (i, e) in allowed.iter().enumerate() {
            if out[i] {
                continue;
            }
            let mut why = env_reasons[i].clone();
            for r in &e.meta.requires.skills {
                let unmet = match by_name.get(r.name.as_str()) {
                    Some(&j) if out[j] => Some(format!(
                        "requires skill '{}', which is withheld from this agent (its own requirements are unmet)",
                        r.describe()
                    )),
                    Some(&j) => {
                        let v = allowed[j].meta.semver();
                        (!r.accepts(v.as_ref())).then(|| match v {
                            Some(v) => format!(
                                "requires skill '{}', and this agent sees version {v}",
                                r.describe()
                            ),
                            None => format!(
                                "requires skill '{}', and the revision this agent sees declares no version",
                                r.describe()
                            ),
                        })
                    }
                    None => Some(not_visible(agent, index, r)),
                };
                why.extend(unmet);
            }
            if withhold && !why.is_empty() {
                out[i] = true;
                changed = true;
            }
            reasons[i] = why;
        }
        if !withhold || !changed {
            break;
        }
    }
    for (i, e) in allowed.iter().enumerate() {
        if reasons[i].is_empty() {
            continue;
        }
        let why = std::mem::take(&mut reasons[i]);
        if out[i] {
            d.withheld.push((e.name.clone(), why));
        } else {
            d.offered.insert(e.name.clone(), why);
        }
    }
    // Asked again, each on its own, by `answers_hold`: their order does not matter.
    d.answers = asked.into_iter().collect();
    d
}

/// Why a required skill is not among those the agent may load.
fn not_visible(agent: &Agent, index: &Index, r: &skillbase_format::RequiredSkill) -> String {
    let shown = r.describe();
    match index.resolve(&agent.name, r.name.as_str()) {
        None => format!("requires skill '{shown}', which the store does not hold"),
        Some(e) if e.status != Status::Active => {
            format!("requires skill '{shown}', which is {}", e.status)
        }
        Some(_) if !allows(&agent.config.skills, r.name.as_str()) => {
            format!("requires skill '{shown}', which this agent's allowlist leaves out")
        }
        Some(_) => format!("requires skill '{shown}', which this agent cannot load"),
    }
}

fn allows(set: &NameSet, name: &str) -> bool {
    set.contains(name)
}

/// Whether the environment's answers a view rests on still hold.
pub fn answers_hold(agent: &Agent, env: &dyn Provides, answers: &[(Need, Answer)]) -> bool {
    answers
        .iter()
        .all(|(need, a)| need.answer(agent, env) == *a)
}
