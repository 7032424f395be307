//! The activation report: what reached the prompt, what did not, and why; the shapes events,
//! the CLI and the API read.

use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;

/// Why a skill reached the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Activation {
    /// The skill's name.
    pub name: String,
    /// `eager`, `explicit` (the user invoked it), `path:<glob>`, `trigger:<phrase>`, `load`, or
    /// `companion:<of>`.
    pub reason: String,
    /// The revision whose body reached the prompt.
    pub rev: i64,
    /// Tokens of the body as placed (wrapped in its `<skill_content>` tag).
    pub tokens: u32,
}

/// A skill name shared with the view: report lines cost no allocation per skill.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(pub Arc<str>);

impl Name {
    /// The name as text.
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
    /// The skill's name.
    pub name: Name,
    /// Why: `budget: …`, `cost: …`, and what the model can still do about it.
    pub reason: Cow<'static, str>,
    /// Relevance rank among the catalog's candidates (1 = most relevant), when it was ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
}

/// The omissions of one part of a turn's report, kept compact.
///
/// A ranked catalog leaves out most of a large library, and a turn records each of those as two
/// integers — the skill's index in the view's name table and its relevance rank — with one
/// shared reason, instead of an [`Omission`] value (a shared name and a reason) per skill: at
/// 1,000 skills that is about 950 entries a turn, and making and dropping 950 values was a third
/// of the turn. Entries added as values (a skill too slow for the turn, say) come first. Reading
/// the list yields [`Omission`] values made on the way ([`OmissionList::iter`]); serializing
/// writes exactly the JSON of the `Vec<Omission>` it stands for. It is not a `Vec` and does not
/// pretend to be one: there is no indexing and no mutation but [`OmissionList::push`].
#[derive(Default, Clone)]
pub struct OmissionList {
    /// Entries added as values, in order, before the ranked ones.
    head: Vec<Omission>,
    /// The view's names, once ranked entries were started.
    table: Option<Arc<[Name]>>,
    /// The reason every ranked entry gives.
    reason: &'static str,
    /// Ranked entries: (index into `table`, 1-based rank).
    ranked: Vec<(u32, u32)>,
    /// Entries added as values after the ranked ones started.
    tail: Vec<Omission>,
}

impl OmissionList {
    /// An empty list.
    pub fn new() -> OmissionList {
        OmissionList::default()
    }

    /// Entries in the list.
    pub fn len(&self) -> usize {
        self.head.len() + self.ranked.len() + self.tail.len()
    }

    /// Whether nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add an entry at the end.
    pub fn push(&mut self, o: Omission) {
        if self.ranked.is_empty() {
            self.head.push(o);
        } else {
            self.tail.push(o);
        }
    }

    /// Every entry, in order, as values.
    pub fn iter(&self) -> impl Iterator<Item = Omission> + '_ {
        self.head
            .iter()
            .cloned()
            .chain(self.ranked.iter().map(|&e| self.ranked_entry(e)))
            .chain(self.tail.iter().cloned())
    }

    /// Every entry, in order, collected.
    pub fn to_vec(&self) -> Vec<Omission> {
        self.iter().collect()
    }

    /// Make room for `n` ranked entries, all giving `reason`, their names from `table`.
    pub(super) fn start_ranked(&mut self, table: &Arc<[Name]>, reason: &'static str, n: usize) {
        debug_assert!(self.ranked.is_empty() && self.tail.is_empty());
        self.table = Some(table.clone());
        self.reason = reason;
        self.ranked.reserve(n);
    }

    /// Add the skill at `index` of the table given to `start_ranked`, with its rank.
    pub(super) fn push_ranked(&mut self, index: usize, rank: usize) {
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
}

impl std::fmt::Debug for OmissionList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for OmissionList {
    fn eq(&self, other: &OmissionList) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for OmissionList {}

impl PartialEq<[Omission]> for OmissionList {
    fn eq(&self, other: &[Omission]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().cloned())
    }
}

impl PartialEq<Vec<Omission>> for OmissionList {
    fn eq(&self, other: &Vec<Omission>) -> bool {
        self == other.as_slice()
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

impl FromIterator<Omission> for OmissionList {
    fn from_iter<I: IntoIterator<Item = Omission>>(iter: I) -> OmissionList {
        OmissionList::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a OmissionList {
    type Item = Omission;
    type IntoIter = Box<dyn Iterator<Item = Omission> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl Serialize for OmissionList {
    /// Exactly what `Vec<Omission>` serializes to, without making the values.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
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
        for o in &self.tail {
            seq.serialize_element(o)?;
        }
        seq.end()
    }
}

/// How much of a catalog's omissions an answer carries.
///
/// At 10,000 skills a ranked catalog leaves out almost all of them; listing each in every answer
/// and every `turn` event made a turn megabytes. The summary says how many, why, and the
/// relevance ranks they held (as ranges), which with the same message, index and agent is
/// enough to list them again; the full list is there on request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OmissionDetail {
    /// Counts, reasons and ranks; names only of what reached the prompt (the default).
    #[default]
    Summary,
    /// Every omitted skill by name, with its reason and rank.
    Full,
}

impl std::str::FromStr for OmissionDetail {
    type Err = String;
    fn from_str(s: &str) -> Result<OmissionDetail, String> {
        match s {
            "summary" => Ok(OmissionDetail::Summary),
            "full" => Ok(OmissionDetail::Full),
            _ => Err("omissions must be `summary` or `full`".into()),
        }
    }
}

/// Omissions of one reason, as a summary gives them.
struct Group<'a> {
    reason: &'a str,
    names: Vec<&'a Name>,
    ranks: Vec<u32>,
}

impl OmissionList {
    /// Entries grouped by reason, in order of first appearance.
    fn groups(&self) -> Vec<Group<'_>> {
        let mut groups: Vec<Group<'_>> = Vec::new();
        for o in &self.head {
            group_of(&mut groups, &o.reason).names.push(&o.name);
            if let Some(r) = o.rank {
                group_of(&mut groups, &o.reason).ranks.push(r as u32);
            }
        }
        if let Some(table) = &self.table
            && !self.ranked.is_empty()
        {
            let g = group_of(&mut groups, self.reason);
            g.names.reserve(self.ranked.len());
            g.ranks.reserve(self.ranked.len());
            for &(index, rank) in &self.ranked {
                g.names.push(&table[index as usize]);
                g.ranks.push(rank);
            }
        }
        for o in &self.tail {
            group_of(&mut groups, &o.reason).names.push(&o.name);
            if let Some(r) = o.rank {
                group_of(&mut groups, &o.reason).ranks.push(r as u32);
            }
        }
        groups
    }

    /// The compact form: `{"count", "by_reason": [{"reason", "count", "ranks", "names"?}]}`,
    /// with names when `names` (what reached the prompt by name), else `"list"` saying how to
    /// get them.
    pub fn summary(&self, names: bool) -> serde_json::Value {
        let by_reason: Vec<serde_json::Value> = self
            .groups()
            .into_iter()
            .map(|g| {
                let mut o = serde_json::Map::new();
                o.insert("reason".into(), g.reason.into());
                o.insert("count".into(), g.names.len().into());
                if !g.ranks.is_empty() {
                    o.insert("ranks".into(), rank_ranges(g.ranks).into());
                }
                if names {
                    o.insert(
                        "names".into(),
                        g.names
                            .iter()
                            .map(|n| n.as_str())
                            .collect::<Vec<_>>()
                            .into(),
                    );
                }
                serde_json::Value::Object(o)
            })
            .collect();
        let mut o = serde_json::Map::new();
        o.insert("count".into(), self.len().into());
        o.insert("by_reason".into(), by_reason.into());
        if !names && !self.is_empty() {
            o.insert("list".into(), OMITTED_LIST.into());
        }
        serde_json::Value::Object(o)
    }
}

/// How a summary's reader gets the names it leaves out.
pub const OMITTED_LIST: &str =
    "names left out of this answer; ask again with omissions = full for the whole list";

fn group_of<'g, 'a>(groups: &'g mut Vec<Group<'a>>, reason: &'a str) -> &'g mut Group<'a> {
    match groups.iter().position(|g| g.reason == reason) {
        Some(i) => &mut groups[i],
        None => {
            groups.push(Group {
                reason,
                names: Vec::new(),
                ranks: Vec::new(),
            });
            groups.last_mut().expect("just pushed")
        }
    }
}

/// Ranks as sorted ranges: `[3, 1, 2, 7, 9, 8]` is `"1-3,7-9"`.
fn rank_ranges(mut ranks: Vec<u32>) -> String {
    use std::fmt::Write;
    ranks.sort_unstable();
    ranks.dedup();
    let mut s = String::new();
    let mut i = 0;
    while i < ranks.len() {
        let start = ranks[i];
        let mut end = start;
        while i + 1 < ranks.len() && ranks[i + 1] == end + 1 {
            i += 1;
            end = ranks[i];
        }
        if !s.is_empty() {
            s.push(',');
        }
        if start == end {
            let _ = write!(s, "{start}");
        } else {
            let _ = write!(s, "{start}-{end}");
        }
        i += 1;
    }
    s
}

/// What the catalog showed.
///
/// Serialized with the omissions as [`CatalogReport::detail`] says: by default `name_only` and
/// `omitted` are summaries ([`OmissionList::summary`]; `name_only` keeps its names, they are in
/// the prompt), with [`OmissionDetail::Full`] the lists themselves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogReport {
    /// The catalog budget this turn, in tokens.
    pub budget: u32,
    /// Tokens the catalog takes (its notice alone when not even one name fits).
    pub tokens: u32,
    /// Whether the catalog overflowed and entries were ranked by relevance.
    pub ranked: bool,
    /// Listed in full (name and description), in name order.
    pub full: Vec<Name>,
    /// Listed by name only, with the reason.
    pub name_only: OmissionList,
    /// Not listed at all, with the reason (still loadable unless the reason says otherwise).
    pub omitted: OmissionList,
    /// When the catalog was ranked: each skill listed in full, with its relevance rank, the
    /// stage that placed it there (`lexical` or `semantic`) and its confidence, best first.
    pub shown: Vec<Ranked>,
    /// The ranking's stages this turn: `lexical`, or `lexical+semantic` with the embedder's
    /// model (absent when the catalog was not ranked).
    pub stages: Option<String>,
    /// How the omissions are serialized (not itself serialized).
    pub detail: OmissionDetail,
}

impl Serialize for CatalogReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("CatalogReport", 8)?;
        m.serialize_field("budget", &self.budget)?;
        m.serialize_field("tokens", &self.tokens)?;
        m.serialize_field("ranked", &self.ranked)?;
        m.serialize_field("full", &self.full)?;
        match self.detail {
            OmissionDetail::Full => {
                m.serialize_field("name_only", &self.name_only)?;
                m.serialize_field("omitted", &self.omitted)?;
            }
            OmissionDetail::Summary => {
                m.serialize_field("name_only", &self.name_only.summary(true))?;
                m.serialize_field("omitted", &self.omitted.summary(false))?;
            }
        }
        if !self.shown.is_empty() {
            m.serialize_field("shown", &self.shown)?;
        }
        if let Some(stages) = &self.stages {
            m.serialize_field("stages", stages)?;
        }
        m.end()
    }
}

/// A skill the ranked catalog listed in full, and why it ranked there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranked {
    /// The skill's name.
    pub name: Name,
    /// Its relevance rank among the catalog's candidates (1 = most relevant).
    pub rank: usize,
    /// The stage whose score weighed most in its place.
    pub stage: crate::fusion::Stage,
    /// How likely it is the skill the message asks for, 0 to 1 (calibrated: of the entries
    /// given 0.8, some 80% are right; [`crate::confidence`]). The ranked entries' confidences
    /// sum to less than 1, the rest being "none of these": a low first confidence says that
    /// nothing fits well.
    pub confidence: f64,
}

/// Token counts per part of what the model is shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TokenCounts {
    /// Eager bodies (the prefix).
    pub eager: u32,
    /// Bodies injected this turn (triggers and companions).
    pub injected: u32,
    /// The `<available_skills>` catalog.
    pub catalog: u32,
    /// Tool definitions offered to the model.
    pub tools: u32,
    /// All of the above.
    pub total: u32,
}

/// The activation report of one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnReport {
    /// The agent the turn was resolved for.
    pub agent: String,
    /// Skills whose bodies reached the prompt, with the reason each did.
    pub activated: Vec<Activation>,
    /// Bodies that matched (eager, trigger, companion) but did not fit the context budget.
    pub evicted: Vec<Omission>,
    /// What the catalog listed, by name only, or left out.
    pub catalog: CatalogReport,
    /// Tokens per part of the prompt.
    pub tokens: TokenCounts,
    /// Eager names the agent does not allow (ignored).
    pub eager_not_allowed: Vec<String>,
    /// Tools withheld from the model, with the reason (counted by the dispatcher's policy).
    pub withheld_tools: Vec<Omission>,
    /// Problems that did not change what the model sees (a skill's files not written, say).
    pub warnings: Vec<Omission>,
    /// Triggers that matched but did not fire, because the message also holds one of the
    /// skill's `when_not_to_use` phrases.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suppressed: Vec<Omission>,
    /// Skills in front of the model this turn (a body placed, or listed in the catalog) whose
    /// `requires:` are unmet for the agent, offered anyway, with what is missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmet_requires: Vec<Omission>,
    /// Skills the agent's `unmet_requires = "withhold"` leaves out of everything the model
    /// sees, with what is missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withheld_skills: Vec<Omission>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compact list reads and serializes like the `Vec<Omission>` it stands for.
    #[test]
    fn omission_list_reads_like_the_list_it_stands_for() {
        let table: Arc<[Name]> = ["a", "b", "c"].into_iter().map(Name::from).collect();
        let cost = Omission {
            name: "z".into(),
            reason: "cost: slow".into(),
            rank: None,
        };
        let late = Omission {
            name: "y".into(),
            reason: "late".into(),
            rank: None,
        };
        let mut l = OmissionList::new();
        l.push(cost.clone());
        l.start_ranked(&table, "not listed", 2);
        l.push_ranked(2, 5);
        l.push_ranked(0, 7);
        l.push(late.clone());
        let want = vec![
            cost.clone(),
            Omission {
                name: "c".into(),
                reason: Cow::Borrowed("not listed"),
                rank: Some(5),
            },
            Omission {
                name: "a".into(),
                reason: Cow::Borrowed("not listed"),
                rank: Some(7),
            },
            late,
        ];
        assert_eq!(l.len(), 4);
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
        assert_eq!(l, want);
        assert_eq!(l.to_vec(), want);
        assert_eq!((&l).into_iter().count(), 4);
        assert_eq!(l.clone(), l);
        assert_eq!(format!("{l:?}"), format!("{want:?}"));
        assert_eq!(OmissionList::from(want.clone()), l);
        assert_ne!(OmissionList::from(want[..3].to_vec()), l);
        let empty = OmissionList::default();
        assert!(empty.is_empty());
        assert_eq!(serde_json::to_string(&empty).unwrap(), "[]");
    }
}
