//! Tests only: git's own `git-http-backend` served over HTTP on 127.0.0.1 by a small CGI bridge
//! (one thread per connection, one request per connection), optionally behind Basic auth.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

/// A smart-HTTP git server over the bare repositories under a folder, stopped when dropped.
pub(crate) struct GitHttp {
    /// Its port on 127.0.0.1.
    pub(crate) port: u16,
    /// Requests answered so far.
    pub(crate) requests: Arc<AtomicUsize>,
    /// Requests that carried an `Authorization` header.
    pub(crate) authorized: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What each connection needs.
#[derive(Clone)]
struct Backend {
    program: PathBuf,
    root: PathBuf,
    home: PathBuf,
    /// `Basic <base64(user:password)>` when the server asks for credentials.
    auth: Option<String>,
}

/// The `git-http-backend` program, when git ships it.
fn backend_program() -> Option<PathBuf> {
    let out = Command::new("git").arg("--exec-path").output().ok()?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let p = Path::new(&dir).join("git-http-backend");
    p.exists().then_some(p)
}

impl GitHttp {
    /// Serve the repositories under `root` (e.g. `root/repo.git` at `/repo.git`), asking for
    /// `user:password` when `auth` is given; `None` when git-http-backend is not installed.
    pub(crate) fn start(root: &Path, home: &Path, auth: Option<(&str, &str)>) -> Option<GitHttp> {
        let backend = Backend {
            program: backend_program()?,
            root: root.to_path_buf(),
            home: home.to_path_buf(),
            auth: auth.map(|(u, p)| format!("Basic {}", base64(format!("{u}:{p}").as_bytes()))),
        };
        let listener = TcpListener::bind("127.0.0.1:0").ok()?;
        let port = listener.local_addr().ok()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let authorized = Arc::new(AtomicUsize::new(0));
        let (stop2, requests2) = (Arc::clone(&stop), Arc::clone(&requests));
        let authorized2 = Arc::clone(&authorized);
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (backend, requests) = (backend.clone(), Arc::clone(&requests2));
                let authorized = Arc::clone(&authorized2);
                std::thread::spawn(move || {
                    if let Ok(with_auth) = serve(conn, &backend) {
                        requests.fetch_add(1, Ordering::SeqCst);
                        if with_auth {
                            authorized.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        Some(GitHttp {
            port,
            requests,
            authorized,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answer one request on `conn` by running the backend as CGI: whether it carried credentials.
fn serve(conn: TcpStream, b: &Backend) -> std::io::Result<bool> {
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or("GET").to_string(),
        parts.next().unwrap_or("/").to_string(),
    );
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let body = read_body(&mut reader, &header)?;
    let mut out = conn;
    let with_auth = header("authorization").is_some();
    if let Some(expected) = &b.auth
        && header("authorization").as_deref() != Some(expected.as_str())
    {
        out.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\n\
              Content-Length: 0\r\nConnection: close\r\n\r\n",
        )?;
        return Ok(with_auth);
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut cmd = Command::new(&b.program);
    cmd.env("GIT_PROJECT_ROOT", &b.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("HOME", &b.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", b.home.join("gitconfig"));
    for (name, var) in [
        ("content-type", "CONTENT_TYPE"),
        ("git-protocol", "GIT_PROTOCOL"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
    ] {
        if let Some(v) = header(name) {
            cmd.env(var, v);
        }
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or(std::io::ErrorKind::BrokenPipe)?;
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let mut cgi = Vec::new();
    child
        .stdout
        .take()
        .ok_or(std::io::ErrorKind::BrokenPipe)?
        .read_to_end(&mut cgi)?;
    let _ = writer.join();
    child.wait()?;
    respond(&mut out, &cgi)?;
    Ok(with_auth)
}

/// The request body: by `Content-Length`, or chunked.
fn read_body(
    reader: &mut BufReader<TcpStream>,
    header: &dyn Fn(&str) -> Option<String>,
) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|_| std::io::ErrorKind::InvalidData)?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body)?;
    }
    Ok(body)
}

/// The CGI output as an HTTP response: its `Status:` header as the status line.
fn respond(out: &mut TcpStream, cgi: &[u8]) -> std::io::Result<()> {
    let (head, body) = match cgi.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (&cgi[..i], &cgi[i + 4..]),
        None => match cgi.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (&cgi[..i], &cgi[i + 2..]),
            None => (&cgi[..0], cgi),
        },
    };
    let head = String::from_utf8_lossy(head);
    let mut status = "200 OK".to_string();
    let mut response = String::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_string(),
            Some(_) => {
                response.push_str(h.trim_end());
                response.push_str("\r\n");
            }
            None => {}
        }
    }
    let start = format!(
        "HTTP/1.1 {status}\r\n{response}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    out.write_all(start.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// Standard base64, with padding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_of_known_strings() {
    assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
    assert_eq!(base64(b"a"), "YQ==");
    assert_eq!(base64(b"ab"), "YWI=");
}

/// Runs `git` in `dir` with no system or user configuration; its trimmed stdout.
pub(crate) fn git_in(home: &Path, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .stdin(Stdio::null())
        .output()
        .expect("the git program runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Commit everything in `work` (a new repository) and clone it bare to `bare`: the commit.
pub(crate) fn commit_and_serve(home: &Path, work: &Path, bare: &Path) -> String {
    git_in(home, work, &["init", "-q"]);
    git_in(home, work, &["add", "-A"]);
    git_in(home, work, &["commit", "-q", "-m", "c"]);
    let commit = git_in(home, work, &["rev-parse", "HEAD"]);
    std::fs::create_dir_all(bare.parent().unwrap_or(bare)).expect("the served folder");
    let (from, to) = (work.display().to_string(), bare.display().to_string());
    git_in(home, work, &["clone", "-q", "--bare", &from, &to]);
    commit
}
