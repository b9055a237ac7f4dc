"""Offline checks of deploy/prometheus, part (c) of check.py: each scrape job fits the daemon's Host
and token rules, promtool accepts both jobs in one prometheus.yml, and a real Prometheus applies the
fleet job's relabeling to the targets Kubernetes pod discovery would list, keeping exactly the
daemons' `http` ports. check.py's (d) then scrapes the fleet's daemon the way that job does.

No cluster: the pod targets are made from the rendered Deployment, fed through file discovery, and
every address Prometheus would scrape is rewritten to a closed port on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import tomllib
import urllib.request
from pathlib import Path
from typing import Protocol

import yaml

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
SERVICE_JOB = PROMETHEUS / "scrape.yaml"
FLEET_JOB = PROMETHEUS / "scrape-fleet.yaml"
TOKEN_FILE = "/etc/prometheus/secrets/toolhost/TOOLHOST_TOKEN"
# A pod IP of the kind clusters assign (10.244.0.0/16 is kubeadm's and flannel's pod network): the
# Host a pod scrape sends is this and the container port.
SAMPLE_POD_IP = "10.244.1.7"


class Report(Protocol):
    def fail(self, where: str, message: str) -> None: ...
    def check(self, ok: object, where: str, message: str) -> bool: ...


def skip(report: Report, where: str, why: str) -> None:
    """SKIPPED, or a failure where the services must be there (TOOLHOST_REQUIRE_SERVICES=1, as in CI)."""
    if os.environ.get("TOOLHOST_REQUIRE_SERVICES") == "1":
        report.fail(where, why)
    else:
        print(f"    SKIP {where}: {why}")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def jobs(path: Path) -> list[dict]:
    try:
        return (yaml.safe_load(path.read_text()) or {}).get("scrape_configs") or []
    except (OSError, yaml.YAMLError):
        return []


def service_target() -> str | None:
    """The one target of scrape.yaml, `host:port`."""
    try:
        return jobs(SERVICE_JOB)[0]["static_configs"][0]["targets"][0]
    except (KeyError, IndexError, TypeError):
        return None


def check_service_job(report: Report, configs: dict[str, dict], port: int) -> None:
    """scrape.yaml, for the single-replica overlays (`configs`, by label): one job, the Service's
    name (which the daemon allows as Host) and port, the token from a file named after the Secret's
    key."""
    w = rel(SERVICE_JOB)
    found = jobs(SERVICE_JOB)
    if not report.check(len(found) == 1, w, f"one scrape job expected, found {len(found)}"):
        return
    job = found[0]
    report.check(job.get("metrics_path", "/metrics") == "/metrics", w, "metrics_path must be /metrics")
    target = service_target() or ""
    host, _, target_port = target.rpartition(":")
    report.check(target_port == str(port), w, f"target {target!r} must use port {port}")
    credentials = (job.get("authorization") or {}).get("credentials_file") or ""
    for label, config in configs.items():
        server = config.get("server") or {}
        report.check(
            host in (server.get("allowed-hosts") or []),
            w,
            f"target host {host!r} is not in {label}'s server.allowed-hosts: the daemon would answer 403",
        )
        report.check(
            Path(credentials).name == server.get("token-env"),
            w,
            f"authorization.credentials_file must be the Secret's key {server.get('token-env')}",
        )


def ranges(config: dict) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The `server.allowed-hosts` entries that are ranges (`ADDRESS/BITS`)."""
    hosts = (config.get("server") or {}).get("allowed-hosts") or []
    return [ipaddress.ip_network(h, strict=False) for h in hosts if "/" in h]


def check_fleet_job(report: Report, label: str, config: dict, objects: dict[str, dict], port: int) -> None:
    """scrape-fleet.yaml, for the fleet overlay: pod discovery in the overlay's namespace, the
    token, and a pod network in allowed-hosts that admits the pod IPs it scrapes; then its
    relabeling in a real Prometheus."""
    w = rel(FLEET_JOB)
    found = jobs(FLEET_JOB)
    if not report.check(len(found) == 1, w, f"one scrape job expected, found {len(found)}"):
        return
    job = found[0]
    deployments = [o for o in objects.values() if o.get("kind") == "Deployment"]
    if not report.check(len(deployments) == 1, label, "one Deployment expected"):
        return
    namespace = deployments[0]["metadata"].get("namespace")
    report.check(
        job.get("kubernetes_sd_configs") == [{"role": "pod", "namespaces": {"names": [namespace]}}],
        w,
        f"kubernetes_sd_configs must be exactly one `role: pod` limited to namespace {namespace}",
    )
    report.check(job.get("metrics_path", "/metrics") == "/metrics", w, "metrics_path must be /metrics")
    token_env = (config.get("server") or {}).get("token-env")
    credentials = (job.get("authorization") or {}).get("credentials_file") or ""
    report.check(
        Path(credentials).name == token_env,
        w,
        f"authorization.credentials_file must be the Secret's key {token_env}",
    )
    nets = ranges(config)
    report.check(
        any(ipaddress.ip_address(SAMPLE_POD_IP) in n for n in nets),
        label,
        f"server.allowed-hosts needs the pod network as a range (e.g. 10.0.0.0/8), or each pod scrape "
        f"(Host {SAMPLE_POD_IP}:{port}) is answered 403",
    )
    for n in nets:
        report.check(n.is_private, label, f"allowed-hosts range {n} is not a private network")
    relabel_in_prometheus(report, job, deployments[0], port)


def pod_targets(deployment: dict, pod_ip: str, decoy: bool) -> list[dict]:
    """File-discovery target groups with the labels Kubernetes pod discovery gives one pod of
    `deployment` at `pod_ip`: one per container port, one per container without ports. With
    `decoy`, a sidecar's `http` port in that pod and another application's pod in the namespace."""
    meta = deployment["metadata"]
    template = deployment["spec"]["template"]
    name = f"{meta['name']}-5d9c7b6f4-x2x7k"
    common = {
        "__meta_kubernetes_namespace": meta.get("namespace", ""),
        "__meta_kubernetes_pod_name": name,
        "__meta_kubernetes_pod_ip": pod_ip,
        "__meta_kubernetes_pod_phase": "Running",
        "__meta_kubernetes_pod_ready": "true",
    }
    for key, value in ((template.get("metadata") or {}).get("labels") or {}).items():
        common[f"__meta_kubernetes_pod_label_{re.sub(r'[^a-zA-Z0-9_]', '_', key)}"] = value
    groups = []
    spec = template["spec"]
    containers = [(c, "false") for c in spec.get("containers") or []]
    containers += [(c, "true") for c in spec.get("initContainers") or []]
    for c, init in containers:
        labels = dict(common, __meta_kubernetes_pod_container_name=c["name"])
        labels["__meta_kubernetes_pod_container_init"] = init
        ports = c.get("ports") or []
        if not ports:
            groups.append({"targets": [pod_ip], "labels": labels})
        for p in ports:
            groups.append(
                {
                    "targets": [f"{pod_ip}:{p['containerPort']}"],
                    "labels": dict(
                        labels,
                        __meta_kubernetes_pod_container_port_name=p.get("name", ""),
                        __meta_kubernetes_pod_container_port_number=str(p["containerPort"]),
                        __meta_kubernetes_pod_container_port_protocol=p.get("protocol", "TCP"),
                    ),
                }
            )
    if decoy:
        # A sidecar in the daemon's pod whose port is named `http` too (a mesh proxy's, say).
        sidecar = dict(common, __meta_kubernetes_pod_container_name="sidecar")
        sidecar["__meta_kubernetes_pod_container_init"] = "false"
        sidecar["__meta_kubernetes_pod_container_port_name"] = "http"
        sidecar["__meta_kubernetes_pod_container_port_number"] = "15090"
        groups.append({"targets": [f"{pod_ip}:15090"], "labels": sidecar})
        other = dict(common, __meta_kubernetes_pod_name="postgres-0", __meta_kubernetes_pod_ip="10.244.2.9")
        other = {k: v for k, v in other.items() if "_pod_label_" not in k}
        other["__meta_kubernetes_pod_label_app_kubernetes_io_name"] = "postgres"
        other["__meta_kubernetes_pod_container_name"] = "postgres"
        other["__meta_kubernetes_pod_container_init"] = "false"
        other["__meta_kubernetes_pod_container_port_name"] = "http"
        other["__meta_kubernetes_pod_container_port_number"] = "5432"
        groups.append({"targets": ["10.244.2.9:5432"], "labels": other})
    return groups


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def relabel_in_prometheus(report: Report, job: dict, deployment: dict, port: int) -> None:
    """The fleet job's relabel_configs, applied by a real Prometheus to the targets pod discovery
    would list (file discovery standing in for Kubernetes): exactly the daemon's port of the pod is
    kept, its address is the pod IP and the container port, and it is labelled with the pod."""
    w = rel(FLEET_JOB)
    binary = shutil.which("prometheus")
    if not binary:
        skip(report, w, "relabeling in Prometheus: prometheus is not installed (scripts/services.sh)")
        return
    groups = pod_targets(deployment, SAMPLE_POD_IP, decoy=True)
    pod = groups[0]["labels"]["__meta_kubernetes_pod_name"]
    with tempfile.TemporaryDirectory(prefix="toolhost-deploy-relabel-") as tmp:
        tmp = Path(tmp)
        (tmp / "pods.json").write_text(json.dumps(groups))
        test_job = {k: v for k, v in job.items() if k not in ("kubernetes_sd_configs", "authorization")}
        test_job["file_sd_configs"] = [{"files": [str(tmp / "pods.json")]}]
        # Keep the address the job chose as a label, then scrape nothing beyond this machine.
        test_job["relabel_configs"] = list(job.get("relabel_configs") or []) + [
            {"source_labels": ["__address__"], "target_label": "scraped_address"},
            {"target_label": "__address__", "replacement": f"127.0.0.1:{free_port()}"},
        ]
        config = {"global": {"scrape_interval": "1h"}, "scrape_configs": [test_job]}
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        web = f"127.0.0.1:{free_port()}"
        command = [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}"]
        command.append(f"--web.listen-address={web}")
        log = open(tmp / "prometheus.log", "w")
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        targets: dict = {}
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and server.poll() is None:
                try:
                    url = f"http://{web}/api/v1/targets?state=any"
                    with urllib.request.urlopen(url, timeout=2) as r:
                        targets = json.load(r)["data"]
                except (OSError, ValueError, KeyError):
                    targets = {}
                seen = len(targets.get("activeTargets") or []) + len(targets.get("droppedTargets") or [])
                if seen == len(groups):
                    break
                time.sleep(0.2)
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()
        active = [t.get("labels") or {} for t in targets.get("activeTargets") or []]
        dropped = targets.get("droppedTargets") or []
        if not report.check(
            len(active) + len(dropped) == len(groups),
            w,
            f"Prometheus did not list the {len(groups)} discovered targets: "
            f"{(tmp / 'prometheus.log').read_text()[-2000:] if not targets else targets}",
        ):
            return
        want = {"scraped_address": f"{SAMPLE_POD_IP}:{port}", "pod": pod, "namespace": "toolhost"}
        report.check(
            len(active) == 1 and all(active[0].get(k) == v for k, v in want.items()),
            w,
            f"relabeling must keep exactly the daemon's http port, labelled {want}; kept {active}",
        )
        print(
            f"    {w}: Prometheus keeps {len(active)} of {len(groups)} discovered targets: "
            f"{[a.get('scraped_address') for a in active]}"
        )


def check_promtool(report: Report) -> None:
    """Both jobs in one prometheus.yml pass `promtool check config`. Debian's promtool is built
    without Kubernetes discovery: then the fleet job is checked with file discovery in its place
    (its kubernetes_sd_configs are checked by check_fleet_job)."""
    promtool = shutil.which("promtool")
    if not promtool:
        skip(report, rel(PROMETHEUS), "promtool check config: promtool is not installed (scripts/services.sh)")
        return
    every = jobs(SERVICE_JOB) + jobs(FLEET_JOB)
    with tempfile.TemporaryDirectory(prefix="toolhost-deploy-prom-") as tmp:
        token = Path(tmp) / "TOOLHOST_TOKEN"
        token.write_text("x")
        (Path(tmp) / "pods.json").write_text("[]")

        def promtool_on(scrape_configs: list[dict]) -> subprocess.CompletedProcess:
            text = yaml.safe_dump({"scrape_configs": scrape_configs}).replace(TOKEN_FILE, str(token))
            config = Path(tmp) / "prometheus.yml"
            config.write_text(text)
            return subprocess.run(
                [promtool, "check", "config", str(config)], capture_output=True, text=True, timeout=60
            )

        run = promtool_on(every)
        output = (run.stdout + run.stderr).strip()
        note = ""
        if run.returncode != 0 and "kubernetes_sd_configs not found" in output:
            swapped = [
                {
                    **{k: v for k, v in j.items() if k != "kubernetes_sd_configs"},
                    "file_sd_configs": [{"files": [str(Path(tmp) / "pods.json")]}],
                }
                if "kubernetes_sd_configs" in j
                else j
                for j in every
            ]
            run = promtool_on(swapped)
            output = (run.stdout + run.stderr).strip()
            note = " (this promtool lacks Kubernetes discovery: file_sd_configs in its place)"
        where = f"{rel(SERVICE_JOB)} + {rel(FLEET_JOB)}"
        if report.check(run.returncode == 0, where, f"promtool check config: {output}"):
            print(f"    promtool check config, both jobs in one prometheus.yml: ok{note}")


def check(report: Report, configs: dict[str, tuple[dict, dict[str, dict], bool]], port: int) -> None:
    """Everything above; `configs` maps each overlay's label to its toolhost.toml, its objects and
    whether it is a fleet (shared state store)."""
    for path in (SERVICE_JOB, FLEET_JOB):
        if not report.check(path.is_file(), rel(path), "missing"):
            return
    check_service_job(report, {label: c for label, (c, _, fleet) in configs.items() if not fleet}, port)
    fleets = {label: (c, objects) for label, (c, objects, fleet) in configs.items() if fleet}
    report.check(fleets, rel(FLEET_JOB), "no fleet overlay to scrape")
    for label, (config, objects) in fleets.items():
        check_fleet_job(report, label, config, objects, port)
    check_promtool(report)


def parse_config(text: str | None) -> dict:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return {}
