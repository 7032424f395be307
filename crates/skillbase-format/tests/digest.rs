//! The content digest, recomputed from README's definition with `sha2` directly (never through
//! the library's function), over a folder with nested, non-ASCII, NFD-named and executable files.

use sha2::{Digest as _, Sha256};
use skillbase_format::{Bundle, BundleLimits};
use std::fs;

/// README, "The content digest": per file in UTF-8 byte order of the NFC path,
/// `u64be(len(path)) ‖ path ‖ sha256(content) ‖ (0x01 if executable else 0x00)`, hashed with
/// SHA-256 and written `sha256:<hex>`.
fn readme_digest(files: &[(&str, &[u8], bool)]) -> String {
    let mut sorted: Vec<_> = files.to_vec();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut h = Sha256::new();
    for (path, bytes, exec) in sorted {
        h.update((path.len() as u64).to_be_bytes());
        h.update(path.as_bytes());
        h.update(Sha256::digest(bytes));
        h.update([if exec { 1u8 } else { 0u8 }]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[test]
fn folder_digest_matches_the_written_definition() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("my-skill");
    fs::create_dir_all(root.join("scripts")).unwrap();
    fs::create_dir_all(root.join("refs/deep")).unwrap();
    fs::create_dir_all(root.join("empty")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    let md: &[u8] = b"---\nname: my-skill\ndescription: Test.\n---\nbody\n";
    fs::write(root.join("SKILL.md"), md).unwrap();
    fs::write(root.join("scripts/run.sh"), b"#!/bin/sh\necho hi\n").unwrap();
    fs::write(root.join("refs/deep/b.md"), b"b").unwrap();
    fs::write(root.join("refs/a.md"), b"").unwrap();
    // Written NFD (e + combining acute), hashed as NFC (é).
    fs::write(root.join("refs/cafe\u{301}.md"), b"cafe").unwrap();
    fs::write(root.join("Zebra.txt"), b"upper case sorts first").unwrap();
    fs::write(root.join(".git/HEAD"), b"not part of the bundle").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            root.join("scripts/run.sh"),
            fs::Permissions::from_mode(0o700),
        )
        .unwrap();
    }
    let exec = cfg!(unix);
    let want = readme_digest(&[
        ("SKILL.md", md, false),
        ("scripts/run.sh", b"#!/bin/sh\necho hi\n", exec),
        ("refs/deep/b.md", b"b", false),
        ("refs/a.md", b"", false),
        ("refs/caf\u{e9}.md", b"cafe", false),
        ("Zebra.txt", b"upper case sorts first", false),
    ]);
    let b = Bundle::from_dir(&root, &BundleLimits::default()).unwrap();
    assert_eq!(b.digest().to_string(), want);

    // The same files from a zip (what an import reads) give the same digest.
    let zip = b.to_zip(std::io::Cursor::new(Vec::new()), None).unwrap();
    let z = Bundle::from_zip(&zip.into_inner(), &BundleLimits::default()).unwrap();
    assert_eq!(z.digest().to_string(), want);

    // Each input counts: content, executable bit, path.
    fs::write(root.join("refs/a.md"), b"x").unwrap();
    let changed = Bundle::from_dir(&root, &BundleLimits::default()).unwrap();
    assert_ne!(changed.digest().to_string(), want);
}

#[test]
fn a_one_file_skill_has_a_fixed_digest() {
    // A known answer (computed with Python's hashlib from README's definition), so a change of
    // definition cannot pass unnoticed; README's example shows the same value.
    let md = b"---\nname: my-skill\ndescription: Test.\n---\nbody\n";
    let want = "sha256:fc317282bbbb5539d1c34184b3e113c30c7c040624c0368fc513309bcd874ff6";
    assert_eq!(readme_digest(&[("SKILL.md", md, false)]), want);
    let b = Bundle::single(md.to_vec()).unwrap();
    assert_eq!(b.digest().to_string(), want);
}

#[test]
fn paths_with_control_characters_are_refused() {
    for bad in [
        "a\nb.md",
        "a\tb.md",
        "a\u{7f}.md",
        "a\u{85}.md",
        "\u{1b}[31m.md",
    ] {
        let e = Bundle::from_pairs(
            [("SKILL.md", b"x".to_vec()), (bad, b"y".to_vec())],
            &BundleLimits::default(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("control characters are not allowed"),
            "{bad:?}: {e}"
        );
    }
}
