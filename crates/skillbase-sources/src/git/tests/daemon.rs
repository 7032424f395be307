//! Fetching over `git://` from a `git daemon`: the cache, its updates, the archive limit while
//! receiving, and servers that refuse or never answer.

use super::*;
use std::io::Read;
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

/// A `git daemon` on 127.0.0.1, killed when dropped (also on panic).
struct Daemon {
    child: Child,
    port: u16,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `git-daemon` program itself, when it is installed. It is run directly, not as
/// `git daemon`: the `git` wrapper would start it as a child of its own, which killing the
/// wrapper leaves running (holding the port, and any descriptor the test inherited).
fn git_daemon_program() -> Option<std::path::PathBuf> {
    let out = Command::new("git").arg("--exec-path").output().ok()?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let p = Path::new(&dir).join("git-daemon");
    p.exists().then_some(p)
}

/// Starts `git-daemon` serving `base`, or `None` when it is not available.
fn start_daemon(base: &Path, home: &Path) -> Option<Daemon> {
    let program = git_daemon_program()?;
    for _attempt in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&program)
            .arg("--reuseaddr")
            .arg(format!("--base-path={}", base.display()))
            .arg("--export-all")
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(base)
            .env("HOME", home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else { return None };
        let mut daemon = Daemon { child, port };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if daemon.child.try_wait().unwrap().is_some() {
                break; // exited: most likely the port was taken; try another
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(daemon);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = daemon.child.kill();
    }
    None
}

fn cache_repos(cache: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".git"))
        .collect();
    v.sort();
    v
}

/// `served/<name>`: a bare clone of the work repository, in the folder a daemon serves.
pub(super) fn serve_bare(r: &Repo, name: &str) -> (PathBuf, PathBuf) {
    let base = r.tmp.path().join("served");
    fs::create_dir_all(&base).unwrap();
    let into = format!("served/{name}");
    git(
        &r.home(),
        r.tmp.path(),
        &["clone", "-q", "--bare", "origin", &into],
    );
    let bare = base.join(name);
    (base, bare)
}

/// Commit `skills/new` (and remove the root SKILL.md) in the work repository, and push `main`
/// to `bare`: the new commit.
fn push_skill_new(r: &Repo, bare: &Path) -> String {
    r.write("skills/new/SKILL.md", B_SKILL);
    r.git(&["rm", "-q", "SKILL.md"]);
    let c4 = r.commit("c4");
    git(
        &r.home(),
        &r.work,
        &["push", "-q", bare.to_str().unwrap(), "main"],
    );
    c4
}

#[test]
fn git_daemon_fetch_caches_and_updates() {
    let s = standard();
    let r = &s.repo;
    let (base, bare) = serve_bare(r, "repo.git");
    // dev is a branch of the served repository too.
    git(
        &r.home(),
        &r.work,
        &["push", "-q", bare.to_str().unwrap(), "dev"],
    );
    let Some(daemon) = start_daemon(&base, &r.home()) else {
        eprintln!("skipped: git daemon not available");
        return;
    };
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);
    let cache = r.cache();
    let get = |suffix: &str, limits: &GitLimits| {
        fetch(
            &GitSource::parse(&format!("git+{url}{suffix}")).unwrap(),
            limits,
            &cache,
        )
    };

    let head = get("", &limits()).unwrap();
    assert_eq!(head.commit, s.c2);
    assert_eq!(head.commit, git(&r.home(), &bare, &["rev-parse", "HEAD"]));
    assert_eq!(head, r.fetch("").unwrap(), "same result as in place");
    assert_eq!(cache_repos(&cache).len(), 1, "one bare repository per URL");
    let cached = cache.join(&cache_repos(&cache)[0]);
    assert!(cached.join("objects").is_dir() && cached.join("HEAD").is_file());

    let v1 = get("@v1", &limits()).unwrap();
    assert_eq!(v1.commit, s.c1);
    assert_c1_skills(&v1, B_SKILL);
    let dev = get("@dev", &limits()).unwrap();
    assert_eq!(dev.commit, s.c3);
    assert_c1_skills(&dev, B_DEV);
    assert_eq!(get(&format!("@{}", s.c1), &limits()).unwrap(), v1);
    assert_eq!(get(&format!("@{}", &s.c3[..9]), &limits()).unwrap(), dev);
    let a = get("@v1#skills/a", &limits()).unwrap();
    assert_eq!(dirs(&a), ["skills/a"]);
    assert!(file(&a.skills[0], "run.sh").executable);

    let (e, m) = msg(get("@nope", &limits()));
    assert!(matches!(e, GitError::RefNotFound { .. }), "{e:?}");
    assert!(
        m.contains("`nope`") && m.contains("branches: dev, main"),
        "{m}"
    );
    assert!(m.contains("tags: light, v1") && m.contains(&url), "{m}");

    // A new commit in the origin: the next fetch gets it (the cache is not stale).
    let c4 = push_skill_new(r, &bare);
    let after = get("", &limits()).unwrap();
    assert_eq!(after.commit, c4);
    assert_eq!(dirs(&after), ["skills/a", "skills/b", "skills/new"]);
    assert_eq!(get("@main", &limits()).unwrap().commit, c4);
    assert_eq!(
        cache_repos(&cache).len(),
        1,
        "the same cache repository was updated"
    );

    // The packed size of the fetched repository is held to archive_bytes; the copy over
    // the limit is not kept.
    let tiny = GitLimits {
        archive_bytes: 100,
        ..limits()
    };
    let (e, m) = msg(get("", &tiny));
    assert!(
        matches!(
            e,
            GitError::Limit {
                limit: "archive_bytes",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        m.contains("bytes packed, over the limit of 100 bytes packed"),
        "{m}"
    );
    assert!(cache_repos(&cache).is_empty(), "{:?}", cache_repos(&cache));
    // And the next import starts afresh.
    assert_eq!(get("@v1", &limits()).unwrap(), v1);

    // A repository the daemon does not have.
    let missing = format!("git+git://127.0.0.1:{}/nope.git", daemon.port);
    let (e, m) = msg(fetch(
        &GitSource::parse(&missing).unwrap(),
        &limits(),
        &cache,
    ));
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains("nope.git"), "{m}");
    drop(daemon);
}

#[test]
fn git_daemon_download_over_the_archive_limit_is_stopped() {
    let r = Repo::new();
    r.write("skills/a/SKILL.md", A_SKILL);
    // 4 MiB that do not compress (a xorshift stream).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..4 * 1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    r.write("skills/a/data.bin", &noise);
    r.commit("big");
    let (base, _) = serve_bare(&r, "big.git");
    let Some(daemon) = start_daemon(&base, &r.home()) else {
        eprintln!("skipped: git daemon not available");
        return;
    };
    let url = format!("git+git://127.0.0.1:{}/big.git", daemon.port);
    let src = GitSource::parse(&url).unwrap();
    let l = GitLimits {
        archive_bytes: 1024 * 1024,
        ..limits()
    };
    let (e, m) = msg(fetch(&src, &l, &r.cache()));
    match e {
        GitError::Limit {
            limit: "archive_bytes",
            found,
            ..
        } => assert!(found > 1024 * 1024, "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(
        m.contains("bytes packed, over the limit of 1048576 bytes packed"),
        "{m}"
    );
    assert!(
        cache_repos(&r.cache()).is_empty(),
        "the oversized copy is removed"
    );
    // Within the limit, the same repository is read, data and all.
    let f = fetch(&src, &limits(), &r.cache()).unwrap();
    assert_eq!(file(&f.skills[0], "data.bin").bytes, noise);
    drop(daemon);
}

#[test]
fn git_connection_refused_names_the_url() {
    let tmp = tempfile::tempdir().unwrap();
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("git://127.0.0.1:{port}/repo.git");
    let src = GitSource::parse(&format!("git+{url}")).unwrap();
    let (e, m) = msg(fetch(&src, &limits(), tmp.path()));
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains(&url), "{m}");
}

#[test]
fn git_server_that_never_answers_times_out() {
    let tmp = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts one connection and says nothing until the test ends.
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 512];
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let _ = conn.read(&mut buf);
    });
    let url = format!("git://127.0.0.1:{port}/repo.git");
    let src = GitSource::parse(&format!("git+{url}")).unwrap();
    let timeouts = Timeouts {
        connect: Duration::from_secs(2),
        io: Duration::from_secs(1),
        overall: Duration::from_secs(30),
    };
    let start = Instant::now();
    let (e, m) = msg(fetch_with(&src, &limits(), tmp.path(), &timeouts));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
    assert!(m.contains(&url), "{m}");
    drop(server);
}
