//! What can be checked of `deploy/` without a Docker engine or a cluster:
//! every YAML and JSON file parses; the compose file (its default services
//! and its `cluster` profile), the Prometheus and collector configs and the
//! Kubernetes manifests (single-node and cluster) use the ports the binary
//! listens on by default, mount files that exist and reference Secrets and
//! ConfigMaps that exist; every `PUNCT_REFEREE_*` variable they set is a
//! flag of `serve`, and what they set parses as the binary parses it; the
//! Dockerfile builds the way CI builds, exposes those ports and
//! health-checks through the binary; the Grafana dashboard queries metrics
//! the service exports; the nginx proxy of the cluster profile sends to
//! exactly its 3 replicas, and, where Debian's nginx is installed (CI:
//! scripts/test.sh installs it and sets PUNCT_REFEREE_REQUIRE_NGINX), nginx
//! accepts the configuration and carries real gRPC calls, streams and
//! failovers through it. The image and the single-node manifests are run
//! for real by scripts/test-container.sh.
//!
//! The binary as it is operated runs here too: its telemetry (`telemetry`:
//! metrics, spans and logs of a child process) and the key that never
//! reaches the logs (`security_logs`, which installs the process-wide log
//! subscriber and metrics recorder, so it lives in this binary, where no
//! other test needs them).
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the other modules of this test binary, which is all that can reach them"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; its steps are named in its comments"
)]

mod common;

#[path = "deploy/security_logs.rs"]
mod security_logs;
#[path = "deploy/telemetry.rs"]
mod telemetry;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::{ArgAction, CommandFactory, Parser};
use punct_referee::service::config::{ServeArgs, StorageKind};
use serde_yaml::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn deploy() -> PathBuf {
    Path::new(ROOT).join("deploy")
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

/// The binary's defaults: (gRPC port, metrics port, drain seconds).
fn defaults() -> (u16, u16, u64) {
    // No PUNCT_REFEREE_* variable is set in CI; clap would read them.
    let cli = Cli::try_parse_from(["punct-referee"]).unwrap();
    (
        cli.serve.listen.port(),
        cli.serve.http_address().port(),
        cli.serve.drain_timeout_secs,
    )
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// All documents of a (possibly multi-document) YAML file.
fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| {
            serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for key in path {
        cur = &cur[*key];
    }
    cur.as_str()
        .unwrap_or_else(|| panic!("{path:?} is not a string in {v:?}"))
}

fn u64_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for key in path {
        cur = &cur[*key];
    }
    cur.as_u64()
        .unwrap_or_else(|| panic!("{path:?} is not a number in {v:?}"))
}

/// The port of `host:port`.
fn port_of(address: &str) -> u16 {
    address.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn every_yaml_and_json_file_parses() {
    let mut files = Vec::new();
    files_under(&deploy(), &mut files);
    let mut parsed = 0;
    for f in &files {
        match f.extension().and_then(|e| e.to_str()) {
            Some("yml" | "yaml") => {
                assert!(!yaml_documents(f).is_empty(), "{}", f.display());
                parsed += 1;
            }
            Some("json") => {
                let text = std::fs::read_to_string(f).unwrap();
                serde_json::from_str::<serde_json::Value>(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                parsed += 1;
            }
            _ => {}
        }
    }
    // compose, prometheus, collector, 2 grafana provisioning, dashboard, 6 k8s,
    // 9 k8s/cluster (7 + postgres/: kustomization and manifests).
    assert_eq!(parsed, 21, "{files:?}");
}

#[test]
fn compose_uses_the_default_ports_and_existing_files() {
    let (grpc, metrics, drain) = defaults();
    let compose = yaml(&deploy().join("docker-compose.yml"));
    let services = compose["services"].as_mapping().unwrap();
    let names: BTreeSet<&str> = services.keys().map(|k| k.as_str().unwrap()).collect();
    for needed in [
        "referee",
        "otel-collector",
        "prometheus",
        "jaeger",
        "grafana",
    ] {
        assert!(names.contains(needed), "no {needed} service");
    }
    // `docker compose up` (no profile) starts exactly these, as before the
    // cluster profile.
    let default_profile: BTreeSet<&str> = services
        .iter()
        .filter(|(_, s)| s.get("profiles").is_none())
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert_eq!(
        default_profile,
        [
            "grafana",
            "jaeger",
            "otel-collector",
            "prometheus",
            "referee"
        ]
        .into()
    );
    let referee = &compose["services"]["referee"];
    let ports: Vec<&str> = referee["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        ports,
        [format!("{grpc}:{grpc}"), format!("{metrics}:{metrics}")]
    );
    let env = &referee["environment"];
    assert_eq!(port_of(str_at(env, &["PUNCT_REFEREE_LISTEN"])), grpc);
    assert_eq!(
        port_of(str_at(env, &["PUNCT_REFEREE_HTTP_LISTEN"])),
        metrics
    );
    assert_eq!(
        str_at(env, &["OTEL_EXPORTER_OTLP_ENDPOINT"]),
        "http://otel-collector:4317"
    );
    // docker stop waits for the drain and the flush before killing.
    let grace = str_at(referee, &["stop_grace_period"]);
    let grace: u64 = grace.trim_end_matches('s').parse().unwrap();
    assert!(grace >= drain + 5, "stop_grace_period {grace}s");
    // The build context is the repository, the Dockerfile exists.
    let context = deploy().join(str_at(referee, &["build", "context"]));
    assert!(
        context
            .join(str_at(referee, &["build", "dockerfile"]))
            .is_file()
    );
    assert!(context.join("Cargo.toml").is_file());
    // Every bind mount's source exists; named volumes are declared.
    let named = &compose["volumes"];
    let mut mounts = 0;
    for (_, service) in services {
        for volume in service["volumes"].as_sequence().into_iter().flatten() {
            let source = volume.as_str().unwrap().split(':').next().unwrap();
            if source.starts_with('.') || source.starts_with('/') {
                assert!(deploy().join(source).exists(), "missing {source}");
            } else {
                assert!(named.get(source).is_some(), "undeclared volume {source}");
            }
            mounts += 1;
        }
    }
    // 5 of the default services; the cluster's database, its replicas'
    // shared server secret and the proxy config.
    assert_eq!(mounts, 10);
    // The referee keeps its database on a named volume at the image's data dir.
    let referee_volumes = referee["volumes"].as_sequence().unwrap();
    assert!(
        referee_volumes
            .iter()
            .any(|v| v.as_str() == Some("referee-data:/var/lib/punct-referee"))
    );
}

#[test]
fn prometheus_and_the_collector_scrape_the_metrics_port() {
    let (_, metrics, _) = defaults();
    let target = format!("referee:{metrics}");
    let prometheus = yaml(&deploy().join("prometheus.yml"));
    let job = &prometheus["scrape_configs"][0];
    assert_eq!(str_at(job, &["metrics_path"]), "/metrics");
    assert_eq!(
        job["static_configs"][0]["targets"][0].as_str(),
        Some(target.as_str())
    );

    let collector = yaml(&deploy().join("otel-collector.yaml"));
    let scrape = &collector["receivers"]["prometheus"]["config"]["scrape_configs"][0];
    assert_eq!(
        scrape["static_configs"][0]["targets"][0].as_str(),
        Some(target.as_str())
    );
    assert_eq!(
        str_at(
            &collector,
            &["receivers", "otlp", "protocols", "grpc", "endpoint"]
        ),
        "0.0.0.0:4317"
    );
    // Every pipeline uses only receivers and exporters that are defined.
    for (_, pipeline) in collector["service"]["pipelines"].as_mapping().unwrap() {
        for kind in ["receivers", "processors", "exporters"] {
            for name in pipeline[kind].as_sequence().unwrap() {
                assert!(
                    !collector[kind][name.as_str().unwrap()].is_null(),
                    "{kind} {name:?} undefined"
                );
            }
        }
    }
}

#[test]
fn grafana_dashboard_queries_exported_metrics_from_the_provisioned_source() {
    use punct_referee::service::telemetry as t;
    let datasource = yaml(&deploy().join("grafana/provisioning/datasources/prometheus.yml"));
    let uid = str_at(&datasource["datasources"][0], &["uid"]);
    let provider = yaml(&deploy().join("grafana/provisioning/dashboards/dashboards.yml"));
    assert_eq!(
        str_at(&provider["providers"][0], &["options", "path"]),
        "/var/lib/grafana/dashboards"
    );
    let text =
        std::fs::read_to_string(deploy().join("grafana/dashboards/punct-referee.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let exported = [
        t::RPC_TOTAL,
        t::RPC_DURATION,
        t::SESSIONS_ACTIVE,
        t::GAMES_IN_PROGRESS,
        t::WATCHERS_ACTIVE,
        t::GAMES_CREATED,
        t::GAMES_FINISHED,
        t::MOVES_APPLIED,
        t::MOVES_ILLEGAL,
    ];
    let mut queried = BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        assert_eq!(panel["datasource"]["uid"], uid);
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let used: Vec<&str> = exported
                .iter()
                .copied()
                .filter(|m| expr.contains(m))
                .collect();
            assert!(!used.is_empty(), "{expr} queries no exported metric");
            queried.extend(used);
        }
    }
    // The issue's panels: rate, errors, latency, active games, illegal moves.
    for needed in [
        t::RPC_TOTAL,
        t::RPC_DURATION,
        t::GAMES_IN_PROGRESS,
        t::MOVES_ILLEGAL,
    ] {
        assert!(queried.contains(needed), "no panel on {needed}");
    }
    assert!(text.contains("histogram_quantile(0.99"));
    assert!(text.contains("code!=\\\"OK\\\""));
}

#[test]
fn kubernetes_manifests_match_the_binary() {
    let (grpc, metrics, drain) = defaults();
    let dir = deploy().join("k8s");
    let kustomization = yaml(&dir.join("kustomization.yaml"));
    let mut kinds = BTreeSet::new();
    let mut docs = Vec::new();
    for resource in kustomization["resources"].as_sequence().unwrap() {
        let path = dir.join(resource.as_str().unwrap());
        assert!(path.is_file(), "{}", path.display());
        for doc in yaml_documents(&path) {
            kinds.insert(str_at(&doc, &["kind"]).to_string());
            docs.push(doc);
        }
    }
    assert_eq!(
        kinds,
        [
            "ConfigMap",
            "Deployment",
            "PersistentVolumeClaim",
            "PodDisruptionBudget",
            "Service"
        ]
        .map(String::from)
        .into()
    );
    let find = |kind: &str| docs.iter().find(|d| d["kind"] == kind).unwrap();

    let config = &find("ConfigMap")["data"];
    assert_eq!(port_of(str_at(config, &["PUNCT_REFEREE_LISTEN"])), grpc);
    assert_eq!(
        port_of(str_at(config, &["PUNCT_REFEREE_HTTP_LISTEN"])),
        metrics
    );
    let config_drain: u64 = str_at(config, &["PUNCT_REFEREE_DRAIN_TIMEOUT_SECS"])
        .parse()
        .unwrap();
    assert_eq!(config_drain, drain);

    let deployment = find("Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    // The database lives on the claimed volume, mounted where the config
    // points the data directory, and only one pod holds it at a time.
    let data_dir = str_at(config, &["PUNCT_REFEREE_DATA_DIR"]);
    let container = &pod["containers"][0];
    assert_eq!(
        str_at(&container["volumeMounts"][0], &["mountPath"]),
        data_dir
    );
    assert_eq!(
        str_at(&pod["volumes"][0], &["persistentVolumeClaim", "claimName"]),
        str_at(find("PersistentVolumeClaim"), &["metadata", "name"])
    );
    assert_eq!(
        str_at(deployment, &["spec", "strategy", "type"]),
        "Recreate"
    );
    // The drain, then at most 5 s of trace flush, must fit before SIGKILL.
    let grace = u64_at(pod, &["terminationGracePeriodSeconds"]);
    assert!(
        grace >= config_drain + 5,
        "grace {grace} < drain {config_drain} + 5"
    );
    let container = &pod["containers"][0];
    assert_eq!(
        str_at(&container["envFrom"][0], &["configMapRef", "name"]),
        str_at(find("ConfigMap"), &["metadata", "name"])
    );
    let ports: Vec<(String, u64)> = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                str_at(p, &["name"]).to_string(),
                u64_at(p, &["containerPort"]),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            ("grpc".to_string(), u64::from(grpc)),
            ("metrics".to_string(), u64::from(metrics))
        ]
    );
    // Native gRPC probes on the gRPC port; readiness asks for the referee
    // service by the name the server registers.
    assert_eq!(
        u64_at(container, &["livenessProbe", "grpc", "port"]),
        u64::from(grpc)
    );
    assert_eq!(
        u64_at(container, &["readinessProbe", "grpc", "port"]),
        u64::from(grpc)
    );
    assert_eq!(
        str_at(container, &["readinessProbe", "grpc", "service"]),
        punct_referee::service::SERVICE_NAME
    );
    for key in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                container["resources"][key][resource].as_str().is_some(),
                "no {key}.{resource}"
            );
        }
    }
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(
        str_at(annotations, &["prometheus.io/port"]),
        metrics.to_string()
    );

    let selector = &deployment["spec"]["selector"]["matchLabels"];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(selector, labels);
    let service = find("Service");
    assert_eq!(&service["spec"]["selector"], selector);
    let service_ports: Vec<(u64, &str)> = service["spec"]["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (u64_at(p, &["port"]), str_at(p, &["targetPort"])))
        .collect();
    assert_eq!(
        service_ports,
        [(u64::from(grpc), "grpc"), (u64::from(metrics), "metrics")]
    );
    let pdb = find("PodDisruptionBudget");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], selector);
}

/// The `RUN`, `COPY`, `EXPOSE`, … instructions of the Dockerfile, with
/// continuation lines joined.
fn dockerfile() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(deploy().join("Dockerfile")).unwrap();
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        current.push_str(line.trim_end_matches('\\').trim());
        current.push(' ');
        if !line.ends_with('\\') {
            let (op, rest) = current
                .trim()
                .split_once(' ')
                .unwrap_or((current.trim(), ""));
            out.push((op.to_string(), rest.to_string()));
            current.clear();
        }
    }
    out
}

#[test]
fn dockerfile_builds_like_ci_and_runs_the_binary_it_built() {
    let (grpc, metrics, _) = defaults();
    let steps = dockerfile();
    let all = |op: &str| -> Vec<&str> {
        steps
            .iter()
            .filter(|(o, _)| o == op)
            .map(|(_, r)| r.as_str())
            .collect()
    };
    // Multi-stage: a Rust build stage and a non-root runtime, their base
    // images build arguments with the published defaults; the default target
    // (the last stage) is the runtime around the binary built in the image,
    // `runtime-prebuilt` the same around a binary of the context
    // (scripts/test-container.sh).
    assert_eq!(
        all("ARG"),
        [
            "BUILD_IMAGE=rust:1.95-slim-bookworm",
            "RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot"
        ]
    );
    assert_eq!(
        all("FROM"),
        [
            "${BUILD_IMAGE} AS build",
            "${RUNTIME_IMAGE} AS runtime-base",
            "runtime-base AS runtime-prebuilt",
            "runtime-base AS runtime"
        ]
    );
    // Distroless' `nonroot`, by number: no passwd entry needed in the base.
    assert_eq!(all("USER"), ["65532:65532"]);

    // The build command is CI's (release, locked) for the real binary.
    let manifest: toml_like::Manifest = toml_like::read(&Path::new(ROOT).join("Cargo.toml"));
    let bin = env!("CARGO_BIN_EXE_punct-referee")
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(bin, manifest.package_name);
    // CI's tests build with the `ci` profile: release's settings at a lower
    // opt-level (Cargo.toml), locked like the image's build.
    let script = std::fs::read_to_string(Path::new(ROOT).join("scripts/test.sh")).unwrap();
    assert!(script.contains("cargo test --profile ci --locked"));
    let cargo_toml = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    assert!(cargo_toml.contains("[profile.ci]\ninherits = \"release\"\n"));
    assert_eq!(
        all("RUN"),
        [format!("cargo build --release --locked --bin {bin}").as_str()]
    );
    // Everything the build reads is copied, and every copied path exists.
    let mut copied = BTreeSet::new();
    let mut binaries = 0;
    for copy in all("COPY") {
        if copy.starts_with("--from=") {
            let parts: Vec<&str> = copy.split_whitespace().collect();
            assert_eq!(parts[0], "--from=build");
            assert_eq!(parts[1], format!("/src/target/release/{bin}"));
            assert_eq!(parts[2], format!("/usr/local/bin/{bin}"));
            binaries += 1;
            continue;
        }
        if copy.starts_with("target/") {
            // runtime-prebuilt: the release binary, from a context that has
            // it (the repository's .dockerignore leaves target/ out).
            assert_eq!(
                copy,
                format!("target/release/{bin} /usr/local/bin/{bin}").as_str()
            );
            let script =
                std::fs::read_to_string(Path::new(ROOT).join("scripts/test-container.sh")).unwrap();
            assert!(script.contains(&format!("context/target/release/{bin}")));
            assert!(script.contains("--target runtime-prebuilt"));
            binaries += 1;
            continue;
        }
        let parts: Vec<&str> = copy
            .split_whitespace()
            .filter(|p| {
                assert!(!p.starts_with("--chown=") || *p == "--chown=65532:65532");
                !p.starts_with("--chown=")
            })
            .collect();
        for source in &parts[..parts.len() - 1] {
            assert!(Path::new(ROOT).join(source).exists(), "COPY {source}");
            copied.insert(source.to_string());
        }
    }
    assert_eq!(binaries, 2);
    let mut needed: BTreeSet<String> = ["Cargo.toml", "Cargo.lock", "build.rs", "proto", "src"]
        .map(String::from)
        .into();
    needed.extend(manifest.target_dirs);
    for path in &needed {
        assert!(
            copied.contains(path),
            "the image build does not copy {path}"
        );
    }
    assert_eq!(all("EXPOSE"), [format!("{grpc} {metrics}").as_str()]);
    let healthcheck = all("HEALTHCHECK").join(" ");
    assert!(
        healthcheck.contains(&format!(
            "CMD [\"/usr/local/bin/{bin}\", \"health\", \"--address\", \"http://127.0.0.1:{grpc}\"]"
        )),
        "{healthcheck}"
    );
    assert_eq!(
        all("ENTRYPOINT"),
        [format!("[\"/usr/local/bin/{bin}\"]").as_str()]
    );
    let env = all("ENV").join(" ");
    assert!(env.contains(&format!("PUNCT_REFEREE_LISTEN=0.0.0.0:{grpc}")));
    assert!(env.contains(&format!("PUNCT_REFEREE_HTTP_LISTEN=0.0.0.0:{metrics}")));
    assert!(env.contains("PUNCT_REFEREE_DATA_DIR=/var/lib/punct-referee"));
    assert_eq!(all("VOLUME"), ["[\"/var/lib/punct-referee\"]"]);
    // The build context leaves the build output out.
    let ignore = std::fs::read_to_string(Path::new(ROOT).join(".dockerignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim() == "target"));
}

/// Just enough of Cargo.toml: the package name and the directories of the
/// declared bench/test/example targets (the build needs them present).
mod toml_like {
    use std::path::Path;

    pub struct Manifest {
        pub package_name: String,
        pub target_dirs: Vec<String>,
    }

    pub fn read(path: &Path) -> Manifest {
        let text = std::fs::read_to_string(path).unwrap();
        let mut section = String::new();
        let mut package_name = String::new();
        let mut target_dirs = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_string();
                let dir = match line {
                    "[[bench]]" => Some("benches"),
                    "[[test]]" => Some("tests"),
                    "[[example]]" => Some("examples"),
                    _ => None,
                };
                if let Some(d) = dir
                    && !target_dirs.iter().any(|t| t == d)
                {
                    target_dirs.push(d.to_string());
                }
            } else if section == "[package]"
                && let Some(v) = line.strip_prefix("name = ")
            {
                package_name = v.trim_matches('"').to_string();
            }
        }
        Manifest {
            package_name,
            target_dirs,
        }
    }
}

/// The command line that the environment `vars` stands for: each
/// `PUNCT_REFEREE_*` name must be the variable of exactly one flag of
/// `serve` (others, `RUST_LOG`, `OTEL_*`, `POD_IP`, are not the binary's
/// flags and are left out). Given as flags, not set in the process
/// environment, so the tests running alongside are not affected.
fn args_of_env(vars: &[(String, String)]) -> Vec<String> {
    let command = Cli::command();
    let mut args = vec!["punct-referee".to_string()];
    for (name, value) in vars {
        if !name.starts_with("PUNCT_REFEREE_") {
            continue;
        }
        let arg = command
            .get_arguments()
            .find(|a| a.get_env().is_some_and(|e| e == name.as_str()))
            .unwrap_or_else(|| panic!("{name} is the variable of no flag of `serve`"));
        let long = arg.get_long().expect("a long flag");
        match arg.get_action() {
            ArgAction::SetTrue => {
                if ["1", "true", "yes", "on"].contains(&value.as_str()) {
                    args.push(format!("--{long}"));
                }
            }
            _ => args.push(format!("--{long}={value}")),
        }
    }
    args
}

/// `serve`'s flags as `vars` set them (see [`args_of_env`]); panics with
/// clap's message if the binary would refuse them.
fn serve_args_of_env(vars: &[(String, String)]) -> ServeArgs {
    let args = args_of_env(vars);
    Cli::try_parse_from(&args)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
        .serve
}

/// `(name, value)` pairs of a YAML mapping of strings.
fn string_pairs(map: &Value) -> Vec<(String, String)> {
    map.as_mapping()
        .unwrap_or_else(|| panic!("not a mapping: {map:?}"))
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => panic!("{k:?}: {other:?} is not a scalar"),
            };
            (k.as_str().unwrap().to_string(), value)
        })
        .collect()
}

#[test]
fn every_punct_referee_variable_in_deploy_is_a_flag_of_serve() {
    let command = Cli::command();
    let flags: BTreeSet<String> = command
        .get_arguments()
        .filter_map(|a| a.get_env())
        .map(|e| e.to_str().unwrap().to_string())
        .collect();
    let mut files = Vec::new();
    files_under(&deploy(), &mut files);
    let mut seen = BTreeSet::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let mut rest = text.as_str();
        while let Some(at) = rest.find("PUNCT_REFEREE_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            rest = &rest[at + 1..];
            if name.ends_with('_') {
                // `PUNCT_REFEREE_*` in prose: the family, not a variable.
                continue;
            }
            assert!(
                flags.contains(&name),
                "{}: {name} is the variable of no flag of `serve`",
                f.display()
            );
            seen.insert(name);
        }
    }
    // The cluster's variables are among them.
    for needed in [
        "PUNCT_REFEREE_STORAGE",
        "PUNCT_REFEREE_DATABASE_URL",
        "PUNCT_REFEREE_NODE_ID",
        "PUNCT_REFEREE_ADVERTISE",
        "PUNCT_REFEREE_LEASE_MS",
        "PUNCT_REFEREE_TAKEOVER_CLOCK",
    ] {
        assert!(seen.contains(needed), "{needed} is set nowhere in deploy/");
    }
    // The single-node ConfigMap and the default compose service parse as
    // the binary parses them.
    let (grpc, metrics, drain) = defaults();
    let config = yaml(&deploy().join("k8s/configmap.yaml"));
    let serve = serve_args_of_env(&string_pairs(&config["data"]));
    assert_eq!(serve.listen.port(), grpc);
    assert_eq!(serve.http_address().port(), metrics);
    assert_eq!(serve.drain_timeout_secs, drain);
    assert_eq!(serve.storage, StorageKind::Sqlite);
    let compose = yaml(&deploy().join("docker-compose.yml"));
    let serve = serve_args_of_env(&string_pairs(
        &compose["services"]["referee"]["environment"],
    ));
    assert_eq!(serve.listen.port(), grpc);
    assert_eq!(serve.storage, StorageKind::Sqlite);
}

/// The documents of a kustomization's resources, in its order; a resource
/// that is a directory is that directory's kustomization.
fn kustomize(dir: &Path) -> Vec<Value> {
    let kustomization = yaml(&dir.join("kustomization.yaml"));
    let mut docs = Vec::new();
    for resource in kustomization["resources"].as_sequence().unwrap() {
        let path = dir.join(resource.as_str().unwrap());
        if path.is_dir() {
            docs.extend(kustomize(&path));
        } else {
            assert!(path.is_file(), "{}", path.display());
            docs.extend(yaml_documents(&path));
        }
    }
    docs
}

/// Whether a `matchLabels` selector selects pods labelled `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_mapping()
        .unwrap()
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
}

/// `postgres://user:password@host:port/database` in parts.
fn url_parts(url: &str) -> (String, String, String, u16, String) {
    let rest = url.strip_prefix("postgres://").expect("a postgres:// URL");
    let (credentials, rest) = rest.split_once('@').unwrap();
    let (user, password) = credentials.split_once(':').unwrap();
    let (host_port, database) = rest.split_once('/').unwrap();
    let (host, port) = host_port.split_once(':').unwrap();
    (
        user.to_string(),
        password.to_string(),
        host.to_string(),
        port.parse().unwrap(),
        database.to_string(),
    )
}

#[test]
fn kubernetes_cluster_manifests_match_the_binary() {
    let (grpc, metrics, drain) = defaults();
    let docs = kustomize(&deploy().join("k8s/cluster"));
    let mut names: Vec<(&str, &str)> = docs
        .iter()
        .map(|d| (str_at(d, &["kind"]), str_at(d, &["metadata", "name"])))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("ConfigMap", "punct-referee"),
            ("Deployment", "punct-referee"),
            ("PodDisruptionBudget", "punct-referee"),
            ("Secret", "punct-referee-database"),
            ("Secret", "punct-referee-postgres"),
            ("Secret", "punct-referee-secret"),
            ("Service", "punct-referee"),
            ("Service", "punct-referee-postgres"),
            ("StatefulSet", "punct-referee-postgres"),
        ]
    );
    let find = |kind: &str, name: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap()
    };
    let secret = |name: &str| -> BTreeMap<String, String> {
        string_pairs(&find("Secret", name)["stringData"])
            .into_iter()
            .collect()
    };

    // Every ConfigMap and Secret a pod refers to exists, with the key asked for.
    for workload in [
        find("Deployment", "punct-referee"),
        find("StatefulSet", "punct-referee-postgres"),
    ] {
        for container in workload["spec"]["template"]["spec"]["containers"]
            .as_sequence()
            .unwrap()
        {
            for from in container["envFrom"].as_sequence().into_iter().flatten() {
                if let Some(name) = from["configMapRef"]["name"].as_str() {
                    find("ConfigMap", name);
                } else {
                    find("Secret", str_at(from, &["secretRef", "name"]));
                }
            }
            for var in container["env"].as_sequence().into_iter().flatten() {
                let by_key = &var["valueFrom"]["secretKeyRef"];
                if !by_key.is_null() {
                    let keys = secret(str_at(by_key, &["name"]));
                    assert!(keys.contains_key(str_at(by_key, &["key"])), "{var:?}");
                }
                assert!(var["valueFrom"]["configMapKeyRef"].is_null());
            }
        }
    }

    let config = find("ConfigMap", "punct-referee");
    let deployment = find("Deployment", "punct-referee");
    let spec = &deployment["spec"];
    assert_eq!(u64_at(spec, &["replicas"]), 3);
    // No data volume: pods are interchangeable, replaced one at a time with
    // a new one up first.
    assert_eq!(str_at(spec, &["strategy", "type"]), "RollingUpdate");
    assert_eq!(
        u64_at(spec, &["strategy", "rollingUpdate", "maxUnavailable"]),
        0
    );
    assert_eq!(u64_at(spec, &["strategy", "rollingUpdate", "maxSurge"]), 1);
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    // Their one volume is the server secret they share, from a Secret,
    // mounted read-only, readable by the pod's group only.
    assert_eq!(pod["volumes"].as_sequence().unwrap().len(), 1);
    let secret_volume = &pod["volumes"][0];
    let secret_name = str_at(secret_volume, &["secret", "secretName"]);
    let server_secret = secret(secret_name);
    assert_eq!(u64_at(secret_volume, &["secret", "defaultMode"]), 0o440);
    assert_eq!(secret_name, "punct-referee-secret");
    assert_eq!(
        u64_at(pod, &["securityContext", "fsGroup"]),
        u64_at(pod, &["securityContext", "runAsGroup"])
    );
    assert_eq!(container["volumeMounts"].as_sequence().unwrap().len(), 1);
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["name"], secret_volume["name"]);
    assert_eq!(mount["readOnly"], Value::from(true));
    let mount_path = str_at(mount, &["mountPath"]).to_string();
    assert_eq!(
        str_at(&container["envFrom"][0], &["configMapRef", "name"]),
        "punct-referee"
    );

    // Each pod advertises its own IP on the gRPC port (the downward API),
    // defined before the variable that uses it.
    let env = container["env"].as_sequence().unwrap();
    let position = |name: &str| env.iter().position(|v| v["name"] == name).unwrap();
    assert!(position("POD_IP") < position("PUNCT_REFEREE_ADVERTISE"));
    assert_eq!(
        str_at(
            &env[position("POD_IP")],
            &["valueFrom", "fieldRef", "fieldPath"]
        ),
        "status.podIP"
    );
    assert_eq!(
        str_at(&env[position("PUNCT_REFEREE_ADVERTISE")], &["value"]),
        format!("$(POD_IP):{grpc}")
    );
    let database = secret("punct-referee-database");

    // What a pod's binary reads: the ConfigMap, then the pod's own variables
    // (a pod IP for the downward API, the Secret's URL), parsed as it does.
    let mut vars = string_pairs(&config["data"]);
    for var in env {
        let name = str_at(var, &["name"]).to_string();
        let value = if let Some(v) = var["value"].as_str() {
            v.replace("$(POD_IP)", "10.1.2.3")
        } else if !var["valueFrom"]["secretKeyRef"].is_null() {
            let by_key = &var["valueFrom"]["secretKeyRef"];
            secret(str_at(by_key, &["name"]))[str_at(by_key, &["key"])].clone()
        } else {
            "10.1.2.3".to_string()
        };
        vars.retain(|(n, _)| *n != name);
        vars.push((name, value));
    }
    let serve = serve_args_of_env(&vars);
    assert_eq!(serve.storage, StorageKind::Postgres);
    assert_eq!(
        serve.database_url.as_deref(),
        Some(database["url"].as_str())
    );
    // The secret file is a key of the mounted Secret, 64 hex digits.
    let file = serve.secret_file.clone().expect("a secret file");
    assert_eq!(file.parent().unwrap(), Path::new(&mount_path));
    let key = file.file_name().unwrap().to_str().unwrap();
    assert!(
        server_secret[key].len() == 64 && server_secret[key].bytes().all(|b| b.is_ascii_hexdigit()),
        "{key}"
    );
    assert_eq!(serve.advertise, format!("10.1.2.3:{grpc}"));
    assert_eq!(serve.node_id, "", "each start picks a fresh node id");
    assert_eq!(serve.listen.port(), grpc);
    assert_eq!(serve.http_address().port(), metrics);
    assert_eq!(serve.drain_timeout_secs, drain);
    let grace = u64_at(pod, &["terminationGracePeriodSeconds"]);
    assert!(grace >= serve.drain_timeout_secs + 5, "grace {grace}");
    // The lease outlives a few missed renewals (every third of it).
    assert!(serve.lease_ms >= 3_000, "lease {} ms", serve.lease_ms);

    let ports: Vec<(&str, u64)> = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (str_at(p, &["name"]), u64_at(p, &["containerPort"])))
        .collect();
    assert_eq!(
        ports,
        [("grpc", u64::from(grpc)), ("metrics", u64::from(metrics))]
    );
    // gRPC probes: startup and liveness on the server as a whole (not
    // restarted for a database outage), readiness on the referee service,
    // which is NOT_SERVING while the database is unreachable.
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        assert_eq!(
            u64_at(container, &[probe, "grpc", "port"]),
            u64::from(grpc),
            "{probe}"
        );
    }
    assert!(container["livenessProbe"]["grpc"]["service"].is_null());
    assert!(container["startupProbe"]["grpc"]["service"].is_null());
    assert_eq!(
        str_at(container, &["readinessProbe", "grpc", "service"]),
        punct_referee::service::SERVICE_NAME
    );
    assert_eq!(
        str_at(
            &spec["template"]["metadata"]["annotations"],
            &["prometheus.io/port"]
        ),
        metrics.to_string()
    );

    // Selectors: the Deployment's pods are the Service's and the PDB's, and
    // the database's pod is none of them.
    let selector = &spec["selector"]["matchLabels"];
    let labels = &spec["template"]["metadata"]["labels"];
    assert_eq!(selector, labels);
    let postgres = find("StatefulSet", "punct-referee-postgres");
    let postgres_labels = &postgres["spec"]["template"]["metadata"]["labels"];
    let service = find("Service", "punct-referee");
    assert_eq!(&service["spec"]["selector"], selector);
    assert!(!selects(&service["spec"]["selector"], postgres_labels));
    let service_ports: Vec<(u64, &str)> = service["spec"]["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (u64_at(p, &["port"]), str_at(p, &["targetPort"])))
        .collect();
    assert_eq!(
        service_ports,
        [(u64::from(grpc), "grpc"), (u64::from(metrics), "metrics")]
    );
    let pdb = find("PodDisruptionBudget", "punct-referee");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], selector);
    assert!(!selects(
        &pdb["spec"]["selector"]["matchLabels"],
        postgres_labels
    ));
    // One replica of three at a time.
    assert_eq!(u64_at(pdb, &["spec", "maxUnavailable"]), 1);
    assert!(pdb["spec"]["minAvailable"].is_null());
    // Replicas spread over nodes where possible.
    let anti =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        str_at(anti, &["podAffinityTerm", "topologyKey"]),
        "kubernetes.io/hostname"
    );
    assert_eq!(
        &anti["podAffinityTerm"]["labelSelector"]["matchLabels"],
        selector
    );

    // The trial database: the URL's host and port are its Service's, its
    // credentials and database the server's.
    let (user, password, host, port, name) = url_parts(&database["url"]);
    let db_service = find("Service", "punct-referee-postgres");
    assert_eq!(host, str_at(db_service, &["metadata", "name"]));
    assert_eq!(
        u64::from(port),
        u64_at(&db_service["spec"]["ports"][0], &["port"])
    );
    assert_eq!(str_at(postgres, &["spec", "serviceName"]), host);
    assert!(selects(&db_service["spec"]["selector"], postgres_labels));
    assert!(!selects(&db_service["spec"]["selector"], labels));
    let server = secret("punct-referee-postgres");
    assert_eq!(server["POSTGRES_USER"], user);
    assert_eq!(server["POSTGRES_PASSWORD"], password);
    assert_eq!(server["POSTGRES_DB"], name);
    let db_container = &postgres["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        str_at(&db_service["spec"]["ports"][0], &["targetPort"]),
        str_at(&db_container["ports"][0], &["name"])
    );
    assert_eq!(
        u64_at(&db_container["ports"][0], &["containerPort"]),
        u64::from(port)
    );
    let claim = str_at(
        &postgres["spec"]["volumeClaimTemplates"][0],
        &["metadata", "name"],
    );
    let data_mount = db_container["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|m| m["name"] == claim)
        .expect("the claimed volume is mounted");
    let pgdata = db_container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "PGDATA")
        .unwrap();
    assert!(
        str_at(pgdata, &["value"]).starts_with(&format!("{}/", str_at(data_mount, &["mountPath"])))
    );
}

/// Where `kubectl` is, if it is (it is not a Debian package; CI may lack it).
fn kubectl() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("kubectl"))
            .find(|p| p.is_file())
    })
}

#[test]
fn kubectl_kustomize_renders_both_sets() {
    let Some(kubectl) = kubectl() else {
        eprintln!("note: no kubectl on PATH: the kustomizations were not rendered by kustomize");
        return;
    };
    for (dir, count) in [("k8s", 5), ("k8s/cluster", 9)] {
        let out = std::process::Command::new(&kubectl)
            .args(["kustomize", deploy().join(dir).to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl kustomize {dir}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let rendered: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        assert_eq!(rendered.len(), count, "{dir}");
        // The kustomization's labels reach every resource.
        let label = if dir == "k8s" {
            ("app.kubernetes.io/name", "punct-referee")
        } else {
            ("app.kubernetes.io/part-of", "punct-referee")
        };
        for doc in &rendered {
            assert_eq!(
                doc["metadata"]["labels"][label.0].as_str(),
                Some(label.1),
                "{dir}: {doc:?}"
            );
        }
    }
}

/// The compose services of the cluster profile's referee replicas.
const REPLICAS: [&str; 3] = ["referee-1", "referee-2", "referee-3"];

#[test]
fn compose_cluster_profile_runs_three_replicas_on_postgres_behind_the_proxy() {
    let (grpc, _, drain) = defaults();
    let compose = yaml(&deploy().join("docker-compose.yml"));
    let services = compose["services"].as_mapping().unwrap();
    let cluster: BTreeSet<&str> = services
        .iter()
        .filter(|(_, s)| {
            s.get("profiles")
                .is_some_and(|p| p.as_sequence().unwrap() == &[Value::from("cluster")])
        })
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert_eq!(
        cluster,
        ["postgres", "proxy", "referee-1", "referee-2", "referee-3"].into()
    );
    let postgres = &compose["services"]["postgres"];
    let server: BTreeMap<String, String> =
        string_pairs(&postgres["environment"]).into_iter().collect();
    assert_eq!(
        postgres["healthcheck"]["test"][1].as_str(),
        Some("pg_isready")
    );
    let mut node_ids = BTreeSet::new();
    for name in REPLICAS {
        let replica = &compose["services"][name];
        let serve = serve_args_of_env(&string_pairs(&replica["environment"]));
        assert_eq!(serve.storage, StorageKind::Postgres, "{name}");
        assert_eq!(serve.listen.port(), grpc);
        // Its own node id; the others forward to it by its service name.
        node_ids.insert(serve.node_id.clone());
        assert_eq!(serve.advertise, format!("{name}:{grpc}"));
        // The server secret is shared: one volume at the data directory,
        // where the first replica creates it.
        assert_eq!(
            replica["volumes"][0].as_str(),
            Some("referee-cluster-secret:/var/lib/punct-referee")
        );
        assert!(serve.secret_file.is_none());
        let (user, password, host, port, database) =
            url_parts(serve.database_url.as_deref().unwrap());
        assert_eq!(host, "postgres");
        assert_eq!(port, 5432);
        assert_eq!(server["POSTGRES_USER"], user);
        assert_eq!(server["POSTGRES_PASSWORD"], password);
        assert_eq!(server["POSTGRES_DB"], database);
        assert_eq!(
            str_at(replica, &["depends_on", "postgres", "condition"]),
            "service_healthy"
        );
        // The same image as the default referee; reached through the proxy
        // only.
        assert_eq!(replica["image"], compose["services"]["referee"]["image"]);
        assert_eq!(replica["build"], compose["services"]["referee"]["build"]);
        assert!(replica["ports"].is_null(), "{name} publishes no port");
        let grace: u64 = str_at(replica, &["stop_grace_period"])
            .trim_end_matches('s')
            .parse()
            .unwrap();
        assert!(grace >= drain + 5);
    }
    assert_eq!(node_ids, REPLICAS.map(String::from).into());

    let proxy = &compose["services"]["proxy"];
    assert_eq!(
        proxy["volumes"][0].as_str(),
        Some("./nginx-cluster.conf:/etc/nginx/nginx-cluster.conf:ro")
    );
    let dockerfile = deploy()
        .join(str_at(proxy, &["build", "context"]))
        .join(str_at(proxy, &["build", "dockerfile"]));
    let proxy_image = std::fs::read_to_string(&dockerfile).unwrap();
    assert!(proxy_image.contains("apt-get install -y --no-install-recommends nginx"));
    assert!(proxy_image.contains(r#"CMD ["nginx", "-c", "/etc/nginx/nginx-cluster.conf""#));
    // Next to the default referee's 50051.
    let listen = nginx_listen_port();
    assert_eq!(
        proxy["ports"][0].as_str(),
        Some(format!("50052:{listen}").as_str())
    );
    let mut depends: Vec<&str> = proxy["depends_on"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    depends.sort();
    assert_eq!(depends, REPLICAS);
}

/// deploy/nginx-cluster.conf's directives, `(name, arguments)` in order,
/// comments dropped, block openings as a directive named like the block.
fn nginx_directives() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(deploy().join("nginx-cluster.conf")).unwrap();
    let mut words = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap();
        let mut word = String::new();
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '\'' => quoted = !quoted,
                ';' | '{' | '}' if !quoted => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    if c != '}' && !words.is_empty() {
                        let name = words.remove(0);
                        out.push((name, std::mem::take(&mut words)));
                    }
                }
                c if c.is_whitespace() && !quoted => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    out
}

fn nginx_values(name: &str) -> Vec<Vec<String>> {
    nginx_directives()
        .into_iter()
        .filter(|(n, _)| n == name)
        .map(|(_, a)| a)
        .collect()
}

/// The port the proxy listens on (HTTP/2, plaintext).
fn nginx_listen_port() -> u16 {
    let listen = nginx_values("listen");
    assert_eq!(listen.len(), 1, "{listen:?}");
    assert_eq!(listen[0][1], "http2");
    listen[0][0].parse().unwrap()
}

#[test]
fn nginx_sends_grpc_to_exactly_the_three_replicas() {
    let (grpc, _, _) = defaults();
    assert_eq!(nginx_listen_port(), grpc);
    assert_eq!(nginx_values("upstream"), [["referees"]]);
    let servers: Vec<String> = nginx_values("server")
        .into_iter()
        .filter(|a| !a.is_empty())
        .map(|a| a[0].clone())
        .collect();
    assert_eq!(servers, REPLICAS.map(|r| format!("{r}:{grpc}")));
    assert_eq!(nginx_values("grpc_pass"), [["grpc://referees"]]);
    // Only calls that never reached a replica are sent to another.
    assert_eq!(nginx_values("grpc_next_upstream"), [["error", "timeout"]]);
    // Watch streams live long without an event.
    for name in ["grpc_read_timeout", "grpc_send_timeout", "send_timeout"] {
        assert_eq!(nginx_values(name), [["1h"]], "{name}");
    }
    // Room for the referee's own largest message (4 MiB by default) and its
    // gRPC framing, so the referee answers it, not nginx.
    let max = Cli::try_parse_from(["punct-referee"])
        .unwrap()
        .serve
        .max_message_bytes;
    let body = nginx_values("client_max_body_size");
    let mib: usize = body[0][0].trim_end_matches('m').parse().unwrap();
    assert!(mib << 20 > max + 5, "{body:?}");
}

/// Debian's nginx, if installed. With `PUNCT_REFEREE_REQUIRE_NGINX` set
/// (scripts/test.sh, which installs it), its absence fails the test.
fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("PUNCT_REFEREE_REQUIRE_NGINX").is_none(),
            "PUNCT_REFEREE_REQUIRE_NGINX is set but nginx is not installed (apt-get install nginx)"
        );
        eprintln!(
            "note: nginx is not installed: deploy/nginx-cluster.conf was not checked by nginx"
        );
    }
    found
}

/// deploy/nginx-cluster.conf for a run on loopback in `dir`: the upstream
/// servers replaced by `upstreams` (in order), the listen address by
/// 127.0.0.1:`listen`, the access log written to `dir`, temporary files
/// under it (so it needs no root).
fn nginx_config_for(dir: &Path, upstreams: &[String], listen: u16) -> PathBuf {
    let text = std::fs::read_to_string(deploy().join("nginx-cluster.conf")).unwrap();
    let mut next = upstreams.iter();
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("server referee-") {
            let rest = trimmed
                .split_once(' ')
                .unwrap()
                .1
                .split_once(' ')
                .unwrap()
                .1;
            out.push_str(&format!("        server {} {rest}\n", next.next().unwrap()));
        } else if trimmed.starts_with("listen ") {
            out.push_str(&format!("        listen 127.0.0.1:{listen} http2;\n"));
        } else if trimmed.starts_with("access_log ") {
            out.push_str(&format!(
                "    access_log {}/access.log grpc;\n",
                dir.display()
            ));
        } else if trimmed.starts_with("http {") {
            out.push_str(line);
            out.push('\n');
            for temp in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
                out.push_str(&format!("    {temp}_temp_path {}/{temp};\n", dir.display()));
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(next.next().is_none(), "every upstream server replaced");
    let path = dir.join("nginx.conf");
    std::fs::write(&path, out).unwrap();
    path
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("punct-deploy-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn nginx_accepts_the_proxy_config() {
    let Some(nginx) = nginx() else {
        return;
    };
    let scratch = Scratch::new("nginx-t");
    // The compose names resolve only inside compose: loopback instead.
    let upstreams: Vec<String> = (1..=3)
        .map(|i| format!("127.0.0.1:{}", 50050 + i))
        .collect();
    let config = nginx_config_for(&scratch.0, &upstreams, 50051);
    let out = std::process::Command::new(nginx)
        .arg("-t")
        .arg("-c")
        .arg(&config)
        .arg("-p")
        .arg(&scratch.0)
        .args(["-e", "stderr", "-g"])
        .arg(format!("pid {}/nginx.pid;", scratch.0.display()))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("test is successful"), "{said}");
}

/// nginx running `config`, stopped (SIGTERM, then SIGKILL) on drop.
struct Nginx(std::process::Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.0.id().to_string())
            .status();
        for _ in 0..50 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Games each replica holds (its own memory: the replicas here share no
/// database).
async fn games_on(server: &common::TestServer) -> usize {
    let mut client = server.client().await;
    client
        .list_games(punct_referee::service::grpc::pb::referee::v1::ListGamesRequest::default())
        .await
        .unwrap()
        .into_inner()
        .games
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_carries_calls_streams_and_failovers_to_the_replicas() {
    use punct_referee::service::grpc::pb::punct::v1 as ppb;
    use punct_referee::service::grpc::pb::referee::v1 as pb;
    use punct_referee::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;

    let Some(nginx) = nginx() else {
        return;
    };
    let scratch = Scratch::new("nginx-run");
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(Some(common::TestServer::start().await));
    }
    let upstreams: Vec<String> = replicas
        .iter()
        .map(|r| r.as_ref().unwrap().addr.to_string())
        .collect();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = nginx_config_for(&scratch.0, &upstreams, listen);
    let mut child = Nginx(
        std::process::Command::new(nginx)
            .arg("-c")
            .arg(&config)
            .arg("-p")
            .arg(&scratch.0)
            .args(["-e", "stderr", "-g"])
            .arg(format!(
                "pid {}/nginx.pid; daemon off;",
                scratch.0.display()
            ))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut up = false;
    for _ in 0..100 {
        if let Ok(Some(status)) = child.0.try_wait() {
            let mut said = String::new();
            std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut said).unwrap();
            panic!("nginx exited with {status}: {said}");
        }
        if std::net::TcpStream::connect(("127.0.0.1", listen)).is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(up, "nginx does not listen on {listen}");
    let mut proxy = RefereeServiceClient::connect(format!("http://127.0.0.1:{listen}"))
        .await
        .unwrap();
    // Listening is not yet proxying: on a loaded machine nginx's first
    // calls have met a 502 before its upstream connections were up. A read
    // (which creates nothing, so the counts below hold) until one passes.
    let mut last = None;
    for _ in 0..100 {
        match proxy.list_games(pb::ListGamesRequest::default()).await {
            Ok(_) => {
                last = None;
                break;
            }
            Err(status) => last = Some(status),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(last.is_none(), "no call passes nginx: {last:?}");

    // One client connection, and its calls spread round-robin: each replica
    // gets every third one.
    for _ in 0..6 {
        common::create(&mut proxy, ppb::Variant::Standard).await;
    }
    for replica in replicas.iter().flatten() {
        assert_eq!(games_on(replica).await, 2);
    }

    // A replica stops: calls that would have gone to it find it refusing
    // connections and go to the next one; none fails.
    replicas[1].take().unwrap().stop().await.unwrap();
    for _ in 0..6 {
        common::create(&mut proxy, ppb::Variant::Standard).await;
    }
    let left = [replicas[0].as_ref().unwrap(), replicas[2].as_ref().unwrap()];
    assert_eq!(games_on(left[0]).await + games_on(left[1]).await, 4 + 6);

    // With one replica left, a watch stream through the proxy: the snapshot,
    // then the move played through the proxy as it happens.
    replicas[2].take().unwrap().stop().await.unwrap();
    let table = common::create(&mut proxy, ppb::Variant::Standard).await;
    let mut stream = proxy
        .watch_game(pb::WatchGameRequest {
            game_id: table.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = common::within(10, stream.message()).await.unwrap().unwrap();
    assert!(matches!(
        first.item,
        Some(pb::watch_game_response::Item::Snapshot(ref g)) if g.ply == 0
    ));
    common::submit(
        &mut proxy,
        &table,
        0,
        common::notation(common::CONNECTION_GAME[0]),
    )
    .await
    .unwrap();
    let next = common::within(10, stream.message()).await.unwrap().unwrap();
    match next.item {
        Some(pb::watch_game_response::Item::Event(e)) => assert_eq!(e.sequence, 1),
        other => panic!("expected the move's event, got {other:?}"),
    }
    // A refusal keeps its code and details through the proxy.
    let refused = proxy
        .get_game(pb::GetGameRequest {
            game_id: "no-such-game".to_string(),
            token: String::new(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
    let info = tonic_types::StatusExt::get_details_resource_info(&refused)
        .expect("the google.rpc details pass the proxy");
    assert_eq!(
        (info.resource_type.as_str(), info.resource_name.as_str()),
        ("referee.v1.Game", "no-such-game")
    );
    drop(stream);
    // nginx logs a stream when it has seen it end, which may come after the
    // client let go: wait for that line before stopping nginx.
    let access_log = scratch.0.join("access.log");
    common::within(10, async {
        while !std::fs::read_to_string(&access_log)
            .unwrap_or_default()
            .contains("/referee.v1.RefereeService/WatchGame ")
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    drop(child);
    // nginx logged each call with the replica it went to and its gRPC status.
    let log = std::fs::read_to_string(&access_log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let calls = |method: &str, status: &str| {
        lines
            .iter()
            .filter(|l| {
                l.contains(&format!("/referee.v1.RefereeService/{method} "))
                    && l.contains(&format!(" 200 grpc-status={status} "))
            })
            .count()
    };
    assert_eq!(calls("CreateGame", "0"), 13, "{log}");
    assert_eq!(calls("SubmitMove", "0"), 1, "{log}");
    assert_eq!(calls("GetGame", "5"), 1, "{log}");
    // The watch was ended by the client (dropped): no status.
    assert_eq!(calls("WatchGame", ""), 1, "{log}");
    // And the readiness reads before them, each logged.
    let reads = lines.iter().filter(|l| l.contains("/ListGames ")).count();
    assert_eq!(calls("ListGames", "0"), 1, "{log}");
    assert_eq!(lines.len() - reads, 16, "{log}");
    // Each stopped replica was tried once, refused the connection, and the
    // call went on to a live one (then nginx left it aside).
    let retried: Vec<&str> = lines
        .iter()
        .filter(|l| !l.contains("/ListGames "))
        .filter_map(|l| l.split("upstream=").nth(1))
        .filter(|u| u.contains(", "))
        .collect();
    assert_eq!(retried.len(), 2, "{log}");
    assert!(
        retried[0].starts_with(&format!("{}, ", upstreams[1])),
        "{log}"
    );
    assert!(
        retried[1].starts_with(&format!("{}, ", upstreams[2])),
        "{log}"
    );
}
