//! Signatures and trust (issue 20): `skillbase sign` writes SKILL.sig beside SKILL.md (not part
//! of the digest), `verify` checks it; an import keeps the signer with the revision (history,
//! export); a tampered file, an unsigned skill where the trust policy requires a signature, a
//! signer the policy does not list, and a signer change on a pinned source are each refused
//! with nothing written; `--accept-new-signer` re-pins; a seed folder is checked the same way.

use super::*;
use serde_json::json;
use skillbase_format::signature::SigningKey;

/// Write an OpenSSH private key (as `ssh-keygen -t ed25519 -N ''` would) and its public key.
fn key(dir: &Path, name: &str, seed: u8) -> (PathBuf, PathBuf, String) {
    std::fs::create_dir_all(dir).unwrap();
    let k = SigningKey::from_seed([seed; 32]);
    let private = dir.join(name);
    std::fs::write(&private, k.to_openssh().as_bytes()).unwrap();
    let public = dir.join(format!("{name}.pub"));
    std::fs::write(&public, format!("{} test\n", k.public().to_openssh())).unwrap();
    (private, public, k.public().fingerprint())
}

pub(super) fn signatures_and_trust(sb: &Sb) {
    let keys = sb.path("keys");
    let (alice, alice_pub, alice_fp) = key(&keys, "alice", 1);
    let (bob, _, bob_fp) = key(&keys, "bob", 2);
    let vendor = sb.path("vendor");
    let dir = write_skill(&vendor, "signed-skill", "Do the signed thing.");
    let before = sb.ok(&["digest", s(&dir)]).stdout;

    // Sign: SKILL.sig beside SKILL.md, the digest unchanged by it; verify names the signer.
    let r = sb.ok(&["sign", s(&dir), "--key", s(&alice)]);
    assert!(r.stdout.contains(&format!("as {alice_fp}")), "{r:?}");
    assert!(dir.join("SKILL.sig").is_file());
    assert_eq!(sb.ok(&["digest", s(&dir)]).stdout, before);
    let r = sb.ok(&["verify", s(&dir), "--signer", s(&alice_pub)]);
    assert!(r.stdout.contains(&format!("signed by {alice_fp}")), "{r:?}");
    let err = sb.fails(1, &["verify", s(&dir), "--signer", &bob_fp]);
    assert!(err.contains("not by"), "{err}");
    // A key that is not a private key is refused clearly.
    let err = sb.fails(1, &["sign", s(&dir), "--key", s(&alice_pub)]);
    assert!(err.contains("cannot use this key"), "{err}");

    // Import: the signer is kept with the revision and pinned for the source.
    let r = sb.ok(&["import", s(&vendor)]);
    assert!(r.stdout.contains(&format!("signed by {alice_fp}")), "{r:?}");
    let h = sb.history("signed-skill", &[]);
    assert_eq!(h[0]["signer"], json!(alice_fp));
    assert!(
        sb.ok(&["history", "signed-skill"])
            .stdout
            .contains("[signed by SHA256:")
    );

    // Tampered after signing: verify and import refuse it, nothing is written.
    std::fs::write(
        dir.join("SKILL.md"),
        skill_text("signed-skill", "Do something else entirely."),
    )
    .unwrap();
    let err = sb.fails(1, &["verify", s(&dir)]);
    assert!(err.contains("does not match"), "{err}");
    let err = sb.fails(1, &["import", s(&vendor)]);
    assert!(
        err.contains("not trusted") && err.contains("does not match"),
        "{err}"
    );
    assert_eq!(sb.history("signed-skill", &[]).len(), 1);

    // Signed again by another key: the source was pinned to alice on first use.
    sb.ok(&["sign", s(&dir), "--key", s(&bob)]);
    let err = sb.fails(1, &["import", s(&vendor)]);
    assert!(
        err.contains(&format!("signed by {bob_fp}"))
            && err.contains(&format!("pinned to {alice_fp}"))
            && err.contains("--accept-new-signer"),
        "{err}"
    );
    assert_eq!(sb.history("signed-skill", &[]).len(), 1);
    // Accepted explicitly: written, re-pinned, and the event says from whom to whom.
    sb.ok(&["--accept-new-signer", "import", s(&vendor)]);
    let h = sb.history("signed-skill", &[]);
    assert_eq!((h.len(), h[1]["signer"].clone()), (2, json!(bob_fp)));
    // Bob is pinned now: the same import again is fine (unchanged), and alice is the one
    // refused.
    sb.ok(&["import", s(&vendor)]);
    let err = {
        sb.ok(&["sign", s(&dir), "--key", s(&alice)]);
        sb.fails(1, &["import", s(&vendor)])
    };
    assert!(err.contains(&format!("pinned to {bob_fp}")), "{err}");
    sb.ok(&["sign", s(&dir), "--key", s(&bob)]);

    // Export writes SKILL.sig beside the files; a fresh store imports it signed.
    let out = sb.path("exported/signed-skill");
    sb.ok(&["export", "signed-skill", "--out", s(&out)]);
    assert!(out.join("SKILL.sig").is_file());
    let fresh = sb.fresh();
    let r = fresh.ok(&["import", s(&out)]);
    assert!(r.stdout.contains(&format!("signed by {bob_fp}")), "{r:?}");
    assert_eq!(
        fresh.history("signed-skill", &[])[0]["digest"],
        h[1]["digest"]
    );

    // A trust policy: this folder's skills must be signed, by alice only.
    let strict = sb.path("strict");
    let unsigned = write_skill(&strict, "unsigned-skill", "No signature here.");
    let config = sb.path("skillbase.toml");
    std::fs::write(
        &config,
        "[[trust.sources]]\nsource = \"strict\"\nrequire_signature = true\nsigners = [\"keys/alice.pub\"]\n",
    )
    .unwrap();
    let err = sb.fails(1, &["--config", s(&config), "import", s(&strict)]);
    assert!(
        err.contains("unsigned-skill")
            && err.contains("is not signed")
            && err.contains("requires a signature"),
        "{err}"
    );
    assert!(!sb.list(&[]).contains_key("unsigned-skill@shared"));
    sb.ok(&["sign", s(&unsigned), "--key", s(&bob)]);
    let err = sb.fails(1, &["--config", s(&config), "import", s(&strict)]);
    assert!(err.contains("not among the signers"), "{err}");
    sb.ok(&["sign", s(&unsigned), "--key", s(&alice)]);
    sb.ok(&["--config", s(&config), "import", s(&strict)]);
    assert_eq!(
        sb.history("unsigned-skill", &[])[0]["signer"],
        json!(alice_fp)
    );

    // A seed folder is a source too: a tampered seed is skipped with the reason.
    let seeds = sb.path("seeds");
    let seeded = write_skill(&seeds, "seeded-skill", "Seeded.");
    sb.ok(&["sign", s(&seeded), "--key", s(&alice)]);
    sb.ok(&["--seed", s(&seeds), "list"]);
    assert_eq!(
        sb.history("seeded-skill", &[])[0]["signer"],
        json!(alice_fp)
    );
    std::fs::write(
        seeded.join("SKILL.md"),
        skill_text("seeded-skill", "Changed."),
    )
    .unwrap();
    let r = sb.ok(&["--seed", s(&seeds), "list"]);
    assert!(r.stderr.contains("does not match"), "{r:?}");
    assert_eq!(sb.history("seeded-skill", &[]).len(), 1);

    // A damaged SKILL.sig is refused naming the file.
    std::fs::write(dir.join("SKILL.sig"), "{not json").unwrap();
    let err = sb.fails(1, &["import", s(&vendor)]);
    assert!(err.contains("SKILL.sig"), "{err}");
}

/// Run `git` in `dir` (a fixture repository), quietly, failing the test if it fails.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `import git+file://...`: a signed skill from a local repository is imported at the commit
/// the reference names (recorded in the revision's message), its signer kept and the URL
/// pinned; a commit that changes a signed file without signing again is refused; a repository
/// over a `[git]` limit is refused naming the limit; nothing is written by a refused import.
pub(super) fn git_sources(sb: &Sb) {
    let (alice, _, alice_fp) = key(&sb.path("keys"), "alice", 1);
    let repo = sb.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let skills = repo.join("skills");
    let a = write_skill(&skills, "git-skill", "From git.");
    write_skill(&skills, "other-skill", "Also from git.");
    sb.ok(&["sign", s(&a), "--key", s(&alice)]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    git(&repo, &["tag", "v1"]);
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    let url = format!("git+file://{}", repo.display());
    let r = sb.ok(&["import", &format!("{url}@v1#skills/git-skill")]);
    assert!(r.stdout.contains(&format!("signed by {alice_fp}")), "{r:?}");
    let h = sb.history("git-skill", &[]);
    assert_eq!(h[0]["signer"], json!(alice_fp));
    assert!(h[0]["message"].as_str().unwrap().contains(&commit), "{h:?}");
    assert_eq!(h[0]["author"], json!(format!("import:{url}")));
    // The repository's files, byte for byte: the digest is the folder's.
    assert_eq!(
        h[0]["digest"],
        json!(sb.ok(&["digest", s(&a)]).stdout.trim())
    );
    assert!(
        !sb.list(&[]).contains_key("other-skill@shared"),
        "#subdir selects one skill"
    );

    // A later commit changes the signed file without signing again: refused, nothing written.
    std::fs::write(
        a.join("SKILL.md"),
        skill_text("git-skill", "Changed in git."),
    )
    .unwrap();
    git(&repo, &["commit", "-q", "-am", "tamper"]);
    let err = sb.fails(1, &["import", &format!("{url}#skills/git-skill")]);
    assert!(err.contains("does not match"), "{err}");
    assert_eq!(sb.history("git-skill", &[]).len(), 1);

    // A [git] limit: refused naming it.
    let config = sb.path("git-limits.toml");
    std::fs::write(&config, "[git]\nskills_per_import = 1\n").unwrap();
    let err = sb.fails(1, &["--config", s(&config), "import", &format!("{url}@v1")]);
    assert!(err.contains("skills_per_import"), "{err}");
    std::fs::write(&config, "[git]\nskills_per_import = 0\n").unwrap();
    let err = sb.fails(1, &["--config", s(&config), "import", &format!("{url}@v1")]);
    assert!(err.contains("positive integer"), "{err}");
    // A reference that does not exist, and a bad spec.
    let err = sb.fails(1, &["import", &format!("{url}@no-such-tag")]);
    assert!(err.contains("no-such-tag"), "{err}");
    let err = sb.fails(1, &["import", &format!("{url}#../escape")]);
    assert!(err.contains(".."), "{err}");
}

/// The "done when": a signed skill imported from a local git repository, locked, the
/// store wiped, and `install --locked` into a fresh one brings it back byte-identical, with the
/// same digest and signer; a lockfile whose digest or signer differs from the source is refused
/// with nothing installed; `outdated` reports a source that moved on.
pub(super) fn lock_and_install(sb: &Sb) {
    let (alice, _, alice_fp) = key(&sb.path("keys"), "alice", 1);
    let repo = sb.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let a = write_skill(&repo.join("skills"), "locked-skill", "Locked.");
    std::fs::write(a.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(
        a.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    sb.ok(&["sign", s(&a), "--key", s(&alice)]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    let url = format!("git+file://{}", repo.display());
    sb.ok(&["import", &format!("{url}#skills/locked-skill")]);
    // A folder import is locked too; a skill written in the store is not (it has no source).
    let folder = sb.path("folder");
    write_skill(&folder, "folder-skill", "From a folder.");
    sb.ok(&["import", s(&folder)]);
    sb.ok(&[
        "put",
        s(&write_skill(&sb.path("hand"), "hand-skill", "By hand.")),
    ]);

    let lockfile = sb.path("skillbase.lock");
    let r = sb.ok(&["lock", "--out", s(&lockfile)]);
    assert!(r.stdout.contains("locked 2 skills"), "{r:?}");
    assert!(r.stderr.contains("not locked: hand-skill"), "{r:?}");
    let text = std::fs::read_to_string(&lockfile).unwrap();
    assert!(
        text.contains(&format!("reference = \"{commit}\"")),
        "{text}"
    );
    assert!(text.contains("path = \"skills/locked-skill\""), "{text}");
    assert!(text.contains(&format!("signer = \"{alice_fp}\"")), "{text}");
    assert!(!text.contains("at ="), "no timestamps: {text}");
    // Sorted and stable: locking again writes the same bytes.
    sb.ok(&["lock", "--out", s(&lockfile)]);
    assert_eq!(std::fs::read_to_string(&lockfile).unwrap(), text);
    let before = sb.history("locked-skill", &[]);

    // Wiped: a fresh store, installed from the lockfile.
    let fresh = sb.fresh();
    let r = fresh.ok(&["install", "--locked", s(&lockfile)]);
    assert!(
        r.stdout.contains("installed 2 locked skills: 2 created"),
        "{r:?}"
    );
    let after = fresh.history("locked-skill", &[]);
    assert_eq!(after[0]["digest"], before[0]["digest"]);
    assert_eq!(after[0]["signer"], json!(alice_fp));
    let out1 = sb.path("x1/locked-skill");
    let out2 = sb.path("x2/locked-skill");
    sb.ok(&["export", "locked-skill", "--out", s(&out1)]);
    fresh.ok(&["export", "locked-skill", "--out", s(&out2)]);
    assert_eq!(
        read_tree(&out1),
        read_tree(&out2),
        "byte-identical, modes included"
    );
    assert!(
        read_tree(&out2)["run.sh"].1,
        "the executable bit comes back"
    );
    // Installing again changes nothing.
    let r = fresh.ok(&["install", "--locked", s(&lockfile)]);
    assert!(r.stdout.contains("2 unchanged"), "{r:?}");
    assert_eq!(
        fresh.ok(&["outdated", s(&lockfile)]).stdout.trim(),
        "2 locked skills, all up to date"
    );

    // A lockfile that lies about the digest or the signer: refused, nothing installed.
    let empty = sb.fresh();
    let bad = sb.path("bad.lock");
    let digest = before[0]["digest"].as_str().unwrap();
    std::fs::write(
        &bad,
        text.replace(digest, &format!("sha256:{}", "0".repeat(64))),
    )
    .unwrap();
    let err = empty.fails(1, &["install", "--locked", s(&bad)]);
    assert!(
        err.contains("has digest") && err.contains("nothing was installed"),
        "{err}"
    );
    let (_, _, bob_fp) = key(&sb.path("keys"), "bob", 2);
    std::fs::write(&bad, text.replace(&alice_fp, &bob_fp)).unwrap();
    let err = empty.fails(1, &["install", "--locked", s(&bad)]);
    assert!(
        err.contains("is signed by") && err.contains(&bob_fp),
        "{err}"
    );
    assert!(empty.list(&[]).is_empty(), "nothing installed");
    // Malformed lockfiles say what is wrong.
    std::fs::write(&bad, "version = 1\n[[skill]]\nname = \"x\"\n").unwrap();
    let err = empty.fails(1, &["install", "--locked", s(&bad)]);
    assert!(err.contains("missing field"), "{err}");
    std::fs::write(&bad, "version = 9\n").unwrap();
    let err = empty.fails(1, &["install", "--locked", s(&bad)]);
    assert!(err.contains("version 9"), "{err}");
    let err = empty.fails(2, &["install", s(&bad)]);
    assert!(err.contains("--locked"), "{err}");

    // The source moves on: outdated says which skill and how (exit 1).
    write_skill(
        &repo.join("skills"),
        "locked-skill",
        "Locked, then changed.",
    );
    sb.ok(&["sign", s(&a), "--key", s(&alice)]);
    git(&repo, &["commit", "-q", "-am", "second"]);
    let r = sb.run(&["outdated", s(&lockfile)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.starts_with("locked-skill: git+file://") && r.stdout.contains("digest"),
        "{r:?}"
    );
    assert!(!r.stdout.contains("folder-skill"), "{r:?}");
}
