//! `skillbase.toml`: agents declared in a file, applied at start-up so an install can live in git.
//!
//! ```toml
//! [agents.support]
//! description = "Customer support"
//! skills = ["refund-procedure", "refund-policy"]   # or "all" / "none"
//! eager = ["refund-policy"]
//! catalog_budget = 4000
//!
//! [agents.support.grants]
//! tools = ["web_fetch"]
//! vault = ["PAYMENTS_API_KEY"]
//! hosts = ["api.payments.example.com"]
//!
//! [agents.support.policies]
//! failure_threshold = 3
//!
//! # the harness's own instructions, read by the doctor (paths relative to this file's folder)
//! # prompts = ["prompts/support.md", { text = "Answer in English." }]
//!
//! [retention]                 # see `retention`: calls, turns, activations, ended sessions
//! events_max_age = "30d"
//!
//! [scan]                      # see `scan`: what findings get on arrival, per severity
//! high = "review"             # off | warn | review | refuse
//!
//! [store]
//! versions = "require-increase"   # or "warn" (the default): a write whose `version` is not
//!                                 # higher than the active revision's
//! ```

use crate::error::{Result, StoreError};
use crate::model::{AgentConfig, AgentName, Prompt};
use crate::retention::RetentionPolicy;
use crate::store::Store;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The parsed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    /// Agent configurations (`[agents.<name>]`), checked as the store checks them.
    pub agents: BTreeMap<String, AgentConfig>,
    /// Tool declarations (`[[tools]]`), read by the runtime.
    #[serde(default)]
    pub tools: Vec<toml::Table>,
    /// The semantic ranking stage (`[semantic]`), read by the runtime.
    #[serde(default)]
    pub semantic: Option<toml::Table>,
    /// Upstream MCP servers (`[mcp_servers.<name>]`), read by the runtime's gateway.
    #[serde(default)]
    pub mcp_servers: toml::Table,
    /// What the API may configure of the gateway (`[gateway]`), read by the runtime.
    #[serde(default)]
    pub gateway: Option<toml::Table>,
    /// Dreaming's settings (`[dreaming]`: support, schedule, model), read by the runtime.
    #[serde(default)]
    pub dreaming: Option<toml::Table>,
    /// OpenTelemetry export (`[telemetry]`), read by the runtime.
    #[serde(default)]
    pub telemetry: Option<toml::Table>,
    /// The folder the file was read from (set by [`Config::load`]): relative paths in the
    /// tables the runtime reads (an upstream's `cwd`) are relative to it.
    #[serde(skip)]
    pub folder: Option<std::path::PathBuf>,
    /// The `[retention]` table as written (read into [`Config::retention`]).
    #[serde(default, rename = "retention")]
    retention_table: Option<toml::Table>,
    /// The retention policy (`[retention]`), checked when the file is parsed.
    #[serde(skip)]
    pub retention: Option<RetentionPolicy>,
    /// Store-wide policies (`[store]`), applied by [`Config::apply`].
    #[serde(default)]
    pub store: StorePolicies,
    /// The labelled cases routing is measured with (`[eval]`): `skillbase runs --by-revision`
    /// shows each revision's recall over them.
    #[serde(default)]
    pub eval: EvalSettings,
    /// The limits of one import from git (`[git]`: archive_bytes, files_per_skill,
    /// bytes_per_skill, skill_md_candidates, skills_per_import), read by `skillbase-sources`.
    #[serde(default)]
    pub git: Option<toml::Table>,
    /// The `[trust]` table as written (read into [`Config::trust`]).
    #[serde(default, rename = "trust")]
    trust_table: Option<toml::Table>,
    /// Which sources must be signed, by whom (`[trust]`), applied by [`Config::apply`].
    #[serde(skip)]
    pub trust: crate::trust::TrustPolicy,
    /// The `[scan]` table as written (read into [`Config::scan`]).
    #[serde(default, rename = "scan")]
    scan_table: Option<toml::Table>,
    /// What the scan's findings get on arrival (`[scan]`, see [`crate::scan`]), applied by
    /// [`Config::apply`].
    #[serde(skip)]
    pub scan: crate::scan::ScanPolicy,
}

/// The `[eval]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSettings {
    /// A cases file (`skillbase eval`'s JSON lines), relative to the file's folder.
    pub cases: Option<std::path::PathBuf>,
    /// The agent whose view the cases are routed in (for shared skills; an agent's own skill
    /// is measured in that agent's view).
    pub agent: Option<String>,
}

/// The `[store]` table: policies of every write, whoever makes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorePolicies {
    /// What a write whose `version` is not higher than the active revision's gets.
    #[serde(default)]
    pub versions: VersionPolicy,
}

/// What a write whose `version` is not higher than the active revision's gets (lower, equal,
/// or none while the active revision declares one). A skill whose active revision declares no
/// version is never checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionPolicy {
    /// Written, with a warning in the write's answer (the default).
    #[default]
    Warn,
    /// Refused ([`StoreError::VersionNotIncreased`]), nothing written.
    RequireIncrease,
}

impl Config {
    /// Parse TOML text; errors name the line and the key.
    pub fn parse(text: &str, origin: &str) -> Result<Config> {
        Config::parse_in(text, origin, None)
    }

    /// [`Config::parse`], with relative paths of `[trust]` read from `folder`.
    fn parse_in(text: &str, origin: &str, folder: Option<&Path>) -> Result<Config> {
        let mut config: Config =
            toml::from_str(text).map_err(|e| StoreError::Invalid(format!("{origin}: {e}")))?;
        for (name, agent) in config.agents.iter_mut() {
            AgentName::parse(name).map_err(|e| StoreError::Invalid(format!("{origin}: {e}")))?;
            // The store's one check, here with the file and the table it came from.
            *agent = agent
                .clone()
                .checked()
                .map_err(|e| StoreError::InvalidAgent(format!("{origin}: [agents.{name}]: {e}")))?;
        }
        if let Some(a) = &config.eval.agent {
            AgentName::parse(a)
                .map_err(|e| StoreError::Invalid(format!("{origin}: [eval] agent: {e}")))?;
        }
        if let Some(t) = &config.trust_table {
            config.trust = crate::trust::TrustPolicy::from_table(t, folder, origin)?;
        }
        if let Some(t) = &config.retention_table {
            config.retention = Some(RetentionPolicy::from_table(t, origin)?);
        }
        if let Some(t) = &config.scan_table {
            config.scan = crate::scan::ScanPolicy::from_table(t, origin)?;
        }
        Ok(config)
    }

    /// Read and parse the file at `path`. An agent's prompt paths are relative to the file's
    /// folder (made absolute here, so the stored configuration names the file wherever the
    /// command runs).
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|source| StoreError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let mut config = Config::parse_in(&text, &path.display().to_string(), Some(&folder))?;
        config.folder = Some(folder.clone());
        if let Some(c) = &mut config.eval.cases
            && c.is_relative()
        {
            *c = folder.join(&*c);
        }
        for (name, agent) in config.agents.iter_mut() {
            for p in &mut agent.prompts {
                if let Prompt::Path(file) = p
                    && Path::new(file.as_str()).is_relative()
                {
                    *file = folder.join(&*file).display().to_string();
                }
            }
            // Joined paths are checked again (a long folder can push one over the limit).
            crate::model::check_prompts(&agent.prompts).map_err(|e| {
                StoreError::InvalidAgent(format!("{}: [agents.{name}]: {e}", path.display()))
            })?;
        }
        Ok(config)
    }

    /// Set the store's policies (`[store]`, for this process's writes) and write every declared
    /// agent whose stored configuration differs. Returns the names changed.
    pub async fn apply(&self, store: &Store) -> Result<Vec<String>> {
        store.set_version_policy(self.store.versions);
        store.set_trust(self.trust.clone());
        store.set_scan_policy(self.scan.clone());
        let existing = store.agents().await?;
        let mut changed = Vec::new();
        for (name, config) in &self.agents {
            let name = AgentName::parse(name).map_err(StoreError::Invalid)?;
            if existing
                .iter()
                .any(|a| a.name == name && a.config == *config)
            {
                continue;
            }
            store.set_agent(&name, config).await?;
            changed.push(name.to_string());
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NameSet;

    #[test]
    fn parses_agents() {
        let c = Config::parse(
            r#"
[agents.support]
skills = ["refund-procedure"]
eager = "all"
[agents.support.grants]
tools = ["web_fetch"]
[agents.ops]
"#,
            "test",
        )
        .unwrap();
        let s = &c.agents["support"];
        assert!(matches!(s.skills, NameSet::Names(_)));
        assert_eq!(s.eager, NameSet::All);
        assert_eq!(s.grants.tools, vec!["web_fetch"]);
        assert_eq!(c.agents["ops"].skills, NameSet::None);
    }

    #[test]
    fn reads_the_store_policies_and_refuses_a_bad_one() {
        assert_eq!(
            Config::parse("", "f").unwrap().store.versions,
            VersionPolicy::Warn
        );
        let c = Config::parse("[store]\nversions = \"require-increase\"\n", "f").unwrap();
        assert_eq!(c.store.versions, VersionPolicy::RequireIncrease);
        for bad in [
            "[store]\nversions = \"strict\"\n",
            "[store]\nversions = 1\n",
            "[store]\nversion = \"warn\"\n",
        ] {
            let e = Config::parse(bad, "skillbase.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains("skillbase.toml"), "{bad}: {e}");
            assert!(
                e.contains("warn") || e.contains("versions"),
                "{bad}: the error names what to write: {e}"
            );
        }
    }

    #[test]
    fn reads_the_retention_policy_and_refuses_a_bad_one() {
        let c = Config::parse("[retention]\nevents_max_age = \"7d\"\n", "f").unwrap();
        let p = c.retention.unwrap();
        assert_eq!(
            p.events_max_age,
            Some(std::time::Duration::from_secs(7 * 86_400))
        );
        assert!(Config::parse("", "f").unwrap().retention.is_none());
        let e = Config::parse("[retention]\nevents_max_age = \"soon\"\n", "skillbase.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("skillbase.toml: [retention] events_max_age"),
            "{e}"
        );
    }

    #[test]
    fn prompts_are_paths_or_text_and_relative_paths_are_the_files_folder() {
        let c = Config::parse(
            "[agents.a]\nprompts = [\"p.md\", { path = \"/etc/q.md\" }, { text = \"Use refund-procedure.\" }]\n",
            "f",
        )
        .unwrap();
        assert_eq!(
            c.agents["a"].prompts,
            [
                Prompt::Path("p.md".into()),
                Prompt::Path("/etc/q.md".into()),
                Prompt::Text("Use refund-procedure.".into())
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("skillbase.toml");
        std::fs::write(
            &file,
            "[agents.a]\nprompts = [\"prompts/p.md\", \"/abs.md\"]\n",
        )
        .unwrap();
        let c = Config::load(&file).unwrap();
        assert_eq!(
            c.agents["a"].prompts,
            [
                Prompt::Path(dir.path().join("prompts/p.md").display().to_string()),
                Prompt::Path("/abs.md".into())
            ]
        );
        for bad in [
            "prompts = [\"\"]",
            "prompts = [{ text = \"\" }]",
            "prompts = [{ path = \"a\", text = \"b\" }]",
            "prompts = [{ file = \"a\" }]",
            "prompts = [3]",
            "prompts = [\"a\\u0007b\"]",
        ] {
            let e = Config::parse(&format!("[agents.a]\n{bad}\n"), "skillbase.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("skillbase.toml") && e.contains("prompt"),
                "{bad}: {e}"
            );
        }
        let many = format!(
            "[agents.a]\nprompts = [{}]\n",
            vec!["\"p.md\""; 33].join(", ")
        );
        assert!(
            Config::parse(&many, "f")
                .unwrap_err()
                .to_string()
                .contains("at most 32")
        );
    }

    #[test]
    fn reads_the_scan_policy_and_refuses_a_bad_one() {
        let c = Config::parse(
            "[scan]\nhigh = \"refuse\"\n[scan.agents.support]\nmedium = \"review\"\n",
            "skillbase.toml",
        )
        .unwrap();
        assert_eq!(c.scan.levels[3], crate::scan::Action::Refuse);
        assert_eq!(c.scan.agents["support"][2], crate::scan::Action::Review);
        assert_eq!(
            Config::parse("", "f").unwrap().scan,
            crate::scan::ScanPolicy::default()
        );
        let e = Config::parse("[scan]\nhigh = \"maybe\"\n", "skillbase.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("skillbase.toml: [scan] high: unknown action 'maybe'"),
            "{e}"
        );
    }

    #[test]
    fn errors_say_where() {
        let e = Config::parse("[agents.support]\nskils = []\n", "skillbase.toml").unwrap_err();
        assert!(e.to_string().contains("skillbase.toml"), "{e}");
        assert!(e.to_string().contains("skils"), "{e}");
        assert!(Config::parse("[agents.Bad]\n", "f").is_err());
        // Agents are checked as the CLI and REST check them, naming the file and the table.
        for (toml, want) in [
            (
                "[agents.a.grants]\nhosts = [\"https://x.com/\"]\n",
                "grants.hosts",
            ),
            (
                "[agents.a.grants]\ntools = [\"Web Fetch\"]\n",
                "grants.tools",
            ),
            (
                "[agents.a.grants]\nvault = [\"bad name!\"]\n",
                "grants.vault",
            ),
            (
                "[agents.a.policies]\nfailure_threshold = 0\n",
                "failure_threshold",
            ),
        ] {
            let e = Config::parse(toml, "skillbase.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("skillbase.toml: [agents.a]") && e.contains(want),
                "{e}"
            );
        }
        let c = Config::parse("[agents.a.grants]\nhosts = [\"API.X.com\"]\n", "f").unwrap();
        assert_eq!(c.agents["a"].grants.hosts, ["api.x.com"]);
    }
}
