//! Skill bundles from folders and zip archives: every rejection rule, the limits, digests and
//! round trips. Zips are built in memory; folders live in temporary directories.

use skillbase_format::{Bundle, BundleError, BundleLimits};
use std::fs;
use std::io::{Cursor, Write};
use std::path::Path;
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

const SKILL: &[u8] =
    b"---\nname: my-skill\ndescription: Does things. Use when asked.\n---\n# Body\n";

fn defaults() -> BundleLimits {
    BundleLimits::default()
}

fn opts(method: CompressionMethod) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(method)
        .unix_permissions(0o644)
}

/// A zip of `(name, bytes)` entries, Deflated.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    zip_with(entries, CompressionMethod::Deflated)
}

fn zip_with(entries: &[(&str, &[u8])], method: CompressionMethod) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        z.start_file(*name, opts(method)).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}

fn zip_err(bytes: &[u8]) -> String {
    zip_err_with(bytes, &defaults())
}

fn zip_err_with(bytes: &[u8], limits: &BundleLimits) -> String {
    match Bundle::from_zip(bytes, limits) {
        Ok(b) => panic!(
            "expected the zip to be rejected, got {:?}",
            b.files()
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
        ),
        Err(e) => e.to_string(),
    }
}

fn dir_err(dir: &Path) -> String {
    dir_err_with(dir, &defaults())
}

fn dir_err_with(dir: &Path, limits: &BundleLimits) -> String {
    match Bundle::from_dir(dir, limits) {
        Ok(b) => panic!(
            "expected the folder to be rejected, got {:?}",
            b.files()
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
        ),
        Err(e) => e.to_string(),
    }
}

fn paths(b: &Bundle) -> Vec<&str> {
    b.files().iter().map(|f| f.path.as_str()).collect()
}

/// A skill folder holding `files` (created with their parents).
fn skill_dir(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (p, bytes) in files {
        let full = tmp.path().join(p);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, bytes).unwrap();
    }
    tmp
}

fn assert_contains(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "expected {p:?} in error message {msg:?}");
    }
}

/// Deterministic incompressible bytes (xorshift), so Deflate cannot shrink them.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Unsafe paths

#[test]
fn zip_absolute_path_is_rejected() {
    let z = zip_of(&[("SKILL.md", SKILL), ("/etc/passwd", b"root")]);
    let e = zip_err(&z);
    assert_contains(&e, &["'/etc/passwd'", "absolute paths are not allowed"]);
}

#[test]
fn zip_drive_letter_and_backslash_paths_are_rejected() {
    let e = zip_err(&zip_of(&[("SKILL.md", SKILL), ("C:/x.md", b"x")]));
    assert_contains(&e, &["'C:/x.md'", "drive-letter"]);
    let e = zip_err(&zip_of(&[("SKILL.md", SKILL), ("..\\evil.sh", b"x")]));
    assert_contains(&e, &["'..\\evil.sh'", "backslashes"]);
}

#[test]
fn zip_dotdot_entry_is_rejected() {
    for name in ["../evil.sh", "scripts/../../evil.sh", "a/.."] {
        let e = zip_err(&zip_of(&[("SKILL.md", SKILL), (name, b"x")]));
        assert_contains(&e, &[&format!("'{name}'"), "`..` segments are not allowed"]);
    }
}

#[test]
fn zip_dotdot_directory_entry_is_rejected() {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.start_file("SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    z.write_all(SKILL).unwrap();
    z.add_directory("../outside/", opts(CompressionMethod::Stored))
        .unwrap();
    let bytes = z.finish().unwrap().into_inner();
    let e = zip_err(&bytes);
    assert_contains(&e, &["'../outside'", "`..`"]);
}

#[test]
fn zip_control_characters_in_names_are_rejected() {
    let e = zip_err(&zip_of(&[("SKILL.md", SKILL), ("a\u{1}b.md", b"x")]));
    assert_contains(&e, &["control characters", "'a\\u{1}b.md'"]);
    // A terminal escape in a hostile name comes out escaped.
    let e = zip_err(&zip_of(&[("SKILL.md", SKILL), ("\u{1b}[2Jx.md", b"x")]));
    assert!(!e.contains('\u{1b}'), "{e:?}");
    assert_contains(&e, &["\\u{1b}[2Jx.md"]);
}

#[test]
fn zip_with_two_entries_of_one_path_is_refused_whole() {
    // zip's writer refuses a duplicate name, so the second entry is written under a name of the
    // same length and renamed in the bytes.
    let mut bytes = zip_of(&[("SKILL.md", SKILL), ("a.md", b"first"), ("b.md", b"second")]);
    let mut i = 0;
    while i + 4 <= bytes.len() {
        if &bytes[i..i + 4] == b"b.md" {
            bytes[i] = b'a';
        }
        i += 1;
    }
    let e = Bundle::from_zip(&bytes, &defaults()).unwrap_err();
    assert!(matches!(e, BundleError::DuplicateEntry), "{e}");
    assert_contains(&e.to_string(), &["same name", "refused whole"]);
}

#[test]
fn zip_symlink_entry_is_rejected() {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.start_file("SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    z.write_all(SKILL).unwrap();
    z.add_symlink("passwd", "/etc/passwd", SimpleFileOptions::default())
        .unwrap();
    let bytes = z.finish().unwrap().into_inner();
    let e = zip_err(&bytes);
    assert_contains(&e, &["'passwd'", "is a link", "not allowed in a zip"]);

    // Even a link pointing inside the archive is refused: zips carry files only.
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.start_file("SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    z.write_all(SKILL).unwrap();
    z.add_symlink("alias.md", "SKILL.md", SimpleFileOptions::default())
        .unwrap();
    let e = zip_err(&z.finish().unwrap().into_inner());
    assert_contains(&e, &["'alias.md'", "is a link"]);
}

#[test]
fn garbage_is_not_a_zip() {
    for bytes in [&b""[..], b"PK\x03\x04", b"not a zip at all", SKILL] {
        let e = zip_err(bytes);
        assert_contains(&e, &["not a readable zip archive"]);
    }
}

#[cfg(unix)]
#[test]
fn folder_links_leaving_the_folder_are_rejected() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), b"secret").unwrap();

    // A link to a file outside.
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    symlink(
        outside.path().join("secret.txt"),
        d.path().join("secret.txt"),
    )
    .unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'secret.txt'", "leaves the skill folder"]);

    // A link to a folder outside, nested one level down.
    let d = skill_dir(&[("SKILL.md", SKILL), ("references/a.md", b"a")]);
    symlink(outside.path(), d.path().join("references/ext")).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'references/ext'", "leaves the skill folder"]);

    // A relative link climbing out.
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    symlink("../../../../../../../../etc", d.path().join("etc")).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'etc'", "leaves the skill folder"]);

    // A dangling link cannot be shown to stay inside.
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    symlink(d.path().join("nowhere"), d.path().join("dangling")).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'dangling'", "leaves the skill folder"]);
}

#[cfg(unix)]
#[test]
fn folder_links_staying_inside_are_followed() {
    use std::os::unix::fs::symlink;
    let d = skill_dir(&[("SKILL.md", SKILL), ("references/a.md", b"alpha")]);
    symlink("references/a.md", d.path().join("alias.md")).unwrap();
    symlink("references", d.path().join("refs")).unwrap();
    let b = Bundle::from_dir(d.path(), &defaults()).unwrap();
    assert_eq!(
        paths(&b),
        ["SKILL.md", "alias.md", "references/a.md", "refs/a.md"]
    );
    assert_eq!(&*b.get("alias.md").unwrap().bytes, b"alpha");
    assert_eq!(&*b.get("refs/a.md").unwrap().bytes, b"alpha");
}

#[cfg(unix)]
#[test]
fn folder_link_loop_stops_at_the_depth_limit() {
    use std::os::unix::fs::symlink;
    let d = skill_dir(&[("SKILL.md", SKILL), ("a/x.md", b"x")]);
    symlink("..", d.path().join("a/up")).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'a/up/a/up/", "levels deep; at most 10"]);
}

#[cfg(unix)]
#[test]
fn folder_special_files_are_rejected() {
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    let sock = d.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'sock'", "not a regular file"]);
}

#[test]
fn folder_git_is_skipped() {
    let d = skill_dir(&[("SKILL.md", SKILL), (".git/HEAD", b"ref: x")]);
    let b = Bundle::from_dir(d.path(), &defaults()).unwrap();
    assert_eq!(paths(&b), ["SKILL.md"]);
}

// ---------------------------------------------------------------------------------------------
// Case folding

#[test]
fn zip_case_fold_collision_is_rejected() {
    let e = zip_err(&zip_of(&[
        ("SKILL.md", SKILL),
        ("A.md", b"a"),
        ("a.md", b"b"),
    ]));
    assert_contains(&e, &["'A.md'", "'a.md'", "same path when case is ignored"]);
    // A file and a folder of the same name, case aside.
    let e = zip_err(&zip_of(&[
        ("SKILL.md", SKILL),
        ("Docs", b"a"),
        ("docs/x.md", b"b"),
    ]));
    assert_contains(&e, &["'Docs'", "'docs/x.md'", "same path"]);
    let e = zip_err(&zip_of(&[
        ("SKILL.md", SKILL),
        ("docs/x.md", b"b"),
        ("DOCS", b"a"),
    ]));
    assert_contains(&e, &["'DOCS'", "'docs/x.md'", "same path"]);
}

#[test]
fn zip_unicode_normalization_collision_is_rejected() {
    // "é" precomposed and decomposed are one name once normalised.
    let e = zip_err(&zip_of(&[
        ("SKILL.md", SKILL),
        ("caf\u{e9}.md", b"a"),
        ("cafe\u{301}.md", b"b"),
    ]));
    assert_contains(&e, &["same path when case is ignored"]);
}

#[test]
fn folder_case_fold_collision_is_rejected() {
    let d = skill_dir(&[
        ("SKILL.md", SKILL),
        ("refs/A.md", b"a"),
        ("refs/a.md", b"b"),
    ]);
    if !d.path().join("refs/A.md").exists() || fs::read(d.path().join("refs/A.md")).unwrap() != b"a"
    {
        return; // a case-insensitive file system cannot hold both
    }
    let e = dir_err(d.path());
    assert_contains(&e, &["'refs/A.md'", "'refs/a.md'", "same path"]);
}

#[test]
fn from_pairs_case_collision_and_bad_paths() {
    let e = Bundle::from_pairs(
        [("SKILL.md", SKILL.to_vec()), ("skill.md", b"x".to_vec())],
        &defaults(),
    )
    .unwrap_err()
    .to_string();
    assert_contains(&e, &["'SKILL.md'", "'skill.md'", "same path"]);
    for bad in ["", "/x", "a//b", "./a", "a/./b", "a/", "x\0y"] {
        let e = Bundle::from_pairs(
            [("SKILL.md", SKILL.to_vec()), (bad, b"x".to_vec())],
            &defaults(),
        )
        .unwrap_err();
        assert!(matches!(e, BundleError::UnsafePath { .. }), "{bad:?}: {e}");
        // Named escaped: a control character never reaches a terminal through a message.
        let shown = skillbase_format::text::escape_controls(bad);
        assert_contains(&e.to_string(), &[&format!("unsafe path '{shown}'")]);
        assert!(!e.to_string().contains('\0'));
    }
}

// ---------------------------------------------------------------------------------------------
// Limits

fn many_files(n: usize) -> Vec<(String, Vec<u8>)> {
    let mut v = vec![("SKILL.md".to_owned(), SKILL.to_vec())];
    v.extend((1..n).map(|i| {
        (
            format!("references/f{i:04}.md"),
            format!("{i}").into_bytes(),
        )
    }));
    v
}

#[test]
fn zip_513_files_is_rejected_512_accepted() {
    let build = |n| {
        let files = many_files(n);
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect();
        zip_with(&refs, CompressionMethod::Stored)
    };
    let b = Bundle::from_zip(&build(512), &defaults()).unwrap();
    assert_eq!(b.files().len(), 512);
    let e = zip_err(&build(513));
    assert_contains(&e, &["more than 512 files", "references/f0512.md"]);
}

#[test]
fn zip_with_a_flood_of_directory_entries_is_rejected_up_front() {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.start_file("SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    z.write_all(SKILL).unwrap();
    for i in 0..2100 {
        z.add_directory(format!("d{i}/"), opts(CompressionMethod::Stored))
            .unwrap();
    }
    let e = zip_err(&z.finish().unwrap().into_inner());
    assert_contains(&e, &["more than 512 files"]);
}

#[test]
fn folder_513_files_is_rejected() {
    let files = many_files(513);
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let d = skill_dir(&refs);
    let e = dir_err(d.path());
    assert_contains(&e, &["more than 512 files", "references/f0512.md"]);
    fs::remove_file(d.path().join("references/f0001.md")).unwrap();
    assert_eq!(
        Bundle::from_dir(d.path(), &defaults())
            .unwrap()
            .files()
            .len(),
        512
    );
}

#[test]
fn zip_over_16_mib_is_rejected() {
    let mib = noise(1024 * 1024, 7);
    let mut entries: Vec<(String, &[u8])> = vec![("SKILL.md".into(), SKILL)];
    for i in 0..16 {
        entries.push((format!("assets/blob{i:02}.bin"), &mib));
    }
    let refs: Vec<(&str, &[u8])> = entries.iter().map(|(p, b)| (p.as_str(), *b)).collect();
    let e = zip_err(&zip_with(&refs, CompressionMethod::Stored));
    assert_contains(&e, &["more than 16777216 bytes", "assets/blob15.bin"]);
    // 15 MiB and the SKILL.md fit.
    let b = Bundle::from_zip(
        &zip_with(&refs[..16], CompressionMethod::Stored),
        &defaults(),
    )
    .unwrap();
    assert_eq!(b.total_bytes(), 15 * 1024 * 1024 + SKILL.len() as u64);
}

#[test]
fn folder_over_16_mib_is_rejected_without_reading_it() {
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    // Sparse: no disk used; refused by its size.
    let f = fs::File::create(d.path().join("huge.bin")).unwrap();
    f.set_len(100 * 1024 * 1024).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["more than 16777216 bytes", "'huge.bin'"]);

    // Many files adding up past the limit.
    let mib = noise(1024 * 1024, 3);
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    for i in 0..17 {
        fs::write(d.path().join(format!("blob{i:02}.bin")), &mib).unwrap();
    }
    let e = dir_err(d.path());
    assert_contains(&e, &["more than 16777216 bytes", "blob15.bin"]);
}

#[test]
fn depth_over_10_is_rejected() {
    let ten = "a/b/c/d/e/f/g/h/i/j.md";
    let eleven = "a/b/c/d/e/f/g/h/i/j/k.md";
    let b = Bundle::from_zip(&zip_of(&[("SKILL.md", SKILL), (ten, b"x")]), &defaults()).unwrap();
    assert_eq!(paths(&b), ["SKILL.md", ten]);
    let e = zip_err(&zip_of(&[("SKILL.md", SKILL), (eleven, b"x")]));
    assert_contains(&e, &[&format!("'{eleven}'"), "11 levels deep; at most 10"]);

    let d = skill_dir(&[("SKILL.md", SKILL), (ten, b"x")]);
    assert!(Bundle::from_dir(d.path(), &defaults()).is_ok());
    let d = skill_dir(&[("SKILL.md", SKILL), (eleven, b"x")]);
    let e = dir_err(d.path());
    assert_contains(&e, &["'a/b/c/d/e/f/g/h/i/j/k.md'", "11 levels deep"]);
    // An empty folder that deep is refused too: a link loop looks like this.
    let d = skill_dir(&[("SKILL.md", SKILL)]);
    fs::create_dir_all(d.path().join("a/b/c/d/e/f/g/h/i/j/k")).unwrap();
    let e = dir_err(d.path());
    assert_contains(&e, &["'a/b/c/d/e/f/g/h/i/j/k'", "levels deep"]);
}

#[test]
fn path_longer_than_limit_is_rejected() {
    let long = format!("{}.md", "x".repeat(1100));
    let e = zip_err(&zip_of(&[("SKILL.md", SKILL), (&long, b"x")]));
    assert_contains(&e, &["path too long", &long[..40]]);
    // The same limit for files given one by one (a JSON upload), at the byte count.
    let files = |other: &str| {
        [("SKILL.md", SKILL), (other, b"x".as_slice())]
            .into_iter()
            .map(|(p, bytes)| skillbase_format::BundleFile {
                path: skillbase_format::BundlePath::parse(p).unwrap(),
                digest: skillbase_format::Digest::of(bytes),
                bytes: bytes.into(),
                executable: false,
            })
            .collect::<Vec<_>>()
    };
    let e = Bundle::from_files(files(&long), &defaults()).unwrap_err();
    assert!(matches!(e, BundleError::UnsafePath { .. }), "{e}");
    assert_contains(&e.to_string(), &["path too long"]);
    let at_limit = format!("{}.md", "x".repeat(1021));
    assert!(Bundle::from_files(files(&at_limit), &defaults()).is_ok());
}

/// Offsets of every `signature` in `bytes`.
fn find_all(bytes: &[u8], signature: &[u8; 4]) -> Vec<usize> {
    bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| w == signature)
        .map(|(i, _)| i)
        .collect()
}

/// Rewrite the declared uncompressed size of every entry, in its local header (offset 22) and
/// its central directory record (offset 24).
fn patch_declared_size(bytes: &mut [u8], size: u32) {
    let locals = find_all(bytes, b"PK\x03\x04");
    let centrals = find_all(bytes, b"PK\x01\x02");
    assert!(!locals.is_empty() && locals.len() == centrals.len());
    for at in locals {
        bytes[at + 22..at + 26].copy_from_slice(&size.to_le_bytes());
    }
    for at in centrals {
        bytes[at + 24..at + 28].copy_from_slice(&size.to_le_bytes());
    }
}

#[test]
fn zip_entry_larger_than_declared_is_rejected() {
    for method in [CompressionMethod::Stored, CompressionMethod::Deflated] {
        let body = noise(4000, 11);
        let mut z = zip_with(&[("SKILL.md", &body)], method);
        patch_declared_size(&mut z, 100);
        let e = zip_err(&z);
        assert_contains(&e, &["'SKILL.md'", "more bytes than it declares"]);
    }
}

#[test]
fn zip_lying_bomb_is_stopped_at_its_declared_size() {
    // 64 MiB of zeros declared as 1000 bytes: the ratio looks harmless, so only the bounded read
    // stops it. It must not inflate everything first.
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.start_file("SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..64 {
        z.write_all(&zeros).unwrap();
    }
    let mut bytes = z.finish().unwrap().into_inner();
    patch_declared_size(&mut bytes, 1000);
    let start = std::time::Instant::now();
    let e = zip_err(&bytes);
    assert_contains(&e, &["'SKILL.md'", "more bytes than it declares"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn zip_compression_ratio_bomb_is_rejected() {
    // 50 MB of zeros deflate to ~50 KB (ratio ~1000:1).
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.start_file("SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    z.write_all(SKILL).unwrap();
    z.start_file("assets/zeros.bin", opts(CompressionMethod::Deflated))
        .unwrap();
    let zeros = vec![0u8; 1_000_000];
    for _ in 0..50 {
        z.write_all(&zeros).unwrap();
    }
    let bytes = z.finish().unwrap().into_inner();
    assert!(bytes.len() < 1_000_000, "{}", bytes.len());
    let start = std::time::Instant::now();
    let e = zip_err(&bytes);
    assert_contains(
        &e,
        &["'assets/zeros.bin'", "over 100x", "possible zip bomb"],
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));

    // A small, very compressible file over the ratio is refused too (ratio, not size, decides).
    let e = zip_err(&zip_of(&[
        ("SKILL.md", SKILL),
        ("zeros.txt", &[b'a'; 200_000]),
    ]));
    assert_contains(&e, &["'zeros.txt'", "possible zip bomb"]);
}

#[test]
fn custom_limits_apply() {
    let files: [(&str, &[u8]); 3] = [
        ("SKILL.md", SKILL),
        ("a/b/c.md", b"0123456789"),
        ("d.md", b"d"),
    ];
    let z = zip_of(&files);
    let d = skill_dir(&files);
    assert!(Bundle::from_zip(&z, &defaults()).is_ok());
    assert!(Bundle::from_dir(d.path(), &defaults()).is_ok());

    let l = BundleLimits {
        max_files: 2,
        ..defaults()
    };
    assert_contains(&zip_err_with(&z, &l), &["more than 2 files"]);
    assert_contains(&dir_err_with(d.path(), &l), &["more than 2 files"]);

    let l = BundleLimits {
        max_total_bytes: SKILL.len() as u64 + 5,
        ..defaults()
    };
    assert_contains(&zip_err_with(&z, &l), &["more than", "'a/b/c.md'"]);
    assert_contains(&dir_err_with(d.path(), &l), &["more than", "'a/b/c.md'"]);

    let l = BundleLimits {
        max_depth: 2,
        ..defaults()
    };
    assert_contains(
        &zip_err_with(&z, &l),
        &["'a/b/c.md' is 3 levels deep; at most 2"],
    );
    assert_contains(
        &dir_err_with(d.path(), &l),
        &["'a/b/c.md' is 3 levels deep"],
    );

    let l = BundleLimits {
        max_path_bytes: 5,
        ..defaults()
    };
    assert_contains(&zip_err_with(&z, &l), &["'SKILL.md'", "path too long"]);

    // A ratio of ~1000:1 passes with a higher limit and fails with the default.
    let zeros = vec![0u8; 1_000_000];
    let z = zip_of(&[("SKILL.md", SKILL), ("zeros.bin", &zeros)]);
    assert_contains(&zip_err(&z), &["'zeros.bin'", "possible zip bomb"]);
    let l = BundleLimits {
        max_compression_ratio: 10_000,
        ..defaults()
    };
    let b = Bundle::from_zip(&z, &l).unwrap();
    assert_eq!(b.get("zeros.bin").unwrap().bytes.len(), 1_000_000);
    let l = BundleLimits {
        max_compression_ratio: 1,
        ..defaults()
    };
    assert_contains(&zip_err_with(&z, &l), &["over 1x"]);
}

// ---------------------------------------------------------------------------------------------
// Shapes

#[test]
fn one_file_skill_is_a_bundle() {
    let b = Bundle::single(SKILL).unwrap();
    assert_eq!(paths(&b), ["SKILL.md"]);
    assert_eq!(&*b.skill_md().bytes, SKILL);
    assert_eq!(b.total_bytes(), SKILL.len() as u64);

    let d = skill_dir(&[("SKILL.md", SKILL)]);
    let from_dir = Bundle::from_dir(d.path(), &defaults()).unwrap();
    let from_zip = Bundle::from_zip(&zip_of(&[("SKILL.md", SKILL)]), &defaults()).unwrap();
    assert_eq!(from_dir, b);
    assert_eq!(from_zip, b);

    // Lowercase skill.md is accepted too.
    let b = Bundle::from_zip(&zip_of(&[("skill.md", SKILL)]), &defaults()).unwrap();
    assert_eq!(b.skill_md().path.as_str(), "skill.md");
}

#[test]
fn no_skill_md_is_rejected() {
    let msg = "no SKILL.md at the root of the bundle";
    assert_contains(&zip_err(&zip_of(&[("README.md", b"x")])), &[msg]);
    // Two levels down is not the root, and two top folders are not stripped.
    assert_contains(&zip_err(&zip_of(&[("a/b/SKILL.md", SKILL)])), &[msg]);
    assert_contains(
        &zip_err(&zip_of(&[("a/SKILL.md", SKILL), ("b/SKILL.md", SKILL)])),
        &[msg],
    );
    // An archive with directory entries only.
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.add_directory("empty/", opts(CompressionMethod::Stored))
        .unwrap();
    assert_contains(&zip_err(&z.finish().unwrap().into_inner()), &[msg]);
    let d = skill_dir(&[("references/a.md", b"a")]);
    assert_contains(&dir_err(d.path()), &[msg]);
    let e = Bundle::from_pairs(Vec::<(&str, Vec<u8>)>::new(), &defaults()).unwrap_err();
    assert_contains(&e.to_string(), &[msg]);
}

#[test]
fn missing_folder_is_an_io_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let e = dir_err(&missing);
    assert_contains(&e, &["cannot read", &missing.display().to_string()]);
    // A file is not a skill folder.
    let file = tmp.path().join("SKILL.md");
    fs::write(&file, SKILL).unwrap();
    let e = dir_err(&file);
    assert_contains(
        &e,
        &[
            "cannot read",
            &file.display().to_string(),
            "not a directory",
        ],
    );
}

#[test]
fn zip_single_top_folder_is_stripped() {
    let z = zip_of(&[
        ("my-skill/SKILL.md", SKILL),
        ("my-skill/references/a.md", b"a"),
    ]);
    let b = Bundle::from_zip(&z, &defaults()).unwrap();
    assert_eq!(paths(&b), ["SKILL.md", "references/a.md"]);

    // With directory entries, as `zip -r` writes them.
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.add_directory("my-skill/", opts(CompressionMethod::Stored))
        .unwrap();
    z.start_file("my-skill/SKILL.md", opts(CompressionMethod::Deflated))
        .unwrap();
    z.write_all(SKILL).unwrap();
    let b2 = Bundle::from_zip(&z.finish().unwrap().into_inner(), &defaults()).unwrap();
    assert_eq!(paths(&b2), ["SKILL.md"]);

    // A root SKILL.md wins: nothing is stripped.
    let z = zip_of(&[("SKILL.md", SKILL), ("docs/SKILL.md", SKILL)]);
    let b = Bundle::from_zip(&z, &defaults()).unwrap();
    assert_eq!(paths(&b), ["SKILL.md", "docs/SKILL.md"]);
}

// ---------------------------------------------------------------------------------------------
// Digests and round trips

fn is_digest_text(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[test]
fn digest_is_stable_and_content_addressed() {
    let files: Vec<(&str, &[u8])> = vec![
        ("SKILL.md", SKILL),
        ("references/a.md", b"alpha"),
        ("scripts/run.sh", b"#!/bin/sh\necho hi\n"),
    ];
    let a = Bundle::from_pairs(files.iter().map(|(p, b)| (*p, b.to_vec())), &defaults()).unwrap();
    let b = Bundle::from_pairs(
        files.iter().rev().map(|(p, b)| (*p, b.to_vec())),
        &defaults(),
    )
    .unwrap();
    assert_eq!(a.digest(), b.digest());
    assert!(is_digest_text(&a.digest().to_string()), "{}", a.digest());
    assert_eq!(a.digest().to_string().parse().ok(), Some(a.digest()));

    // Zip entry order and folders written at different times do not matter.
    let z_fwd = zip_of(&files);
    let rev: Vec<_> = files.iter().rev().copied().collect();
    let z_rev = zip_of(&rev);
    assert_eq!(
        Bundle::from_zip(&z_fwd, &defaults()).unwrap().digest(),
        a.digest()
    );
    assert_eq!(
        Bundle::from_zip(&z_rev, &defaults()).unwrap().digest(),
        a.digest()
    );
    let d1 = skill_dir(&files);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let d2 = skill_dir(&rev);
    assert_eq!(
        Bundle::from_dir(d1.path(), &defaults()).unwrap().digest(),
        a.digest()
    );
    assert_eq!(
        Bundle::from_dir(d2.path(), &defaults()).unwrap().digest(),
        a.digest()
    );

    // One byte changed, or one path renamed, changes it.
    let mut changed = SKILL.to_vec();
    *changed.last_mut().unwrap() = b'!';
    let c = Bundle::from_pairs(
        [
            ("SKILL.md", changed),
            ("references/a.md", b"alpha".to_vec()),
            ("scripts/run.sh", b"#!/bin/sh\necho hi\n".to_vec()),
        ],
        &defaults(),
    )
    .unwrap();
    assert_ne!(c.digest(), a.digest());
    let r = Bundle::from_pairs(
        [
            ("SKILL.md", SKILL.to_vec()),
            ("references/b.md", b"alpha".to_vec()),
            ("scripts/run.sh", b"#!/bin/sh\necho hi\n".to_vec()),
        ],
        &defaults(),
    )
    .unwrap();
    assert_ne!(r.digest(), a.digest());
    // Path/content boundaries are unambiguous.
    let x = Bundle::from_pairs(
        [("SKILL.md", SKILL.to_vec()), ("ab", b"c".to_vec())],
        &defaults(),
    )
    .unwrap();
    let y = Bundle::from_pairs(
        [("SKILL.md", SKILL.to_vec()), ("a", b"bc".to_vec())],
        &defaults(),
    )
    .unwrap();
    assert_ne!(x.digest(), y.digest());

    // Each file's digest is the SHA-256 of its bytes.
    let f = a.get("references/a.md").unwrap();
    assert_eq!(f.digest, skillbase_format::Digest::of(b"alpha"));
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn round_trips_preserve_bytes_and_executable_bits() {
    let binary: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let d = skill_dir(&[
        ("SKILL.md", SKILL),
        ("scripts/run.sh", b"#!/bin/sh\necho hi\n"),
        ("assets/data.bin", &binary),
        ("references/caf\u{e9}.md", "ünïcödé".as_bytes()),
    ]);
    #[cfg(unix)]
    set_mode(&d.path().join("scripts/run.sh"), 0o755);
    let original = Bundle::from_dir(d.path(), &defaults()).unwrap();
    #[cfg(unix)]
    assert!(original.get("scripts/run.sh").unwrap().executable);
    assert!(!original.get("SKILL.md").unwrap().executable);

    // to_zip / from_zip, with and without a root folder.
    for root in [None, Some("my-skill")] {
        let z = original.to_zip(Cursor::new(Vec::new()), root).unwrap();
        let back = Bundle::from_zip(&z.into_inner(), &defaults()).unwrap();
        assert_eq!(back, original, "root {root:?}");
    }

    // write_to_dir / from_dir.
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("copy");
    original.write_to_dir(&target).unwrap();
    let back = Bundle::from_dir(&target, &defaults()).unwrap();
    assert_eq!(back, original);
    assert_eq!(fs::read(target.join("assets/data.bin")).unwrap(), binary);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| fs::metadata(target.join(p)).unwrap().permissions().mode();
        assert_ne!(mode("scripts/run.sh") & 0o111, 0);
        assert_eq!(mode("SKILL.md") & 0o111, 0);
    }
}

#[test]
fn very_compressible_files_survive_to_zip() {
    // A folder may hold a file that deflates far past the ratio limit; its zip must still load.
    let zeros = vec![0u8; 2 * 1024 * 1024];
    let text = "row,1,2,3\n".repeat(50_000);
    let d = skill_dir(&[
        ("SKILL.md", SKILL),
        ("assets/zeros.bin", &zeros),
        ("assets/table.csv", text.as_bytes()),
        ("assets/empty.txt", b""),
    ]);
    let original = Bundle::from_dir(d.path(), &defaults()).unwrap();
    let z = original
        .to_zip(Cursor::new(Vec::new()), None)
        .unwrap()
        .into_inner();
    assert!(z.len() < zeros.len() + text.len() + 64 * 1024);
    let back = Bundle::from_zip(&z, &defaults()).unwrap();
    assert_eq!(back, original);
    // Ordinary text is still deflated.
    let mut archive = zip::ZipArchive::new(Cursor::new(&z)).unwrap();
    let skill = archive.by_name("SKILL.md").unwrap();
    assert_eq!(skill.compression(), CompressionMethod::Deflated);
}
