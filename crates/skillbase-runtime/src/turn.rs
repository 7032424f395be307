//! Turn resolution: given an agent's view and the user's message, what the model is shown this
//! turn, and why. Pure and deterministic: no I/O, same input, same output.
//!
//! Order of the prompt: the eager prefix (fixed position, cacheable), then bodies injected for
//! this turn (triggers and their companions), then the level-1 catalog. Bodies are cut by the
//! agent's context budget and the catalog by its catalog budget; every skill that did not make it
//! is reported with its reason, and the report is computed after the cut.

use crate::tokens;
use crate::view::AgentView;
use serde::Serialize;
use skillbase_format::Cost;
use std::borrow::Cow;
use std::sync::Arc;

/// Per-turn options.
#[derive(Debug, Clone, Default)]
pub struct TurnOptions {
    /// Leave out of the catalog and tools every skill slower than this.
    pub max_cost: Option<Cost>,
    /// Override the agent's catalog budget (tokens).
    pub catalog_budget: Option<u32>,
    /// Override the agent's context budget (tokens) for injected bodies.
    pub context_budget: Option<u32>,
}

/// Why a skill reached the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Activation {
    pub name: String,
    /// `eager`, `trigger:<phrase>`, `load`, or `companion:<of>`.
    pub reason: String,
    pub rev: i64,
    pub tokens: u32,
}

/// A skill name shared with the view: report lines cost no allocation per skill.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(pub Arc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(Arc::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(Arc::from(s))
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A skill that did not reach the prompt (or the catalog) in full, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Omission {
    pub name: Name,
    pub reason: Cow<'static, str>,
    /// Relevance rank among the catalog's candidates (1 = most relevant), when it was ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
}

/// A list of omissions that a turn fills with one entry per skill left out of the catalog.
///
/// It reads and writes like the `Vec<Omission>` it stands for (it dereferences to one, and
/// serializes to exactly the same JSON), but a turn records its ranked entries compactly — the
/// skill's index in the view's name table and its rank — and the `Omission` values (each holding
/// a shared name) are only made when someone reads the list as a `Vec`. Serializing, `len` and
/// `is_empty` read the compact form directly. Ranked entries at 1,000 skills are about 950 per
/// turn, and cloning and dropping 950 shared names was a third of the turn.
#[derive(Default)]
pub struct OmissionList {
    /// Entries added as values, in order, before any ranked entry.
    head: Vec<Omission>,
    /// The view's names, when ranked entries were added.
    table: Option<Arc<[Name]>>,
    /// The reason every ranked entry gives.
    reason: &'static str,
    /// Ranked entries: (index into `table`, 1-based rank).
    ranked: Vec<(u32, u32)>,
    /// Every entry as values, made on first access as a `Vec`; once a caller changes the list
    /// through it, it is the only copy (`head` and `ranked` are emptied).
    all: std::sync::OnceLock<Vec<Omission>>,
}

impl OmissionList {
    pub fn new() -> OmissionList {
        OmissionList::default()
    }

    /// Entries in the list.
    pub fn len(&self) -> usize {
        match self.all.get() {
            Some(all) => all.len(),
            None => self.head.len() + self.ranked.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add an entry at the end.
    pub fn push(&mut self, o: Omission) {
        if self.all.get().is_none() && self.ranked.is_empty() {
            self.head.push(o);
        } else {
            self.as_vec_mut().push(o);
        }
    }

    /// Make room for `n` ranked entries, all giving `reason`, their names from `table`.
    fn start_ranked(&mut self, table: &Arc<[Name]>, reason: &'static str, n: usize) {
        debug_assert!(self.ranked.is_empty() && self.all.get().is_none());
        self.table = Some(table.clone());
        self.reason = reason;
        self.ranked.reserve(n);
    }

    /// Add the skill at `index` of the table given to `start_ranked`, with its rank.
    fn push_ranked(&mut self, index: usize, rank: usize) {
        self.ranked.push((index as u32, rank as u32));
    }

    fn ranked_entry(&self, (index, rank): (u32, u32)) -> Omission {
        let table = self
            .table
            .as_ref()
            .expect("ranked entries have a name table");
        Omission {
            name: table[index as usize].clone(),
            reason: Cow::Borrowed(self.reason),
            rank: Some(rank as usize),
        }
    }

    fn as_vec(&self) -> &Vec<Omission> {
        self.all.get_or_init(|| {
            let mut v = Vec::with_capacity(self.head.len() + self.ranked.len());
            v.extend(self.head.iter().cloned());
            v.extend(self.ranked.iter().map(|&e| self.ranked_entry(e)));
            v
        })
    }

    fn as_vec_mut(&mut self) -> &mut Vec<Omission> {
        self.as_vec();
        self.head = Vec::new();
        self.ranked = Vec::new();
        self.table = None;
        self.all.get_mut().expect("made above")
    }
}

impl std::ops::Deref for OmissionList {
    type Target = Vec<Omission>;
    fn deref(&self) -> &Vec<Omission> {
        self.as_vec()
    }
}

impl std::ops::DerefMut for OmissionList {
    fn deref_mut(&mut self) -> &mut Vec<Omission> {
        self.as_vec_mut()
    }
}

impl Clone for OmissionList {
    fn clone(&self) -> OmissionList {
        OmissionList {
            head: self.head.clone(),
            table: self.table.clone(),
            reason: self.reason,
            ranked: self.ranked.clone(),
            all: self.all.clone(),
        }
    }
}

impl std::fmt::Debug for OmissionList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_vec().fmt(f)
    }
}

impl PartialEq for OmissionList {
    fn eq(&self, other: &OmissionList) -> bool {
        self.as_vec() == other.as_vec()
    }
}

impl Eq for OmissionList {}

impl PartialEq<Vec<Omission>> for OmissionList {
    fn eq(&self, other: &Vec<Omission>) -> bool {
        self.as_vec() == other
    }
}

impl PartialEq<[Omission]> for OmissionList {
    fn eq(&self, other: &[Omission]) -> bool {
        self.as_vec().as_slice() == other
    }
}

impl From<Vec<Omission>> for OmissionList {
    fn from(v: Vec<Omission>) -> OmissionList {
        OmissionList {
            head: v,
            ..OmissionList::default()
        }
    }
}

impl From<OmissionList> for Vec<Omission> {
    fn from(mut l: OmissionList) -> Vec<Omission> {
        std::mem::take(l.as_vec_mut())
    }
}

impl FromIterator<Omission> for OmissionList {
    fn from_iter<I: IntoIterator<Item = Omission>>(iter: I) -> OmissionList {
        OmissionList::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl Extend<Omission> for OmissionList {
    fn extend<I: IntoIterator<Item = Omission>>(&mut self, iter: I) {
        for o in iter {
            self.push(o);
        }
    }
}

impl<'a> IntoIterator for &'a OmissionList {
    type Item = &'a Omission;
    type IntoIter = std::slice::Iter<'a, Omission>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_vec().iter()
    }
}

impl<'a> IntoIterator for &'a mut OmissionList {
    type Item = &'a mut Omission;
    type IntoIter = std::slice::IterMut<'a, Omission>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_vec_mut().iter_mut()
    }
}

impl IntoIterator for OmissionList {
    type Item = Omission;
    type IntoIter = std::vec::IntoIter<Omission>;
    fn into_iter(self) -> Self::IntoIter {
        Vec::from(self).into_iter()
    }
}

impl Serialize for OmissionList {
    /// Exactly what `Vec<Omission>` serializes to.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if let Some(all) = self.all.get() {
            return all.serialize(s);
        }
        /// `Omission`'s serialized shape, borrowing.
        #[derive(Serialize)]
        #[serde(rename = "Omission")]
        struct Entry<'a> {
            name: &'a Name,
            reason: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            rank: Option<usize>,
        }
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for o in &self.head {
            seq.serialize_element(o)?;
        }
        if let Some(table) = &self.table {
            for &(index, rank) in &self.ranked {
                seq.serialize_element(&Entry {
                    name: &table[index as usize],
                    reason: self.reason,
                    rank: Some(rank as usize),
                })?;
            }
        }
        seq.end()
    }
}

const NAME_ONLY: &str = "budget: listed by name only, below the full entries in relevance rank";
const NOT_LISTED: &str =
    "budget: not listed (lowest in relevance rank); found by search_skills and loadable";

/// What the catalog showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CatalogReport {
    pub budget: u32,
    pub tokens: u32,
    /// Whether the catalog overflowed and entries were ranked by relevance.
    pub ranked: bool,
    pub full: Vec<String>,
    /// Listed by name only, with the reason.
    pub name_only: OmissionList,
    /// Not listed at all, with the reason (still loadable unless the reason says otherwise).
    pub omitted: OmissionList,
}

/// Token counts per part of what the model is shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TokenCounts {
    pub eager: u32,
    pub injected: u32,
    pub catalog: u32,
    pub tools: u32,
    pub total: u32,
}

/// The activation report of one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnReport {
    pub agent: String,
    pub activated: Vec<Activation>,
    /// Bodies that matched (eager, trigger, companion) but did not fit the context budget.
    pub evicted: Vec<Omission>,
    pub catalog: CatalogReport,
    pub tokens: TokenCounts,
    /// Eager names the agent does not allow (ignored).
    pub eager_not_allowed: Vec<String>,
    /// Tools withheld from the model, with the reason (counted by the dispatcher's policy).
    pub withheld_tools: Vec<Omission>,
    /// Problems that did not change what the model sees (a skill's files not written, say).
    pub warnings: Vec<Omission>,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (shared: the `load_skill` schema of a view is built once).
    pub parameters: Arc<serde_json::Value>,
}

/// Everything the harness gives the model this turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnContext {
    /// Eager bodies: the same every turn while nothing changes (a cacheable prefix).
    pub prefix: Option<String>,
    /// Bodies injected for this turn only (triggers and their companions).
    pub injected: Option<String>,
    /// The level-1 `<available_skills>` catalog.
    pub catalog: Option<String>,
    pub tools: Vec<ToolDef>,
    pub report: TurnReport,
    /// Skill indices (in the view) loadable this turn.
    #[serde(skip)]
    pub loadable: Vec<usize>,
}

const CATALOG_HEAD: &str = "<available_skills>\n";
const CATALOG_TAIL: &str = "</available_skills>\n";
const CATALOG_INTRO: &str = "Skills are procedures written for tasks like the user's. Before acting on a task that matches a skill below, call load_skill with its name and follow what it returns.\n";
const CATALOG_MORE: &str = "More skills are available than are listed here: call search_skills with a few words to find them.\n";

fn fixed_tokens() -> (u32, u32) {
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
const LOAD_TOOL_BASE_TOKENS: u32 = 90;
const SEARCH_TOOL_TOKENS: u32 = 70;

/// Resolve one turn.
pub fn resolve(view: &AgentView, message: &str, opts: &TurnOptions) -> TurnContext {
    let n = view.skills.len();
    let mut report = TurnReport {
        agent: view.agent.name.to_string(),
        eager_not_allowed: view.eager_not_allowed.clone(),
        ..TurnReport::default()
    };
    let mut present = vec![false; n];
    let mut placer = Placer {
        evicted: vec![false; n],
        view,
        budget: opts
            .context_budget
            .unwrap_or(view.agent.config.context_budget),
        used: 0,
        prefix: String::new(),
        injected: String::new(),
    };
    for &i in &view.eager {
        placer.place(i, "eager".into(), true, &mut present, &mut report);
    }
    let eager_tokens = placer.used;
    // Folded once for the triggers and the ranking.
    let folded = crate::trigger::fold_fast(message);
    if !view.triggers.is_empty() {
        for hit in view.triggers.find_folded(&folded) {
            placer.place(
                hit.skill,
                format!("trigger:{}", hit.phrase),
                false,
                &mut present,
                &mut report,
            );
        }
    }
    report.tokens.eager = eager_tokens;
    report.tokens.injected = placer.used - eager_tokens;
    let Placer {
        prefix,
        injected,
        evicted,
        ..
    } = placer;

    // Level 1: everything allowed that is not in the prompt, within the cadence. A skill already
    // reported as evicted is not listed again (each skill is reported once); it stays loadable
    // unless it is eager (load_skill refuses those).
    let mut candidates: Vec<usize> = Vec::with_capacity(n);
    let mut evicted_loadable: Vec<usize> = Vec::new();
    // Tokens of every candidate in full, and by name only (summed on the way).
    let mut full_total: u32 = 0;
    let mut all_names: u32 = 0;
    for (i, s) in view.skills.iter().enumerate() {
        if present[i] || view.is_eager(i) {
            continue;
        }
        let too_slow = opts.max_cost.is_some_and(|max| s.entry.meta.cost > max);
        if evicted[i] {
            if !too_slow {
                evicted_loadable.push(i);
            }
            continue;
        }
        if let Some(max) = opts.max_cost
            && too_slow
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
        full_total += view.full_tokens[i];
        all_names += view.name_only_tokens[i];
        candidates.push(i);
    }
    let budget = opts
        .catalog_budget
        .unwrap_or(view.agent.config.catalog_budget);
    report.catalog.budget = budget;
    let (fixed, more) = fixed_tokens();
    let mut full: Vec<usize> = Vec::new();
    let mut name_only: Vec<usize> = Vec::new();
    let mut catalog_tokens = 0;
    if candidates.is_empty() {
        // No catalog at all.
    } else if fixed + full_total <= budget {
        full = candidates.clone();
        catalog_tokens = fixed + full_total;
    } else {
        report.catalog.ranked = true;
        let scores = view.bm25.scores_folded(&folded);
        let order = relevance_order(&candidates, &scores);
        let mut left = budget.saturating_sub(fixed + more);
        // Plan: every candidate listed at least by name when that fits, and the most relevant
        // upgraded to full entries with what is left; otherwise full entries for the top ones
        // within half the room, then names while they fit.
        // (1-based relevance rank, skill) of everything not shown in full.
        let mut rest: Vec<(usize, usize)> = Vec::with_capacity(order.len());
        if all_names <= left {
            let mut spare = left - all_names;
            let mut p = 0;
            while p < order.len() {
                let i = order[p];
                let extra = view.full_tokens[i].saturating_sub(view.name_only_tokens[i]);
                if extra > spare {
                    break;
                }
                spare -= extra;
                left -= view.full_tokens[i];
                full.push(i);
                p += 1;
            }
            rest.extend(order[p..].iter().enumerate().map(|(k, &i)| (p + k + 1, i)));
        } else {
            let mut full_room = left / 2;
            let mut p = 0;
            while p < order.len() {
                let i = order[p];
                let t = view.full_tokens[i];
                if t > full_room {
                    break;
                }
                full_room -= t;
                left -= t;
                full.push(i);
                p += 1;
            }
            rest.extend(order[p..].iter().enumerate().map(|(k, &i)| (p + k + 1, i)));
        }
        report
            .catalog
            .name_only
            .start_ranked(&view.names, NAME_ONLY, rest.len());
        report
            .catalog
            .omitted
            .start_ranked(&view.names, NOT_LISTED, rest.len());
        for &(rank, i) in &rest {
            let t = view.name_only_tokens[i];
            if t <= left {
                left -= t;
                name_only.push(i);
                report.catalog.name_only.push_ranked(i, rank);
            } else {
                report.catalog.omitted.push_ranked(i, rank);
            }
        }
        // Back to name order for the block (stable for caching), without sorting: mark and sweep.
        let mut mark = vec![0u8; n];
        for &i in &full {
            mark[i] = 1;
        }
        for &i in &name_only {
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
        catalog_tokens = budget.saturating_sub(left);
    }
    let catalog = if full.is_empty() && name_only.is_empty() {
        // Not even one name fits: still tell the model that search_skills finds the skills.
        (!candidates.is_empty() && report.catalog.ranked).then(|| CATALOG_MORE.to_owned())
    } else {
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
        for &i in &full {
            c.push_str(&view.skills[i].catalog_entry);
        }
        for &i in &name_only {
            c.push_str(&view.skills[i].name_entry);
        }
        c.push_str(CATALOG_TAIL);
        if report.catalog.ranked {
            c.push_str(CATALOG_MORE);
        }
        Some(c)
    };
    report.catalog.full = full
        .iter()
        .map(|&i| view.skills[i].name().to_owned())
        .collect();
    report.catalog.tokens = catalog_tokens;
    report.tokens.catalog = catalog_tokens;

    // Tools: load_skill over exactly the loadable names — every allowed skill that is not eager,
    // within the cadence (a skill injected this turn stays loadable, so the model can keep it
    // for the rest of the session) — and search_skills when the list overflowed. The schema
    // depends only on the view and the cadence, so it is built once per view.
    let _ = evicted_loadable;
    let cached = view.load_tool(opts.max_cost);
    let loadable = cached.loadable.clone();
    let mut tools = Vec::new();
    let mut tool_tokens = 0;
    if let Some(tool) = &cached.tool {
        tool_tokens += LOAD_TOOL_BASE_TOKENS + cached.name_tokens;
        tools.push(tool.clone());
        if report.catalog.ranked {
            tool_tokens += SEARCH_TOOL_TOKENS;
            tools.push(crate::dispatch::search_skills_tool());
        }
    }
    report.tokens.tools = tool_tokens;
    report.tokens.total =
        report.tokens.eager + report.tokens.injected + catalog_tokens + tool_tokens;
    TurnContext {
        prefix: (!prefix.is_empty()).then_some(prefix),
        injected: (!injected.is_empty()).then_some(injected),
        catalog,
        tools,
        report,
        loadable,
    }
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

    /// The compact list reads, changes and serializes like the `Vec<Omission>` it stands for.
    #[test]
    fn omission_list_behaves_like_a_vec() {
        let table: Arc<[Name]> = ["a", "b", "c"].into_iter().map(Name::from).collect();
        let cost = Omission {
            name: "z".into(),
            reason: "cost: slow".into(),
            rank: None,
        };
        let make = || {
            let mut l = OmissionList::new();
            l.push(cost.clone());
            l.start_ranked(&table, NOT_LISTED, 2);
            l.push_ranked(2, 5);
            l.push_ranked(0, 7);
            l
        };
        let want = vec![
            cost.clone(),
            Omission {
                name: "c".into(),
                reason: Cow::Borrowed(NOT_LISTED),
                rank: Some(5),
            },
            Omission {
                name: "a".into(),
                reason: Cow::Borrowed(NOT_LISTED),
                rank: Some(7),
            },
        ];
        let l = make();
        assert_eq!(l.len(), 3);
        assert!(l.all.get().is_none(), "len does not make the values");
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            serde_json::to_value(&want).unwrap()
        );
        assert_eq!(l, want);
        assert_eq!(l[1].name, "c");
        let names: Vec<&str> = l.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["z", "c", "a"]);
        let slice: &[Omission] = &l;
        assert_eq!(slice.len(), 3);
        // Changed through the Vec, it stays consistent.
        let mut l = make();
        l.retain(|o| o.name != "c");
        l.push(cost.clone());
        assert_eq!(l.len(), 3);
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            serde_json::to_string(&vec![want[0].clone(), want[2].clone(), cost.clone()]).unwrap()
        );
        assert_eq!(Vec::from(make()), want);
        assert_eq!(make().into_iter().count(), 3);
        assert_eq!(make().clone(), make());
        let empty = OmissionList::default();
        assert!(empty.is_empty());
        assert_eq!(serde_json::to_string(&empty).unwrap(), "[]");
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
