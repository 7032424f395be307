//! Trust in signed skills: which sources must be signed, and by whom.
//!
//! A skill arrives from a **source**: a folder or zip given to `skillbase import`, a seed
//! folder, a git URL (`git+URL[@ref][#subdir]`), or a lockfile's entry. `[trust]` in
//! `skillbase.toml` says, per source prefix, whether a signature is required and which signers
//! are trusted:
//!
//! ```toml
//! [trust]
//! require_signature = false          # for sources no rule names (the default)
//! [[trust.sources]]
//! source = "vendor/skills"           # a folder (relative to this file), a zip, or git+URL
//! require_signature = true
//! signers = ["keys/vendor.pub"]      # OpenSSH or minisign public keys, or SHA256:... fingerprints
//! ```
//!
//! A signed skill's signature always has to verify (a tampered file is refused on every path).
//! A rule with `signers` accepts only those; without, the first signer seen for the source is
//! **pinned on first use** (in the store, `trust_pins`), and a later import from that source
//! signed by anyone else is refused until the operator accepts the new signer explicitly
//! (`--accept-new-signer`), which re-pins it and records a `signer_pinned` event saying from
//! whom to whom.

use crate::error::{Result, StoreError};
use serde::Deserialize;
use skillbase_format::signature::{PublicKey, Signature};
use std::path::Path;

/// Most `[[trust.sources]]` rules.
pub const MAX_TRUST_SOURCES: usize = 256;
/// Most signers one rule lists.
pub const MAX_SIGNERS: usize = 64;

/// The `[trust]` table, checked: signers resolved to fingerprints, folder sources made absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustPolicy {
    /// Whether a source no rule names needs signed skills.
    pub require_signature: bool,
    /// The rules, in the file's order (the longest matching prefix wins).
    pub sources: Vec<TrustRule>,
}

/// One `[[trust.sources]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRule {
    /// The source prefix it covers (an absolute path, or a `git+` URL as written).
    pub source: String,
    /// Whether its skills must be signed (default: `[trust] require_signature`).
    pub require_signature: Option<bool>,
    /// The fingerprints of the keys it trusts; empty: the first signer seen is pinned.
    pub signers: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrust {
    #[serde(default)]
    require_signature: bool,
    #[serde(default)]
    sources: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    source: String,
    #[serde(default)]
    require_signature: Option<bool>,
    #[serde(default)]
    signers: Vec<String>,
}

impl TrustPolicy {
    /// Whether a rule lists `fingerprint` among its signers (a trusted signer, which the scan
    /// policy may let past `review`; a signer pinned on first use is not listed).
    pub fn lists_signer(&self, fingerprint: &str) -> bool {
        self.sources
            .iter()
            .any(|r| r.signers.iter().any(|s| s == fingerprint))
    }

    /// Read the `[trust]` table of `origin`; relative folder sources and key files are read from
    /// `folder` (the file's folder; the working folder when `None`).
    pub fn from_table(t: &toml::Table, folder: Option<&Path>, origin: &str) -> Result<TrustPolicy> {
        let bad = |m: String| StoreError::Invalid(format!("{origin}: [trust]: {m}"));
        let raw: RawTrust = toml::Value::Table(t.clone())
            .try_into()
            .map_err(|e: toml::de::Error| bad(e.message().to_owned()))?;
        if raw.sources.len() > MAX_TRUST_SOURCES {
            return Err(bad(format!(
                "{} sources, over the limit of {MAX_TRUST_SOURCES}",
                raw.sources.len()
            )));
        }
        let base = folder.map(Path::to_path_buf).unwrap_or_else(|| {
            std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."))
        });
        let mut sources = Vec::with_capacity(raw.sources.len());
        for (i, r) in raw.sources.into_iter().enumerate() {
            let at = format!("sources[{i}]");
            if r.source.trim().is_empty() || r.source.chars().any(char::is_control) {
                return Err(bad(format!(
                    "{at}.source must be a folder, a zip or a git+URL, without control characters"
                )));
            }
            let source = if r.source.starts_with("git+") {
                r.source.trim_end_matches('/').to_owned()
            } else {
                let p = Path::new(&r.source);
                let p = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    base.join(p)
                };
                // A folder that exists is named as the importer names it (links resolved).
                p.canonicalize().unwrap_or(p).display().to_string()
            };
            if r.signers.len() > MAX_SIGNERS {
                return Err(bad(format!(
                    "{at}.signers: {} keys, over the limit of {MAX_SIGNERS}",
                    r.signers.len()
                )));
            }
            let mut signers = Vec::with_capacity(r.signers.len());
            for (j, s) in r.signers.iter().enumerate() {
                signers.push(signer(s, &base).map_err(|m| bad(format!("{at}.signers[{j}]: {m}")))?);
            }
            signers.sort();
            signers.dedup();
            sources.push(TrustRule {
                source,
                require_signature: r.require_signature,
                signers,
            });
        }
        Ok(TrustPolicy {
            require_signature: raw.require_signature,
            sources,
        })
    }

    /// The rule covering `source`: the longest rule source that is `source` itself or a folder
    /// (or URL path) above it.
    pub fn rule(&self, source: &str) -> Option<&TrustRule> {
        self.sources
            .iter()
            .filter(|r| covers(&r.source, source))
            .max_by_key(|r| r.source.len())
    }

    /// Whether skills from `source` must be signed.
    pub fn requires_signature(&self, source: &str) -> bool {
        self.rule(source)
            .and_then(|r| r.require_signature)
            .unwrap_or(self.require_signature)
    }
}

/// Whether rule source `prefix` covers `source`: equal, or a path segment above it.
fn covers(prefix: &str, source: &str) -> bool {
    source == prefix
        || source.strip_prefix(prefix).is_some_and(|rest| {
            rest.starts_with('/') || rest.starts_with('#') || rest.starts_with('@')
        })
}

/// A signer as written: a fingerprint, a public key, or a public key file (OpenSSH or
/// minisign); its fingerprint.
fn signer(s: &str, base: &Path) -> std::result::Result<String, String> {
    let s = s.trim();
    if let Some(fp) = s.strip_prefix("SHA256:") {
        let ok = fp.len() == 43
            && fp
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
        if !ok {
            return Err(format!(
                "'{}' is not a key fingerprint (SHA256: and 43 base64 characters, as ssh-keygen -lf prints)",
                skillbase_format::text::escape_controls(s)
            ));
        }
        return Ok(s.to_owned());
    }
    if s.starts_with("ssh-") || s.starts_with("RW") {
        return PublicKey::parse(s)
            .map(|k| k.fingerprint())
            .map_err(|e| e.to_string());
    }
    let p = Path::new(s);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let meta = std::fs::metadata(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    if meta.len() > skillbase_format::signature::MAX_INPUT_BYTES as u64 {
        return Err(format!("{}: too large for a public key file", p.display()));
    }
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    PublicKey::parse(&text)
        .map(|k| k.fingerprint())
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// What a batch of writes from one source needs recorded once it is written: the signer to pin
/// for the source (first use, or an accepted change from `previous`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The pinned source (the rule's source, or the source itself).
    pub source: String,
    /// The signer's fingerprint.
    pub signer: String,
    /// The signer pinned before, when this replaces it.
    pub previous: Option<String>,
}

/// Check skills from `source` against `policy`: each signature verifies (done before, at write
/// preparation: here only the signer matters); unsigned ones are refused where a signature is
/// required; signers must be the rule's, or the pinned one (`pinned`); with no pin yet, the one
/// signer of the batch is to be pinned. A second signer in one batch from an unlisted source,
/// or a changed signer without `accept_new_signer`, is refused. `Ok(Some(pin))` names the pin
/// to record after the write.
pub fn check(
    policy: &TrustPolicy,
    source: &str,
    items: &[(&str, Option<&Signature>)],
    pinned: Option<&str>,
    accept_new_signer: bool,
) -> Result<Option<Pin>> {
    let shown = skillbase_format::text::escape_controls(source);
    let rule = policy.rule(source);
    if policy.requires_signature(source)
        && let Some((name, _)) = items.iter().find(|(_, s)| s.is_none())
    {
        return Err(StoreError::Untrusted(format!(
            "{name} from {shown} is not signed, and the trust policy requires a signature for this source; sign it (`skillbase sign DIR --key KEY`) or import it from a source that does not require one"
        )));
    }
    let mut signers: Vec<&str> = items
        .iter()
        .filter_map(|(_, s)| s.map(|s| s.signer()))
        .collect();
    signers.sort_unstable();
    signers.dedup();
    if let Some(rule) = rule.filter(|r| !r.signers.is_empty()) {
        for (name, sig) in items {
            if let Some(sig) = sig
                && !rule.signers.iter().any(|s| s == sig.signer())
            {
                return Err(StoreError::Untrusted(format!(
                    "{name} from {shown} is signed by {}, which is not among the signers the trust policy lists for {}; add its key to `signers` if it is trusted",
                    sig.signer(),
                    rule.source
                )));
            }
        }
        return Ok(None);
    }
    let Some(&first) = signers.first() else {
        return Ok(None);
    };
    let key = rule.map_or(source, |r| r.source.as_str());
    if signers.len() > 1 {
        return Err(StoreError::Untrusted(format!(
            "the skills from {shown} are signed by {} different keys ({}); a source without listed signers is pinned to one signer — list them in [[trust.sources]] `signers`",
            signers.len(),
            signers.join(", ")
        )));
    }
    match pinned {
        Some(p) if p == first => Ok(None),
        Some(p) if !accept_new_signer => Err(StoreError::Untrusted(format!(
            "the skills from {shown} are signed by {first}, but {key} was pinned to {p} on first use; if the new signer is expected, run again with --accept-new-signer"
        ))),
        previous => Ok(Some(Pin {
            source: key.to_owned(),
            signer: first.to_owned(),
            previous: previous.map(str::to_owned),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillbase_format::signature::SigningKey;

    fn sig(seed: u8, name: &str) -> Signature {
        SigningKey::from_seed([seed; 32])
            .sign(name, None, &format!("sha256:{}", "ab".repeat(32)))
            .unwrap()
    }

    fn policy(toml_text: &str, dir: &Path) -> Result<TrustPolicy> {
        let t: toml::Table = toml::from_str(toml_text).unwrap();
        TrustPolicy::from_table(t["trust"].as_table().unwrap(), Some(dir), "skillbase.toml")
    }

    #[test]
    fn rules_cover_their_folder_and_below_and_the_longest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("vendor/a")).unwrap();
        let p = policy(
            "[trust]\n[[trust.sources]]\nsource = \"vendor\"\nrequire_signature = true\n[[trust.sources]]\nsource = \"vendor/a\"\nrequire_signature = false\n[[trust.sources]]\nsource = \"git+file:///srv/repo.git\"\nrequire_signature = true\n",
            &root,
        )
        .unwrap();
        let v = root.join("vendor").display().to_string();
        assert!(p.requires_signature(&format!("{v}/x")));
        assert!(p.requires_signature(&v));
        assert!(!p.requires_signature(&format!("{v}/a/skill")));
        // A sibling whose name starts the same is not below it.
        assert!(!p.requires_signature(&format!("{v}-other")));
        assert!(p.requires_signature("git+file:///srv/repo.git@v1#skills/a"));
        assert!(!p.requires_signature("git+file:///srv/repo.gitx"));
    }

    #[test]
    fn signers_are_read_as_fingerprints_keys_or_key_files() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_seed([7; 32]).public();
        std::fs::write(
            dir.path().join("k.pub"),
            format!("{} me\n", key.to_openssh()),
        )
        .unwrap();
        let fp = key.fingerprint();
        let p = policy(
            &format!(
                "[trust]\n[[trust.sources]]\nsource = \"x\"\nsigners = [\"k.pub\", \"{fp}\", \"{}\"]\n",
                key.to_openssh()
            ),
            dir.path(),
        )
        .unwrap();
        assert_eq!(p.sources[0].signers, [fp]);
        for (bad, says) in [
            ("SHA256:short", "not a key fingerprint"),
            ("missing.pub", "missing.pub"),
            ("ssh-rsa AAAAB3NzaC1yc2E", "cannot use this key"),
        ] {
            let e = policy(
                &format!("[trust]\n[[trust.sources]]\nsource = \"x\"\nsigners = [\"{bad}\"]\n"),
                dir.path(),
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("sources[0].signers[0]") && e.contains(says),
                "{e}"
            );
        }
        let e = policy("[trust]\nrequire = true\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field"), "{e}");
        let e = policy("[trust]\n[[trust.sources]]\nsource = \"\"\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("sources[0].source"), "{e}");
    }

    #[test]
    fn unsigned_listed_pinned_and_changed_signers() {
        let dir = tempfile::tempdir().unwrap();
        let trusted = SigningKey::from_seed([1; 32]).public().fingerprint();
        let p = policy(
            &format!(
                "[trust]\n[[trust.sources]]\nsource = \"git+file:///r\"\nrequire_signature = true\nsigners = [\"{trusted}\"]\n"
            ),
            dir.path(),
        )
        .unwrap();
        let (a, b) = (sig(1, "a"), sig(2, "b"));
        // Required: unsigned refused, the listed signer accepted, another refused.
        let e = check(&p, "git+file:///r", &[("a", None)], None, false).unwrap_err();
        assert!(
            e.to_string().contains("a from git+file:///r is not signed"),
            "{e}"
        );
        assert_eq!(
            check(&p, "git+file:///r", &[("a", Some(&a))], None, false).unwrap(),
            None
        );
        let e = check(&p, "git+file:///r#x", &[("b", Some(&b))], None, false).unwrap_err();
        assert!(e.to_string().contains("not among the signers"), "{e}");
        // Unlisted: unsigned fine, first signer pinned, the same again nothing, another refused
        // unless accepted, two signers in one batch refused.
        let open = TrustPolicy::default();
        assert_eq!(
            check(&open, "/s", &[("x", None)], None, false).unwrap(),
            None
        );
        let pin = check(&open, "/s", &[("a", Some(&a))], None, false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (pin.source.as_str(), pin.signer.as_str(), pin.previous),
            ("/s", a.signer(), None)
        );
        assert_eq!(
            check(&open, "/s", &[("a", Some(&a))], Some(a.signer()), false).unwrap(),
            None
        );
        let e = check(&open, "/s", &[("b", Some(&b))], Some(a.signer()), false).unwrap_err();
        assert!(
            e.to_string().contains("--accept-new-signer") && e.to_string().contains("pinned to"),
            "{e}"
        );
        let pin = check(&open, "/s", &[("b", Some(&b))], Some(a.signer()), true)
            .unwrap()
            .unwrap();
        assert_eq!(pin.previous.as_deref(), Some(a.signer()));
        let e = check(
            &open,
            "/s",
            &[("a", Some(&a)), ("b", Some(&b))],
            None,
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("2 different keys"), "{e}");
    }
}
