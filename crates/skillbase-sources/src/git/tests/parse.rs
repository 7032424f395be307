//! Parsing a spec: what is accepted, its canonical text, and what is refused, saying what to write.

use super::*;

#[test]
fn parse_accepts_good_specs_and_round_trips() {
    let cases: &[(&str, &str, Option<&str>, Option<&str>)] = &[
        (
            "git+https://example.com/skills.git",
            "https://example.com/skills.git",
            None,
            None,
        ),
        (
            "git+http://example.com/skills",
            "http://example.com/skills",
            None,
            None,
        ),
        (
            "git+https://example.com/skills.git@v1.2.0",
            "https://example.com/skills.git",
            Some("v1.2.0"),
            None,
        ),
        (
            "git+https://example.com/org/skills.git@v1#skills/pdf",
            "https://example.com/org/skills.git",
            Some("v1"),
            Some("skills/pdf"),
        ),
        (
            "git+https://example.com/skills.git#skills/pdf",
            "https://example.com/skills.git",
            None,
            Some("skills/pdf"),
        ),
        // The user's `git@` is not a ref: it comes before the path.
        (
            "git+ssh://git@host/repo.git",
            "ssh://git@host/repo.git",
            None,
            None,
        ),
        (
            "git+ssh://git@host/repo.git@v1",
            "ssh://git@host/repo.git",
            Some("v1"),
            None,
        ),
        (
            "git+ssh://git@host:2222/org/repo.git@feature/x#a",
            "ssh://git@host:2222/org/repo.git",
            Some("feature/x"),
            Some("a"),
        ),
        (
            "git+file:///srv/git/skills",
            "file:///srv/git/skills",
            None,
            None,
        ),
        (
            "git+file:///srv/git/skills@3f2a9c1#.claude/skills",
            "file:///srv/git/skills",
            Some("3f2a9c1"),
            Some(".claude/skills"),
        ),
        (
            "git+git://127.0.0.1:9418/repo.git@refs/heads/main",
            "git://127.0.0.1:9418/repo.git",
            Some("refs/heads/main"),
            None,
        ),
    ];
    for (spec, url, reference, subdir) in cases {
        let s = GitSource::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(s.url, *url, "{spec}");
        assert_eq!(s.reference.as_deref(), *reference, "{spec}");
        assert_eq!(s.subdir.as_deref(), *subdir, "{spec}");
        assert_eq!(s.to_spec(), *spec, "canonical text of {spec}");
        assert_eq!(s.to_string(), *spec);
        assert_eq!(
            GitSource::parse(&s.to_spec()).unwrap(),
            s,
            "round trip of {spec}"
        );
    }
    // One trailing '/' on the folder is dropped from the canonical text.
    let s = GitSource::parse("git+https://h.example/r.git#skills/pdf/").unwrap();
    assert_eq!(s.subdir.as_deref(), Some("skills/pdf"));
    assert_eq!(s.to_spec(), "git+https://h.example/r.git#skills/pdf");
    // Exactly at the length limit is fine.
    let base = "git+https://h.example/";
    let spec = format!("{base}{}", "a".repeat(MAX_SPEC_BYTES - base.len()));
    assert_eq!(spec.len(), MAX_SPEC_BYTES);
    assert!(GitSource::parse(&spec).is_ok());
}

#[test]
fn parse_refuses_bad_specs_saying_what_to_write() {
    let long = format!("git+https://h.example/{}", "a".repeat(MAX_SPEC_BYTES));
    let cases: &[(&str, &str)] = &[
        ("", "starts with `git+`"),
        ("https://h.example/r.git", "starts with `git+`"),
        ("git:https://h.example/r.git", "starts with `git+`"),
        ("git+", "no scheme"),
        ("git+h.example/r.git", "no scheme"),
        ("git+git@h.example:org/r.git", "ssh://git@host/repo"),
        ("git+ftp://h.example/r.git", "scheme `ftp` is not supported"),
        (
            "git+HTTPS://h.example/r.git",
            "scheme `HTTPS` is not supported",
        ),
        ("git+https://", "no repository path"),
        (
            "git+ssh://-oProxyCommand=touch%20x/r.git",
            "`-oProxyCommand=touch%20x` in the URL starts with `-`",
        ),
        (
            "git+ssh://git@h.example/-r.git",
            "`-r.git` in the URL starts with `-`",
        ),
        (
            "git+ssh://-l@h.example/r.git",
            "`-l` in the URL starts with `-`",
        ),
        (
            "git+https://h.example/r.git@--upload-pack=x",
            "reference `--upload-pack=x` starts with `-`",
        ),
        ("git+https://h.example", "no repository path"),
        (
            "git+https://h.example/",
            "no repository path after the host",
        ),
        ("git+https:///r.git", "no host"),
        ("git+ssh://git@/r.git", "no host"),
        ("git+file://host/srv/r", "names no host"),
        (
            "git+https://h.example/r.git@",
            "reference after `@` is empty",
        ),
        (
            "git+https://h.example/r.git@#a",
            "reference after `@` is empty",
        ),
        (
            "git+https://h.example/r.git@a..b",
            "not a valid git reference",
        ),
        (
            "git+https://h.example/r.git@a~1",
            "not a valid git reference",
        ),
        (
            "git+https://h.example/r.git@a:b",
            "not a valid git reference",
        ),
        ("git+https://h.example/r.git@-x", "starts with `-`"),
        ("git+https://h.example/r.git#", "folder after `#` is empty"),
        ("git+https://h.example/r.git#..", "`..`"),
        ("git+https://h.example/r.git#../x", "`..`"),
        ("git+https://h.example/r.git#a/../../b", "`..`"),
        ("git+https://h.example/r.git#./a", "`.`"),
        ("git+https://h.example/r.git#/abs", "starts with `/`"),
        ("git+https://h.example/r.git#a\\b", "backslash"),
        ("git+https://h.example/r.git#a//b", "empty part"),
        ("git+https://h.example/r.git#.git/hooks", "`.git`"),
        ("git+https://h.example/r .git", "a space"),
        (" git+https://h.example/r.git", "a space"),
        ("git+https://h.example/r.git\n", "control character"),
        ("git+https://h.example/r.git#a\u{7f}", "control character"),
        ("git+https://h.example/r.git#a\u{0}b", "control character"),
        ("git+https://h.example/r.git@v1\tx", "whitespace"),
        ("git+https://h.example/r.git#a\u{a0}b", "whitespace"),
        (&long, "over the limit of 2048 bytes"),
    ];
    for (spec, expected) in cases {
        match GitSource::parse(spec) {
            Ok(s) => panic!("{spec:?} was accepted as {s:?}"),
            Err(e) => {
                assert!(matches!(e, GitError::Spec { .. }), "{spec:?}: {e:?}");
                let m = e.to_string();
                assert!(m.contains(expected), "{spec:?}: {m:?} lacks {expected:?}");
                assert!(m.contains("write"), "{spec:?}: {m:?} says what to write");
                assert!(
                    m.len() < 1000,
                    "the message quotes a long spec cut: {}",
                    m.len()
                );
            }
        }
    }
}
