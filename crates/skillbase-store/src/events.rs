//! The kinds of events: what the events table records, and which kinds other servers must apply.
//!
//! The kind is stored as its plain string (`kind` column, JSON `"kind"`); [`EventKind`] is the
//! one list of the kinds Skillbase writes, with [`EventKind::Other`] for a kind this build does
//! not know (written by a newer build, or by a test).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// The kind of an event.
///
/// Equality, ordering and hashing are those of [`EventKind::as_str`], so `Other("turn")` (built
/// by hand) equals [`EventKind::Turn`]; the conversions from strings always give the named
/// variant.
#[derive(Clone)]
pub enum EventKind {
    // Writes of the store: they change the index or the agents.
    /// A revision was written and activated (`created` in its data says whether it made the
    /// skill).
    RevisionWritten,
    /// A revision was written to wait for approval.
    RevisionPending,
    /// An old revision was re-activated.
    Reverted,
    /// A pending revision was approved and activated.
    Approved,
    /// A pending revision was rejected: never served (the active one stays).
    Rejected,
    /// A skill was retired.
    Retired,
    /// A retired skill was restored.
    Restored,
    /// A skill was disabled.
    Disabled,
    /// A disabled skill was enabled.
    Enabled,
    /// An agent was created or its configuration replaced.
    AgentChanged,
    /// A vault entry was set.
    VaultSet,
    /// A vault entry was removed.
    VaultRemoved,
    /// A seed folder changed after its skill was edited in the store.
    SeedDiverged,
    /// An upstream MCP server was configured through the API (added or replaced).
    McpServerSet,
    /// An upstream MCP server configured through the API was removed.
    McpServerRemoved,

    // The runtime's own (and the server's tokens): none of them changes the index or the agents.
    /// A tool call finished (successfully or not) within the call.
    ToolCalled,
    /// A call was refused before it ran.
    CallRefused,
    /// A long call was started (its result is waited for).
    CallStarted,
    /// A started call finished.
    CallFinished,
    /// A skill was activated in a session.
    SkillActivated,
    /// A skill was evicted from a turn (over the context budget).
    SkillEvicted,
    /// A turn was resolved.
    Turn,
    /// A turn's catalog did not fit its budget in full.
    CatalogTruncated,
    /// A run of a skill revision ended.
    RunFinished,
    /// An API token was created.
    TokenCreated,
    /// An API token was revoked.
    TokenRevoked,
    /// The retention job removed events and ended sessions (what, how many, under which policy).
    EventsTrimmed,
    /// The doctor ran (who asked, for which agent, how many findings of each code).
    Doctor,
    /// A user's message in a session: a turn's, when the agent records conversations, or one
    /// imported with a transcript (redacted like everything else).
    UserMessage,
    /// A tool call of an imported transcript (it ran elsewhere; recorded for learning).
    TranscriptCall,
    /// A dream run: the skills it created or changed with their evidence, and the candidates
    /// it rejected with why.
    Dream,
    /// Drift re-activated an earlier revision (`on_drift = "revert"`): from which, to which,
    /// and why.
    DriftReverted,
    /// A revision was staged as a candidate beside the active one (`stage_agent_revisions`).
    CandidateStaged,
    /// A candidate's outcomes were not worse than the active revision's: it is active now.
    CandidatePromoted,
    /// A candidate was withdrawn: its outcomes were worse, or it drifted.
    CandidateRejected,
    /// A signer was pinned for a trust source: on first use, or an accepted change (the data
    /// names the previous one).
    SignerPinned,
    /// A revision was written with findings of the scan (`[scan]`): its verdict, what the
    /// policy did (`warn`, or `review`: it waits for approval) and its findings, in brief.
    ScanFindings,
    /// A write was refused by the scan policy (`refuse`): nothing was written.
    ScanRefused,

    /// A kind this build does not name (a newer build's, say), kept as read. The default kind
    /// is the empty one (what `NewEvent::default()` carries until its kind is set).
    Other(String),
}

impl Default for EventKind {
    fn default() -> EventKind {
        EventKind::Other(String::new())
    }
}

impl EventKind {
    /// Every kind this build names, in the order above.
    pub const KNOWN: [EventKind; 38] = [
        EventKind::RevisionWritten,
        EventKind::RevisionPending,
        EventKind::Reverted,
        EventKind::Approved,
        EventKind::Rejected,
        EventKind::Retired,
        EventKind::Restored,
        EventKind::Disabled,
        EventKind::Enabled,
        EventKind::AgentChanged,
        EventKind::VaultSet,
        EventKind::VaultRemoved,
        EventKind::SeedDiverged,
        EventKind::McpServerSet,
        EventKind::McpServerRemoved,
        EventKind::ToolCalled,
        EventKind::CallRefused,
        EventKind::CallStarted,
        EventKind::CallFinished,
        EventKind::SkillActivated,
        EventKind::SkillEvicted,
        EventKind::Turn,
        EventKind::CatalogTruncated,
        EventKind::RunFinished,
        EventKind::TokenCreated,
        EventKind::TokenRevoked,
        EventKind::EventsTrimmed,
        EventKind::Doctor,
        EventKind::UserMessage,
        EventKind::TranscriptCall,
        EventKind::Dream,
        EventKind::DriftReverted,
        EventKind::CandidateStaged,
        EventKind::CandidatePromoted,
        EventKind::CandidateRejected,
        EventKind::SignerPinned,
        EventKind::ScanFindings,
        EventKind::ScanRefused,
    ];

    /// The kinds the retention job may remove: calls, turns and activations. Revisions, authoring,
    /// status, agent, vault, token and seed events, run endings and the job's own records are
    /// never trimmed (the migrations' triggers hold the same list).
    pub const TRIMMABLE: &'static [&'static str] = &[
        "tool_called",
        "call_refused",
        "call_started",
        "call_finished",
        "skill_activated",
        "skill_evicted",
        "turn",
        "catalog_truncated",
        "user_message",
        "transcript_call",
    ];

    /// Whether the retention job may remove events of this kind.
    pub fn trimmable(&self) -> bool {
        EventKind::TRIMMABLE.contains(&self.as_str())
    }

    /// The kind as stored.
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::RevisionWritten => "revision_written",
            EventKind::RevisionPending => "revision_pending",
            EventKind::Reverted => "reverted",
            EventKind::Approved => "approved",
            EventKind::Rejected => "revision_rejected",
            EventKind::Retired => "retired",
            EventKind::Restored => "restored",
            EventKind::Disabled => "disabled",
            EventKind::Enabled => "enabled",
            EventKind::AgentChanged => "agent_changed",
            EventKind::VaultSet => "vault_set",
            EventKind::VaultRemoved => "vault_removed",
            EventKind::SeedDiverged => "seed_diverged",
            EventKind::McpServerSet => "mcp_server_set",
            EventKind::McpServerRemoved => "mcp_server_removed",
            EventKind::ToolCalled => "tool_called",
            EventKind::CallRefused => "call_refused",
            EventKind::CallStarted => "call_started",
            EventKind::CallFinished => "call_finished",
            EventKind::SkillActivated => "skill_activated",
            EventKind::SkillEvicted => "skill_evicted",
            EventKind::Turn => "turn",
            EventKind::CatalogTruncated => "catalog_truncated",
            EventKind::RunFinished => "run_finished",
            EventKind::TokenCreated => "token_created",
            EventKind::TokenRevoked => "token_revoked",
            EventKind::EventsTrimmed => "events_trimmed",
            EventKind::Doctor => "doctor",
            EventKind::UserMessage => "user_message",
            EventKind::TranscriptCall => "transcript_call",
            EventKind::Dream => "dream",
            EventKind::DriftReverted => "drift_reverted",
            EventKind::CandidateStaged => "candidate_staged",
            EventKind::CandidatePromoted => "candidate_promoted",
            EventKind::CandidateRejected => "candidate_rejected",
            EventKind::SignerPinned => "signer_pinned",
            EventKind::ScanFindings => "scan_findings",
            EventKind::ScanRefused => "scan_refused",
            EventKind::Other(s) => s,
        }
    }

    /// Whether an event of this kind can change the index or the agents (what other servers
    /// must apply, `sync_changes`). Every kind but the runtime's own (calls, activations, turns,
    /// runs, tokens): an unknown kind counts as changing, so a new kind of write is never missed
    /// (at worst a server re-reads a record for nothing). A new kind of the runtime's is named
    /// here, and needs no migration: the `changes_index` column records the answer per event.
    pub fn changes_index(&self) -> bool {
        !matches!(
            self,
            EventKind::ToolCalled
                | EventKind::CallRefused
                | EventKind::CallStarted
                | EventKind::CallFinished
                | EventKind::SkillActivated
                | EventKind::SkillEvicted
                | EventKind::Turn
                | EventKind::CatalogTruncated
                | EventKind::RunFinished
                | EventKind::TokenCreated
                | EventKind::TokenRevoked
                | EventKind::EventsTrimmed
                | EventKind::Doctor
                | EventKind::UserMessage
                | EventKind::TranscriptCall
                | EventKind::Dream
                | EventKind::DriftReverted
                | EventKind::SignerPinned
                | EventKind::ScanFindings
                | EventKind::ScanRefused
        )
    }

    /// The named variant for `s`, if this build names it.
    fn known(s: &str) -> Option<EventKind> {
        Some(match s {
            "revision_written" => EventKind::RevisionWritten,
            "revision_pending" => EventKind::RevisionPending,
            "reverted" => EventKind::Reverted,
            "approved" => EventKind::Approved,
            "revision_rejected" => EventKind::Rejected,
            "retired" => EventKind::Retired,
            "restored" => EventKind::Restored,
            "disabled" => EventKind::Disabled,
            "enabled" => EventKind::Enabled,
            "agent_changed" => EventKind::AgentChanged,
            "vault_set" => EventKind::VaultSet,
            "vault_removed" => EventKind::VaultRemoved,
            "seed_diverged" => EventKind::SeedDiverged,
            "mcp_server_set" => EventKind::McpServerSet,
            "mcp_server_removed" => EventKind::McpServerRemoved,
            "tool_called" => EventKind::ToolCalled,
            "call_refused" => EventKind::CallRefused,
            "call_started" => EventKind::CallStarted,
            "call_finished" => EventKind::CallFinished,
            "skill_activated" => EventKind::SkillActivated,
            "skill_evicted" => EventKind::SkillEvicted,
            "turn" => EventKind::Turn,
            "catalog_truncated" => EventKind::CatalogTruncated,
            "run_finished" => EventKind::RunFinished,
            "token_created" => EventKind::TokenCreated,
            "token_revoked" => EventKind::TokenRevoked,
            "events_trimmed" => EventKind::EventsTrimmed,
            "doctor" => EventKind::Doctor,
            "user_message" => EventKind::UserMessage,
            "transcript_call" => EventKind::TranscriptCall,
            "dream" => EventKind::Dream,
            "drift_reverted" => EventKind::DriftReverted,
            "candidate_staged" => EventKind::CandidateStaged,
            "candidate_promoted" => EventKind::CandidatePromoted,
            "candidate_rejected" => EventKind::CandidateRejected,
            "signer_pinned" => EventKind::SignerPinned,
            "scan_findings" => EventKind::ScanFindings,
            "scan_refused" => EventKind::ScanRefused,
            _ => return None,
        })
    }
}

impl From<&str> for EventKind {
    fn from(s: &str) -> EventKind {
        EventKind::known(s).unwrap_or_else(|| EventKind::Other(s.to_owned()))
    }
}

impl From<String> for EventKind {
    fn from(s: String) -> EventKind {
        EventKind::known(&s).unwrap_or(EventKind::Other(s))
    }
}

impl From<Cow<'_, str>> for EventKind {
    fn from(s: Cow<'_, str>) -> EventKind {
        match s {
            Cow::Borrowed(s) => s.into(),
            Cow::Owned(s) => s.into(),
        }
    }
}

impl From<EventKind> for String {
    fn from(k: EventKind) -> String {
        match k {
            EventKind::Other(s) => s,
            k => k.as_str().to_owned(),
        }
    }
}

impl std::str::FromStr for EventKind {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<EventKind, Self::Err> {
        Ok(s.into())
    }
}

impl AsRef<str> for EventKind {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// As the string's (`"turn"`, quoted), so debug output of events is unchanged.
impl fmt::Debug for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for EventKind {
    fn eq(&self, other: &EventKind) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for EventKind {}

impl Hash for EventKind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for EventKind {
    fn partial_cmp(&self, other: &EventKind) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EventKind {
    fn cmp(&self, other: &EventKind) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for EventKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EventKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for EventKind {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<EventKind> for str {
    fn eq(&self, other: &EventKind) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<EventKind> for &str {
    fn eq(&self, other: &EventKind) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<EventKind> for String {
    fn eq(&self, other: &EventKind) -> bool {
        self.as_str() == other.as_str()
    }
}

impl serde::Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for EventKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EventKind, D::Error> {
        Ok(String::deserialize(d)?.into())
    }
}

/// The payload of a `seed_diverged` event: the folder, its digest now, and what was done.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SeedDiverged {
    /// The seed folder.
    pub seed_path: String,
    /// Its content digest now.
    pub seed_digest: String,
    /// What was done (the store's revision wins).
    #[serde(default)]
    pub message: String,
}

/// What a `seed_diverged` event's `message` says.
pub const SEED_DIVERGED_MESSAGE: &str =
    "the seed folder changed after the skill was edited in the store; the store wins";

/// The payload of a `scan_findings` event (with the revision) and of a `scan_refused` event
/// (with no revision: nothing was written).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScanEvent {
    /// The highest severity found (`info` ... `critical`).
    pub verdict: String,
    /// What the policy did: `warn`, `review` or `refuse`.
    pub action: String,
    /// Whether a trusted signer let the revision past `review`.
    #[serde(default)]
    pub trusted_signer: bool,
    /// The digest of the rules that scanned it.
    pub rules: String,
    /// How many findings.
    pub findings: usize,
    /// The decisive finding, as `rule (severity) at file:line`.
    pub decisive: String,
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    /// Only calls, turns and activations are trimmed, and both migrations' triggers hold the
    /// same list as the code.
    #[test]
    fn trimmable_kinds_are_the_runtime_records_and_the_triggers_agree() {
        for k in EventKind::TRIMMABLE {
            assert!(EventKind::from(*k).trimmable() && !EventKind::from(*k).changes_index());
        }
        for k in EventKind::KNOWN
            .iter()
            .chain(&[EventKind::Other("x".into())])
        {
            if !EventKind::TRIMMABLE.contains(&k.as_str()) {
                assert!(!k.trimmable(), "{}", k.as_str());
            }
        }
        for sql in [
            include_str!("../migrations/sqlite/0015_conversations.sql"),
            include_str!("../migrations/postgres/0015_conversations.sql"),
        ] {
            let list: String = EventKind::TRIMMABLE
                .iter()
                .map(|k| format!("'{k}'"))
                .collect::<Vec<_>>()
                .join(", ");
            assert!(sql.contains(&format!("({list})")), "{sql}");
        }
    }

    /// The one decision of which events other servers must apply.
    #[test]
    fn runtime_kinds_do_not_change_the_index_and_every_other_kind_does() {
        for k in [
            "tool_called",
            "call_refused",
            "call_started",
            "call_finished",
            "skill_activated",
            "skill_evicted",
            "turn",
            "catalog_truncated",
            "run_finished",
            "token_created",
            "token_revoked",
            "events_trimmed",
            "doctor",
            "user_message",
            "transcript_call",
            "dream",
            "drift_reverted",
            "scan_findings",
            "scan_refused",
        ] {
            assert!(!EventKind::from(k).changes_index(), "{k}");
        }
        for k in [
            "revision_written",
            "revision_pending",
            "retired",
            "restored",
            "disabled",
            "enabled",
            "reverted",
            "approved",
            "agent_changed",
            "vault_set",
            "vault_removed",
            "seed_diverged",
            "mcp_server_set",
            "mcp_server_removed",
            "a_kind_added_later",
            "",
        ] {
            assert!(EventKind::from(k).changes_index(), "{k}");
        }
    }

    /// Stored, serialised, printed and compared as the plain string; every named kind reads back
    /// as itself, an unknown one as `Other` with its text.
    #[test]
    fn kinds_are_their_strings() {
        for k in EventKind::KNOWN {
            let s = k.as_str().to_owned();
            assert_eq!(EventKind::from(s.as_str()), k);
            assert!(
                !matches!(EventKind::from(s.clone()), EventKind::Other(_)),
                "{s}"
            );
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{s}\""));
            assert_eq!(format!("{k:?}"), format!("{s:?}"));
            assert_eq!(k.to_string(), s);
            assert!(k == s.as_str() && k == s && s.as_str() == k);
        }
        let later: EventKind = serde_json::from_str("\"a_kind_added_later\"").unwrap();
        assert_eq!(later, EventKind::Other("a_kind_added_later".into()));
        assert_eq!(
            serde_json::to_string(&later).unwrap(),
            "\"a_kind_added_later\""
        );
        assert_eq!(EventKind::Other("turn".into()), EventKind::Turn);
        assert_eq!(EventKind::default().as_str(), "");
        assert_eq!(String::from(EventKind::CallRefused), "call_refused");
        let mut names: Vec<&str> = EventKind::KNOWN.iter().map(EventKind::as_str).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EventKind::KNOWN.len(), "kinds named twice");
    }
}
