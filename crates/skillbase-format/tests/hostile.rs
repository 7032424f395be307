//! Hostile SKILL.md input: each is refused with exactly one error naming the file, quickly, and
//! never with a panic.

use skillbase_format::prompt::{self, PropertiesError};
use skillbase_format::skill_dir::ReadError;
use skillbase_format::validate::{Report, ValidateOptions, validate_dir, validate_text};
use skillbase_format::{Profile, SkillMd, YamlLimits};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// A folder `my-skill` holding a SKILL.md with `bytes`.
fn skill(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-skill");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("SKILL.md"), bytes).unwrap();
    (tmp, dir)
}

/// Validate in both profiles; each must give exactly one diagnostic, an error on SKILL.md whose
/// message contains `expect`. Returns the message.
fn one_error(dir: &Path, expect: &str) -> String {
    let mut msg = String::new();
    for profile in [Profile::Skillbase, Profile::Spec] {
        let opts = ValidateOptions {
            profile,
            ..ValidateOptions::default()
        };
        let start = Instant::now();
        let r = validate_dir(dir, &opts);
        assert!(start.elapsed() < Duration::from_secs(2), "{profile:?} slow");
        msg = single(&r, expect);
    }
    msg
}

fn single(r: &Report, expect: &str) -> String {
    assert!(!r.is_valid(), "{:?}", r.diagnostics);
    assert_eq!(r.diagnostics.len(), 1, "{:#?}", r.diagnostics);
    let d = &r.diagnostics[0];
    assert_eq!(d.file, "SKILL.md", "{d:?}");
    assert!(
        d.message.contains(expect),
        "expected {expect:?} in {:?}",
        d.message
    );
    d.message.clone()
}

fn props_err(dir: &Path) -> PropertiesError {
    match prompt::read_properties(dir, &YamlLimits::default()) {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(e) => e,
    }
}

fn parse_err(text: &str) {
    assert!(SkillMd::parse(text, &YamlLimits::default()).is_err());
}

const HEAD: &str = "---\nname: my-skill\ndescription: Does things. Use when asked.\n";

#[test]
fn malformed_yaml() {
    for text in [
        "---\nname: [unclosed\ndescription: x\n---\nbody\n",
        "---\nname: my-skill\ndescription: Use when: this\n---\nbody\n",
        "---\nname: my-skill\n  description: bad indent\n---\n",
        "---\nname: 'unterminated\n---\n",
        "---\n{a: b\n---\n",
        "---\nname: \"unterminated\n---\n",
        "----\nname: x\n---\n",
    ] {
        let (_t, dir) = skill(text.as_bytes());
        one_error(&dir, "Invalid YAML in frontmatter");
        assert!(matches!(props_err(&dir), PropertiesError::Parse(_)));
        parse_err(text);
    }
}

#[test]
fn unclosed_and_missing_frontmatter() {
    let (_t, dir) = skill(b"---\nname: my-skill\ndescription: x\n");
    one_error(&dir, "not properly closed");
    let (_t, dir) = skill(b"# Just markdown\n");
    one_error(&dir, "must start with YAML frontmatter");
}

#[test]
fn empty_file() {
    let (_t, dir) = skill(b"");
    let m = one_error(&dir, "SKILL.md must start with YAML frontmatter");
    assert!(m.contains("SKILL.md"));
    assert!(props_err(&dir).to_string().contains("SKILL.md"));
    parse_err("");
    // Whitespace only, and an empty frontmatter.
    let (_t, dir) = skill(b"\n\n   \n");
    one_error(&dir, "must start with YAML frontmatter");
    let (_t, dir) = skill(b"---\n---\n");
    one_error(&dir, "must be a YAML mapping");
}

#[test]
fn invalid_utf8_sequences() {
    let cases: [&[u8]; 6] = [
        b"---\nname: my-skill\ndescription: caf\xe9\n---\n",
        b"\xff\xfe---\n",
        // A lone surrogate as CESU-8 / WTF-8 would write it.
        b"---\nname: my-skill\ndescription: \xed\xa0\x80\n---\n",
        // An overlong `/`.
        b"---\nname: \xc0\xaf\n---\n",
        // A truncated sequence at the very end.
        b"---\nname: my-skill\ndescription: x\n---\nbody \xe2\x82",
        // Valid frontmatter, bad bytes deep in the body.
        b"---\nname: my-skill\ndescription: x\n---\nbody\n\x80\x80\x80",
    ];
    for bytes in cases {
        let offset = std::str::from_utf8(bytes).unwrap_err().valid_up_to();
        let (_t, dir) = skill(bytes);
        let m = one_error(&dir, "SKILL.md is not valid UTF-8");
        assert!(m.contains(&format!("offset {offset}")), "{m}");
        let e = props_err(&dir);
        assert!(
            matches!(e, PropertiesError::Read(ReadError::NotUtf8 { .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("SKILL.md"), "{e}");
    }
}

#[test]
fn lowercase_skill_md_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-skill");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("skill.md"), b"\xff").unwrap();
    let r = validate_dir(&dir, &ValidateOptions::default());
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].file, "skill.md");
    assert!(
        r.diagnostics[0]
            .message
            .starts_with("skill.md is not valid UTF-8")
    );
}

#[test]
fn nul_bytes() {
    let (_t, dir) = skill(&[0u8; 4096]);
    one_error(&dir, "must start with YAML frontmatter");
    let (_t, dir) = skill(b"---\nname: my-skill\ndescription: a\0b\n---\nbody\n");
    let r = validate_dir(&dir, &ValidateOptions::default());
    assert_eq!(r.errors().count(), 1, "{:#?}", r.diagnostics);
    assert_eq!(r.errors().next().unwrap().file, "SKILL.md");
    let (_t, dir) = skill(b"\0---\nname: my-skill\n---\n");
    one_error(&dir, "must start with YAML frontmatter");
}

#[test]
fn hundred_megabyte_file_is_refused_by_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-skill");
    fs::create_dir(&dir).unwrap();
    // Sparse: takes no disk space, and reading it all would be slow.
    let f = fs::File::create(dir.join("SKILL.md")).unwrap();
    f.set_len(100 * 1024 * 1024).unwrap();
    drop(f);
    let start = Instant::now();
    let m = one_error(
        &dir,
        "SKILL.md is 104857600 bytes, over the 1048576-byte limit",
    );
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(m.contains("references/"), "{m}");
    let e = props_err(&dir);
    assert!(
        matches!(e, PropertiesError::Read(ReadError::TooLarge { .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains("SKILL.md"));
}

#[test]
fn file_just_over_the_limit_is_refused() {
    let mut text = HEAD.to_owned();
    text.push_str("---\n");
    text.push_str(&"x".repeat(1024 * 1024 + 1 - text.len()));
    assert_eq!(text.len(), 1024 * 1024 + 1);
    let (_t, dir) = skill(text.as_bytes());
    one_error(&dir, "over the 1048576-byte limit");
    text.pop();
    let (_t, dir) = skill(text.as_bytes());
    let r = validate_dir(&dir, &ValidateOptions::default());
    assert!(r.is_valid(), "{:#?}", r.diagnostics);
}

fn billion_laughs() -> String {
    let mut doc = String::from(
        "---\nname: my-skill\ndescription: x\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for w in names.windows(2) {
        let (prev, cur) = (w[0], w[1]);
        doc.push_str(&format!(
            "{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    doc.push_str("---\nbody\n");
    doc
}

#[test]
fn yaml_bomb_is_refused_quickly() {
    let doc = billion_laughs();
    let (_t, dir) = skill(doc.as_bytes());
    let start = Instant::now();
    one_error(&dir, "anchors and aliases");
    assert!(matches!(props_err(&dir), PropertiesError::Parse(_)));
    parse_err(&doc);
    assert!(start.elapsed() < Duration::from_secs(2));

    // A block-style bomb and an alias used as a key.
    let block = format!("{HEAD}a: &a\n  - lol\n  - lol\nb:\n  - *a\n  - *a\n---\nbody\n");
    let (_t, dir) = skill(block.as_bytes());
    one_error(&dir, "anchors and aliases");
    let key = format!("{HEAD}*a : x\n---\nbody\n");
    let (_t, dir) = skill(key.as_bytes());
    one_error(&dir, "");
}

#[test]
fn deeply_nested_flow_and_block() {
    for n in [33, 1000, 30_000] {
        let text = format!("{HEAD}a: {}{}\n---\nbody\n", "[".repeat(n), "]".repeat(n));
        let (_t, dir) = skill(text.as_bytes());
        one_error(&dir, "Invalid YAML in frontmatter");
        parse_err(&text);
        let text = format!(
            "{HEAD}a: {}\n---\nbody\n",
            "{a: ".repeat(n) + &"}".repeat(n)
        );
        let (_t, dir) = skill(text.as_bytes());
        one_error(&dir, "Invalid YAML in frontmatter");
    }
    // Unclosed, so the parser must not recurse to the end either.
    let text = format!("{HEAD}a: {}\n---\nbody\n", "[".repeat(60_000));
    let (_t, dir) = skill(text.as_bytes());
    one_error(&dir, "Invalid YAML in frontmatter");

    let mut block = String::from(HEAD);
    for depth in 0..200 {
        block.push_str(&format!("{}k{depth}:\n", "  ".repeat(depth)));
    }
    block.push_str("---\nbody\n");
    let (_t, dir) = skill(block.as_bytes());
    one_error(&dir, "nesting deeper than 32 levels");
}

#[test]
fn hundred_thousand_keys() {
    let mut text = String::from(HEAD);
    for i in 0..100_000 {
        text.push_str(&format!("k{i}: v\n"));
    }
    text.push_str("---\nbody\n");
    assert!(text.len() < 1024 * 1024);
    let (_t, dir) = skill(text.as_bytes());
    one_error(&dir, "over the 65536-byte limit");

    // With the byte limit raised, the node limit stops it.
    let opts = ValidateOptions {
        yaml: YamlLimits {
            max_bytes: 10 * 1024 * 1024,
            ..YamlLimits::default()
        },
        ..ValidateOptions::default()
    };
    let start = Instant::now();
    let r = validate_text(&text, "SKILL.md", Some("my-skill"), &opts);
    assert!(start.elapsed() < Duration::from_secs(2));
    single(&r, "more than 10000 YAML nodes");

    // 100k items in one flow list.
    let list = format!("{HEAD}a: [{}]\n---\nbody\n", "x,".repeat(100_000));
    let r = validate_text(&list, "SKILL.md", Some("my-skill"), &opts);
    single(&r, "more than 10000 YAML nodes");
}

#[test]
fn huge_single_line() {
    // In the frontmatter: refused by the frontmatter limit.
    let text = format!("{HEAD}x: {}\n---\nbody\n", "y".repeat(900_000));
    let (_t, dir) = skill(text.as_bytes());
    one_error(&dir, "over the 65536-byte limit");
    // A description of one huge line under that limit is too long a description.
    let text = format!(
        "---\nname: my-skill\ndescription: {}\n---\nbody\n",
        "y".repeat(60_000)
    );
    let (_t, dir) = skill(text.as_bytes());
    one_error(
        &dir,
        "Description exceeds 1024 character limit (60000 chars)",
    );
    // In the body: allowed, and fast.
    let text = format!("{HEAD}---\n{}\n", "z".repeat(1_000_000));
    let (_t, dir) = skill(text.as_bytes());
    let start = Instant::now();
    let r = validate_dir(&dir, &ValidateOptions::default());
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(r.is_valid(), "{:#?}", r.diagnostics);
    // No newline at all.
    let text = format!("---{}", "-".repeat(500_000));
    let (_t, dir) = skill(text.as_bytes());
    one_error(&dir, "Invalid YAML in frontmatter");
}

#[test]
fn tags_multiple_documents_and_complex_keys() {
    for (extra, expect) in [
        ("a: !!binary aGVsbG8=\n", "tags"),
        ("a: !custom x\n", "tags"),
        ("? [a, b]\n: c\n", "mapping keys must be plain strings"),
        ("--- c\n", "more than one YAML document"),
        ("name: again\n", "duplicate key 'name'"),
    ] {
        let text = format!("{HEAD}{extra}---\nbody\n");
        let (_t, dir) = skill(text.as_bytes());
        one_error(&dir, expect);
    }
}

#[test]
fn folder_problems_are_one_error() {
    let tmp = tempfile::tempdir().unwrap();
    let r = validate_dir(&tmp.path().join("missing"), &ValidateOptions::default());
    assert_eq!(r.diagnostics.len(), 1);
    assert!(r.diagnostics[0].message.starts_with("Path does not exist"));
    let r = validate_dir(tmp.path(), &ValidateOptions::default());
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].message, "Missing required file: SKILL.md");
    // SKILL.md that is a folder is not a SKILL.md.
    fs::create_dir(tmp.path().join("SKILL.md")).unwrap();
    let r = validate_dir(tmp.path(), &ValidateOptions::default());
    assert_eq!(r.diagnostics.len(), 1);
    assert!(r.diagnostics[0].message.contains("SKILL.md"));
}

#[cfg(unix)]
#[test]
fn skill_md_linked_to_a_device_does_not_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-skill");
    fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("SKILL.md")).unwrap();
    let start = Instant::now();
    let r = validate_dir(&dir, &ValidateOptions::default());
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(!r.is_valid());
    assert_eq!(r.diagnostics.len(), 1, "{:#?}", r.diagnostics);
}
