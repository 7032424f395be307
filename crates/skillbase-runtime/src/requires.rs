//! `requires:` per agent: which of a skill's declared requirements the agent cannot meet, in
//! words, from mechanical inputs only — the agent's view (the skills it may load and their
//! versions), its grants, the tool classes and upstream MCP servers the registry holds, and the
//! programs on this server's `PATH`.
//!
//! A view computes it once when it is built ([`crate::view::AgentView::build_with`]): a skill
//! with unmet requirements is offered with the reasons (in the turn report, and in its body so
//! the model knows before it starts) or, under the agent's `unmet_requires = "withhold"`
//! policy, withheld from everything the model sees. A skill that requires a withheld skill is
//! itself unmet, to a fixed point. The environment's answers are kept with the view, and
//! [`crate::Runtime::view`] builds the view again when they change (a server connected, a
//! program installed).

use crate::builtin::{ACTIVATION_CLASS, Builtin};
use crate::tool::{Registry, ToolSource};
use skillbase_store::{Agent, Index, NameSet, SkillEntry, Status};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What this process provides that skills may require: the tool classes some tool provides
/// (built-in or registered) and the upstream MCP servers that have listed tools, with their
/// tools' classes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// Tool classes some tool provides.
    pub classes: HashSet<String>,
    /// Upstream MCP servers with tools listed, each with the classes of its tools.
    pub servers: HashMap<String, BTreeSet<String>>,
}

impl Environment {
    /// The built-in tools' classes alone (no registry: a runtime without a dispatcher).
    pub fn builtins() -> Environment {
        Environment {
            classes: Builtin::ALL.iter().map(|b| b.class().to_owned()).collect(),
            servers: HashMap::new(),
        }
    }

    /// The built-ins and every tool of `registry`.
    pub fn of_registry(registry: &Registry) -> Environment {
        let mut env = Environment::builtins();
        for t in registry.all() {
            env.classes.insert(t.decl.class.clone());
            if let ToolSource::Mcp { server, .. } = &t.source {
                env.servers
                    .entry(server.clone())
                    .or_default()
                    .insert(t.decl.class.clone());
            }
        }
        env
    }
}

/// One environment question a view's requirements asked: its answer is kept with the view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Need {
    Class(String),
    Server(String),
    Program(String),
}

/// The answer to a [`Need`] for one agent: `None` when met, else why not.
pub(crate) type Answer = Option<String>;

impl Need {
    pub(crate) fn answer(&self, agent: &Agent, env: &Environment) -> Answer {
        let granted =
            |c: &str| c == ACTIVATION_CLASS || agent.config.grants.tools.iter().any(|t| t == c);
        match self {
            Need::Class(c) if !granted(c) => Some(format!(
                "requires tool class '{c}', which this agent is not granted"
            )),
            Need::Class(c) if !env.classes.contains(c) => Some(format!(
                "requires tool class '{c}', which no tool of this server provides"
            )),
            Need::Class(_) => None,
            Need::Server(s) => match env.servers.get(s) {
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
            Need::Program(p) => (!on_path(p))
                .then(|| format!("requires the program '{p}', which is not on this server's PATH")),
        }
    }
}

/// The environment questions a skill's requirements ask.
pub(crate) fn needs(entry: &SkillEntry) -> impl Iterator<Item = Need> + '_ {
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
pub fn environment_unmet(meta: &skillbase_format::SkillMeta, env: &Environment) -> Vec<String> {
    let r = &meta.requires;
    let mut out = Vec::new();
    for c in &r.tools {
        if c != ACTIVATION_CLASS && !env.classes.contains(c) {
            out.push(format!(
                "requires tool class '{c}', which no tool of this server provides"
            ));
        }
    }
    for s in &r.mcp {
        if !env.servers.contains_key(s) {
            out.push(format!(
                "requires MCP server '{s}', which has no tools listed here (not configured in [mcp_servers], or not connected)"
            ));
        }
    }
    for p in &r.bins {
        if !on_path(p) {
            out.push(format!(
                "requires the program '{p}', which is not on this server's PATH"
            ));
        }
    }
    out
}

/// How long a `PATH` lookup is trusted before it is made again.
const PROGRAM_TTL: Duration = Duration::from_secs(30);

type ProgramCache = Mutex<HashMap<String, (Instant, bool)>>;

/// Whether `program` is an executable file in a directory of `PATH` (looked up at most every
/// 30 seconds per program). A name with a path separator is never looked up.
pub fn on_path(program: &str) -> bool {
    static CACHE: OnceLock<ProgramCache> = OnceLock::new();
    if program.is_empty() || program.contains(['/', '\\']) {
        return false;
    }
    let cache = CACHE.get_or_init(Default::default);
    let now = Instant::now();
    if let Some(&(at, found)) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(program)
        && now.duration_since(at) < PROGRAM_TTL
    {
        return found;
    }
    let found = lookup(program);
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(program.to_owned(), (now, found));
    found
}

fn lookup(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let candidate = dir.join(program);
        match std::fs::metadata(&candidate) {
            Ok(m) if m.is_file() => executable(&m),
            _ => false,
        }
    })
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_m: &std::fs::Metadata) -> bool {
    true
}

/// The requirements of an agent's skills, decided: which are offered with unmet requirements
/// (and why), which are withheld (and why), and the environment answers it rests on.
#[derive(Debug, Default)]
pub(crate) struct Decided {
    /// Skills offered although requirements are unmet: name → reasons.
    pub(crate) offered: HashMap<String, Vec<String>>,
    /// Skills withheld by the agent's policy, by name, with the reasons (sorted by name).
    pub(crate) withheld: Vec<(String, Vec<String>)>,
    /// Every environment question asked, with its answer.
    pub(crate) answers: Vec<(Need, Answer)>,
}

/// Decide the requirements of `allowed` (the agent's visible skills, sorted by name) for
/// `agent`: environment needs first, then required skills against what stays visible, to a
/// fixed point when unmet skills are withheld.
pub(crate) fn decide(
    agent: &Agent,
    index: &Index,
    allowed: &[Arc<SkillEntry>],
    env: &Environment,
) -> Decided {
    let mut d = Decided::default();
    if allowed.iter().all(|e| e.meta.requires.is_empty()) {
        return d;
    }
    let withhold = agent.config.policies.unmet_requires == skillbase_store::UnmetRequires::Withhold;
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
pub(crate) fn answers_hold(agent: &Agent, env: &Environment, answers: &[(Need, Answer)]) -> bool {
    answers
        .iter()
        .all(|(need, a)| need.answer(agent, env) == *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_and_paths_never_looked_up() {
        assert!(on_path("sh"));
        assert!(!on_path("skillbase-no-such-program-x"));
        assert!(!on_path("/bin/sh"));
        assert!(!on_path(""));
    }
}
