//! Ed25519 detached signatures over a skill revision: its name, its optional version and its
//! content digest.
//!
//! A signature covers the canonical [`message`] built from those three values:
//!
//! ```text
//! skillbase-signature-v1
//! name=<name>
//! version=<version, or nothing when the skill has none>
//! digest=<digest>
//! ```
//!
//! Each of the four lines ends in `\n`; nothing follows the last one. A field may not contain a
//! line break or any other control character, so two different revisions never share a message.
//!
//! - [`SigningKey`] is read from an unencrypted OpenSSH ed25519 private key file, as
//!   `ssh-keygen -t ed25519 -N ''` writes it.
//! - [`PublicKey`] is read from an OpenSSH public key line (`id_ed25519.pub`, or one line of
//!   `authorized_keys`) or from a minisign public key. Its [`PublicKey::fingerprint`] is the
//!   `SHA256:...` string that `ssh-keygen -lf` prints, whichever format the key came from.
//! - [`Signature`] is a small JSON object that names its signer and carries its public key, so it
//!   can be checked on its own with [`Signature::verify`]. Whether that signer is trusted is the
//!   caller's decision: a valid signature only proves that the holder of that key signed.
//!
//! Every parser here refuses input longer than [`MAX_INPUT_BYTES`] and returns an error, never a
//! panic, on malformed or hostile input.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use ed25519_dalek::Signer as _;
use sha2::{Digest as _, Sha256};
use std::fmt;
use zeroize::Zeroizing;

use crate::text::escape_controls;

/// The longest key file, public key or signature file that the parsers here read, in bytes.
pub const MAX_INPUT_BYTES: usize = 16 * 1024;

/// The first line of every signed message; names the message format.
pub const MESSAGE_HEADER: &str = "skillbase-signature-v1";

/// The `alg` value of every signature file.
pub const ALGORITHM: &str = "ed25519";

/// The OpenSSH name of an Ed25519 key.
const SSH_ED25519: &str = "ssh-ed25519";

/// The armour lines of an OpenSSH private key file.
const OPENSSH_BEGIN: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";
const OPENSSH_END: &str = "-----END OPENSSH PRIVATE KEY-----";

/// What to run to make a key that Skillbase reads.
const MAKE_KEY: &str = "make one with `ssh-keygen -t ed25519 -N '' -f skillbase_signing_key`";

/// Why a key, a signature file or a signed field was refused, or why a signature did not verify.
/// Each message says what is wrong and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A private or public key could not be used: the message says what is wrong with it and
    /// which key to give instead.
    #[error("cannot use this key: {0}")]
    BadKey(String),
    /// A signature file could not be read: the message says what is wrong with it.
    #[error("cannot read this signature: {0}")]
    BadSignature(String),
    /// A name, version or digest cannot be signed: it is empty or contains a control character.
    #[error("cannot sign or verify this {field}: {reason}")]
    InvalidField {
        /// Which field: `name`, `version` or `digest`.
        field: &'static str,
        /// What is wrong with it and what to give instead.
        reason: String,
    },
    /// The signature is well formed but does not verify for this name, version and digest.
    #[error(
        "the signature does not match: the skill's name, version or files changed after it was \
         signed, or it was signed by another key; sign the skill again with the right key"
    )]
    Mismatch,
}

fn bad_key(reason: impl Into<String>) -> SignatureError {
    SignatureError::BadKey(reason.into())
}

fn bad_signature(reason: impl Into<String>) -> SignatureError {
    SignatureError::BadSignature(reason.into())
}

/// The exact bytes that a signature covers, for a skill `name`, its optional `version` and its
/// content `digest` (such as `sha256:` followed by 64 lowercase hex digits):
/// `skillbase-signature-v1\nname=<name>\nversion=<version or nothing>\ndigest=<digest>\n`.
///
/// Refuses an empty name or digest, a version of `Some("")` (it would be signed the same as
/// `None`: give `None` for a skill without a version), and any field containing a line break or
/// another control character.
pub fn message(name: &str, version: Option<&str>, digest: &str) -> Result<Vec<u8>, SignatureError> {
    check_field("name", name)?;
    if let Some(v) = version {
        if v.is_empty() {
            return Err(SignatureError::InvalidField {
                field: "version",
                reason: "it is empty; give no version (None) for a skill without one".into(),
            });
        }
        check_field("version", v)?;
    }
    check_field("digest", digest)?;
    let version = version.unwrap_or("");
    let mut out =
        Vec::with_capacity(MESSAGE_HEADER.len() + name.len() + version.len() + digest.len() + 28);
    for part in [
        MESSAGE_HEADER,
        "\nname=",
        name,
        "\nversion=",
        version,
        "\ndigest=",
        digest,
        "\n",
    ] {
        out.extend_from_slice(part.as_bytes());
    }
    Ok(out)
}

fn check_field(field: &'static str, value: &str) -> Result<(), SignatureError> {
    if value.is_empty() {
        return Err(SignatureError::InvalidField {
            field,
            reason: format!("it is empty; give the skill's {field}"),
        });
    }
    if let Some((at, c)) = value.char_indices().find(|(_, c)| c.is_control()) {
        return Err(SignatureError::InvalidField {
            field,
            reason: format!(
                "'{}' contains the control character U+{:04X} at byte {at}; a signed {field} is \
                 one line of printable text",
                escape_controls(shorten(value, 64)),
                c as u32
            ),
        });
    }
    Ok(())
}

/// At most `max` bytes of `s`, cut on a character boundary, for quoting in messages.
fn shorten(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Bytes from outside (a key type name, say), quoted safely and briefly in a message.
fn shown_bytes(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(64)]).into_owned();
    escape_controls(&s).into_owned()
}

fn check_size(text: &str, what: &str) -> Result<(), String> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(format!(
            "the {what} is {} bytes, more than the {} KiB that one can be; give the {what} \
             itself, not another file",
            text.len(),
            MAX_INPUT_BYTES / 1024
        ));
    }
    Ok(())
}

/// A reader of the SSH wire format: big-endian `u32`s and `u32`-length-prefixed strings.
struct Wire<'a>(&'a [u8]);

impl<'a> Wire<'a> {
    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_be_bytes(*head))
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u32()?).ok()?;
        self.bytes(n)
    }
}

/// The SSH wire encoding of an Ed25519 public key: `string "ssh-ed25519"`, `string key`.
fn ssh_wire(key: &[u8; 32]) -> [u8; 51] {
    let mut out = [0u8; 51];
    out[..4].copy_from_slice(&11u32.to_be_bytes());
    out[4..15].copy_from_slice(SSH_ED25519.as_bytes());
    out[15..19].copy_from_slice(&32u32.to_be_bytes());
    out[19..].copy_from_slice(key);
    out
}

/// An Ed25519 private key, for signing skills. Its secret is wiped from memory when it is
/// dropped; `Debug` shows only the public key's fingerprint.
pub struct SigningKey {
    key: ed25519_dalek::SigningKey,
}

impl SigningKey {
    /// Reads an unencrypted OpenSSH ed25519 private key file (the text that starts with
    /// `-----BEGIN OPENSSH PRIVATE KEY-----`, as `ssh-keygen -t ed25519 -N ''` writes it).
    ///
    /// Refuses, each with a message saying what to do: an empty or oversized text (more than
    /// [`MAX_INPUT_BYTES`]), an encrypted key, a key of another type (RSA, ECDSA, a hardware
    /// security key, ...), a key in another file format (PEM, PKCS#8, PuTTY, minisign), a public
    /// key, and a damaged file.
    pub fn from_openssh(text: &str) -> Result<SigningKey, SignatureError> {
        check_size(text, "key file").map_err(bad_key)?;
        let trimmed = text.trim_start_matches('\u{feff}').trim();
        if trimmed.is_empty() {
            return Err(bad_key(format!(
                "the key file is empty; give an OpenSSH ed25519 private key file, or {MAKE_KEY}"
            )));
        }
        if !trimmed.lines().any(|l| l.trim() == OPENSSH_BEGIN) {
            return Err(bad_key(not_openssh_private(trimmed)));
        }
        let pem = openssh_pem(trimmed).map_err(bad_key)?;
        let header = peek_openssh_private(&pem).map_err(bad_key)?;
        if header.cipher != "none" || header.kdf != "none" {
            return Err(bad_key(format!(
                "the key is encrypted (with {}); Skillbase reads unencrypted ed25519 keys \
                 (ssh-keygen -t ed25519 -N ''): {MAKE_KEY}, or remove this key's passphrase with \
                 `ssh-keygen -p -N '' -f KEYFILE`",
                header.cipher
            )));
        }
        if header.nkeys != 1 {
            return Err(bad_key(format!(
                "the key file holds {} keys; give a file with one ed25519 key",
                header.nkeys
            )));
        }
        if header.key_type != SSH_ED25519 {
            return Err(bad_key(other_key_type(&header.key_type, "signs")));
        }
        let parsed = ssh_key::PrivateKey::from_openssh(pem.as_bytes()).map_err(|e| {
            bad_key(format!(
                "the OpenSSH private key file is damaged ({e}); copy the whole file again, or \
                 {MAKE_KEY}"
            ))
        })?;
        if parsed.is_encrypted() {
            return Err(bad_key(
                "the key is encrypted; Skillbase reads unencrypted ed25519 keys \
                 (ssh-keygen -t ed25519 -N '')",
            ));
        }
        let ssh_key::private::KeypairData::Ed25519(pair) = parsed.key_data() else {
            return Err(bad_key(other_key_type(
                parsed.algorithm().as_str(),
                "signs",
            )));
        };
        let seed = Zeroizing::new(pair.private.to_bytes());
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        if key.verifying_key().as_bytes() != &pair.public.0 {
            return Err(bad_key(format!(
                "the key file is damaged: its public key is not the one of its private key; \
                 {MAKE_KEY}"
            )));
        }
        Ok(SigningKey { key })
    }

    /// The key whose 32-byte Ed25519 secret (the RFC 8032 seed) is `seed`. For tests and for
    /// embedders that keep the secret elsewhere; the copy given here is wiped.
    pub fn from_seed(seed: [u8; 32]) -> SigningKey {
        let seed = Zeroizing::new(seed);
        SigningKey {
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
        }
    }

    /// The public key that checks this key's signatures.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.key.verifying_key())
    }

    /// Signs a skill revision: its `name`, its optional `version` and its content `digest`
    /// (see [`message`], whose errors this returns). Ed25519 signatures are deterministic: the
    /// same key and revision always give the same signature.
    pub fn sign(
        &self,
        name: &str,
        version: Option<&str>,
        digest: &str,
    ) -> Result<Signature, SignatureError> {
        let msg = message(name, version, digest)?;
        let sig = self.key.sign(&msg);
        Ok(Signature::new(self.public(), sig.to_bytes()))
    }

    /// This key as an unencrypted OpenSSH private key file, with an empty comment, which
    /// `ssh-keygen -y -f` and [`SigningKey::from_openssh`] read. The text is wiped from memory
    /// when dropped; write it to a file only readable by its owner (mode 0600).
    pub fn to_openssh(&self) -> Zeroizing<String> {
        let seed = Zeroizing::new(self.key.to_bytes());
        let pair = ssh_key::private::Ed25519Keypair {
            public: ssh_key::public::Ed25519PublicKey(self.key.verifying_key().to_bytes()),
            private: ssh_key::private::Ed25519PrivateKey::from_bytes(&seed),
        };
        let key = ssh_key::PrivateKey::new(ssh_key::private::KeypairData::Ed25519(pair), "")
            .expect("an unencrypted key is always accepted");
        key.to_openssh(ssh_key::LineEnding::LF)
            .expect("encoding an ed25519 key into memory cannot fail")
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public().fingerprint())
            .finish_non_exhaustive()
    }
}

/// What a text that is not an OpenSSH private key file looks like, and what to give instead.
fn not_openssh_private(text: &str) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    if let Some(label) = first
        .strip_prefix("-----BEGIN ")
        .and_then(|l| l.strip_suffix("-----"))
    {
        return format!(
            "this is a PEM '{}' file, not an OpenSSH private key; Skillbase reads OpenSSH \
             ed25519 private keys (they start with {OPENSSH_BEGIN}): {MAKE_KEY}",
            escape_controls(shorten(label, 64))
        );
    }
    if first.starts_with("PuTTY-User-Key-File-") {
        return format!(
            "this is a PuTTY key, not an OpenSSH private key; export it from PuTTYgen as an \
             OpenSSH key (Conversions > Export OpenSSH key (force new file format)), or {MAKE_KEY}"
        );
    }
    if first.starts_with("untrusted comment:") && first.contains("secret key") {
        return format!(
            "this is a minisign secret key; Skillbase signs with OpenSSH ed25519 private keys \
             (minisign public keys are read for verifying): {MAKE_KEY}"
        );
    }
    if PublicKey::parse(text).is_ok() {
        return "this is a public key; signing needs the private key file (id_ed25519, not \
                id_ed25519.pub)"
            .into();
    }
    format!(
        "this is not an OpenSSH private key file (it should start with {OPENSSH_BEGIN}); give \
         one, or {MAKE_KEY}"
    )
}

/// What to say about a key of type `key_type` where an Ed25519 one is needed.
fn other_key_type(key_type: &str, verb: &str) -> String {
    let shown = escape_controls(shorten(key_type, 64)).into_owned();
    if key_type.starts_with("sk-") {
        format!(
            "the key is a hardware security key ({shown}), which cannot make Skillbase \
             signatures; Skillbase {verb} with plain ed25519 keys: {MAKE_KEY}"
        )
    } else if key_type.contains("-cert-") {
        format!(
            "this is an OpenSSH certificate ({shown}), not a key; give the plain ssh-ed25519 \
             public key"
        )
    } else {
        format!(
            "the key is an {shown} key; Skillbase {verb} with ed25519 keys only (ssh-keygen -t \
             ed25519 -N '')"
        )
    }
}

/// The OpenSSH private key armour and body from `text`, rebuilt with `\n` line ends and without
/// surrounding indentation, so a file copied with CRLF line ends or indented still reads.
fn openssh_pem(text: &str) -> Result<Zeroizing<String>, String> {
    let mut lines = text.lines().map(str::trim);
    lines.by_ref().find(|l| *l == OPENSSH_BEGIN);
    let mut pem = Zeroizing::new(String::with_capacity(text.len()));
    pem.push_str(OPENSSH_BEGIN);
    pem.push('\n');
    let mut ended = false;
    for line in lines.by_ref() {
        if line == OPENSSH_END {
            ended = true;
            break;
        }
        if line.is_empty() {
            continue;
        }
        pem.push_str(line);
        pem.push('\n');
    }
    if !ended {
        return Err(format!(
            "the key file is cut short: it has no {OPENSSH_END} line; copy the whole file again"
        ));
    }
    if lines.any(|l| !l.is_empty()) {
        return Err(
            "the key file has text after its end line; give a file with one private key".into(),
        );
    }
    pem.push_str(OPENSSH_END);
    pem.push('\n');
    Ok(pem)
}

/// The unencrypted header of an OpenSSH private key file (`PROTOCOL.key`): enough to tell an
/// encrypted key or a key of another type apart before parsing the whole key.
struct OpensshHeader {
    cipher: String,
    kdf: String,
    nkeys: u32,
    key_type: String,
}

fn peek_openssh_private(pem: &str) -> Result<OpensshHeader, String> {
    let damaged = |what: &str| {
        format!(
            "the OpenSSH private key file is damaged ({what}); copy the whole file again, or {MAKE_KEY}"
        )
    };
    let body: Zeroizing<String> = Zeroizing::new(
        pem.lines()
            .filter(|l| *l != OPENSSH_BEGIN && *l != OPENSSH_END)
            .collect(),
    );
    let raw = Zeroizing::new(
        STANDARD
            .decode(body.as_bytes())
            .map_err(|e| damaged(&format!("bad base64: {e}")))?,
    );
    let mut wire = Wire(&raw);
    let magic = wire.bytes(15).ok_or_else(|| damaged("too short"))?;
    if magic != b"openssh-key-v1\0" {
        return Err(damaged("it does not start with openssh-key-v1"));
    }
    let truncated = || damaged("truncated");
    let cipher = shown_bytes(wire.string().ok_or_else(truncated)?);
    let kdf = shown_bytes(wire.string().ok_or_else(truncated)?);
    let _kdf_options = wire.string().ok_or_else(truncated)?;
    let nkeys = wire.u32().ok_or_else(truncated)?;
    let public = wire.string().ok_or_else(truncated)?;
    let key_type = shown_bytes(Wire(public).string().ok_or_else(truncated)?);
    Ok(OpensshHeader {
        cipher,
        kdf,
        nkeys,
        key_type,
    })
}

/// An Ed25519 public key, for checking signatures. Two keys are equal when their 32 bytes are,
/// whatever file format each came from.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(ed25519_dalek::VerifyingKey);

impl PublicKey {
    /// Reads a public key from any of:
    ///
    /// - an OpenSSH public key line, `ssh-ed25519 AAAA... optional comment`, as in
    ///   `id_ed25519.pub`, or one line of `authorized_keys` (options before the key type are
    ///   skipped; blank lines and `#` comment lines are ignored, but only one key may be given);
    /// - a minisign public key: its bare base64 line (starting with `RW`), or its two-line `.pub`
    ///   file whose first line is `untrusted comment: ...`.
    ///
    /// Refuses, each with a message saying what to do: an empty or oversized text (more than
    /// [`MAX_INPUT_BYTES`]), a private key, a key of another type (RSA, ECDSA, ...), a
    /// certificate, damaged base64, wrong lengths, a minisign key of another algorithm, and a
    /// weak (small-order) Ed25519 key.
    pub fn parse(text: &str) -> Result<PublicKey, SignatureError> {
        check_size(text, "public key").map_err(bad_key)?;
        let text = text.trim_start_matches('\u{feff}');
        if text.contains("PRIVATE KEY-----") {
            return Err(bad_key(
                "this is a private key; give its public key instead (the .pub file beside it, \
                 or the output of `ssh-keygen -y -f KEYFILE`), and never share the private key",
            ));
        }
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let Some(first) = lines.first() else {
            return Err(bad_key(
                "the public key is empty; give an OpenSSH public key line (ssh-ed25519 AAAA...) \
                 or a minisign public key (RW...)",
            ));
        };
        if first.starts_with("untrusted comment:") {
            if first.contains("secret key") && !first.contains("public key") {
                return Err(bad_key(
                    "this is a minisign secret key (or a signature made with one); give the \
                     minisign public key (minisign.pub)",
                ));
            }
            return match lines.as_slice() {
                [_, key] => parse_minisign(key),
                [_] => Err(bad_key(
                    "the minisign public key file has a comment line but no key line; copy the \
                     whole file again",
                )),
                _ => Err(bad_key(
                    "the minisign public key file has more than two lines; give one minisign \
                     public key (its comment line and its key line)",
                )),
            };
        }
        let keys: Vec<&str> = lines.into_iter().filter(|l| !l.starts_with('#')).collect();
        match keys.as_slice() {
            [] => Err(bad_key(
                "the text holds only comments; give an OpenSSH public key line \
                 (ssh-ed25519 AAAA...) or a minisign public key (RW...)",
            )),
            [line] if looks_like_minisign(line) => parse_minisign(line),
            [line] => parse_openssh_line(line),
            many => Err(bad_key(format!(
                "the text holds {} keys; give one public key",
                many.len()
            ))),
        }
    }

    /// The key whose 32 bytes (the RFC 8032 encoding) are `bytes`. Refuses bytes that are not
    /// an Ed25519 point, and weak (small-order) keys, which no real key is.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<PublicKey, SignatureError> {
        let key = ed25519_dalek::VerifyingKey::from_bytes(bytes).map_err(|_| {
            bad_key("the key bytes are not an Ed25519 public key; the key is damaged")
        })?;
        if key.is_weak() {
            return Err(bad_key(format!(
                "the key is a weak (small-order) Ed25519 key, which anyone can forge signatures \
                 for; no real key is one: {MAKE_KEY}"
            )));
        }
        Ok(PublicKey(key))
    }

    /// The key's 32 bytes (the RFC 8032 encoding).
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// The key's OpenSSH fingerprint, `SHA256:` followed by the unpadded base64 of the SHA-256
    /// of the key's SSH wire encoding: the same string that `ssh-keygen -lf key.pub` prints, and
    /// the same for a key whichever file format it was read from.
    pub fn fingerprint(&self) -> String {
        let hash = Sha256::digest(ssh_wire(self.as_bytes()));
        format!("SHA256:{}", STANDARD_NO_PAD.encode(hash))
    }

    /// The key as an OpenSSH public key line without a comment: `ssh-ed25519 AAAA...`.
    pub fn to_openssh(&self) -> String {
        format!(
            "{SSH_ED25519} {}",
            STANDARD.encode(ssh_wire(self.as_bytes()))
        )
    }

    /// Checks that `sig` was made by this key over this skill revision (see [`message`], whose
    /// errors this returns). Uses strict verification: refuses non-canonical and small-order
    /// signature values. A signature made by another key, or over another name, version or
    /// digest, gives [`SignatureError::Mismatch`].
    pub fn verify(
        &self,
        sig: &Signature,
        name: &str,
        version: Option<&str>,
        digest: &str,
    ) -> Result<(), SignatureError> {
        let msg = message(name, version, digest)?;
        let sig = ed25519_dalek::Signature::from_bytes(&sig.bytes);
        self.0
            .verify_strict(&msg, &sig)
            .map_err(|_| SignatureError::Mismatch)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PublicKey")
            .field(&self.fingerprint())
            .finish()
    }
}

/// Whether `t` names an OpenSSH key or certificate type (`ssh-ed25519`, `ecdsa-sha2-nistp256`,
/// `sk-ssh-ed25519@openssh.com`, ...).
fn is_ssh_key_type(t: &str) -> bool {
    t.starts_with("ssh-")
        || t.starts_with("ecdsa-")
        || t.starts_with("sk-")
        || t.ends_with("@openssh.com")
}

/// Whether a lone line is a minisign public key: one base64 word that starts with `RW` (the
/// base64 of `Ed`), or that decodes to the 42 bytes of a minisign key of another algorithm.
fn looks_like_minisign(line: &str) -> bool {
    if line.contains([' ', '\t']) || is_ssh_key_type(line) {
        return false;
    }
    line.starts_with("RW") || STANDARD.decode(line).is_ok_and(|raw| raw.len() == 42)
}

/// An OpenSSH public key line, possibly an `authorized_keys` line with options first.
fn parse_openssh_line(line: &str) -> Result<PublicKey, SignatureError> {
    let tokens: Vec<&str> = line.split([' ', '\t']).filter(|t| !t.is_empty()).collect();
    let Some(at) = tokens.iter().position(|t| is_ssh_key_type(t)) else {
        return Err(bad_key(
            "this is not a public key; give an OpenSSH public key line (ssh-ed25519 AAAA... as \
             in id_ed25519.pub) or a minisign public key (RW...)",
        ));
    };
    let key_type = tokens[at];
    if key_type != SSH_ED25519 {
        return Err(bad_key(other_key_type(key_type, "verifies")));
    }
    let Some(b64) = tokens.get(at + 1) else {
        return Err(bad_key(
            "the key line stops after ssh-ed25519: its base64 key data is missing; copy the \
             whole line of the .pub file again",
        ));
    };
    let raw = STANDARD.decode(b64).map_err(|e| {
        bad_key(format!(
            "the key's base64 is damaged ({e}); copy the whole line of the .pub file again"
        ))
    })?;
    let mut wire = Wire(&raw);
    let inner_type = wire.string().ok_or_else(|| {
        bad_key("the key data is truncated; copy the whole line of the .pub file again")
    })?;
    if inner_type != SSH_ED25519.as_bytes() {
        return Err(bad_key(format!(
            "the line says ssh-ed25519 but its key data is a '{}' key; the line is damaged or \
             was edited: copy it again from the .pub file",
            shown_bytes(inner_type)
        )));
    }
    let key = wire.string().ok_or_else(|| {
        bad_key("the key data is truncated; copy the whole line of the .pub file again")
    })?;
    let key: &[u8; 32] = key.try_into().map_err(|_| {
        bad_key(format!(
            "the key data holds a {}-byte key, not a 32-byte ed25519 key; the line is damaged",
            key.len()
        ))
    })?;
    if !wire.0.is_empty() {
        return Err(bad_key(
            "the key data has extra bytes after the key; the line is damaged: copy it again",
        ));
    }
    PublicKey::from_bytes(key)
}

/// A minisign public key line: base64 of `Ed`, an 8-byte key id and the 32-byte key.
fn parse_minisign(line: &str) -> Result<PublicKey, SignatureError> {
    let raw = STANDARD.decode(line).map_err(|e| {
        bad_key(format!(
            "the minisign public key's base64 is damaged ({e}); copy the whole key line again"
        ))
    })?;
    if raw.len() != 42 {
        return Err(bad_key(format!(
            "a minisign public key is 42 bytes, this one is {}; give the public key \
             (minisign.pub), not a signature or a secret key, and copy its whole key line",
            raw.len()
        )));
    }
    if &raw[..2] != b"Ed" {
        return Err(bad_key(format!(
            "the minisign key's algorithm is '{}', not 'Ed' (Ed25519); give an Ed25519 minisign \
             public key",
            shown_bytes(&raw[..2])
        )));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&raw[10..]);
    PublicKey::from_bytes(&key)
}

/// A detached signature over a skill revision, with the public key that made it.
///
/// Serialized (with serde, or [`Signature::to_json`]) as a small JSON object:
/// `{"alg": "ed25519", "signer": "SHA256:...", "public_key": "ssh-ed25519 AAAA...", "sig":
/// "<base64 of the 64-byte signature>"}`. Reading it (with serde, or [`Signature::parse`])
/// refuses unknown fields, another `alg`, a `signer` that is not the fingerprint of
/// `public_key`, and a `sig` that is not 64 bytes of base64; so every `Signature` value is well
/// formed, but only [`Signature::verify`] says whether it matches a revision.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "SignatureFile", into = "SignatureFile")]
pub struct Signature {
    public_key: PublicKey,
    signer: String,
    bytes: [u8; 64],
}

/// The JSON form of a [`Signature`], as written.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureFile {
    alg: String,
    signer: String,
    public_key: String,
    sig: String,
}

impl Signature {
    fn new(public_key: PublicKey, bytes: [u8; 64]) -> Signature {
        Signature {
            signer: public_key.fingerprint(),
            public_key,
            bytes,
        }
    }

    /// Reads a signature file (its JSON object). Refuses a text longer than
    /// [`MAX_INPUT_BYTES`], text that is not that JSON object (including unknown fields),
    /// another `alg` than `ed25519`, a `public_key` that is not an `ssh-ed25519 AAAA...` line,
    /// a `signer` that is not the fingerprint of `public_key`, and a `sig` that is not the base64
    /// of 64 bytes.
    pub fn parse(text: &str) -> Result<Signature, SignatureError> {
        check_size(text, "signature file").map_err(bad_signature)?;
        let file: SignatureFile = serde_json::from_str(text).map_err(|e| {
            bad_signature(format!(
                "it is not a Skillbase signature file ({e}); expected a JSON object with the \
                 fields alg, signer, public_key and sig, as `Signature::to_json` writes it"
            ))
        })?;
        Signature::try_from(file)
    }

    /// The signature file: pretty-printed JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(&SignatureFile::from(self.clone()))
            .expect("a signature of strings always serializes");
        json.push('\n');
        json
    }

    /// The public key that made this signature, as carried in the signature itself.
    pub fn public_key(&self) -> &PublicKey {
        &self.public_key
    }

    /// Who signed: the fingerprint of [`Signature::public_key`] (`SHA256:...`, as
    /// `ssh-keygen -lf` prints it). Whether this signer is trusted is the caller's decision.
    pub fn signer(&self) -> &str {
        &self.signer
    }

    /// The 64 signature bytes.
    pub fn as_bytes(&self) -> &[u8; 64] {
        &self.bytes
    }

    /// Checks this signature against its own public key for this skill revision; see
    /// [`PublicKey::verify`]. Proves only that the holder of [`Signature::signer`]'s key signed
    /// this name, version and digest; the caller decides separately whether that signer is
    /// trusted.
    pub fn verify(
        &self,
        name: &str,
        version: Option<&str>,
        digest: &str,
    ) -> Result<(), SignatureError> {
        self.public_key.verify(self, name, version, digest)
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signature")
            .field("signer", &self.signer)
            .field("sig", &STANDARD.encode(self.bytes))
            .finish()
    }
}

impl TryFrom<SignatureFile> for Signature {
    type Error = SignatureError;

    fn try_from(file: SignatureFile) -> Result<Signature, SignatureError> {
        if file.alg != ALGORITHM {
            return Err(bad_signature(format!(
                "its alg is '{}', and Skillbase reads only '{ALGORITHM}' signatures; sign the \
                 skill again with an ed25519 key",
                escape_controls(shorten(&file.alg, 64))
            )));
        }
        let public_key = parse_openssh_line(&file.public_key).map_err(|e| {
            let reason = match e {
                SignatureError::BadKey(reason) => reason,
                other => other.to_string(),
            };
            bad_signature(format!("its public_key cannot be used: {reason}"))
        })?;
        if public_key.to_openssh() != file.public_key {
            return Err(bad_signature(
                "its public_key must be written `ssh-ed25519 AAAA...` with nothing around it; \
                 the file was edited: sign the skill again",
            ));
        }
        let fingerprint = public_key.fingerprint();
        if file.signer != fingerprint {
            return Err(bad_signature(format!(
                "its signer '{}' is not the fingerprint of its public_key ({fingerprint}); the \
                 file was edited: sign the skill again",
                escape_controls(shorten(&file.signer, 64))
            )));
        }
        let raw = Zeroizing::new(STANDARD.decode(&file.sig).map_err(|e| {
            bad_signature(format!(
                "its sig is not valid base64 ({e}); the file is damaged: sign the skill again"
            ))
        })?);
        let bytes: [u8; 64] = raw.as_slice().try_into().map_err(|_| {
            bad_signature(format!(
                "its sig is {} bytes, and an ed25519 signature is 64; the file is damaged: sign \
                 the skill again",
                raw.len()
            ))
        })?;
        Ok(Signature {
            public_key,
            signer: fingerprint,
            bytes,
        })
    }
}

impl From<Signature> for SignatureFile {
    fn from(sig: Signature) -> SignatureFile {
        SignatureFile {
            alg: ALGORITHM.into(),
            signer: sig.signer,
            public_key: sig.public_key.to_openssh(),
            sig: STANDARD.encode(sig.bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::{Command, Output};

    const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    const OTHER_DIGEST: &str =
        "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    /// RFC 8032 section 7.1, test 1.
    const RFC_SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const RFC_PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    fn rfc_key() -> SigningKey {
        SigningKey::from_seed(hex32(RFC_SEED))
    }

    fn other_key() -> SigningKey {
        SigningKey::from_seed([7u8; 32])
    }

    /// The bare minisign public key line for `key`, built by hand: base64 of `alg`, a key id and
    /// the key.
    fn minisign_line(alg: &[u8; 2], key: &[u8; 32]) -> String {
        let mut raw = Vec::new();
        raw.extend_from_slice(alg);
        raw.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        raw.extend_from_slice(key);
        STANDARD.encode(raw)
    }

    fn bad_key_message(r: Result<impl fmt::Debug, SignatureError>) -> String {
        match r {
            Err(SignatureError::BadKey(m)) => m,
            other => panic!("expected BadKey, got {other:?}"),
        }
    }

    fn bad_signature_message(r: Result<Signature, SignatureError>) -> String {
        match r {
            Err(SignatureError::BadSignature(m)) => m,
            other => panic!("expected BadSignature, got {other:?}"),
        }
    }

    /// Runs ssh-keygen, or returns None (after saying so) when it is not installed.
    fn ssh_keygen(args: &[&str]) -> Option<Output> {
        match Command::new("ssh-keygen").args(args).output() {
            Ok(out) => Some(out),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("SKIPPED: ssh-keygen is not installed; this check did not run");
                None
            }
            Err(e) => panic!("running ssh-keygen: {e}"),
        }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn message_is_the_documented_bytes() {
        assert_eq!(
            message("pdf-tools", Some("1.2.0"), DIGEST).unwrap(),
            format!("skillbase-signature-v1\nname=pdf-tools\nversion=1.2.0\ndigest={DIGEST}\n")
                .into_bytes()
        );
        assert_eq!(
            message("pdf-tools", None, DIGEST).unwrap(),
            format!("skillbase-signature-v1\nname=pdf-tools\nversion=\ndigest={DIGEST}\n")
                .into_bytes()
        );
    }

    #[test]
    fn message_refuses_empty_and_control_characters() {
        let field_of = |r: Result<Vec<u8>, SignatureError>| match r {
            Err(SignatureError::InvalidField { field, reason }) => (field, reason),
            other => panic!("expected InvalidField, got {other:?}"),
        };
        for bad in [
            "pdf\ntools",
            "pdf\rtools",
            "pdf\0",
            "a\u{1b}[31m",
            "a\u{7f}",
            "a\u{85}",
        ] {
            let (field, reason) = field_of(message(bad, None, DIGEST));
            assert_eq!(field, "name");
            assert!(reason.contains("control character"), "{reason}");
            assert!(
                !reason.contains('\n') && !reason.contains('\u{1b}'),
                "{reason}"
            );
        }
        assert_eq!(field_of(message("", None, DIGEST)).0, "name");
        assert_eq!(field_of(message("a", Some(""), DIGEST)).0, "version");
        assert_eq!(field_of(message("a", Some("1.0.0\n"), DIGEST)).0, "version");
        assert_eq!(field_of(message("a", None, "")).0, "digest");
        assert_eq!(field_of(message("a", None, "sha256:00\n")).0, "digest");
        // Signing and verifying refuse the same fields.
        let key = rfc_key();
        let sig = key.sign("a", None, DIGEST).unwrap();
        assert!(matches!(
            key.sign("a\nb", None, DIGEST),
            Err(SignatureError::InvalidField { field: "name", .. })
        ));
        assert!(matches!(
            sig.verify("a", None, "sha256:\t"),
            Err(SignatureError::InvalidField {
                field: "digest",
                ..
            })
        ));
        let err = message("a\nb", None, DIGEST).unwrap_err().to_string();
        assert!(
            err.starts_with("cannot sign or verify this name: "),
            "{err}"
        );
    }

    #[test]
    fn sign_and_verify_round_trip() {
        let key = rfc_key();
        for version in [Some("1.2.0"), None] {
            let sig = key.sign("pdf-tools", version, DIGEST).unwrap();
            sig.verify("pdf-tools", version, DIGEST).unwrap();
            key.public()
                .verify(&sig, "pdf-tools", version, DIGEST)
                .unwrap();
            assert_eq!(sig.signer(), key.public().fingerprint());
            assert_eq!(sig.public_key(), &key.public());
            // Through the JSON file and back.
            let back = Signature::parse(&sig.to_json()).unwrap();
            assert_eq!(back, sig);
            back.verify("pdf-tools", version, DIGEST).unwrap();
        }
    }

    /// The signature of the RFC 8032 test 1 key over a fixed message, made independently with
    /// `openssl pkeyutl -sign -rawin` over the documented message bytes.
    #[test]
    fn known_signature_vector() {
        let sig = rfc_key().sign("pdf-tools", Some("1.2.0"), DIGEST).unwrap();
        assert_eq!(
            STANDARD.encode(sig.as_bytes()),
            "0Xlt0Mt5uV6QDlrmsBoTk6/BcE379WfW+Gok8oTlJb2c21L+OclS/Ayx2k+OR6B/TFT1TRiDZol2CnMbcmXfCg=="
        );
    }

    #[test]
    fn any_change_is_a_mismatch() {
        let key = rfc_key();
        let sig = key.sign("pdf-tools", Some("1.2.0"), DIGEST).unwrap();
        let mismatch = |r: Result<(), SignatureError>| {
            assert_eq!(r, Err(SignatureError::Mismatch));
        };
        mismatch(sig.verify("pdf-tool", Some("1.2.0"), DIGEST));
        mismatch(sig.verify("pdf-tools", Some("1.2.1"), DIGEST));
        mismatch(sig.verify("pdf-tools", None, DIGEST));
        mismatch(sig.verify("pdf-tools", Some("1.2.0"), OTHER_DIGEST));
        // None vs Some the other way round.
        let unversioned = key.sign("pdf-tools", None, DIGEST).unwrap();
        mismatch(unversioned.verify("pdf-tools", Some("1.2.0"), DIGEST));
        // Another key.
        mismatch(
            other_key()
                .public()
                .verify(&sig, "pdf-tools", Some("1.2.0"), DIGEST),
        );
        // Every flipped bit of the signature.
        for i in 0..64 {
            for bit in [0x01u8, 0x80] {
                let mut bytes = *sig.as_bytes();
                bytes[i] ^= bit;
                let flipped = Signature::new(key.public(), bytes);
                mismatch(flipped.verify("pdf-tools", Some("1.2.0"), DIGEST));
            }
        }
        let text = SignatureError::Mismatch.to_string();
        assert!(text.contains("changed after it was signed"), "{text}");
    }

    #[test]
    fn signature_json_shape() {
        let key = rfc_key();
        let sig = key.sign("pdf-tools", None, DIGEST).unwrap();
        let json = sig.to_json();
        assert!(json.ends_with("}\n"), "{json}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let obj = value.as_object().unwrap();
        assert_eq!(
            obj.keys().collect::<Vec<_>>(),
            ["alg", "signer", "public_key", "sig"]
        );
        assert_eq!(obj["alg"], "ed25519");
        assert_eq!(obj["signer"], key.public().fingerprint());
        assert_eq!(obj["public_key"], key.public().to_openssh());
        assert_eq!(
            STANDARD.decode(obj["sig"].as_str().unwrap()).unwrap(),
            sig.as_bytes()
        );
        // serde goes through the same checks as `parse`.
        assert_eq!(serde_json::from_str::<Signature>(&json).unwrap(), sig);
        assert_eq!(serde_json::to_value(&sig).unwrap(), value);
    }

    fn sig_json(alg: &str, signer: &str, public_key: &str, sig: &str) -> String {
        serde_json::json!({"alg": alg, "signer": signer, "public_key": public_key, "sig": sig})
            .to_string()
    }

    #[test]
    fn signature_files_that_lie_or_are_damaged_are_refused() {
        let key = rfc_key();
        let other = other_key();
        let sig = key.sign("pdf-tools", None, DIGEST).unwrap();
        let b64 = STANDARD.encode(sig.as_bytes());
        let pk = key.public().to_openssh();
        let fp = key.public().fingerprint();

        // A signer that is not the fingerprint of the embedded key.
        let lying = sig_json("ed25519", &other.public().fingerprint(), &pk, &b64);
        let m = bad_signature_message(Signature::parse(&lying));
        assert!(
            m.contains("is not the fingerprint of its public_key"),
            "{m}"
        );
        assert!(serde_json::from_str::<Signature>(&lying).is_err());
        // Another key's public_key with this signer.
        let swapped = sig_json("ed25519", &fp, &other.public().to_openssh(), &b64);
        assert!(bad_signature_message(Signature::parse(&swapped)).contains("fingerprint"));

        let m = bad_signature_message(Signature::parse(&sig_json("rsa", &fp, &pk, &b64)));
        assert!(m.contains("alg is 'rsa'"), "{m}");
        let m = bad_signature_message(Signature::parse(&sig_json("ed25519", &fp, &pk, "!!!")));
        assert!(m.contains("not valid base64"), "{m}");
        let short = STANDARD.encode([0u8; 63]);
        let m = bad_signature_message(Signature::parse(&sig_json("ed25519", &fp, &pk, &short)));
        assert!(m.contains("63 bytes"), "{m}");
        let with_comment = format!("{pk} me@host");
        let m = bad_signature_message(Signature::parse(&sig_json(
            "ed25519",
            &fp,
            &with_comment,
            &b64,
        )));
        assert!(m.contains("nothing around it"), "{m}");
        let rsa = sig_json(
            "ed25519",
            &fp,
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC",
            &b64,
        );
        assert!(bad_signature_message(Signature::parse(&rsa)).contains("ssh-rsa"));

        let mut extra: serde_json::Value = serde_json::from_str(&sig.to_json()).unwrap();
        extra["comment"] = "hi".into();
        let m = bad_signature_message(Signature::parse(&extra.to_string()));
        assert!(m.contains("unknown field"), "{m}");
        for bad in ["", "{}", "[]", "null", "{\"alg\": \"ed25519\"}", "not json"] {
            bad_signature_message(Signature::parse(bad));
        }
        let huge = format!("{{\"alg\": \"{}\"}}", "a".repeat(MAX_INPUT_BYTES));
        let m = bad_signature_message(Signature::parse(&huge));
        assert!(m.contains("16 KiB"), "{m}");
    }

    #[test]
    fn rfc8032_public_key_and_fingerprint() {
        let key = rfc_key();
        assert_eq!(key.public().as_bytes(), &hex32(RFC_PUBLIC));

        // The SSH wire encoding and fingerprint, computed here by hand.
        let mut wire = Vec::new();
        wire.extend_from_slice(&(b"ssh-ed25519".len() as u32).to_be_bytes());
        wire.extend_from_slice(b"ssh-ed25519");
        wire.extend_from_slice(&32u32.to_be_bytes());
        wire.extend_from_slice(&hex32(RFC_PUBLIC));
        let line = format!("ssh-ed25519 {} rfc8032-test1", STANDARD.encode(&wire));
        let expected = format!("SHA256:{}", STANDARD_NO_PAD.encode(Sha256::digest(&wire)));

        let parsed = PublicKey::parse(&line).unwrap();
        assert_eq!(parsed, key.public());
        assert_eq!(parsed.fingerprint(), expected);
        // As `ssh-keygen -lf` prints it for this line (OpenSSH 9.2).
        assert_eq!(
            expected,
            "SHA256:bbXpuKG6zhzdmnxq256TlqzFBzRl2f6OOg722cYNbU8"
        );
        assert_eq!(
            parsed.to_openssh(),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8CGmj3B1Ea"
        );
        // And as the ssh-key crate computes both.
        let theirs = ssh_key::PublicKey::from_openssh(&line).unwrap();
        assert_eq!(
            theirs.fingerprint(ssh_key::HashAlg::Sha256).to_string(),
            expected
        );
        assert_eq!(
            theirs.to_openssh().unwrap(),
            format!("{} rfc8032-test1", parsed.to_openssh())
        );
    }

    #[test]
    fn minisign_and_openssh_keys_share_a_fingerprint() {
        let key = rfc_key();
        let bytes = *key.public().as_bytes();
        let bare = minisign_line(b"Ed", &bytes);
        assert!(bare.starts_with("RW"), "{bare}");
        let file = format!("untrusted comment: minisign public key 0807060504030201\n{bare}\n");
        let from_openssh = PublicKey::parse(&key.public().to_openssh()).unwrap();
        for text in [bare.clone(), file, format!("  {bare}\r\n")] {
            let from_minisign = PublicKey::parse(&text).unwrap();
            assert_eq!(from_minisign, from_openssh);
            assert_eq!(from_minisign.fingerprint(), from_openssh.fingerprint());
        }
        // A signature checks with the key however it was read.
        let sig = key.sign("pdf-tools", None, DIGEST).unwrap();
        PublicKey::parse(&bare)
            .unwrap()
            .verify(&sig, "pdf-tools", None, DIGEST)
            .unwrap();
    }

    /// A real minisign public key file (the key of minisign's author, as published in its
    /// documentation): its comment names the key id, stored little-endian after `Ed`.
    #[test]
    fn real_minisign_public_key_file() {
        let b64 = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3";
        let file = format!("untrusted comment: minisign public key E7620F1842B4E81F\n{b64}\n");
        let key = PublicKey::parse(&file).unwrap();
        let raw = STANDARD.decode(b64).unwrap();
        assert_eq!(&raw[..2], b"Ed");
        assert_eq!(
            u64::from_le_bytes(raw[2..10].try_into().unwrap()),
            0xE762_0F18_42B4_E81F
        );
        assert_eq!(&key.as_bytes()[..], &raw[10..]);
        assert_eq!(PublicKey::parse(b64).unwrap(), key);
        let line = PublicKey::parse(&key.to_openssh()).unwrap();
        assert_eq!(line.fingerprint(), key.fingerprint());
        assert_eq!(
            key.fingerprint(),
            format!(
                "SHA256:{}",
                STANDARD_NO_PAD.encode(Sha256::digest(ssh_wire(key.as_bytes())))
            )
        );
    }

    #[test]
    fn openssh_public_key_line_forms() {
        let key = rfc_key();
        let line = key.public().to_openssh();
        for text in [
            line.clone(),
            format!("{line} alice@example.com"),
            format!("{line} a comment with spaces\n"),
            format!("restrict,command=\"echo hi\" {line} deploy"),
            format!("# my key\n\n{line}\n"),
            format!("{}\t{}", "ssh-ed25519", line.split(' ').nth(1).unwrap()),
        ] {
            assert_eq!(PublicKey::parse(&text).unwrap(), key.public(), "{text:?}");
        }
        let two = format!("{line}\n{}\n", other_key().public().to_openssh());
        assert!(bad_key_message(PublicKey::parse(&two)).contains("holds 2 keys"));
    }

    #[test]
    fn hostile_public_keys_are_refused_clearly() {
        let key = rfc_key();
        let line = key.public().to_openssh();
        let b64 = line.split(' ').nth(1).unwrap();

        for empty in ["", "   \n\n", "\u{feff}"] {
            assert!(bad_key_message(PublicKey::parse(empty)).contains("empty"));
        }
        let huge = format!("{line} {}", "x".repeat(MAX_INPUT_BYTES));
        assert!(bad_key_message(PublicKey::parse(&huge)).contains("16 KiB"));

        // An RSA key line (e = 65537, a made-up modulus).
        let mut rsa = Vec::new();
        for part in [&b"ssh-rsa"[..], &[1, 0, 1], &[0x00, 0xc3, 0x5a, 0x11]] {
            rsa.extend_from_slice(&(part.len() as u32).to_be_bytes());
            rsa.extend_from_slice(part);
        }
        let rsa_line = format!("ssh-rsa {} bob@host", STANDARD.encode(&rsa));
        let m = bad_key_message(PublicKey::parse(&rsa_line));
        assert!(
            m.contains("ssh-rsa key") && m.contains("ed25519 keys only"),
            "{m}"
        );
        let m = bad_key_message(PublicKey::parse(
            "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBA x",
        ));
        assert!(m.contains("ecdsa-sha2-nistp256"), "{m}");
        let m = bad_key_message(PublicKey::parse(&format!(
            "sk-ssh-ed25519@openssh.com {b64}"
        )));
        assert!(m.contains("hardware security key"), "{m}");
        let m = bad_key_message(PublicKey::parse(&format!(
            "ssh-ed25519-cert-v01@openssh.com {b64}"
        )));
        assert!(m.contains("certificate"), "{m}");
        // The text says ed25519, the data says RSA.
        let m = bad_key_message(PublicKey::parse(&format!(
            "ssh-ed25519 {}",
            STANDARD.encode(&rsa)
        )));
        assert!(m.contains("'ssh-rsa' key"), "{m}");

        // Truncated base64, at every length.
        for cut in 1..b64.len() {
            let text = format!("ssh-ed25519 {}", &b64[..cut]);
            let m = bad_key_message(PublicKey::parse(&text));
            assert!(
                m.contains("damaged") || m.contains("truncated"),
                "{cut}: {m}"
            );
        }
        let m = bad_key_message(PublicKey::parse("ssh-ed25519"));
        assert!(m.contains("missing"), "{m}");
        let m = bad_key_message(PublicKey::parse("ssh-ed25519 AAAA*AAA"));
        assert!(m.contains("base64 is damaged"), "{m}");
        // Extra bytes after the key.
        let mut long = ssh_wire(key.public().as_bytes()).to_vec();
        long.push(0);
        let m = bad_key_message(PublicKey::parse(&format!(
            "ssh-ed25519 {}",
            STANDARD.encode(&long)
        )));
        assert!(m.contains("extra bytes"), "{m}");

        // Minisign keys of another algorithm, or of the wrong length.
        let m = bad_key_message(PublicKey::parse(&minisign_line(
            b"ED",
            key.public().as_bytes(),
        )));
        assert!(m.contains("algorithm is 'ED'"), "{m}");
        let m = bad_key_message(PublicKey::parse(&minisign_line(
            b"RS",
            key.public().as_bytes(),
        )));
        assert!(m.contains("not 'Ed'"), "{m}");
        let mut long_minisign = b"Ed".to_vec();
        long_minisign.extend_from_slice(&[0u8; 43]);
        let m = bad_key_message(PublicKey::parse(&STANDARD.encode(long_minisign)));
        assert!(m.contains("42 bytes"), "{m}");
        let m = bad_key_message(PublicKey::parse("RW!!"));
        assert!(m.contains("base64 is damaged"), "{m}");
        let m = bad_key_message(PublicKey::parse(
            "untrusted comment: minisign public key 1\n",
        ));
        assert!(m.contains("no key line"), "{m}");
        let m = bad_key_message(PublicKey::parse(
            "untrusted comment: minisign encrypted secret key\nRWRTY0IyAAAA\n",
        ));
        assert!(m.contains("secret key"), "{m}");

        // A weak (small-order) key: the identity point.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let m = bad_key_message(PublicKey::parse(&minisign_line(b"Ed", &identity)));
        assert!(m.contains("weak"), "{m}");
        let m = bad_key_message(PublicKey::parse(&format!(
            "ssh-ed25519 {}",
            STANDARD.encode(ssh_wire(&identity))
        )));
        assert!(m.contains("weak"), "{m}");

        // Private keys and garbage.
        let m = bad_key_message(PublicKey::parse(&rfc_key().to_openssh()));
        assert!(m.contains("this is a private key"), "{m}");
        for garbage in [
            "hello",
            "AAAAC3NzaC1lZDI1NTE5",
            "\0\u{1b}[2J",
            "{\"alg\":1}",
        ] {
            let m = bad_key_message(PublicKey::parse(garbage));
            assert!(
                m.contains("not a public key") || m.contains("damaged"),
                "{m}"
            );
        }
    }

    #[test]
    fn openssh_private_key_round_trip() {
        let key = rfc_key();
        let text = key.to_openssh();
        assert!(
            text.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"),
            "{}",
            *text
        );
        assert!(
            text.ends_with("-----END OPENSSH PRIVATE KEY-----\n"),
            "{}",
            *text
        );
        let back = SigningKey::from_openssh(&text).unwrap();
        assert_eq!(back.public(), key.public());
        let a = key.sign("pdf-tools", Some("1.2.0"), DIGEST).unwrap();
        let b = back.sign("pdf-tools", Some("1.2.0"), DIGEST).unwrap();
        assert_eq!(a, b);
        // CRLF line ends and surrounding blank lines still read.
        let crlf = format!("\n{}\n", text.replace('\n', "\r\n"));
        assert_eq!(
            SigningKey::from_openssh(&crlf).unwrap().public(),
            key.public()
        );
        // Debug never shows the secret.
        let debug = format!("{key:?}");
        assert!(debug.contains(&key.public().fingerprint()), "{debug}");
        assert!(!debug.contains("9d61") && !debug.contains("157"), "{debug}");
    }

    #[test]
    fn hostile_private_keys_are_refused_clearly() {
        let key = rfc_key();
        let text = key.to_openssh();
        for empty in ["", " \n\t\n"] {
            assert!(bad_key_message(SigningKey::from_openssh(empty)).contains("empty"));
        }
        let huge = format!("{}{}", *text, "A".repeat(MAX_INPUT_BYTES));
        assert!(bad_key_message(SigningKey::from_openssh(&huge)).contains("16 KiB"));

        let m = bad_key_message(SigningKey::from_openssh(&key.public().to_openssh()));
        assert!(m.contains("this is a public key"), "{m}");
        let m = bad_key_message(SigningKey::from_openssh(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n",
        ));
        assert!(m.contains("PEM 'RSA PRIVATE KEY' file"), "{m}");
        let m = bad_key_message(SigningKey::from_openssh(
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
        ));
        assert!(m.contains("PuTTY"), "{m}");
        let m = bad_key_message(SigningKey::from_openssh(
            "untrusted comment: minisign encrypted secret key\nRWRTY0IyAAAA\n",
        ));
        assert!(m.contains("minisign secret key"), "{m}");
        let m = bad_key_message(SigningKey::from_openssh("hello"));
        assert!(m.contains("not an OpenSSH private key"), "{m}");

        // Cut short: without its end line, and with the base64 truncated at every line.
        let lines: Vec<&str> = text.lines().collect();
        let m = bad_key_message(SigningKey::from_openssh(
            &lines[..lines.len() - 1].join("\n"),
        ));
        assert!(m.contains("cut short"), "{m}");
        for keep in 1..lines.len() - 1 {
            let mut cut: Vec<&str> = lines[..keep].to_vec();
            cut.push(lines[lines.len() - 1]);
            let m = bad_key_message(SigningKey::from_openssh(&cut.join("\n")));
            assert!(m.contains("damaged"), "{keep}: {m}");
        }
        // Every single changed base64 character is either refused or still the same key (a
        // change in the comment or padding), never a panic or another key.
        for (i, line) in lines.iter().enumerate().skip(1).take(lines.len() - 2) {
            for j in 0..line.len() {
                let mut changed = line.as_bytes().to_vec();
                changed[j] = if changed[j] == b'A' { b'B' } else { b'A' };
                let mut all: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                all[i] = String::from_utf8(changed).unwrap();
                if let Ok(k) = SigningKey::from_openssh(&all.join("\n")) {
                    assert_eq!(k.public(), key.public(), "line {i} char {j}");
                }
            }
        }
        // Text after the end line.
        let m = bad_key_message(SigningKey::from_openssh(&format!("{}{}", *text, *text)));
        assert!(m.contains("text after its end line"), "{m}");

        // A file whose public key is not the one of its private key.
        let pair = ssh_key::private::Ed25519Keypair {
            public: ssh_key::public::Ed25519PublicKey(*other_key().public().as_bytes()),
            private: ssh_key::private::Ed25519PrivateKey::from_bytes(&hex32(RFC_SEED)),
        };
        let mixed = ssh_key::PrivateKey::new(ssh_key::private::KeypairData::Ed25519(pair), "")
            .unwrap()
            .to_openssh(ssh_key::LineEnding::LF)
            .unwrap();
        let m = bad_key_message(SigningKey::from_openssh(&mixed));
        assert!(m.contains("is not the one of its private key"), "{m}");
    }

    /// Writes `text` as a private key file only its owner can read, as ssh-keygen requires.
    fn write_private(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }

    #[test]
    fn keys_made_by_ssh_keygen() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("k");
        let k_str = k.to_str().unwrap();
        let Some(out) = ssh_keygen(&[
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "test@skillbase",
            "-f",
            k_str,
            "-q",
        ]) else {
            return;
        };
        assert!(out.status.success(), "{out:?}");
        let private = SigningKey::from_openssh(&read(&k)).unwrap();
        let public = PublicKey::parse(&read(&dir.path().join("k.pub"))).unwrap();
        assert_eq!(private.public(), public);

        let out = ssh_keygen(&["-lf", &format!("{k_str}.pub")]).unwrap();
        assert!(out.status.success(), "{out:?}");
        let listed = String::from_utf8(out.stdout).unwrap();
        let theirs = listed.split_whitespace().nth(1).unwrap();
        assert_eq!(public.fingerprint(), theirs, "{listed}");

        let sig = private.sign("pdf-tools", Some("1.2.0"), DIGEST).unwrap();
        public
            .verify(&sig, "pdf-tools", Some("1.2.0"), DIGEST)
            .unwrap();
        assert_eq!(sig.signer(), theirs);

        // ssh-keygen reads the key files that `to_openssh` writes.
        let ours = dir.path().join("ours");
        write_private(&ours, &rfc_key().to_openssh());
        let out = ssh_keygen(&["-y", "-f", ours.to_str().unwrap()]).unwrap();
        assert!(out.status.success(), "{out:?}");
        let derived = String::from_utf8(out.stdout).unwrap();
        assert_eq!(derived.trim(), rfc_key().public().to_openssh());
    }

    #[test]
    fn encrypted_and_other_type_keys_from_ssh_keygen_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let enc = dir.path().join("enc");
        let Some(out) = ssh_keygen(&[
            "-t",
            "ed25519",
            "-N",
            "pass",
            "-f",
            enc.to_str().unwrap(),
            "-q",
        ]) else {
            return;
        };
        assert!(out.status.success(), "{out:?}");
        let m = bad_key_message(SigningKey::from_openssh(&read(&enc)));
        assert!(
            m.starts_with("the key is encrypted") && m.contains("ssh-keygen -t ed25519 -N ''"),
            "{m}"
        );
        // Its public key is fine for verifying.
        PublicKey::parse(&read(&dir.path().join("enc.pub"))).unwrap();

        let ecdsa = dir.path().join("ecdsa");
        let out =
            ssh_keygen(&["-t", "ecdsa", "-N", "", "-f", ecdsa.to_str().unwrap(), "-q"]).unwrap();
        assert!(out.status.success(), "{out:?}");
        let m = bad_key_message(SigningKey::from_openssh(&read(&ecdsa)));
        assert!(
            m.contains("ecdsa-sha2-nistp256 key") && m.contains("ed25519 keys only"),
            "{m}"
        );
        let m = bad_key_message(PublicKey::parse(&read(&dir.path().join("ecdsa.pub"))));
        assert!(m.contains("ecdsa-sha2-nistp256 key"), "{m}");

        let rsa = dir.path().join("rsa");
        let out = ssh_keygen(&[
            "-t",
            "rsa",
            "-b",
            "1024",
            "-N",
            "",
            "-f",
            rsa.to_str().unwrap(),
            "-q",
        ])
        .unwrap();
        if out.status.success() {
            let m = bad_key_message(SigningKey::from_openssh(&read(&rsa)));
            assert!(m.contains("ssh-rsa key"), "{m}");
            let m = bad_key_message(PublicKey::parse(&read(&dir.path().join("rsa.pub"))));
            assert!(m.contains("ssh-rsa key"), "{m}");
        } else {
            eprintln!("SKIPPED: this ssh-keygen would not make a 1024-bit RSA key: {out:?}");
        }
    }
}
