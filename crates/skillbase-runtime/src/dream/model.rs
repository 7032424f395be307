//! Dreaming's settings (`[dreaming]` in `skillbase.toml`) and its optional model: an
//! OpenAI-compatible chat-completions endpoint that rewrites the miner's draft in better prose.
//!
//! The model is given the draft and the evidence (the steps, the arguments seen, a few of the
//! users' messages, all redacted) and asked for a SKILL.md. Its answer is untrusted input: it
//! is parsed and validated like any write, its name must be the draft's, and it may declare no
//! capability the draft does not (a model never widens the envelope either). An answer that
//! fails any of this is not used: the draft is, and the report says why.

use crate::vault::Vault;
use serde::Deserialize;
use skillbase_format::{Bundle, SkillDraft};
use std::sync::Arc;
use std::time::Duration;

/// Largest model answer read, in bytes.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

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

/// The model, ready to ask.
pub struct ProseModel {
    config: ModelConfig,
    vault: Option<Arc<Vault>>,
    client: reqwest::Client,
}

impl std::fmt::Debug for ProseModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProseModel")
            .field("url", &self.config.url)
            .field("model", &self.config.model)
            .finish_non_exhaustive()
    }
}

impl ProseModel {
    /// A client for `config`; the key, when named, is read from `vault` at each request.
    pub fn new(config: ModelConfig, vault: Option<Arc<Vault>>) -> Result<ProseModel, String> {
        if config.key.is_some() && vault.is_none() {
            return Err(
                "[dreaming.model] key names a vault entry, but no vault is open (set the vault key)"
                    .into(),
            );
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tls_certs_only(crate::semantic::operator_roots())
            .timeout(Duration::from_secs(
                config.timeout_secs.unwrap_or(60).clamp(1, 600),
            ))
            .user_agent(concat!("skillbase/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("the HTTP client could not start: {e}"))?;
        Ok(ProseModel {
            config,
            vault,
            client,
        })
    }

    fn scrub(&self, s: &str) -> String {
        let s: String = s.chars().take(500).collect();
        match &self.vault {
            Some(v) => v.redactor().redact(&s).into_owned(),
            None => s,
        }
    }

    /// Ask for a SKILL.md from `draft` and `evidence` (already redacted by the caller). The
    /// answer, checked: a valid skill named as the draft, declaring nothing the draft does not.
    pub async fn write(&self, draft: &SkillDraft, evidence: &str) -> Result<String, String> {
        let system = "You write Agent Skills: a SKILL.md file with YAML frontmatter (name, description, triggers, capabilities) and Markdown instructions. Improve the draft's description, triggers and instructions from the evidence, in clear imperative prose. Keep the name and the capabilities exactly as in the draft; add no tool, vault entry or host. Answer with the SKILL.md only.";
        let user = format!(
            "Draft SKILL.md:\n\n{}\n\nEvidence (what the sessions did):\n\n{evidence}",
            draft.to_skill_md()
        );
        let body = serde_json::json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
        });
        let mut req = self
            .client
            .post(&self.config.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let (Some(name), Some(vault)) = (&self.config.key, &self.vault) {
            let secret = vault
                .resolve(name)
                .ok_or_else(|| format!("[dreaming.model] key = \"{name}\": no such vault entry"))?;
            let value = std::str::from_utf8(secret.expose())
                .map_err(|_| format!("[dreaming.model] key = \"{name}\": the value is not text"))?;
            req = req.bearer_auth(value);
        }
        let mut resp = req.send().await.map_err(|e| {
            self.scrub(&format!(
                "the model could not be reached: {}",
                crate::web_fetch::error_chain(&e)
            ))
        })?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| self.scrub(&format!("reading the model's answer: {e}")))?
        {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!(
                    "the model's answer is longer than {MAX_ANSWER_BYTES} bytes"
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(self.scrub(&format!(
                "the model answered HTTP {}: {}",
                status.as_u16(),
                String::from_utf8_lossy(&bytes).trim()
            )));
        }
        let answer: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the model's answer is not JSON: {e}"))?;
        let text = answer
            .pointer("/choices/0/message/content")
            .and_then(serde_json::Value::as_str)
            .ok_or("the model's answer has no choices[0].message.content")?;
        check_answer(draft, text)
    }
}

/// A model's SKILL.md, checked against the draft: fences and surrounding text dropped, then a
/// valid skill with the draft's name and no capability the draft does not declare.
pub fn check_answer(draft: &SkillDraft, text: &str) -> Result<String, String> {
    let mut md = text.trim();
    if let Some(rest) = md.strip_prefix("```") {
        // ```markdown\n...\n```
        md = rest.split_once('\n').map_or("", |(_, r)| r);
        md = md.trim_end().strip_suffix("```").unwrap_or(md).trim();
    }
    if !md.starts_with("---") {
        return Err("the model's answer is not a SKILL.md (no frontmatter)".into());
    }
    let md = format!("{}\n", md.trim_end());
    let report = skillbase_format::validate::validate_text(
        &md,
        "SKILL.md",
        None,
        &skillbase_format::ValidateOptions::default(),
    );
    if let Some(e) = report.errors().next() {
        return Err(format!(
            "the model's SKILL.md is not a valid skill: {}",
            e.message
        ));
    }
    Bundle::single(md.clone().into_bytes())
        .map_err(|e| format!("the model's SKILL.md is not a valid skill: {e}"))?;
    let parsed = skillbase_format::SkillMd::parse(&md, &Default::default())
        .map_err(|e| format!("the model's SKILL.md is not a valid skill: {e}"))?;
    let meta = skillbase_format::SkillMeta::from_md(&parsed)
        .ok_or("the model's SKILL.md has no name or description")?;
    if meta.name != draft.name.as_str() {
        return Err(format!(
            "the model renamed the skill to '{}'; a learned skill keeps the draft's name",
            meta.name.escape_debug()
        ));
    }
    let caps = &meta.capabilities;
    let mine = &draft.capabilities;
    let wider = caps.tools.iter().any(|t| !mine.tools.contains(t))
        || caps.vault.iter().any(|v| !mine.vault.contains(v))
        || caps.hosts.iter().any(|h| !mine.hosts.contains(h));
    if wider {
        return Err("the model's SKILL.md declares capabilities the draft does not; a learned skill declares only what its sessions used".into());
    }
    Ok(md)
}

/// The engine's `[dreaming]`: the table and its model, ready.
#[derive(Debug, Default)]
pub struct DreamSettings {
    /// The table as read.
    pub config: DreamingConfig,
    /// Its model, made with the engine's vault.
    pub model: Option<Arc<ProseModel>>,
}

impl DreamSettings {
    /// The settings of a `[dreaming]` table (its model made with `vault`).
    pub fn new(
        config: DreamingConfig,
        vault: Option<Arc<crate::vault::Vault>>,
    ) -> Result<DreamSettings, String> {
        let model = match &config.model {
            Some(m) => Some(Arc::new(ProseModel::new(m.clone(), vault)?)),
            None => None,
        };
        Ok(DreamSettings { config, model })
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
