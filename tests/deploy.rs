//! What can be checked of `deploy/` without a Docker engine or a cluster:
//! every YAML and JSON file parses; the compose file, the Prometheus and
//! collector configs and the Kubernetes manifests use the ports the binary
//! listens on by default and mount files that exist; the Dockerfile builds
//! the way CI builds, exposes those ports and health-checks through the
//! binary; the Grafana dashboard queries metrics the service exports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use punct_referee::service::config::ServeArgs;
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
    // compose, prometheus, collector, 2 grafana provisioning, dashboard, 6 k8s.
    assert_eq!(parsed, 12, "{files:?}");
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
    assert_eq!(mounts, 5);
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
    // The panels: rate, errors, latency, active games, illegal moves.
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
    // Multi-stage: a Rust build stage and a non-root runtime.
    let froms = all("FROM");
    assert_eq!(froms.len(), 2);
    assert!(froms[0].starts_with("rust:") && froms[0].ends_with(" AS build"));
    assert_eq!(all("USER"), ["nonroot:nonroot"]);

    // The build command is CI's (release, locked) for the real binary.
    let manifest: toml_like::Manifest = toml_like::read(&Path::new(ROOT).join("Cargo.toml"));
    let bin = env!("CARGO_BIN_EXE_punct-referee")
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(bin, manifest.package_name);
    let script = std::fs::read_to_string(Path::new(ROOT).join("scripts/test.sh")).unwrap();
    assert!(script.contains("cargo test --release --locked"));
    assert_eq!(
        all("RUN"),
        [format!("cargo build --release --locked --bin {bin}").as_str()]
    );
    // Everything the build reads is copied, and every copied path exists.
    let mut copied = BTreeSet::new();
    for copy in all("COPY") {
        if copy.starts_with("--from=") {
            let parts: Vec<&str> = copy.split_whitespace().collect();
            assert_eq!(parts[1], format!("/src/target/release/{bin}"));
            assert_eq!(parts[2], format!("/usr/local/bin/{bin}"));
            continue;
        }
        let parts: Vec<&str> = copy
            .split_whitespace()
            .filter(|p| !p.starts_with("--chown="))
            .collect();
        for source in &parts[..parts.len() - 1] {
            assert!(Path::new(ROOT).join(source).exists(), "COPY {source}");
            copied.insert(source.to_string());
        }
    }
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
