//! An agent's view: exactly the skills it may see (allowlist ∩ scope resolution, active only,
//! less what [`requires`](crate::requires) withholds), with everything a turn needs
//! precomputed. The runtime caches it until the index, the agent or an environment answer
//! changes.

use crate::agent::{Agent, NameSet, UnmetRequires};
use crate::index::{Index, SkillEntry, Status};
use crate::rank::Bm25;
use crate::requires::{Answer, Need, Provides};
use crate::tokens;
use crate::tooldef::{LOAD_SKILL, LOAD_SKILL_DESCRIPTION, ToolDef};
use crate::trigger::TriggerMatcher;
use serde_json::json;
use skillbase_format::prompt::html_escape;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

/// One skill in a view.
#[derive(Debug)]
pub struct ViewSkill {
    /// The index entry of the skill's active revision (meta, body, file list) at build time.
    pub entry: Arc<SkillEntry>,
    /// The name, shared by every report that mentions the skill.
    pub name_ref: crate::turn::report::Name,
    /// The full catalog entry (`<skill>…</skill>`).
    pub catalog_entry: String,
    /// Tokens of `catalog_entry` (o200k_base).
    pub catalog_tokens: u32,
    /// The name-only catalog entry.
    pub name_entry: String,
    /// Tokens of `name_entry` (o200k_base).
    pub name_tokens: u32,
    /// Companions the agent may see, as indices into [`AgentView::skills`]: the declared
    /// `companions`, then the required skills marked `travel: true`.
    pub companions: Vec<usize>,
    /// Why its `requires:` are unmet for this agent (empty when they are met); offered anyway,
    /// under the agent's `unmet_requires = "offer"`.
    pub unmet: Vec<String>,
    wrapped: OnceLock<(String, u32)>,
}

impl ViewSkill {
    /// The skill's name, as the agent loads it.
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// The body wrapped so the model can tell it from the conversation, and its token count.
    pub fn wrapped(&self) -> &(String, u32) {
        self.wrapped.get_or_init(|| {
            let text = wrap_body_for(&self.entry, &self.entry.body, None, false, &self.unmet);
            let n = tokens::count(&text);
            (text, n)
        })
    }
}

/// Wrap a skill body for the model: a `<skill_content>` element naming the skill and revision,
/// and listing its other files, each named by its `skill://` URI and digest when `uris` is
/// set: what a client that does not share the server's disk (MCP over HTTP) can read, with
/// `resources/read`; and, when the skill's `requires:` are unmet for the agent, a
/// `<requires_unmet>` line before the body saying what is missing.
pub fn wrap_body_for(
    entry: &SkillEntry,
    body: &str,
    companion_of: Option<&str>,
    uris: bool,
    unmet: &[String],
) -> String {
    let mut out = String::with_capacity(body.len() + 128);
    out.push_str("<skill_content name=\"");
    html_escape(&entry.name, &mut out);
    out.push_str(&format!("\" revision=\"{}\"", entry.active_rev));
    if let Some(of) = companion_of {
        out.push_str(" companion_of=\"");
        html_escape(of, &mut out);
        out.push('"');
    }
    out.push_str(">\n");
    if !unmet.is_empty() {
        out.push_str("<requires_unmet>");
        html_escape(&unmet.join("; "), &mut out);
        out.push_str("</requires_unmet>\n");
    }
    out.push_str(body);
    out.push('\n');
    let others: Vec<&str> = entry
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| *p != "SKILL.md" && *p != "skill.md")
        .collect();
    if !others.is_empty() {
        out.push_str("<skill_resources>\n");
        for p in others {
            if uris {
                let digest = entry
                    .files
                    .iter()
                    .find(|f| f.path == p)
                    .map(|f| f.digest.to_string())
                    .unwrap_or_default();
                out.push_str("<file uri=\"");
                html_escape(&skillbase_format::uri::file_uri(&entry.name, p), &mut out);
                out.push_str(&format!("\" digest=\"{digest}\">"));
            } else {
                out.push_str("<file>");
            }
            html_escape(p, &mut out);
            out.push_str("</file>\n");
        }
        if uris {
            out.push_str("Read a file with resources/read and its uri.\n");
        }
        out.push_str("</skill_resources>\n");
    }
    out.push_str("</skill_content>");
    out
}

/// What a skill's score is multiplied by when the message holds one of its `when_not_to_use`
/// phrases.
pub const NEGATIVE_FACTOR: f32 = 0.2;

/// What one agent may see.
#[derive(Debug)]
pub struct AgentView {
    /// The agent as it was when the view was built; its `version` and [`Self::generation`]
    /// decide when the runtime's cache (`Engine::view`) builds the view again.
    pub agent: Arc<Agent>,
    /// The index generation this view was built from.
    pub generation: u64,
    /// Allowed, active skills, sorted by name.
    pub skills: Vec<ViewSkill>,
    /// Each skill's name to its index in [`Self::skills`].
    pub by_name: HashMap<String, usize>,
    /// The agent's eager skills that it may see, in order.
    pub eager: Vec<usize>,
    /// `eager` as a mask over [`Self::skills`], for [`Self::is_eager`] (asked once per skill
    /// per turn: a list search there was a third of a turn at 10,000 skills).
    eager_mask: Vec<bool>,
    /// Eager names the agent does not allow (no-ops, reported by the doctor).
    pub eager_not_allowed: Vec<String>,
    /// Declared companions outside the allowlist: (skill, companion).
    pub companions_not_allowed: Vec<(String, String)>,
    /// Skills whose `requires:` are unmet and that the agent's `unmet_requires = "withhold"`
    /// leaves out of everything the model sees, with why (sorted by name).
    pub withheld: Vec<(String, Vec<String>)>,
    /// Skills offered although their `requires:` are unmet (`ViewSkill::unmet` says why).
    pub unmet: Vec<usize>,
    /// The environment's answers the requirements rest on (a view is built again when they
    /// change: [`crate::requires::answers_hold`]).
    pub answers: Vec<(Need, Answer)>,
    /// Per skill: `disable-model-invocation: true`, so only the user's explicit invocation
    /// places it (never the catalog, `load_skill`, `search_skills`, triggers, paths or eager).
    /// Such a skill is still in the view: a turn reports it, the doctor and the studio see it.
    explicit_only: Vec<bool>,
    /// Every skill's trigger phrases, compiled once; hits point into [`Self::skills`].
    pub triggers: TriggerMatcher,
    /// Every skill's `paths:` globs, compiled once; hits point into [`Self::skills`].
    pub paths: crate::paths::PathMatcher,
    /// Every skill's `when_not_to_use` phrases, compiled once: a phrase in the message keeps
    /// that skill's triggers from firing and lowers its rank.
    pub negatives: TriggerMatcher,
    /// BM25 over each skill's name, description, `when_to_use`, triggers and body opening;
    /// document `i` is `skills[i]`.
    pub bm25: Bm25,
    /// The skills' vectors for the semantic stage, once every one of them has a vector (set by
    /// the runtime's semantic stage).
    pub semantic: OnceLock<Arc<crate::fusion::SemanticMatrix>>,
    /// Until [`AgentView::semantic`] is set: the last incomplete matrix, with the count of
    /// vector arrivals it was built after (the runtime's), so that turns while vectors are
    /// being computed rebuild it only when some have arrived.
    pub semantic_partial: std::sync::Mutex<Option<(u64, Arc<crate::fusion::SemanticMatrix>)>>,
    /// Per skill, contiguous (the ranked catalog walks them in relevance order): tokens of the
    /// full catalog entry (`ViewSkill::catalog_tokens`).
    pub full_tokens: Vec<u32>,
    /// Per skill, contiguous like `full_tokens`: tokens of the name-only entry
    /// (`ViewSkill::name_tokens`).
    pub name_only_tokens: Vec<u32>,
    /// Every skill's name, in view order, shared whole by the reports of its turns.
    pub names: Arc<[crate::turn::report::Name]>,
    /// The `load_skill` tool per cadence (no limit, then each cost class), built on first use.
    load_tools: [OnceLock<LoadTool>; 4],
}

/// The `load_skill` tool of a view for one cadence.
#[derive(Debug)]
pub struct LoadTool {
    /// `None` when nothing is loadable.
    pub tool: Option<ToolDef>,
    /// The loadable skills (indices into [`AgentView::skills`]), shared with every turn's
    /// context.
    pub loadable: std::sync::Arc<[usize]>,
    /// Approximate tokens the enum's names add to the tool definition.
    pub name_tokens: u32,
}

/// The records an agent may see, sorted by name: scope resolution (its own scope shadows the
/// shared one), then active status and its allowlist. What a view is built from, without the
/// token counts and matchers (MCP's skill listings need only this).
pub fn visible(agent: &Agent, index: &Index) -> Vec<Arc<SkillEntry>> {
    let resolved = index.resolved_for(&agent.name);
    // A list allowlist as a set: `NameSet::contains` scans the list, once per record.
    let listed: Option<HashSet<&str>> = match &agent.config.skills {
        NameSet::Names(names) => Some(names.iter().map(|n| n.as_str()).collect()),
        _ => None,
    };
    let allows = |name: &str| match &listed {
        Some(set) => set.contains(name),
        None => agent.config.skills.contains(name),
    };
    resolved
        .into_iter()
        .filter(|e| e.status == Status::Active && allows(&e.name))
        .cloned()
        .collect()
}

/// Whether the model may be offered the skill at all: not `disable-model-invocation: true`.
/// Listings meant for the model (MCP's, the A2A card) keep only these; people's (the studio, the
/// doctor) keep every visible skill.
pub fn offered_to_model(e: &SkillEntry) -> bool {
    !e.meta.disable_model_invocation
}

/// [`visible`], less the skills the agent's `unmet_requires = "withhold"` withholds (decided
/// against `env` as a view decides it, without the tokenizer): what MCP's listings and the A2A
/// card show.
pub fn visible_in(agent: &Agent, index: &Index, env: &dyn Provides) -> Vec<Arc<SkillEntry>> {
    let mut entries = visible(agent, index);
    if agent.config.policies.unmet_requires == UnmetRequires::Withhold {
        let decided = crate::requires::decide(agent, index, &entries, env);
        if !decided.withheld.is_empty() {
            let out: HashSet<&str> = decided.withheld.iter().map(|(n, _)| n.as_str()).collect();
            entries.retain(|e| !out.contains(e.name.as_str()));
        }
    }
    entries
}

/// [`visible_in`], less the skills only the user may invoke ([`offered_to_model`]): what
/// listings the model reads show (MCP's skills and resources, the A2A card).
pub fn offered_in(agent: &Agent, index: &Index, env: &dyn Provides) -> Vec<Arc<SkillEntry>> {
    let mut entries = visible_in(agent, index, env);
    entries.retain(|e| offered_to_model(e));
    entries
}

/// One skill of a view: its catalog entries rendered and counted, its companions, and why its
/// requirements are unmet (`offered`, by name).
fn view_skill(
    e: &Arc<SkillEntry>,
    by_name: &HashMap<String, usize>,
    offered: &HashMap<String, Vec<String>>,
    companions_not_allowed: &mut Vec<(String, String)>,
) -> ViewSkill {
    let companions = companions_of(e, by_name, companions_not_allowed);
    let catalog_entry = render_entry(e);
    let name_entry = format!("<skill><name>{}</name></skill>\n", escape(&e.name));
    ViewSkill {
        name_ref: crate::turn::report::Name::from(e.name.as_str()),
        catalog_tokens: tokens::count(&catalog_entry),
        name_tokens: tokens::count(&name_entry),
        catalog_entry,
        name_entry,
        companions,
        unmet: offered.get(&e.name).cloned().unwrap_or_default(),
        wrapped: OnceLock::new(),
        entry: e.clone(),
    }
}

/// A skill's companions as indices into the view (`by_name`): the declared ones (each declared
/// companion outside the allowlist is added to `not_allowed` as (skill, companion)), then the
/// required skills marked to travel.
fn companions_of(
    e: &SkillEntry,
    by_name: &HashMap<String, usize>,
    not_allowed: &mut Vec<(String, String)>,
) -> Vec<usize> {
    let mut companions: Vec<usize> = e
        .meta
        .companions
        .iter()
        .filter_map(|c| match by_name.get(c.as_str()) {
            Some(&i) if e.name != c.as_str() => Some(i),
            Some(_) => None,
            None => {
                not_allowed.push((e.name.clone(), c.to_string()));
                None
            }
        })
        .collect();
    // A required skill marked to travel goes along like a companion, within the
    // allowlist (one that is not visible is an unmet requirement, reported so).
    for r in e.meta.requires.travelling() {
        if let Some(&i) = by_name.get(r.as_str())
            && e.name != r.as_str()
            && !companions.contains(&i)
        {
            companions.push(i);
        }
    }
    companions
}

/// The agent's eager skills among the view's `len` skills, as indices, and the eager names it
/// does not allow.
fn eager_of(
    eager: &NameSet,
    by_name: &HashMap<String, usize>,
    len: usize,
) -> (Vec<usize>, Vec<String>) {
    match eager {
        NameSet::None => (Vec::new(), Vec::new()),
        NameSet::All => ((0..len).collect(), Vec::new()),
        NameSet::Names(names) => {
            let mut yes = Vec::new();
            let mut no = Vec::new();
            for n in names {
                match by_name.get(n.as_str()) {
                    Some(&i) => yes.push(i),
                    None => no.push(n.to_string()),
                }
            }
            (yes, no)
        }
    }
}

/// The view's matchers, compiled once: the trigger phrases, the `when_not_to_use` phrases and
/// the BM25 index (hits and document `i` point into `skills`).
fn matchers(skills: &[ViewSkill]) -> (TriggerMatcher, TriggerMatcher, Bm25) {
    let triggers = TriggerMatcher::new(
        skills
            .iter()
            .enumerate()
            .filter(|(_, s)| offered_to_model(&s.entry))
            .flat_map(|(i, s)| s.entry.meta.triggers.iter().map(move |t| (i, t.as_str()))),
    );
    let negatives = TriggerMatcher::new(skills.iter().enumerate().flat_map(|(i, s)| {
        s.entry
            .meta
            .when_not_to_use
            .iter()
            .map(move |t| (i, t.as_str()))
    }));
    let bm25 = Bm25::new(skills.iter().map(|s| crate::rank::Doc {
        name: s.entry.name.as_str(),
        description: s.entry.meta.description.as_str(),
        when_to_use: &s.entry.meta.when_to_use[..],
        triggers: &s.entry.meta.triggers[..],
        body: s.entry.body.as_str(),
    }));
    (triggers, negatives, bm25)
}

impl AgentView {
    /// Build `agent`'s view from an index snapshot: every catalog entry rendered and counted,
    /// the trigger automaton and the BM25 index, the requirements decided against `env` (skills
    /// whose `requires:` are unmet offered with the reasons, or withheld under the agent's
    /// policy). Costly (the tokenizer runs per skill); the runtime's `Engine::view` caches it.
    pub fn build(agent: Arc<Agent>, index: &Index, env: &dyn Provides) -> AgentView {
        let mut allowed = visible(&agent, index);
        let decided = crate::requires::decide(&agent, index, &allowed, env);
        if !decided.withheld.is_empty() {
            let out: HashSet<&str> = decided.withheld.iter().map(|(n, _)| n.as_str()).collect();
            allowed.retain(|e| !out.contains(e.name.as_str()));
        }
        let by_name: HashMap<String, usize> = allowed
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        let mut companions_not_allowed = Vec::new();
        let skills: Vec<ViewSkill> = allowed
            .iter()
            .map(|e| view_skill(e, &by_name, &decided.offered, &mut companions_not_allowed))
            .collect();
        let explicit_only: Vec<bool> = skills.iter().map(|s| !offered_to_model(&s.entry)).collect();
        let (mut eager, eager_not_allowed) = eager_of(&agent.config.eager, &by_name, skills.len());
        // An explicit-only skill is never eager: a turn reports it as explicit only instead.
        eager.retain(|&i| !explicit_only[i]);
        let (triggers, negatives, bm25) = matchers(&skills);
        let paths = crate::paths::PathMatcher::new(
            skills
                .iter()
                .enumerate()
                .filter(|(i, _)| !explicit_only[*i])
                .flat_map(|(i, s)| s.entry.meta.paths.iter().map(move |g| (i, g.as_str()))),
        );
        let mut eager_mask = vec![false; skills.len()];
        for &i in &eager {
            eager_mask[i] = true;
        }
        let full_tokens = skills.iter().map(|s| s.catalog_tokens).collect();
        let name_only_tokens = skills.iter().map(|s| s.name_tokens).collect();
        let names = skills.iter().map(|s| s.name_ref.clone()).collect();
        let unmet = (0..skills.len())
            .filter(|&i| !skills[i].unmet.is_empty())
            .collect();
        AgentView {
            withheld: decided.withheld,
            unmet,
            answers: decided.answers,
            generation: index.generation,
            agent,
            skills,
            by_name,
            eager,
            eager_mask,
            eager_not_allowed,
            companions_not_allowed,
            explicit_only,
            triggers,
            paths,
            negatives,
            bm25,
            semantic: OnceLock::new(),
            semantic_partial: Default::default(),
            load_tools: Default::default(),
            full_tokens,
            name_only_tokens,
            names,
        }
    }

    /// The `load_skill` tool for a cadence: every skill that is not eager, not explicit only
    /// and not slower than `max_cost` (built once per view and cadence).
    pub fn load_tool(&self, max_cost: Option<skillbase_format::Cost>) -> &LoadTool {
        let slot = match max_cost {
            None => 0,
            Some(skillbase_format::Cost::Immediate) => 1,
            Some(skillbase_format::Cost::Seconds) => 2,
            Some(skillbase_format::Cost::TensOfSeconds) => 3,
        };
        self.load_tools[slot].get_or_init(|| {
            let loadable: Vec<usize> = (0..self.skills.len())
                .filter(|&i| !self.is_eager(i) && !self.is_explicit_only(i))
                .filter(|&i| max_cost.is_none_or(|m| self.skills[i].entry.meta.cost <= m))
                .collect();
            let name_tokens = loadable
                .iter()
                .map(|&i| self.skills[i].name_tokens.saturating_sub(8) + 2)
                .sum();
            LoadTool {
                tool: (!loadable.is_empty()).then(|| load_skill_tool(self, &loadable)),
                loadable: loadable.into(),
                name_tokens,
            }
        })
    }

    /// Relevance of every skill to a (folded) message: the lexical score, fused with the
    /// semantic one when `semantic` is given, and lowered by `NEGATIVE_FACTOR` for a skill
    /// one of whose `when_not_to_use` phrases the message holds. The one ranking the catalog,
    /// `search_skills` and `skillbase eval` read.
    pub fn relevance(
        &self,
        folded: &str,
        semantic: Option<crate::fusion::SemanticQuery<'_>>,
    ) -> crate::fusion::Relevance {
        let semantic = semantic.map(|q| crate::fusion::SemanticQuery {
            weight: crate::fusion::weight_for(folded, q.weight),
            ..q
        });
        let mut r = crate::fusion::fuse(self.bm25.scores_folded(folded), semantic);
        if !self.negatives.is_empty() {
            for hit in self.negatives.find_folded(folded) {
                if let Some(s) = r.scores.get_mut(hit.skill) {
                    *s *= NEGATIVE_FACTOR;
                }
            }
        }
        r
    }

    /// Whether a catalog of every skill could overflow `budget` tokens (only then is it ranked;
    /// an upper bound, counting eager skills too).
    pub fn catalog_may_overflow(&self, budget: u32) -> bool {
        let all: u64 = self.full_tokens.iter().map(|&t| u64::from(t)).sum();
        all + 256 > u64::from(budget)
    }

    /// The skill of that name, if the agent may see it.
    pub fn get(&self, name: &str) -> Option<&ViewSkill> {
        self.by_name.get(name).map(|&i| &self.skills[i])
    }

    /// Whether `skills[i]` is used only when the user invokes it (`disable-model-invocation`).
    pub fn is_explicit_only(&self, i: usize) -> bool {
        self.explicit_only.get(i).copied().unwrap_or(false)
    }

    /// Whether `skills[i]` is one of the agent's eager skills (its body is in every turn's
    /// prefix, so it is never loaded, offered or listed in the catalog).
    pub fn is_eager(&self, i: usize) -> bool {
        self.eager_mask.get(i).copied().unwrap_or(false)
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    html_escape(s, &mut out);
    out
}

/// A full catalog entry: name, description and triggers.
fn render_entry(e: &SkillEntry) -> String {
    let mut out = String::with_capacity(e.meta.description.len() + 96);
    out.push_str("<skill><name>");
    html_escape(&e.name, &mut out);
    out.push_str("</name><description>");
    html_escape(&e.meta.description, &mut out);
    out.push_str("</description>");
    if !e.meta.triggers.is_empty() {
        out.push_str("<triggers>");
        html_escape(&e.meta.triggers.join(", "), &mut out);
        out.push_str("</triggers>");
    }
    out.push_str("</skill>\n");
    out
}

/// The `load_skill` tool a model is offered: `name` is a closed enum of exactly the loadable
/// skills.
pub fn load_skill_tool(view: &AgentView, loadable: &[usize]) -> ToolDef {
    let names: Vec<&str> = loadable.iter().map(|&i| view.skills[i].name()).collect();
    ToolDef {
        name: LOAD_SKILL.into(),
        description: LOAD_SKILL_DESCRIPTION.into(),
        parameters: Arc::new(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names, "description": "The skill to load."},
                "arguments": {"type": "object", "description": "Arguments for skills that declare inputs."}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    }
}
