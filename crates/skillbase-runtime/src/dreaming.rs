//! Dreaming's settings: the `[dreaming]` table of `skillbase.toml`, read once here (the engine
//! keeps it; `skillbase-insight` dreams with it).

use serde::Deserialize;

/// The `[dreaming]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DreamingConfig {
    /// Distinct sessions a procedure must occur in (default 3).
    #[serde(default)]
    pub min_support: Option<usize>,
    /// `skillbase serve` dreams for an agent once its sessions have been quiet this many
    /// minutes since their last event (and something happened since its last dream). Absent:
    /// no schedule, dream on demand.
    #[serde(default)]
    pub idle_minutes: Option<u64>,
    /// The model that writes the prose (`[dreaming.model]`); absent: the miner's draft.
    #[serde(default)]
    pub model: Option<ModelConfig>,
}

/// `[dreaming.model]`: an OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The endpoint, e.g. `https://api.openai.com/v1/chat/completions`.
    pub url: String,
    /// The model name sent with each request.
    pub model: String,
    /// The vault entry holding the API key (sent as `Authorization: Bearer`, never shown).
    #[serde(default)]
    pub key: Option<String>,
    /// Seconds one request may take (default 60).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl DreamingConfig {
    /// Read and check a `[dreaming]` table; errors name the key.
    pub fn from_table(table: &toml::Table) -> Result<DreamingConfig, String> {
        let c: DreamingConfig = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| format!("[dreaming]: {}", e.message()))?;
        if let Some(n) = c.min_support
            && !(2..=1000).contains(&n)
        {
            return Err(format!(
                "[dreaming] min_support = {n}: give 2 to 1000 sessions"
            ));
        }
        if let Some(m) = c.idle_minutes
            && !(1..=10_080).contains(&m)
        {
            return Err(format!(
                "[dreaming] idle_minutes = {m}: give 1 to 10080 minutes (a week)"
            ));
        }
        if let Some(m) = &c.model {
            let parsed =
                reqwest::Url::parse(&m.url).map_err(|e| format!("[dreaming.model] url: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https")
                || !parsed.username().is_empty()
                || parsed.password().is_some()
            {
                return Err("[dreaming.model] url: an http(s) URL without credentials (put the key in the vault and name it with key)".into());
            }
            if m.model.trim().is_empty() {
                return Err("[dreaming.model] model: name the model".into());
            }
            if let Some(k) = &m.key
                && let Some(why) = skillbase_format::validate::check_vault_name(k)
            {
                return Err(format!("[dreaming.model] key: '{k}' {why}"));
            }
        }
        Ok(c)
    }
}

impl DreamingConfig {
    /// Whether the table can be used where `has_vault` says whether a vault is open: its model's
    /// key names a vault entry, so it needs one.
    pub(crate) fn check_vault(&self, has_vault: bool) -> Result<(), String> {
        if self.model.as_ref().is_some_and(|m| m.key.is_some()) && !has_vault {
            return Err(
                "[dreaming.model] key names a vault entry, but no vault is open (set the vault key)"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(t: &str) -> toml::Table {
        toml::from_str(t).unwrap()
    }

    #[test]
    fn the_dreaming_table_is_checked_with_what_to_fix() {
        let c = DreamingConfig::from_table(&table(
            "min_support = 4\nidle_minutes = 30\n[model]\nurl = \"https://api.example.com/v1/chat/completions\"\nmodel = \"m\"\nkey = \"OPENAI_KEY\"\n",
        ))
        .unwrap();
        assert_eq!(c.min_support, Some(4));
        assert_eq!(c.model.unwrap().key.as_deref(), Some("OPENAI_KEY"));
        for (t, want) in [
            ("min_support = 1", "2 to 1000"),
            ("idle_minutes = 0", "1 to 10080"),
            ("surprise = 1", "unknown field"),
            ("[model]\nurl = \"ftp://x/\"\nmodel = \"m\"", "http(s)"),
            (
                "[model]\nurl = \"https://u:p@x/\"\nmodel = \"m\"",
                "without credentials",
            ),
            (
                "[model]\nurl = \"https://x/\"\nmodel = \" \"",
                "name the model",
            ),
            (
                "[model]\nurl = \"https://x/\"\nmodel = \"m\"\nkey = \"bad key\"",
                "vault entry",
            ),
        ] {
            let e = DreamingConfig::from_table(&table(t)).unwrap_err();
            assert!(e.contains(want), "{t}: {e}");
        }
    }
}
