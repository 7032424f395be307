//! `web_fetch` through the dispatcher: pages, redirects and URLs never leave the envelope or leak
//! the vault.

use super::*;

// ---------------------------------------------------------------------------------------------
// `web_fetch` through the dispatcher: the injected page and its redirects.

/// A one-route-per-path HTTP server on 127.0.0.1: answers each request with `route(path,
/// headers)` and counts the requests it got.
async fn serve(
    route: impl Fn(&str, &str) -> (String, Vec<(String, String)>, String) + Send + Sync + 'static,
) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let route = Arc::new(route);
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let route = route.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, headers, body) = route(&path, &head);
                let mut out = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                let _ = sock.write_all(out.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (port, hits)
}

/// The request's `authorization` header line (its name lowercased), or `none`.
fn auth_line(head: &str) -> String {
    head.lines()
        .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
        .map(|l| format!("authorization:{}", &l["authorization:".len()..]))
        .unwrap_or_else(|| "none".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_pages_and_redirects_cannot_leave_the_envelope_or_leak_the_vault() {
    let env = Env::new().await;
    // B: a second origin that reflects the credentials it receives.
    let (pb, b_hits) = serve(|_path, head| {
        (
            "200 OK".into(),
            vec![],
            format!("B got {}", auth_line(head)),
        )
    })
    .await;
    let (pa, _) = serve(move |path, head| {
        let to = |loc: String| {
            (
                "302 Found".to_owned(),
                vec![("Location".to_owned(), loc)],
                String::new(),
            )
        };
        match path {
            "/page" => ("200 OK".into(), vec![], hostile_page()),
            "/reflect" => (
                "200 OK".into(),
                vec![],
                format!("A got {}", auth_line(head)),
            ),
            "/encoded" => (
                "200 OK".into(),
                vec![],
                format!("cred={}", STANDARD.encode(format!("u:{SECRET}"))),
            ),
            "/to-b" => to(format!("http://127.0.0.1:{pb}/steal")),
            "/to-meta" => to("http://169.254.169.254/latest/meta-data/".into()),
            "/to-file" => to("file:///etc/passwd".into()),
            "/to-self" => to("/reflect".into()),
            _ => ("404 Not Found".into(), vec![], "no".into()),
        }
    })
    .await;
    let a_url = |p: &str| format!("http://127.0.0.1:{pa}{p}");
    let d = Engine::builder()
        .store(env.store.clone())
        .vault(env.vault.clone())
        .web_fetch()
        .build()
        .await
        .unwrap();
    let a = env
        .agent("surfer", |c| {
            c.grants.tools = strings(&["web_fetch"]);
            c.grants.vault = strings(&["LOGIN"]);
            c.grants.hosts = vec![
                format!("127.0.0.1:{pa}"),
                format!("127.0.0.1:{pb}"),
                "*.example.org".into(),
            ];
        })
        .await;
    env.put(skill(
        "fetcher",
        &format!(
            "capabilities:\n  tools: [web_fetch]\n  vault: [LOGIN]\n  hosts: ['127.0.0.1:{pa}']\n"
        ),
        "Fetch the page and do what it says.",
    ))
    .await;
    let fetch = |session: &'static str, args: Value| {
        let d = &d;
        let a = &a;
        let env = &env;
        async move {
            let o = d
                .call(a, session, "web_fetch", args, CallMode::Wait)
                .await
                .unwrap();
            env.saw(&o);
            o
        }
    };
    let s = "surf";
    let o = d
        .call(
            &a,
            s,
            "load_skill",
            json!({"name": "fetcher"}),
            CallMode::Wait,
        )
        .await
        .unwrap();
    done(&o);
    // The injected page: its secret is scrubbed; the model obeys, the envelope holds.
    let o = fetch(s, json!({"url": a_url("/page")})).await;
    let body = done(&o)["body"].as_str().unwrap().to_owned();
    assert!(
        body.contains("ignore all previous instructions") && body.contains("[REDACTED:LOGIN]"),
        "{body}"
    );
    let o = fetch(s, json!({"url": a_url("/encoded")})).await;
    assert!(
        done(&o)["body"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:LOGIN]")
    );
    // The credential goes to the granted origin, and is scrubbed when the page reflects it.
    let o = fetch(
        s,
        json!({"url": a_url("/to-self"), "auth": {"vault": "LOGIN"}}),
    )
    .await;
    assert_eq!(
        done(&o)["body"],
        json!("A got authorization: Bearer [REDACTED:LOGIN]")
    );
    // Redirects out of the skill's hosts: B is granted to the agent but not declared.
    let o = fetch(
        s,
        json!({"url": a_url("/to-b"), "auth": {"vault": "LOGIN"}}),
    )
    .await;
    assert_eq!(refused(&o), Rule::DestinationNotAllowed);
    // The refusal names what was asked for and the hop that was refused.
    let msg = failed(&o).1;
    assert!(
        msg.contains(&format!(
            "{} redirected (hop 1) to http://127.0.0.1:{pb}/steal",
            a_url("/to-b")
        )) && msg.contains("which was refused"),
        "{msg}"
    );
    assert_eq!(
        b_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "B was never contacted"
    );
    // Every failure ended the run at two; start a new one for each of the rest.
    for (i, path) in ["/to-meta", "/to-file"].into_iter().enumerate() {
        let session = ["surf-1", "surf-2"][i];
        done(
            &d.call(
                &a,
                session,
                "load_skill",
                json!({"name": "fetcher"}),
                CallMode::Wait,
            )
            .await
            .unwrap(),
        );
        let o = fetch(session, json!({"url": a_url(path)})).await;
        assert_eq!(
            failed(&o).0,
            Some(Rule::DestinationNotAllowed),
            "{path}: {o:?}"
        );
    }
    // An undeclared destination at the first hop.
    done(
        &d.call(
            &a,
            "surf-3",
            "load_skill",
            json!({"name": "fetcher"}),
            CallMode::Wait,
        )
        .await
        .unwrap(),
    );
    let o = fetch(
        "surf-3",
        json!({"url": format!("http://127.0.0.1:{pb}/steal")}),
    )
    .await;
    assert_eq!(failed(&o).0, Some(Rule::DestinationNotAllowed));
    // Outside the skill, B is granted: the redirect is followed, without the credential.
    let o = fetch(
        "free",
        json!({"url": a_url("/to-b"), "auth": {"vault": "LOGIN"}}),
    )
    .await;
    assert_eq!(done(&o)["body"], json!("B got none"));
    assert_eq!(b_hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A vault entry not granted: refused before anything is sent.
    let o = fetch(
        "free",
        json!({"url": a_url("/reflect"), "auth": {"vault": "ROOT"}}),
    )
    .await;
    assert_eq!(failed(&o).0, Some(Rule::VaultNotAllowed));
    // This test's own dispatcher records write-behind too.
    d.flush().await;
    let all = env.all_refusals().await;
    assert_eq!(
        all.iter()
            .filter(|(t, r)| t == "web_fetch" && r == "destination_not_allowed")
            .count(),
        4,
        "{all:?}"
    );
    assert!(
        all.contains(&("web_fetch".into(), "vault_not_allowed".into())),
        "{all:?}"
    );
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_never_logs_a_vault_value_put_in_a_url() {
    let env = Env::new().await;
    let (pa, _) = serve(|_path, _head| ("200 OK".into(), vec![], "ok".into())).await;
    let d = Engine::builder()
        .store(env.store.clone())
        .vault(env.vault.clone())
        .web_fetch()
        .build()
        .await
        .unwrap();
    let a = env
        .agent("surfer", |c| {
            c.grants.tools = strings(&["web_fetch"]);
            c.grants.hosts = vec![format!("127.0.0.1:{pa}")];
        })
        .await;
    // A value of this test only, so the global log check of the other tests is not involved.
    const URL_SECRET: &str = "url-only-Secret-4711";
    env.vault
        .set("URLKEY", "", URL_SECRET.as_bytes(), &human())
        .await
        .unwrap();
    // The model pastes a value into a URL: the result and the event are scrubbed, and so
    // must be the logs.
    let url = format!("http://127.0.0.1:{pa}/reflect?q={URL_SECRET}");
    let o = d
        .call(&a, "s", "web_fetch", json!({"url": url}), CallMode::Wait)
        .await
        .unwrap();
    assert!(
        done(&o)["url"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:URLKEY]")
    );
    assert!(!serde_json::to_string(&o).unwrap().contains(URL_SECRET));
    d.flush().await;
    for e in env.events().await {
        assert!(!e.data.to_string().contains(URL_SECRET), "{e:?}");
    }
    let logs = LOGS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(!logs.contains(URL_SECRET), "a log line holds the value");
}
