//! The Skills extension: list pages and digests, get, the frontmatter, resources and
//! directories, and a value set after a file was stored.

use super::*;

#[tokio::test]
async fn skills_list_pages_are_atomic_and_digests_verify_against_the_bytes() {
    let s = TestServer::start_with(ServerOptions {
        limits: Limits {
            page_size: 2,
            ..Limits::default()
        },
        ..ServerOptions::default()
    })
    .await;
    rich_alpha_secret(&s).await;
    for n in ["extra-a", "extra-b", "extra-c"] {
        put_skill(&s.store, Scope::Shared, n, &[("notes/x.txt", b"x")]).await;
    }
    alpha_sees_all(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (skills, pages) = c.all_skills().await;
        assert_eq!(
            names(&skills),
            [
                "alpha-secret",
                "extra-a",
                "extra-b",
                "extra-c",
                "shared-one",
                "shared-two"
            ],
            "{wire:?}"
        );
        assert_eq!(pages, 3, "{wire:?}");
        for sk in &skills {
            let uri = sk["uri"].as_str().unwrap();
            let name = sk["frontmatter"]["name"].as_str().unwrap();
            assert_eq!(uri, format!("skill://{name}/SKILL.md"));
            let res = sk["resources"].as_array().unwrap();
            assert!(res.iter().any(|r| r["uri"] == uri), "{sk}");
            for r in res {
                let ruri = r["uri"].as_str().unwrap();
                assert!(ruri.starts_with(&format!("skill://{name}/")), "{ruri}");
                let (bytes, _) = c.read_bytes(ruri).await;
                assert_eq!(r["size"], bytes.len() as u64, "{ruri}");
                assert_eq!(r["digest"], sha256(&bytes), "{ruri}");
            }
        }
        let secret = &skills[0];
        let files: BTreeSet<&str> = secret["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            files,
            BTreeSet::from([
                "skill://alpha-secret/SKILL.md",
                "skill://alpha-secret/assets/logo.png",
                "skill://alpha-secret/data.bin",
                "skill://alpha-secret/references/deep/more.txt",
                "skill://alpha-secret/references/guide.md",
                "skill://alpha-secret/scripts/run.sh",
            ])
        );
        // resources/list: each SKILL.md with its name, description and type, paged the same way.
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let r = c.ok("resources/list", params).await;
            listed.extend(r["resources"].as_array().unwrap().iter().cloned());
            match r["nextCursor"].as_str() {
                Some(n) => cursor = Some(n.to_owned()),
                None => break,
            }
        }
        assert_eq!(listed.len(), skills.len());
        for (r, sk) in listed.iter().zip(&skills) {
            assert_eq!(r["uri"], sk["uri"]);
            assert_eq!(r["name"], sk["frontmatter"]["name"]);
            assert_eq!(r["description"], sk["frontmatter"]["description"]);
            assert_eq!(r["mimeType"], "text/markdown");
        }
        // A made-up cursor is refused.
        let e = c.err("skills/list", json!({"cursor": "%%%"})).await;
        assert_eq!(e["code"], -32602, "{e}");
        if wire == Wire::Stateless {
            let r = c.ok("skills/list", json!({})).await;
            assert_eq!(r["resultType"], "complete");
            assert_eq!(r["cacheScope"], "private");
            assert!(r["ttlMs"].is_u64(), "{r}");
        }
    }
    // Every manifest was built once and reused by the second wire.
    assert_eq!(s.state.skills.len(), 6);
    s.stop().await;
}

#[tokio::test]
async fn skills_get_echoes_the_entry_and_unknown_uris_are_invalid_params() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (listed, _) = c.all_skills().await;
        let r = c
            .ok(
                "skills/get",
                json!({"uri": "skill://alpha-secret/SKILL.md"}),
            )
            .await;
        assert_eq!(r["skill"]["uri"], "skill://alpha-secret/SKILL.md");
        assert!(r.get("nextCursor").is_none());
        let from_list = listed
            .iter()
            .find(|s| s["uri"] == "skill://alpha-secret/SKILL.md")
            .unwrap();
        assert_eq!(&r["skill"], from_list);
        assert_eq!(
            r["skill"]["frontmatter"],
            json!({"name": "alpha-secret", "description": "Alpha's private procedure"})
        );
        for uri in [
            "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
            "skill://alpha-secret/references/guide.md",
            "skill://alpha-secret/SKILL.md/SKILL.md",
        ] {
            let e = c.err("skills/get", json!({"uri": uri})).await;
            assert_eq!(e["code"], -32602, "{uri}: {e}");
        }
        let e = c
            .err(
                "skills/get",
                json!({"uri": "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"}),
            )
            .await;
        assert_eq!(
            e["data"]["uri"],
            "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn frontmatter_is_the_yaml_core_schema_reading_of_the_file() {
    let s = TestServer::start().await;
    alpha_sees_all(&s).await;
    let md = "---\nname: typed\ndescription: \"Typed values: 1.0\"\nlicense: MIT\nmetadata:\n  version: 1.0\n  quoted: \"1.0\"\n  release: 2.1.0\n  date: 2024-01-31\n  flag: true\n  count: 42\n  nothing: null\n---\n\nBody.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "typed",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let r = c
            .ok("skills/get", json!({"uri": "skill://typed/SKILL.md"}))
            .await;
        assert_eq!(
            r["skill"]["frontmatter"],
            json!({
                "name": "typed",
                "description": "Typed values: 1.0",
                "license": "MIT",
                "metadata": {
                    "version": 1.0,
                    "quoted": "1.0",
                    "release": "2.1.0",
                    "date": "2024-01-31",
                    "flag": true,
                    "count": 42,
                    "nothing": null
                }
            }),
            "{wire:?}"
        );
        // The exact stored text comes back.
        let (bytes, c0) = c.read_bytes("skill://typed/SKILL.md").await;
        assert_eq!(bytes, md.as_bytes());
        assert_eq!(c0["mimeType"], "text/markdown");
    }
    s.stop().await;
}

#[tokio::test]
async fn resources_read_serves_text_as_text_and_binary_as_blob() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (bytes, content) = c.read_bytes("skill://alpha-secret/SKILL.md").await;
        assert!(content["text"].is_string(), "{content}");
        assert_eq!(content["mimeType"], "text/markdown");
        assert!(bytes.starts_with(b"---\nname: alpha-secret\n"));

        let (bytes, content) = c.read_bytes("skill://alpha-secret/assets/logo.png").await;
        assert!(content["blob"].is_string(), "{content}");
        assert_eq!(content["mimeType"], "image/png");
        assert_eq!(bytes, PNG);

        let (bytes, content) = c.read_bytes("skill://alpha-secret/data.bin").await;
        assert!(
            content["blob"].is_string(),
            "text with NUL goes as a blob: {content}"
        );
        assert_eq!(bytes, b"text\0with nul");

        let (bytes, content) = c.read_bytes("skill://alpha-secret/scripts/run.sh").await;
        assert_eq!(content["text"], "#!/bin/sh\necho hi\n");
        assert_eq!(content["mimeType"], "application/x-sh");
        assert_eq!(bytes, b"#!/bin/sh\necho hi\n");

        for uri in [
            "skill://alpha-secret/missing.md",
            "skill://alpha-secret",
            "skill://alpha-secret/references",
            "skill://alpha-secret/SKILL.md/",
            "https://example.com/SKILL.md",
        ] {
            let e = c.err("resources/read", json!({"uri": uri})).await;
            assert_eq!(e["code"], -32602, "{uri}: {e}");
            assert_eq!(e["data"]["uri"], uri, "{e}");
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn directory_read_lists_direct_children() {
    let s = TestServer::start_with(ServerOptions {
        limits: Limits {
            page_size: 3,
            ..Limits::default()
        },
        ..ServerOptions::default()
    })
    .await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        // The root, over two pages.
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({"uri": "skill://alpha-secret"});
            if let Some(cur) = &cursor {
                params["cursor"] = json!(cur);
            }
            let r = c.ok("resources/directory/read", params).await;
            all.extend(r["resources"].as_array().unwrap().iter().cloned());
            match r["nextCursor"].as_str() {
                Some(n) => cursor = Some(n.to_owned()),
                None => break,
            }
        }
        let got: Vec<(String, String)> = all
            .iter()
            .map(|r| {
                (
                    r["uri"].as_str().unwrap().to_owned(),
                    // A name that says nothing of the type has no mimeType in listings
                    // (resources/read, which sees the bytes, gives one).
                    r["mimeType"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let want = [
            ("skill://alpha-secret/SKILL.md", "text/markdown"),
            ("skill://alpha-secret/assets", "inode/directory"),
            ("skill://alpha-secret/data.bin", ""),
            ("skill://alpha-secret/references", "inode/directory"),
            ("skill://alpha-secret/scripts", "inode/directory"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_owned(), b.to_owned())),
            "{wire:?}"
        );
        let r = c
            .ok(
                "resources/directory/read",
                json!({"uri": "skill://alpha-secret/references"}),
            )
            .await;
        let sub: Vec<&str> = r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            sub,
            [
                "skill://alpha-secret/references/deep",
                "skill://alpha-secret/references/guide.md"
            ]
        );
        for uri in [
            "skill://alpha-secret/SKILL.md",
            "skill://alpha-secret/nope",
            "skill://alpha-secret/",
            "skill://alpha-secret/references/",
            "skill://nobody",
        ] {
            let e = c.err("resources/directory/read", json!({"uri": uri})).await;
            assert_eq!(e["code"], -32602, "{uri}: {e}");
            assert_eq!(e["data"]["uri"], uri);
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn resources_read_scrubs_a_value_set_after_the_file_was_stored() {
    let s = TestServer::start().await;
    let value = "mcp-late-secret-77Qx";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-one",
        &[("notes/login.txt", format!("password={value}\n").as_bytes())],
    )
    .await;
    s.state
        .vault
        .set(
            "LATE",
            "set late",
            value.as_bytes(),
            &Author::Human("test".into()),
        )
        .await
        .unwrap();
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (bytes, _) = c.read_bytes("skill://shared-one/notes/login.txt").await;
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, "password=[REDACTED:LATE]\n");
    }
    s.stop().await;
}

/// A skill written signed shows its signer to MCP clients, with its revision and content
/// digest, as `_meta` of its `skills/list` entry and of its SKILL.md resource; an unsigned one
/// has no signer key.
#[tokio::test]
async fn the_signer_reaches_clients_as_meta() {
    let s = TestServer::start().await;
    let bundle = skillbase_format::Bundle::single(
        "---\nname: signed-one\ndescription: A signed procedure\n---\nDo it.\n",
    )
    .unwrap();
    let key = skillbase_format::signature::SigningKey::from_seed([9; 32]);
    let sig = key
        .sign("signed-one", None, &bundle.digest().to_string())
        .unwrap();
    let digest = bundle.digest().to_string();
    s.store
        .put(skillbase_store::PutRequest {
            scope: Scope::Shared,
            bundle,
            author: Author::Human("ops".into()),
            message: "signed".into(),
            expect_rev: None,
            signature: Some(Box::new(sig)),
        })
        .await
        .unwrap();
    put_skill(&s.store, Scope::Shared, "plain-one", &[]).await;
    alpha_sees_all(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (listed, _) = c.all_skills().await;
        let signed = listed
            .iter()
            .find(|x| x["uri"] == "skill://signed-one/SKILL.md")
            .expect("listed");
        assert_eq!(
            signed["_meta"]["io.skillbase/signer"],
            json!(key.public().fingerprint())
        );
        assert_eq!(signed["_meta"]["io.skillbase/digest"], json!(digest));
        assert_eq!(signed["_meta"]["io.skillbase/revision"], json!(1));
        let plain = listed
            .iter()
            .find(|x| x["uri"] == "skill://plain-one/SKILL.md")
            .expect("listed");
        assert!(
            plain["_meta"].get("io.skillbase/signer").is_none(),
            "{plain}"
        );
        let r = c.ok("resources/list", json!({})).await;
        let res = r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["uri"] == "skill://signed-one/SKILL.md")
            .expect("a resource");
        assert_eq!(
            res["_meta"]["io.skillbase/signer"],
            json!(key.public().fingerprint())
        );
    }
    s.stop().await;
}

/// A skill with `disable-model-invocation: true` is offered to no model: not in `skills/list`,
/// `resources/list`, `resources/read`, `tools/list` (load_skill's names) or a `load_skill` call,
/// an agent token's REST listing or the A2A card. People still see it (an admin's listing), and
/// the user's own `/deploy-prod` in a REST turn places it with reason `explicit`.
#[tokio::test]
async fn an_explicit_only_skill_is_offered_to_no_model() {
    let s = TestServer::start().await;
    let md = "---\nname: deploy-prod\ndescription: Deploy to production.\ndisable-model-invocation: true\ntriggers: [deploy]\n---\nDeploy to $0.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "deploy-prod",
        &[("SKILL.md", md.as_bytes()), ("notes.md", b"notes")],
    )
    .await;
    alpha_sees_all(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (skills, _) = c.all_skills().await;
        assert!(
            !names(&skills).contains(&"deploy-prod".to_owned()),
            "{wire:?}"
        );
        assert!(
            names(&skills).contains(&"shared-one".to_owned()),
            "{wire:?}"
        );
        let r = c.ok("resources/list", json!({})).await;
        assert!(!r.to_string().contains("deploy-prod"), "{r}");
        let r = c.ok("tools/list", json!({})).await;
        assert!(!r.to_string().contains("deploy-prod"), "{r}");
        let e = c
            .rpc(
                "resources/read",
                json!({"uri": "skill://deploy-prod/SKILL.md"}),
            )
            .await;
        assert!(!e.to_string().contains("Deploy to"), "{e}");
        let r = c
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "deploy-prod"}}),
            )
            .await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(!r.to_string().contains("Deploy to"), "{r}");
    }
    let listing = |token: String| {
        let s = &s;
        async move {
            crate::common::ok_json(s.get("/v1/skills", &token).send().await.unwrap(), 200).await
        }
    };
    let agent_view = listing(s.alpha.clone()).await;
    assert!(
        !agent_view.to_string().contains("deploy-prod"),
        "{agent_view}"
    );
    let admin_view = listing(s.admin.clone()).await;
    assert!(
        admin_view.to_string().contains("deploy-prod"),
        "{admin_view}"
    );
    let card = crate::common::ok_json(
        s.get("/v1/agents/alpha/agent-card.json", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert!(!card.to_string().contains("deploy-prod"), "{card}");

    // A turn: the trigger does not fire it; the user's slash command does.
    let r = s
        .post("/v1/sessions", &s.alpha)
        .json(&json!({"id": "peers-1"}))
        .send()
        .await
        .unwrap();
    crate::common::ok_json(r, 201).await;
    let turn = |message: &'static str| {
        let s = &s;
        async move {
            let r = s
                .post("/v1/sessions/peers-1/turns", &s.alpha)
                .json(&json!({"message": message, "omissions": "full"}))
                .send()
                .await
                .unwrap();
            crate::common::ok_json(r, 200).await
        }
    };
    let t = turn("please deploy").await;
    assert!(
        !t["context"]["report"]["activated"]
            .to_string()
            .contains("deploy-prod"),
        "{t}"
    );
    assert!(
        !t["context"]["catalog"].to_string().contains("deploy-prod"),
        "{t}"
    );
    let t = turn("/deploy-prod staging").await;
    let activated = &t["context"]["report"]["activated"];
    assert!(
        activated
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "deploy-prod" && a["reason"] == "explicit"),
        "{t}"
    );
    assert!(
        t["context"]["injected"]
            .as_str()
            .unwrap()
            .contains("Deploy to staging."),
        "{t}"
    );
    // Paths given with a turn are checked like any input.
    let r = s
        .post("/v1/sessions/peers-1/turns", &s.alpha)
        .json(&json!({"message": "hi", "paths": vec!["x"; 65]}))
        .send()
        .await
        .unwrap();
    let (status, p) = crate::common::problem(r).await;
    assert_eq!(status, 422, "{p}");
    s.stop().await;
}
