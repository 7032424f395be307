//! Fetching over `file://`: a repository read in place, at every kind of reference.

use super::*;

#[test]
fn file_fetch_at_head_reads_the_root_skill_whole() {
    let s = standard();
    let f = s.repo.fetch("").unwrap();
    assert_eq!(f.commit, s.c2);
    assert_eq!(f.commit, s.repo.git(&["rev-parse", "HEAD"]));
    assert_eq!(f.commit.len(), 40);
    assert!(
        f.commit
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    // The root's SKILL.md makes it the only skill: skills/a and skills/b are its files.
    assert_eq!(dirs(&f), [""]);
    let root = &f.skills[0];
    assert_eq!(
        paths(root),
        [
            "README.md",
            "SKILL.md",
            "docs/guide.md",
            "skills/a/SKILL.md",
            "skills/a/ref/notes.md",
            "skills/a/run.sh",
            "skills/b/SKILL.md",
        ]
    );
    assert_eq!(file(root, "SKILL.md").bytes, ROOT_SKILL);
    assert_eq!(file(root, "skills/a/run.sh").bytes, A_RUN);
    assert!(file(root, "skills/a/run.sh").executable);
    assert!(!file(root, "README.md").executable);
    // Read in place: nothing is copied into the cache for a local repository.
    assert!(!s.repo.cache().join("objects").exists());
}

#[test]
fn file_fetch_at_branch_tags_and_commit_ids() {
    let s = standard();
    let r = &s.repo;
    let dev = r.fetch("@dev").unwrap();
    assert_eq!(dev.commit, s.c3);
    assert_eq!(dev.commit, r.git(&["rev-parse", "dev"]));
    assert_c1_skills(&dev, B_DEV);
    assert_eq!(r.fetch("@refs/heads/dev").unwrap(), dev);

    // The annotated tag is peeled to its commit.
    let tag_object = r.git(&["rev-parse", "v1"]);
    assert_ne!(tag_object, s.c1, "v1 is an annotated tag (a tag object)");
    assert_eq!(r.git(&["cat-file", "-t", "v1"]), "tag");
    let v1 = r.fetch("@v1").unwrap();
    assert_eq!(v1.commit, s.c1);
    assert_eq!(v1.commit, r.git(&["rev-parse", "v1^{commit}"]));
    assert_c1_skills(&v1, B_SKILL);
    assert_eq!(r.fetch("@refs/tags/v1").unwrap(), v1);
    assert_eq!(r.fetch("@light").unwrap(), v1);

    // Full and abbreviated commit ids, any case.
    assert_eq!(r.fetch(&format!("@{}", s.c1)).unwrap(), v1);
    assert_eq!(r.fetch(&format!("@{}", &s.c1[..8])).unwrap(), v1);
    assert_eq!(
        r.fetch(&format!("@{}", s.c1[..7].to_uppercase())).unwrap(),
        v1
    );
    assert_eq!(r.fetch(&format!("@{}", &s.c3[..10])).unwrap(), dev);
    assert_eq!(r.fetch("@HEAD").unwrap().commit, s.c2);
    assert_eq!(r.fetch("@main").unwrap().commit, s.c2);
}

#[test]
fn file_fetch_subdir_selects_one_skill() {
    let s = standard();
    let r = &s.repo;
    let a = r.fetch("@v1#skills/a").unwrap();
    assert_eq!(a.commit, s.c1);
    assert_eq!(dirs(&a), ["skills/a"], "dir is the path in the repository");
    assert_eq!(paths(&a.skills[0]), ["SKILL.md", "ref/notes.md", "run.sh"]);
    assert!(file(&a.skills[0], "run.sh").executable);
    // At HEAD the root is a skill, but #skills/b looks only below skills/b.
    let b = r.fetch("#skills/b").unwrap();
    assert_eq!(b.commit, s.c2);
    assert_eq!(dirs(&b), ["skills/b"]);
    assert_eq!(b.skills[0].files[0].bytes, B_SKILL);
    let both = r.fetch("@dev#skills/").unwrap();
    assert_c1_skills(&both, B_DEV);

    let (e, m) = msg(r.fetch("#docs"));
    assert!(matches!(e, GitError::NoSkill { .. }), "{e:?}");
    assert!(m.contains("no skill found") && m.contains("`docs`"), "{m}");
    let (e, m) = msg(r.fetch("#skills/zzz"));
    assert!(matches!(e, GitError::SubdirNotFound { .. }), "{e:?}");
    assert!(m.contains("skills/zzz") && m.contains(&s.c2), "{m}");
    let (e, m) = msg(r.fetch("#README.md"));
    assert!(matches!(e, GitError::SubdirNotFound { .. }), "{e:?}");
    assert!(m.contains("not a folder"), "{m}");
}

#[test]
fn file_fetch_sees_a_new_commit() {
    let s = standard();
    let first = s.repo.fetch("@dev").unwrap();
    s.repo.git(&["checkout", "-q", "dev"]);
    s.repo.write(
        "skills/b/SKILL.md",
        b"---\nname: b\ndescription: Newer.\n---\n",
    );
    let c4 = s.repo.commit("c4");
    let second = s.repo.fetch("@dev").unwrap();
    assert_ne!(second.commit, first.commit);
    assert_eq!(second.commit, c4);
    assert_eq!(
        second.skills[1].files[0].bytes,
        b"---\nname: b\ndescription: Newer.\n---\n"
    );
}

#[test]
fn missing_ref_is_named_with_what_exists() {
    let s = standard();
    let (e, m) = msg(s.repo.fetch("@nope"));
    assert!(matches!(e, GitError::RefNotFound { .. }), "{e:?}");
    assert!(m.contains("`nope`"), "{m}");
    assert!(m.contains("branches: dev, main"), "{m}");
    assert!(m.contains("tags: light, v1"), "{m}");
    // A hex-looking name that matches no object.
    let (e, m) = msg(s.repo.fetch("@deadbeef"));
    assert!(matches!(e, GitError::RefNotFound { .. }), "{e:?}");
    assert!(m.contains("`deadbeef`"), "{m}");
}

#[test]
fn ref_list_in_errors_is_capped_at_ten() {
    let r = Repo::new();
    r.write("s/SKILL.md", A_SKILL);
    r.commit("one");
    for i in 0..14 {
        r.git(&["branch", &format!("b{i:02}")]);
    }
    let (_, m) = msg(r.fetch("@nope"));
    assert!(m.contains("b00, b01"), "{m}");
    assert!(m.contains("b09 (and 5 more)"), "{m}");
    assert!(
        !m.contains("b10") && !m.contains("main"),
        "ten names at most: {m}"
    );
}

#[test]
fn a_name_both_branch_and_tag_is_ambiguous() {
    let r = Repo::new();
    r.write("s/SKILL.md", A_SKILL);
    r.commit("one");
    r.git(&["tag", "x"]);
    r.write("s/SKILL.md", B_SKILL);
    r.commit("two");
    r.git(&["branch", "x"]);
    let (e, m) = msg(r.fetch("@x"));
    assert!(matches!(e, GitError::AmbiguousRef { .. }), "{e:?}");
    assert!(
        m.contains("@refs/heads/x") && m.contains("@refs/tags/x"),
        "{m}"
    );
    assert_eq!(
        r.fetch("@refs/tags/x").unwrap().skills[0].files[0].bytes,
        A_SKILL
    );
    assert_eq!(
        r.fetch("@refs/heads/x").unwrap().skills[0].files[0].bytes,
        B_SKILL
    );
}

#[test]
fn a_ref_to_a_tree_is_not_a_commit() {
    let r = Repo::new();
    r.write("s/SKILL.md", A_SKILL);
    r.commit("one");
    let tree = r.git(&["rev-parse", "HEAD^{tree}"]);
    let (e, m) = msg(r.fetch(&format!("@{tree}")));
    assert!(matches!(e, GitError::NotACommit { .. }), "{e:?}");
    assert!(m.contains("a tree"), "{m}");
}

#[test]
fn no_skill_and_unreachable_repositories_are_errors() {
    let r = Repo::new();
    r.write("README.md", b"no skills here\n");
    r.write("docs/SKILL.txt", b"not a SKILL.md\n");
    let c = r.commit("one");
    let (e, m) = msg(r.fetch(""));
    assert!(matches!(e, GitError::NoSkill { .. }), "{e:?}");
    assert!(m.contains(&c) && m.contains("SKILL.md"), "{m}");

    let missing = r.tmp.path().join("does-not-exist");
    let spec = format!("git+file://{}", missing.display());
    let src = GitSource::parse(&spec).unwrap();
    let (e, m) = msg(fetch(&src, &GitLimits::default(), &r.cache()));
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains(&format!("file://{}", missing.display())), "{m}");

    // A folder that is not a repository.
    let plain = r.tmp.path().join("plain");
    fs::create_dir_all(&plain).unwrap();
    let src = GitSource::parse(&format!("git+file://{}", plain.display())).unwrap();
    let (e, m) = msg(fetch(&src, &GitLimits::default(), &r.cache()));
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains("not a git repository"), "{m}");

    // An empty repository has no HEAD to read.
    let empty = Repo::new();
    let (e, m) = msg(empty.fetch(""));
    assert!(matches!(e, GitError::NoHead { .. }), "{e:?}");
    assert!(m.contains("@REF"), "{m}");
}

#[test]
fn plain_http_to_another_host_is_refused_before_anything_is_fetched() {
    let tmp = tempfile::tempdir().unwrap();
    for spec in [
        "git+http://example.invalid/r.git@v1",
        "git+http://10.0.0.1/r.git",
        "git+http://user:hunter2@example.invalid/r.git",
    ] {
        let src = GitSource::parse(spec).unwrap();
        let (e, m) = msg(fetch(&src, &GitLimits::default(), tmp.path()));
        assert!(matches!(e, GitError::InsecureHttp { .. }), "{e:?}");
        assert!(m.contains("use https://"), "{m}");
        assert!(!m.contains("hunter2"), "{m}");
    }
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "no cache made"
    );
}
