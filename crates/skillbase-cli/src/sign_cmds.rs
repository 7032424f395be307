//! `skillbase sign` and `skillbase verify`: Ed25519 signatures over a skill folder's (name,
//! version, digest), kept beside its SKILL.md as `SKILL.sig`.

use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use skillbase_format::signature::{PublicKey, Signature, SigningKey};
use skillbase_format::{Bundle, BundleLimits, SkillMd, SkillMeta};
use std::path::{Path, PathBuf};

/// Sign a skill folder: an Ed25519 signature over its name, version and content digest,
/// written to `SKILL.sig` beside its SKILL.md (not part of the digest).
#[derive(Args)]
pub struct SignArgs {
    /// The skill folder (or its SKILL.md).
    #[arg(value_name = "DIR")]
    path: PathBuf,
    /// The private key: an unencrypted OpenSSH ed25519 key (`ssh-keygen -t ed25519 -N ''`).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
}

/// Verify a skill folder's `SKILL.sig` against its files; prints the signer.
#[derive(Args)]
pub struct VerifyArgs {
    /// The skill folder (or its SKILL.md).
    #[arg(value_name = "DIR")]
    path: PathBuf,
    /// Also require this signer: a public key file (OpenSSH or minisign) or a fingerprint.
    #[arg(long, value_name = "KEY")]
    signer: Option<String>,
}

/// A skill folder as signing reads it.
struct Folder {
    dir: PathBuf,
    /// Its files, without the signature.
    bundle: Bundle,
    name: String,
    version: Option<String>,
    /// Its `SKILL.sig`'s bytes, when there is one.
    sig: Option<Vec<u8>>,
}

/// The folder's bundle without its signature, its name and version, and its signature file.
fn read(path: &Path) -> Result<Folder> {
    let dir = if path.is_file() {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        path.to_path_buf()
    };
    let bundle = Bundle::from_dir(&dir, &BundleLimits::default())
        .with_context(|| format!("{}", dir.display()))?;
    let (bundle, sig) = bundle.split_signature();
    let text = std::str::from_utf8(&bundle.skill_md().bytes)
        .map_err(|_| anyhow!("{}: SKILL.md is not UTF-8", dir.display()))?;
    let md =
        SkillMd::parse(text, &Default::default()).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
    let meta = SkillMeta::from_md(&md)
        .ok_or_else(|| anyhow!("{}: SKILL.md needs `name` and `description`", dir.display()))?;
    Ok(Folder {
        dir,
        bundle,
        name: meta.name,
        version: meta.version,
        sig,
    })
}

pub fn sign(a: SignArgs) -> Result<u8> {
    if !a.path.exists() {
        eprintln!("Error: Path '{}' does not exist.", a.path.display());
        return Ok(EXIT_USAGE);
    }
    let meta = std::fs::metadata(&a.key).with_context(|| format!("{}", a.key.display()))?;
    if meta.len() > skillbase_format::signature::MAX_INPUT_BYTES as u64 {
        return Err(anyhow!(
            "{}: too large for a private key file",
            a.key.display()
        ));
    }
    let key_text =
        std::fs::read_to_string(&a.key).with_context(|| format!("{}", a.key.display()))?;
    let key =
        SigningKey::from_openssh(&key_text).map_err(|e| anyhow!("{}: {e}", a.key.display()))?;
    let Folder {
        dir,
        bundle,
        name,
        version,
        ..
    } = read(&a.path)?;
    let digest = bundle.digest().to_string();
    let sig = key.sign(&name, version.as_deref(), &digest)?;
    let out = dir.join(skillbase_format::bundle::SIGNATURE_FILE);
    // Written whole or not at all: a temporary file beside it, then renamed over it.
    let tmp = dir.join(".SKILL.sig.tmp");
    std::fs::write(&tmp, sig.to_json()).with_context(|| format!("{}", tmp.display()))?;
    std::fs::rename(&tmp, &out).with_context(|| format!("{}", out.display()))?;
    outln!(
        "signed {name}{} ({digest}) as {}: {}",
        version.map(|v| format!(" {v}")).unwrap_or_default(),
        sig.signer(),
        out.display()
    )?;
    Ok(EXIT_OK)
}

pub fn verify(a: VerifyArgs) -> Result<u8> {
    if !a.path.exists() {
        eprintln!("Error: Path '{}' does not exist.", a.path.display());
        return Ok(EXIT_USAGE);
    }
    let Folder {
        dir,
        bundle,
        name,
        version,
        sig,
    } = read(&a.path)?;
    let Some(bytes) = sig else {
        eprintln!(
            "{}: not signed (no {} beside SKILL.md); sign it with `skillbase sign {} --key KEY`",
            dir.display(),
            skillbase_format::bundle::SIGNATURE_FILE,
            dir.display()
        );
        return Ok(EXIT_INVALID);
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| anyhow!("{}/SKILL.sig is not UTF-8 text", dir.display()))?;
    let sig = Signature::parse(text).map_err(|e| anyhow!("{}/SKILL.sig: {e}", dir.display()))?;
    let digest = bundle.digest().to_string();
    if let Err(e) = sig.verify(&name, version.as_deref(), &digest) {
        eprintln!("{}: {e}", dir.display());
        return Ok(EXIT_INVALID);
    }
    if let Some(want) = &a.signer {
        let want_fp = if want.starts_with("SHA256:") {
            want.clone()
        } else {
            let text = if Path::new(want).is_file() {
                std::fs::read_to_string(want).with_context(|| want.clone())?
            } else {
                want.clone()
            };
            PublicKey::parse(&text)
                .map_err(|e| anyhow!("--signer: {e}"))?
                .fingerprint()
        };
        if want_fp != sig.signer() {
            eprintln!(
                "{}: signed by {}, not by {want_fp}",
                dir.display(),
                sig.signer()
            );
            return Ok(EXIT_INVALID);
        }
    }
    outln!(
        "{name}{} ({digest}): signed by {}",
        version.map(|v| format!(" {v}")).unwrap_or_default(),
        sig.signer()
    )?;
    Ok(EXIT_OK)
}
