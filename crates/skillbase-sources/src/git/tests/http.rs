//! Fetching over HTTP from git's own `git-http-backend` on 127.0.0.1: the same skills as read in
//! place, credentials from the URL used and never shown.

use super::daemon::serve_bare;
use super::*;
use crate::test_http::GitHttp;

#[test]
fn http_backend_fetch_reads_what_the_repository_holds() {
    let s = standard();
    let r = &s.repo;
    let (base, _bare) = serve_bare(r, "repo.git");
    let Some(server) = GitHttp::start(&base, &r.home(), None) else {
        eprintln!("skipped: git-http-backend not available");
        return;
    };
    let url = format!("http://127.0.0.1:{}/repo.git", server.port);
    let get = |suffix: &str| {
        fetch(
            &GitSource::parse(&format!("git+{url}{suffix}")).unwrap(),
            &limits(),
            &r.cache(),
        )
    };
    let head = get("").unwrap();
    assert_eq!(head.commit, s.c2);
    assert_eq!(head, r.fetch("").unwrap(), "same result as in place");
    let v1 = get("@v1").unwrap();
    assert_c1_skills(&v1, B_SKILL);
    let a = get("@v1#skills/a").unwrap();
    assert_eq!(dirs(&a), ["skills/a"]);
    assert!(server.requests.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    // `localhost` is loopback too; a repository the server does not have is unreachable.
    let missing = format!("git+http://localhost:{}/nope.git", server.port);
    let (e, m) = msg(fetch(
        &GitSource::parse(&missing).unwrap(),
        &limits(),
        &r.cache(),
    ));
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains("nope.git"), "{m}");
}

#[test]
fn http_credentials_are_never_sent_in_clear_nor_shown() {
    let s = standard();
    let r = &s.repo;
    let (base, _bare) = serve_bare(r, "private.git");
    let Some(server) = GitHttp::start(&base, &r.home(), Some(("reader", "s3cr%20t-pw"))) else {
        eprintln!("skipped: git-http-backend not available");
        return;
    };
    let port = server.port;
    let with = GitSource::parse(&format!(
        "git+http://reader:s3cr%2520t-pw@127.0.0.1:{port}/private.git@v1"
    ))
    .unwrap();
    // The password is not part of the URL, the spec, its display or its debug form.
    for shown in [
        with.url.clone(),
        with.to_spec(),
        with.to_string(),
        format!("{with:?}"),
    ] {
        assert!(!shown.contains("s3cr"), "{shown}");
    }
    assert_eq!(
        with.url,
        format!("http://reader@127.0.0.1:{port}/private.git")
    );
    // Over plain http the client refuses to send them (https only), and says so without them.
    for wrong in ["s3cr%2520t-pw", "wrong-pw-qzx", "w%72ong-pw-qzx"] {
        let src = GitSource::parse(&format!(
            "git+http://reader:{wrong}@127.0.0.1:{port}/private.git@v1"
        ))
        .unwrap();
        let (e, m) = msg(fetch(&src, &limits(), &r.cache()));
        assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
        for secret in ["s3cr", "wrong-pw", "w%72ong", "qzx"] {
            assert!(!m.contains(secret), "{m}");
            assert!(!format!("{e:?}").contains(secret), "{e:?}");
        }
    }
    // Without credentials the server refuses; nothing prompts, no helper runs.
    let none = GitSource::parse(&format!("git+http://127.0.0.1:{port}/private.git")).unwrap();
    let (e, m) = msg(fetch(&none, &limits(), &r.cache()));
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains("private.git"), "{m}");
    let sent = server.authorized.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(sent, 0, "no credentials crossed plain http");
}

#[test]
fn a_parse_error_never_quotes_the_password() {
    for spec in [
        "git+https://u:topsecret@h.example/r.git@a..b",
        "git+https://u:topsecret@h.example/r.git#../x",
        "git+ssh://u:topsecret@h.example/r.git",
    ] {
        let e = GitSource::parse(spec).unwrap_err().to_string();
        assert!(!e.contains("topsecret"), "{e}");
        assert!(e.contains("u:***@h.example"), "{e}");
    }
}
