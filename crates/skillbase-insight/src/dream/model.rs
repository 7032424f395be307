//! Dreaming's optional model (`[dreaming.model]`, read by the runtime's [`ModelConfig`]): an
//! OpenAI-compatible chat-completions endpoint that rewrites the miner's draft in better prose.
//!
//! The model is given the draft and the evidence (the steps, the arguments seen, a few of the
//! users' messages, all redacted) and asked for a SKILL.md. Its answer is untrusted input: it
//! is parsed and validated like any write, its name must be the draft's, and it may declare no
//! capability the draft does not (a model never widens the envelope either). An answer that
//! fails any of this is not used: the draft is, and the report says why.

use skillbase_format::{Bundle, SkillDraft};
use skillbase_runtime::{ModelConfig, Vault};
use std::sync::Arc;
use std::time::Duration;

/// Largest model answer read, in bytes.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

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
            .tls_certs_only(skillbase_runtime::operator_roots())
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
                skillbase_runtime::error_chain(&e)
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
