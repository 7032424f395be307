//! The offered set: what an agent's model may call this turn, and what was withheld.
//!
//! Built-ins come first (from [`Builtin::ALL`]), then the registry's tools by name, then skills
//! with `inputs` as callable entries. A tool whose class is not granted is withheld: listed in
//! the report, never shown to the model.

use super::Dispatcher;
use crate::builtin::{ACTIVATION_CLASS, Builtin};
use crate::envelope::Envelope;
use crate::runtime::RuntimeError;
use crate::tool::{RegisteredTool, Registry, ToolSource};
use serde::Serialize;
use skillbase_format::Cost;
use skillbase_route::view::AgentView;
use skillbase_store::{Agent, AgentName};
use std::collections::HashMap;
use std::sync::Arc;

/// The kind of an offered entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A tool: a built-in, or one the operator configured or the harness registered.
    Tool,
    /// A skill with `inputs`, callable by its own name (`skill_<name>`).
    Skill,
}

/// One entry of the offered set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferedEntry {
    /// `tool:<name>` or `skill:<name>`.
    pub id: String,
    /// The name the model calls; unique within the set.
    pub wire_name: String,
    /// Tool or skill.
    pub kind: EntryKind,
    /// `operator` for configured tools, `skillbase` for built-ins, or the skill revision's author.
    pub author: String,
    /// What the model is told the entry does.
    pub description: String,
    /// JSON Schema of the arguments, as offered (for `load_skill`, a closed enum of names).
    pub parameters: serde_json::Value,
    /// The latency class.
    pub cost: Cost,
    #[serde(skip)]
    pub(super) target: Target,
}

/// What an offered entry runs.
#[derive(Clone)]
pub(super) enum Target {
    /// One of the runtime's own tools.
    Builtin(Builtin),
    /// A registered tool, as the registry held it when the set was built (a call keeps using
    /// it even if an upstream's list changes meanwhile).
    Tool(Arc<RegisteredTool>),
    /// A skill with inputs, by name.
    Skill(String),
}

impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Builtin(a), Target::Builtin(b)) => a == b,
            (Target::Tool(a), Target::Tool(b)) => Arc::ptr_eq(a, b),
            (Target::Skill(a), Target::Skill(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Builtin(b) => write!(f, "Builtin({})", b.name()),
            Target::Tool(t) => write!(f, "Tool({})", t.decl.name),
            Target::Skill(s) => write!(f, "Skill({s})"),
        }
    }
}

/// What a turn offers, and what was withheld.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OfferedSet {
    /// What the model may call, in offer order (built-ins, registered tools, skills).
    pub entries: Vec<OfferedEntry>,
    /// Tools not granted to the agent, never shown to the model.
    pub withheld: Vec<String>,
    #[serde(skip)]
    by_wire: HashMap<String, usize>,
    /// Each entry as a turn offers it, with its token count: built once with the set, so a
    /// turn copies them instead of serializing and counting every tool again.
    #[serde(skip)]
    defs: Vec<(skillbase_route::turn::ToolDef, u32)>,
}

impl OfferedSet {
    /// The entry the model calls by this name.
    pub fn get(&self, wire_name: &str) -> Option<&OfferedEntry> {
        self.by_wire.get(wire_name).map(|&i| &self.entries[i])
    }

    /// Every entry with the tool definition a turn offers for it and that definition's tokens.
    pub(super) fn with_defs(
        &self,
    ) -> impl Iterator<Item = (&OfferedEntry, &(skillbase_route::turn::ToolDef, u32))> {
        self.entries.iter().zip(&self.defs)
    }
}

/// Per agent, for one index generation and agent version: the offered set, and the vault
/// entries and hosts a call may use when no skill drives (the agent's grants).
#[derive(Clone)]
pub(super) struct Offer {
    generation: u64,
    version: i64,
    tools: u64,
    pub(super) set: Arc<OfferedSet>,
    pub(super) vault: Arc<Vec<String>>,
    pub(super) hosts: Arc<Vec<String>>,
}

pub(super) type OfferedCache = HashMap<AgentName, Offer>;

impl Dispatcher {
    pub(super) fn agent(&self, name: &AgentName) -> Result<Arc<Agent>, RuntimeError> {
        self.runtime
            .store
            .agent_cached(name)
            .ok_or_else(|| RuntimeError::UnknownAgent(name.to_string()))
    }

    /// The offered set for an agent: granted tools, the runtime's own tools, and skills with
    /// `inputs` as callable entries. Tools whose class is not granted are withheld.
    pub fn offered(&self, agent: &AgentName) -> Result<Arc<OfferedSet>, RuntimeError> {
        Ok(self.offered_for(agent)?.1.set)
    }

    /// The agent and its offered set. The set is cached per index generation and agent version
    /// (what its view is cached by), so a call finds it without touching the view.
    pub(super) fn offered_for(
        &self,
        agent: &AgentName,
    ) -> Result<(Arc<Agent>, Offer), RuntimeError> {
        let a = self.agent(agent)?;
        let generation = self.runtime.store.index().generation;
        let tools = self.registry.generation();
        if let Some(offer) = self
            .offered_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(agent)
            && offer.generation == generation
            && offer.version == a.version
            && offer.tools == tools
        {
            return Ok((a, offer.clone()));
        }
        let view = self.runtime.view(agent)?;
        let mut set = OfferedSet::default();
        set.push_builtins(&a, &view);
        set.push_registered(&a, &self.registry.current());
        set.push_skills(&view);
        set.index();
        let offer = Offer {
            generation: view.generation,
            version: a.version,
            tools,
            set: Arc::new(set),
            vault: Arc::new(Envelope::for_call(&a, None).vault()),
            hosts: Arc::new(Envelope::for_call(&a, None).hosts()),
        };
        self.offered_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.clone(), offer.clone());
        Ok((a, offer))
    }
}

impl OfferedSet {
    /// The runtime's own tools, from the one table of them. The activation tools are offered
    /// as a turn offers them: `load_skill` with `name` a closed enum of the loadable skills
    /// (not offered when every visible skill is eager: there is nothing to load), and none
    /// of the activation class when the agent sees no skill at all.
    fn push_builtins(&mut self, a: &Agent, view: &AgentView) {
        for b in Builtin::ALL {
            let class = b.class();
            if class == ACTIVATION_CLASS && view.skills.is_empty() {
                continue;
            }
            if class != ACTIVATION_CLASS && !Envelope::for_call(a, None).class_granted(class) {
                self.withheld.push(b.name().to_owned());
                continue;
            }
            let (description, parameters) = match b {
                Builtin::LoadSkill => match &view.load_tool(None).tool {
                    Some(t) => (t.description.clone(), (*t.parameters).clone()),
                    None => continue,
                },
                _ => (b.description().to_owned(), b.parameters()),
            };
            self.entries.push(OfferedEntry {
                id: format!("tool:{}", b.name()),
                wire_name: b.name().to_owned(),
                kind: EntryKind::Tool,
                author: "skillbase".into(),
                description,
                parameters,
                cost: Cost::Immediate,
                target: Target::Builtin(b),
            });
        }
    }

    /// The registry's tools by name; those whose class is not granted are withheld.
    fn push_registered(&mut self, a: &Agent, registry: &Registry) {
        for t in registry.all() {
            let d = &t.decl;
            if !Envelope::for_call(a, None).class_granted(&d.class) {
                self.withheld.push(d.name.clone());
                continue;
            }
            self.entries.push(OfferedEntry {
                id: t.id.clone(),
                wire_name: d.name.clone(),
                kind: EntryKind::Tool,
                author: match &t.source {
                    ToolSource::Mcp { server, .. } => format!("mcp:{server}"),
                    _ => "operator".into(),
                },
                description: d.description.clone(),
                parameters: d.parameters.clone(),
                cost: d.cost,
                target: Target::Tool(t.clone()),
            });
        }
    }

    /// The skills with `inputs` that are not eager or explicit only, each callable as
    /// `skill_<name>` (hyphens
    /// as underscores; a suffix `_2`, `_3`… when that wire name is taken).
    fn push_skills(&mut self, view: &AgentView) {
        for (i, s) in view.skills.iter().enumerate() {
            let Some(inputs) = &s.entry.meta.inputs else {
                continue;
            };
            if view.is_eager(i) || view.is_explicit_only(i) {
                continue;
            }
            let base = format!("skill_{}", s.name().replace('-', "_"));
            let mut wire = base.clone();
            let mut n = 2;
            while self.entries.iter().any(|e| e.wire_name == wire) {
                wire = format!("{base}_{n}");
                n += 1;
            }
            self.entries.push(OfferedEntry {
                id: format!("skill:{}", s.name()),
                wire_name: wire,
                kind: EntryKind::Skill,
                author: s.entry.author.clone(),
                description: format!(
                    "Load the skill '{}' with arguments. {}",
                    s.name(),
                    s.entry.meta.description
                ),
                parameters: inputs.clone(),
                cost: s.entry.meta.cost,
                target: Target::Skill(s.name().to_owned()),
            });
        }
    }

    /// Index the entries once they are all in: by wire name, and each with the tool definition
    /// a turn offers for it and that definition's tokens.
    fn index(&mut self) {
        self.by_wire = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.wire_name.clone(), i))
            .collect();
        self.defs = self
            .entries
            .iter()
            .map(|e| {
                let def = skillbase_route::turn::ToolDef {
                    name: e.wire_name.clone(),
                    description: format!("[{}] {}", e.id, e.description),
                    parameters: Arc::new(e.parameters.clone()),
                };
                let tokens = skillbase_route::tokens::count(
                    &serde_json::to_string(&def).unwrap_or_default(),
                );
                (def, tokens)
            })
            .collect();
    }
}
