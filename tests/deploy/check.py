"""Offline checks of the deployment files in deploy/ and of the release: no cluster, no Docker daemon,
no network beyond 127.0.0.1.

    tests/deploy/run.sh                  # all of it, in the repository's venv (what CI runs)
    python tests/deploy/check.py         # the same, with kubernetes-validate and PyYAML installed
    python tests/deploy/check.py --config-only   # only (d) and (e), with TOOLHOST_BIN set

Every overlay in deploy/kubernetes/overlays is rendered by tests/deploy/render.py (a small kustomize;
where kubectl is installed, its `kubectl kustomize` must agree object for object). Then:
(a) every object of every overlay validates, strictly (unknown fields are errors), against the
    Kubernetes OpenAPI schemas kubernetes-validate ships for KUBERNETES;
(b) the production properties hold in every overlay (restricted Pod Security, read-only root,
    non-root, no API token, probes, shutdown timing), and those of its kind: the PostgreSQL fleet
    (replicas, rolling update, spread, PDB, HPA) or the embedded store (one replica, Recreate, the
    SQLite file on a PersistentVolumeClaim); the objects refer to each other correctly;
(c) deploy/Dockerfile is multi-stage, runs as a numeric non-root user and names its commit;
    deploy/prometheus's jobs fit the daemon's Host and token rules, promtool accepts them, and the
    fleet job's relabeling keeps the daemons' ports (tests/deploy/scrape.py);
    .github/workflows/release.yml has the steps a release needs;
(d) when TOOLHOST_BIN names an executable: each overlay's toolhost.toml loads in it (`toolhost list`,
    with /etc/toolhost, /var/lib/toolhost and the image's plugins folder mapped into a temp dir and
    placeholder values for the Secret's variables), each init container's command line runs, and on
    the embedded store the daemon serves on 127.0.0.1 and answers /ready 200 and /metrics; the
    fleet's daemon answers /metrics by a pod IP, as its scrape job reads it;
(e) the registry-plugins init container pulls a signed plugin by the committed lock from a real
    docker-registry on 127.0.0.1 (SKIPPED when it is not installed, a failure with
    TOOLHOST_REQUIRE_SERVICES=1), and fails on a lock it would have to rewrite;
(f) scripts/release.sh packages the binary and the example plugins (TOOLHOST_PLUGINS_DIR, default
    plugins/); the archive's layout, checksums and unpacked binary are checked.

Each violation is printed as one FAIL line naming the file or overlay, the object and the rule; the
exit status is 1 when any check failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import render  # noqa: E402 - beside this file
import scrape  # noqa: E402 - beside this file

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MANIFESTS = DEPLOY / "kubernetes"
OVERLAYS = MANIFESTS / "overlays"
DOCKERFILE = DEPLOY / "Dockerfile"
# The Kubernetes release whose schemas the manifests are checked against. Every field used here
# exists since 1.27 or earlier; validating against an older supported minor than the newest keeps
# the files usable on clusters that lag behind.
KUBERNETES = "1.33.0"

NAMESPACE = "toolhost"
NAME_LABEL = "app.kubernetes.io/name"
APP = "toolhost"
UID = 10001
STATE_DIR = "/var/lib/toolhost"
CONFIG_DIR = "/etc/toolhost"
CONFIG_KEY = "toolhost.toml"
IMAGE_PLUGINS = "/opt/toolhost/plugins"
# The example plugins deploy/Dockerfile puts in IMAGE_PLUGINS (and scripts/release.sh in the archive).
EXAMPLES = ["echo", "math", "fs", "fetch", "github", "search_tools"]
PORT = 8750
# run.rs: after the grace period, cancelled calls get CANCEL_WAIT (5 s) and the transports
# CLOSE_WAIT (5 s), plus a 300 ms flush.
DAEMON_SHUTDOWN_WAITS_S = 10.3
# What the Secret's variables are set to for (d): the shapes the daemon expects, no real secret.
PLACEHOLDER_ENV = {
    "TOOLHOST_TOKEN": "x",
    "TOOLHOST_STATE_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",  # 32 bytes, base64
    "TOOLHOST_STATE_URL": "postgres://toolhost@127.0.0.1:1/toolhost",
}


class Report:
    """Collects violations; every check adds to it rather than stopping at the first."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def fail(self, where: str, message: str) -> None:
        self.failures.append(f"{where}: {message}")
        print(f"FAIL {where}: {message}")

    def check(self, ok: object, where: str, message: str) -> bool:
        if not ok:
            self.fail(where, message)
        return bool(ok)


def dig(obj: object, *path: str | int, default: object = None) -> object:
    """obj[path[0]][path[1]]…, or `default` when any step is missing."""
    for key in path:
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
    return obj


def overlays() -> list[Path]:
    return sorted(p for p in OVERLAYS.iterdir() if (p / "kustomization.yaml").is_file())


def render_overlay(report: Report, overlay: Path) -> dict[str, dict]:
    """ "overlays/NAME: Kind/name" -> object, for every object the overlay renders to."""
    label = overlay.relative_to(MANIFESTS).as_posix()
    try:
        rendered = render.render(overlay)
    except (render.RenderError, OSError, yaml.YAMLError) as e:
        report.fail(label, f"does not render: {e}")
        return {}
    objects: dict[str, dict] = {}
    for obj in rendered:
        key = f"{label}: {obj.get('kind')}/{dig(obj, 'metadata', 'name')}"
        report.check(key not in objects, key, "defined twice")
        objects[key] = obj
    return objects


def where(file: str, obj: dict) -> str:
    return file


def label_of(objects: dict[str, dict]) -> str:
    return next(iter(objects), "?").split(":")[0]


def check_against_kubectl(report: Report, overlay: Path, objects: dict[str, dict]) -> None:
    """The renderer agrees with kustomize itself (kubectl kustomize), where kubectl is installed."""
    kubectl = shutil.which("kubectl")
    label = overlay.relative_to(MANIFESTS).as_posix()
    if not kubectl:
        print(f"    SKIP {label}: no kubectl to compare the rendering with")
        return
    run = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    if not report.check(run.returncode == 0, label, f"kubectl kustomize failed: {run.stderr.strip()}"):
        return
    theirs = render.canonical([d for d in yaml.safe_load_all(run.stdout) if d])
    mine = render.canonical(list(objects.values()))
    for key in sorted(set(theirs) | set(mine)):
        report.check(
            theirs.get(key) == mine.get(key),
            label,
            f"{key}: tests/deploy/render.py and `kubectl kustomize` disagree",
        )


# --- (a) schemas ----------------------------------------------------------------------------------


def check_schemas(report: Report, objects: dict[str, dict]) -> None:
    import kubernetes_validate

    for file, obj in objects.items():
        try:
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(top level)"
            report.fail(where(file, obj), f"schema (Kubernetes {KUBERNETES}, strict): {path}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            # The CLI only warns here; an object nobody can validate is a failure for us.
            report.fail(where(file, obj), f"no schema: {e.message}")
        except Exception as e:  # noqa: BLE001 - anything else is a failed validation too
            report.fail(where(file, obj), f"could not be validated: {type(e).__name__}: {e}")


# --- (b) production properties --------------------------------------------------------------------


def by_kind(objects: dict[str, dict], kind: str) -> list[tuple[str, dict]]:
    return [(f, o) for f, o in objects.items() if o.get("kind") == kind]


def one(report: Report, objects: dict[str, dict], kind: str) -> tuple[str, dict] | None:
    found = by_kind(objects, kind)
    if report.check(len(found) == 1, label_of(objects), f"exactly one {kind}, found {len(found)}"):
        return found[0]
    return None


def selects(selector: object, labels: dict) -> bool:
    """A matchLabels selector (the only form used here) that is non-empty and matches `labels`."""
    return (
        isinstance(selector, dict) and bool(selector) and all(labels.get(k) == v for k, v in selector.items())
    )


def check_kustomizations(report: Report) -> None:
    """In every kustomization folder, each YAML file is used (a resource or a patch): one that is
    not would be skipped by `kubectl apply -k` without a word."""
    for k_path in sorted(MANIFESTS.rglob("kustomization.yaml")):
        folder = k_path.parent
        label = k_path.relative_to(MANIFESTS).as_posix()
        k = yaml.safe_load(k_path.read_text()) or {}
        used = set(k.get("resources") or []) | {p.get("path") for p in k.get("patches") or []}
        for name in sorted(p.name for p in folder.glob("*.yaml")):
            if name != "kustomization.yaml" and name not in used:
                report.fail(
                    label, f"{name} is neither a resource nor a patch, so `kubectl apply -k` skips it"
                )
        report.check(
            k.get("kind") == "Component" or k.get("namespace") == NAMESPACE,
            label,
            f"namespace must be {NAMESPACE} (the allowed-hosts name it)",
        )


def check_config(report: Report, objects: dict[str, dict]) -> tuple[dict | None, str | None]:
    """The ConfigMap holding toolhost.toml parses; returns the config and the ConfigMap's name."""
    found = [(f, o) for f, o in by_kind(objects, "ConfigMap") if CONFIG_KEY in (o.get("data") or {})]
    if not report.check(len(found) == 1, label_of(objects), f"exactly one ConfigMap with data.{CONFIG_KEY}"):
        return None, None
    file, cm = found[0]
    w = where(file, cm)
    text = dig(cm, "data", CONFIG_KEY)
    try:
        return tomllib.loads(text), cm["metadata"]["name"]
    except tomllib.TOMLDecodeError as e:
        report.fail(w, f"data.{CONFIG_KEY} is not valid TOML: {e}")
        return None, cm["metadata"]["name"]


def config_text(objects: dict[str, dict], key: str = CONFIG_KEY) -> str | None:
    texts = [dig(o, "data", key) for _, o in by_kind(objects, "ConfigMap") if key in (o.get("data") or {})]
    return texts[0] if len(texts) == 1 else None


def shared_store(config: dict) -> bool:
    """Whether the config names a shared (PostgreSQL) state store, rather than the embedded one."""
    state = config.get("state") or {}
    return bool(state.get("url") or state.get("url-env"))


def check_container_security(report: Report, cw: str, c: dict) -> None:
    """The restricted Pod Security Standard and a read-only root, for one container."""
    sc = c.get("securityContext") or {}
    report.check(
        sc.get("readOnlyRootFilesystem") is True,
        cw,
        "securityContext.readOnlyRootFilesystem must be true",
    )
    report.check(
        sc.get("allowPrivilegeEscalation") is False,
        cw,
        "securityContext.allowPrivilegeEscalation must be false",
    )
    report.check(sc.get("privileged") in (None, False), cw, "must not be privileged")
    report.check(
        "ALL" in (dig(sc, "capabilities", "drop") or []),
        cw,
        "securityContext.capabilities.drop must include ALL",
    )
    report.check(not dig(sc, "capabilities", "add"), cw, "must not add capabilities")
    report.check(sc.get("runAsUser") in (None, UID), cw, f"container runAsUser overrides the pod's {UID}")


def check_properties(report: Report, objects: dict[str, dict]) -> None:
    for file, obj in objects.items():
        report.check(
            dig(obj, "metadata", "labels", NAME_LABEL) == APP,
            where(file, obj),
            f"metadata.labels must carry {NAME_LABEL}: {APP}",
        )
    label = label_of(objects)
    namespace = NAMESPACE
    config, configmap_name = check_config(report, objects)
    config = config or {}
    server = config.get("server") or {}
    shared = shared_store(config)
    configmaps = {dig(o, "metadata", "name") for _, o in by_kind(objects, "ConfigMap")}
    claims = {dig(o, "metadata", "name"): o for _, o in by_kind(objects, "PersistentVolumeClaim")}

    # The Secret: placeholders only, and every variable the config reads from it.
    secret_name, secret_keys = None, set()
    found = one(report, objects, "Secret")
    if found:
        file, secret = found
        w = where(file, secret)
        secret_name = secret["metadata"]["name"]
        report.check(secret.get("type") == "Opaque", w, "type must be Opaque")
        data = secret.get("stringData") or {}
        secret_keys = set(data)
        report.check(not secret.get("data"), w, "use stringData with placeholders, not data")
        for key, value in data.items():
            report.check(
                "CHANGE-ME" in str(value),
                w,
                f"stringData.{key} must be a CHANGE-ME placeholder, not a real value",
            )
        state_key = str(data.get("TOOLHOST_STATE_KEY", ""))
        report.check(
            len(state_key.encode()) >= 32, w, "TOOLHOST_STATE_KEY's placeholder is shorter than 32 bytes"
        )
    needed = [
        ("server.token-env", server.get("token-env")),
        ("server.state-key-env", server.get("state-key-env")),
    ]
    if shared:
        needed.append(("state.url-env", dig(config, "state", "url-env")))
    else:
        # The embedded store: one SQLite file on the pod's volume, no URL anywhere.
        report.check(
            not dig(config, "state", "url") and "TOOLHOST_STATE_URL" not in secret_keys,
            label,
            "an embedded-store overlay must not name a PostgreSQL URL",
        )
        db = dig(config, "state", "path") or str(
            Path(str(dig(config, "audit", "path") or "")).parent / "state.db"
        )
        report.check(
            db.startswith(STATE_DIR + "/"),
            label,
            f"the SQLite state file {db!r} must be under {STATE_DIR}, on the volume",
        )
    for setting, var in needed:
        if report.check(var, label, f"{setting} must be set"):
            report.check(
                var in secret_keys, label, f"{setting} names {var}, which the Secret does not define"
            )

    # The config's paths and address fit the pod.
    for setting, value in [
        ("audit.path", dig(config, "audit", "path")),
        ("cache.dir", dig(config, "cache", "dir")),
    ]:
        report.check(
            isinstance(value, str) and value.startswith(STATE_DIR + "/"),
            label,
            f"{setting} = {value!r} must be under {STATE_DIR}, the only writable path",
        )
    http = str(server.get("http", ""))
    report.check(http == f"0.0.0.0:{PORT}", label, f"server.http = {http!r}, expected 0.0.0.0:{PORT}")
    report.check(config.get("limits"), label, "a [limits] block is expected")

    deployment_found = one(report, objects, "Deployment")
    if deployment_found is None:
        return
    dfile, dep = deployment_found
    w = where(dfile, dep)
    dep_name = dep["metadata"]["name"]
    spec = dep.get("spec") or {}
    pod = dig(spec, "template", "spec", default={})
    pod_labels = dig(spec, "template", "metadata", "labels", default={})

    report.check(
        selects(dig(spec, "selector", "matchLabels"), pod_labels),
        w,
        "spec.selector does not match the pod labels",
    )
    if shared:
        report.check((spec.get("replicas") or 0) >= 3, w, "at least 3 replicas")
        report.check(dig(spec, "strategy", "type") == "RollingUpdate", w, "strategy must be RollingUpdate")
        report.check(
            dig(spec, "strategy", "rollingUpdate", "maxUnavailable") in (0, "0%"),
            w,
            "strategy.rollingUpdate.maxUnavailable must be 0",
        )
    else:
        # One SQLite file, one writer: never two pods, not even during a rollout.
        report.check(spec.get("replicas") == 1, w, "the embedded store takes exactly 1 replica")
        report.check(
            dig(spec, "strategy", "type") == "Recreate",
            w,
            "strategy must be Recreate (a rolling update would run two pods on one SQLite file)",
        )
        report.check(
            not by_kind(objects, "HorizontalPodAutoscaler"), w, "no HPA may scale the embedded store"
        )

    # Pod security.
    psc = pod.get("securityContext") or {}
    report.check(psc.get("runAsNonRoot") is True, w, "pod securityContext.runAsNonRoot must be true")
    for field in ("runAsUser", "runAsGroup", "fsGroup"):
        report.check(psc.get(field) == UID, w, f"pod securityContext.{field} must be {UID}")
    report.check(
        dig(psc, "seccompProfile", "type") == "RuntimeDefault", w, "pod seccompProfile must be RuntimeDefault"
    )
    report.check(
        pod.get("automountServiceAccountToken") is False, w, "automountServiceAccountToken must be false"
    )

    sa_name = pod.get("serviceAccountName")
    sa = [o for _, o in by_kind(objects, "ServiceAccount") if dig(o, "metadata", "name") == sa_name]
    if report.check(sa, w, f"serviceAccountName {sa_name!r} names no ServiceAccount in {label}"):
        report.check(
            sa[0].get("automountServiceAccountToken") is False,
            label,
            "automountServiceAccountToken must be false",
        )

    # Volumes, by name.
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    config_volumes = {n for n, v in volumes.items() if dig(v, "configMap", "name") == configmap_name}
    report.check(config_volumes, w, f"no volume mounts the ConfigMap {configmap_name!r}")
    for n, v in volumes.items():
        ref = dig(v, "configMap", "name")
        if ref is not None and ref not in configmaps and dig(v, "configMap", "optional") is not True:
            report.fail(w, f"volume {n} names ConfigMap {ref!r}, which does not exist and is not optional")
        claim = dig(v, "persistentVolumeClaim", "claimName")
        if claim is not None and report.check(
            claim in claims, w, f"volume {n} names PersistentVolumeClaim {claim!r}, which does not exist"
        ):
            report.check(
                dig(claims[claim], "spec", "accessModes") == ["ReadWriteOnce"],
                w,
                f"PersistentVolumeClaim {claim} must be ReadWriteOnce (one pod writes it)",
            )

    containers = pod.get("containers") or []
    init_containers = pod.get("initContainers") or []
    report.check(len(containers) == 1, w, f"one container expected, found {len(containers)}")
    image = dig(containers, 0, "image")
    for c in init_containers:
        cw = f"{w}: initContainer {c.get('name')}"
        check_container_security(report, cw, c)
        report.check(
            c.get("image") == image, cw, f"image {c.get('image')!r} differs from the daemon's {image!r}"
        )
        report.check(
            not c.get("command") and c.get("args"), cw, "args for the image's ENTRYPOINT (toolhost) expected"
        )
        report.check(
            "memory" in dig(c, "resources", "limits", default={}), cw, "resources.limits.memory must be set"
        )
        for ref in [dig(e, "secretRef", "name") for e in c.get("envFrom") or []]:
            optional = any(
                dig(e, "secretRef", "optional")
                for e in c.get("envFrom") or []
                if dig(e, "secretRef", "name") == ref
            )
            report.check(
                ref == secret_name or optional, cw, f"envFrom names Secret {ref!r}, which does not exist"
            )
    for c in containers:
        cw = f"{w}: container {c.get('name')}"
        check_container_security(report, cw, c)
        ports = {p.get("name"): p for p in c.get("ports") or []}
        report.check(
            dig(ports, "http", "containerPort") == PORT,
            cw,
            f"a port named http with containerPort {PORT} is expected",
        )
        report.check(
            not c.get("command") and not c.get("args"), cw, "command/args would replace the image's CMD"
        )

        for probe, path in [
            ("readinessProbe", "/ready"),
            ("livenessProbe", "/health"),
            ("startupProbe", "/health"),
        ]:
            get = dig(c, probe, "httpGet")
            if not report.check(isinstance(get, dict), cw, f"{probe} must be an httpGet probe"):
                continue
            report.check(get.get("path") == path, cw, f"{probe} must GET {path}, not {get.get('path')!r}")
            report.check(get.get("port") in ("http", PORT), cw, f"{probe} must target the http port")
            host = {h.get("name", "").lower(): h.get("value") for h in get.get("httpHeaders") or []}.get(
                "host"
            )
            report.check(
                host in ("localhost", "127.0.0.1"),
                cw,
                f"{probe} must send `Host: localhost` (the daemon refuses the pod IP as Host), got {host!r}",
            )

        requests = dig(c, "resources", "requests", default={})
        limits = dig(c, "resources", "limits", default={})
        report.check(
            "cpu" in requests and "memory" in requests, cw, "resources.requests must set cpu and memory"
        )
        report.check("memory" in limits, cw, "resources.limits.memory must be set")
        memory_limit = mebibytes(limits.get("memory"))
        guest = (server.get("max-concurrent-calls") or 64) * (dig(config, "limits", "memory-mb") or 256)
        if memory_limit is not None:
            report.check(
                guest < memory_limit,
                cw,
                f"guest memory (max-concurrent-calls x memory-mb = {guest} MiB) must fit the {limits['memory']} limit",
            )

        secret_refs = [dig(e, "secretRef", "name") for e in c.get("envFrom") or []]
        report.check(
            secret_name in secret_refs, cw, f"envFrom must name the Secret {secret_name!r}, has {secret_refs}"
        )
        for ref in secret_refs:
            if ref is not None and ref != secret_name:
                report.fail(cw, f"envFrom names Secret {ref!r}, which does not exist")

        mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
        # The config: the ConfigMap's folder at /etc/toolhost, or its one file mounted there.
        m = mounts.get(f"{CONFIG_DIR}/{CONFIG_KEY}")
        if not (m and m.get("name") in config_volumes and m.get("subPath") == CONFIG_KEY):
            m = mounts.get(CONFIG_DIR)
        if report.check(
            m and m.get("name") in config_volumes,
            cw,
            f"the ConfigMap must be mounted at {CONFIG_DIR} (or its {CONFIG_KEY} at {CONFIG_DIR}/{CONFIG_KEY})",
        ):
            report.check(m.get("readOnly") is True, cw, f"the config must be mounted readOnly")
        for path, m in mounts.items():
            if path.startswith(CONFIG_DIR):
                report.check(
                    m.get("readOnly") is True, cw, f"{path}: the daemon mounts {CONFIG_DIR} read-only"
                )
        state = volumes.get(dig(mounts, STATE_DIR, "name"), {})
        if shared:
            report.check("emptyDir" in state, cw, f"{STATE_DIR} must be an emptyDir (the root is read-only)")
        else:
            report.check(
                "persistentVolumeClaim" in state,
                cw,
                f"{STATE_DIR} must be a PersistentVolumeClaim: the SQLite state file must outlive the pod",
            )
        report.check(
            "emptyDir" in volumes.get(dig(mounts, "/tmp", "name"), {}),
            cw,
            "/tmp must be an emptyDir (the root is read-only)",
        )

        # Shutdown: the endpoint goes first (preStop), then the daemon drains within the grace period.
        sleep = prestop_sleep(c)
        report.check(
            sleep and sleep >= 2,
            cw,
            "lifecycle.preStop must sleep a few seconds so the endpoint is removed first",
        )
        grace_s = (server.get("shutdown-grace-ms") or 5000) / 1000
        need = (sleep or 0) + grace_s + DAEMON_SHUTDOWN_WAITS_S
        tgps = pod.get("terminationGracePeriodSeconds", 30)
        report.check(
            tgps > need,
            w,
            f"terminationGracePeriodSeconds {tgps} must exceed preStop {sleep} s + shutdown-grace "
            f"{grace_s:g} s + the daemon's {DAEMON_SHUTDOWN_WAITS_S:g} s of cancel/close waits = {need:g} s",
        )

    spread = pod.get("topologySpreadConstraints") or []
    report.check(
        not shared
        or any(
            t.get("topologyKey") == "kubernetes.io/hostname"
            and selects(dig(t, "labelSelector", "matchLabels"), pod_labels)
            for t in spread
        ),
        w,
        "topologySpreadConstraints must spread the pods across nodes (kubernetes.io/hostname)",
    )

    # The Service reaches the pods' http port.
    found = one(report, objects, "Service")
    if found:
        file, svc = found
        sw = where(file, svc)
        sspec = svc.get("spec") or {}
        report.check(sspec.get("type", "ClusterIP") == "ClusterIP", sw, "type must be ClusterIP")
        report.check(
            selects(sspec.get("selector"), pod_labels), sw, "selector does not match the Deployment's pods"
        )
        ports = sspec.get("ports") or []
        report.check(
            any(p.get("port") == PORT and p.get("targetPort") in ("http", PORT) for p in ports),
            sw,
            f"port {PORT} must target the container port http",
        )
        report.check(
            sspec.get("sessionAffinity") == "ClientIP", sw, "sessionAffinity ClientIP (legacy MCP sessions)"
        )
        report.check(
            dig(sspec, "sessionAffinityConfig", "clientIP", "timeoutSeconds"),
            sw,
            "set the ClientIP affinity timeout",
        )
        name = svc["metadata"]["name"]
        hosts = set(server.get("allowed-hosts") or [])
        if namespace:
            expected = {
                name,
                f"{name}.{namespace}",
                f"{name}.{namespace}.svc",
                f"{name}.{namespace}.svc.cluster.local",
            }
            missing = sorted(expected - hosts)
            report.check(not missing, label, f"server.allowed-hosts lacks the Service's names {missing}")

    if not shared:
        return
    found = one(report, objects, "PodDisruptionBudget")
    if found:
        file, pdb = found
        pw = where(file, pdb)
        pspec = pdb.get("spec") or {}
        report.check(
            selects(dig(pspec, "selector", "matchLabels"), pod_labels),
            pw,
            "selector does not match the Deployment's pods",
        )
        min_available, max_unavailable = pspec.get("minAvailable"), pspec.get("maxUnavailable")
        report.check(
            (isinstance(min_available, int) and 1 <= min_available < (spec.get("replicas") or 0))
            or (isinstance(max_unavailable, int) and max_unavailable >= 1),
            pw,
            "must keep replicas up yet let a drain proceed (minAvailable below replicas, or maxUnavailable >= 1)",
        )

    found = one(report, objects, "HorizontalPodAutoscaler")
    if found:
        file, hpa = found
        hw = where(file, hpa)
        hspec = hpa.get("spec") or {}
        target = hspec.get("scaleTargetRef") or {}
        report.check(
            target.get("kind") == "Deployment" and target.get("name") == dep_name,
            hw,
            f"scaleTargetRef must be Deployment/{dep_name}, is {target.get('kind')}/{target.get('name')}",
        )
        report.check(
            (hspec.get("minReplicas") or 1) >= 2
            and hspec.get("maxReplicas", 0) >= hspec.get("minReplicas", 1),
            hw,
            "minReplicas >= 2 and maxReplicas >= minReplicas",
        )
        report.check(
            dig(hspec, "behavior", "scaleDown", "stabilizationWindowSeconds"),
            hw,
            "set a scaleDown stabilization window",
        )
        report.check(
            all("cpu" in dig(c, "resources", "requests", default={}) for c in containers),
            hw,
            "CPU utilization needs a cpu request on every container",
        )


def mebibytes(quantity: object) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(quantity or ""))
    if not m:
        return None
    factor = {
        None: 1 / 2**20,
        "Ki": 1 / 1024,
        "Mi": 1,
        "Gi": 1024,
        "Ti": 2**20,
        "k": 1e3 / 2**20,
        "M": 1e6 / 2**20,
        "G": 1e9 / 2**20,
        "T": 1e12 / 2**20,
    }[m.group(2)]
    return float(m.group(1)) * factor


def prestop_sleep(container: dict) -> float | None:
    pre = dig(container, "lifecycle", "preStop", default={})
    if "sleep" in pre:
        return dig(pre, "sleep", "seconds")
    command = dig(pre, "exec", "command", default=[])
    if len(command) == 2 and command[0].endswith("sleep"):
        try:
            return float(command[1])
        except ValueError:
            return None
    return None


def check_oauth_overlay(report: Report) -> None:
    """overlays/single-oauth's toolhost.toml is overlays/single's plus [auth], [[callers]] and the
    ingress host: the two files must not drift apart."""
    label = "overlays/single-oauth/toolhost.toml"
    single = tomllib.loads((OVERLAYS / "single" / CONFIG_KEY).read_text())
    oauth = tomllib.loads((OVERLAYS / "single-oauth" / CONFIG_KEY).read_text())
    report.check(
        dig(oauth, "auth", "issuer") and dig(oauth, "auth", "audience"), label, "[auth] issuer and audience"
    )
    extra = set(dig(oauth, "server", "allowed-hosts", default=[])) - set(
        dig(single, "server", "allowed-hosts", default=[])
    )
    audience_host = re.sub(r"^https://([^/:]+).*", r"\1", str(dig(oauth, "auth", "audience")))
    report.check(
        extra == {audience_host}, label, f"allowed-hosts must add the audience's host only, adds {extra}"
    )
    if oauth.get("callers"):
        report.check(
            any(dig(c, "match", "sub") == "static-token" for c in oauth["callers"]),
            label,
            "with [[callers]], the static token (operators, the Prometheus scrape) needs a profile",
        )
    for config in (single, oauth):
        config.pop("auth", None), config.pop("callers", None)
        (config.get("server") or {}).pop("allowed-hosts", None)
    report.check(
        single == oauth,
        label,
        "differs from overlays/single/toolhost.toml beyond [auth], [[callers]] and allowed-hosts",
    )


# --- (c) Dockerfile -------------------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, comments dropped and continuation lines joined."""
    out, pending = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = (pending + stripped).strip()
        pending = ""
        if full:
            word, _, rest = full.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def check_dockerfile(report: Report, objects: dict[str, dict]) -> None:
    w = "deploy/Dockerfile"
    if not report.check(DOCKERFILE.is_file(), w, "missing"):
        return
    instructions = dockerfile_instructions(DOCKERFILE.read_text())
    stages: list[list[tuple[str, str]]] = []
    for ins in instructions:
        if ins[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    report.check(
        len(stages) >= 2, w, f"a multi-stage build (at least two FROM) is expected, found {len(stages)}"
    )
    for word, args in instructions:
        report.check(
            not (word == "ADD" and re.search(r"(^|\s)https?://", args)),
            w,
            f"ADD {args}: fetch remote files in a RUN with a checksum, not ADD",
        )
    if not stages:
        return
    check_commit_arg(report, w, stages)
    final = stages[-1]
    users = [args for word, args in final if word == "USER"]
    uid = None
    if report.check(users, w, "the final stage sets no USER (it would run as root)"):
        user, _, group = users[-1].partition(":")
        if report.check(
            user.isdigit() and int(user) != 0, w, f"USER {users[-1]}: a numeric non-zero uid is expected"
        ):
            uid = int(user)
        report.check(
            not group or (group.isdigit() and int(group) != 0),
            w,
            f"USER {users[-1]}: the gid must be numeric and non-zero",
        )
    exposed = {p.split("/")[0] for word, args in final if word == "EXPOSE" for p in args.split()}
    report.check(str(PORT) in exposed, w, f"the final stage must EXPOSE {PORT}")
    # The CMD must agree with the pod: config where the ConfigMap is mounted, the port the Service targets.
    cmd = [args for word, args in final if word == "CMD"]
    if report.check(cmd, w, "the final stage has no CMD"):
        text = cmd[-1]
        report.check(
            f"{CONFIG_DIR}/{CONFIG_KEY}" in text, w, f"CMD must pass --config {CONFIG_DIR}/{CONFIG_KEY}"
        )
        report.check(f":{PORT}" in text, w, f"CMD must serve HTTP on port {PORT}")
    entrypoint = [args for word, args in final if word == "ENTRYPOINT"]
    report.check(entrypoint and "toolhost" in entrypoint[-1], w, "ENTRYPOINT must run toolhost")
    # The image's user is the one the pods declare (runAsNonRoot checks the image's numeric USER).
    for file, dep in by_kind(objects, "Deployment"):
        run_as = dig(dep, "spec", "template", "spec", "securityContext", "runAsUser")
        report.check(
            uid is None or run_as == uid,
            w,
            f"USER {uid} differs from runAsUser {run_as} in {file}",
        )


def check_commit_arg(report: Report, w: str, stages: list[list[tuple[str, str]]]) -> None:
    """The stage that builds the binary takes the commit as a build argument and exports it before
    `cargo build`: the context has no .git, and host/build.rs reads TOOLHOST_COMMIT instead (an
    ARG declared before FROM, or in another stage, would not reach it)."""
    builds = [s for s in stages if any(word == "RUN" and "cargo build" in args for word, args in s)]
    if not report.check(builds, w, "no stage runs `cargo build`"):
        return
    stage = builds[0]
    run_at = next(i for i, (word, args) in enumerate(stage) if word == "RUN" and "cargo build" in args)
    before = stage[:run_at]
    report.check(
        any(word == "ARG" and re.fullmatch(r"TOOLHOST_COMMIT(=\S*)?", args) for word, args in before),
        w,
        "the stage that runs `cargo build` must declare `ARG TOOLHOST_COMMIT` before it "
        "(toolhost --version names the commit from it: the context has no .git)",
    )
    report.check(
        any(
            word == "ENV" and re.fullmatch(r"TOOLHOST_COMMIT=(\$TOOLHOST_COMMIT|\$\{TOOLHOST_COMMIT\})", args)
            for word, args in before
        ),
        w,
        "export the argument for cargo before `cargo build`: `ENV TOOLHOST_COMMIT=${TOOLHOST_COMMIT}`",
    )


# --- (d) the config in the real binary ------------------------------------------------------------


def binary_or_skip(report: Report, required: bool) -> Path | None:
    bin_env = os.environ.get("TOOLHOST_BIN", "")
    binary = Path(bin_env) if bin_env else None
    if binary is None or not (binary.is_file() and os.access(binary, os.X_OK)):
        why = (
            "TOOLHOST_BIN is unset" if binary is None else f"TOOLHOST_BIN={bin_env} is not an executable file"
        )
        if required:
            report.fail("config", f"{why}: --config-only needs the binary (cargo build --release)")
        else:
            print(f"SKIP (d) the overlays' toolhost.toml in the binary: {why}")
        return None
    return binary


COMPILE_CACHE = Path(tempfile.mkdtemp(prefix="toolhost-deploy-cache-"))
atexit.register(shutil.rmtree, COMPILE_CACHE, ignore_errors=True)


class Pod:
    """An overlay's pod mapped into a temp dir: /etc/toolhost, /var/lib/toolhost and the plugins
    folder become folders under it; everything else in the config is exactly as the pod reads it."""

    def __init__(self, tmp: Path, objects: dict[str, dict]) -> None:
        self.etc, self.state, self.plugins = tmp / "etc", tmp / "state", tmp / "plugins"
        for d in (self.etc, self.state, self.plugins):
            d.mkdir(parents=True)
        # The image's plugins when they are built, so that the config's grants meet the real
        # plugins; an empty folder otherwise.
        built = Path(os.environ.get("TOOLHOST_PLUGINS_DIR", ROOT / "plugins"))
        if all((built / f"{p}.wasm").is_file() for p in EXAMPLES):
            for p in EXAMPLES:
                shutil.copy(built / f"{p}.wasm", self.plugins)
        self.config = self.etc / CONFIG_KEY
        self.config.write_text(self.map(config_text(objects) or ""))
        lock = config_text(objects, "toolhost.lock")
        if lock is not None:
            (self.etc / "toolhost.lock").write_text(lock)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHOST_")}
        self.env.update(PLACEHOLDER_ENV)
        # The compile cache the first pod filled, as a restarted pod finds it on its volume: each
        # overlay would otherwise compile the same five plugins again (seconds each).
        cache = dig(tomllib.loads(self.config.read_text()), "cache", "dir")
        self.cache = Path(cache) if cache else None
        if self.cache and any(COMPILE_CACHE.iterdir()):
            shutil.copytree(COMPILE_CACHE, self.cache, dirs_exist_ok=True)

    def map(self, text: str) -> str:
        return (
            text.replace(f"{CONFIG_DIR}/", f"{self.etc}/")
            .replace(STATE_DIR, str(self.state))
            .replace(IMAGE_PLUGINS, str(self.plugins))
        )

    def args(self, args: list[str]) -> list[str]:
        return [self.map(a) for a in args]

    def run(self, report: Report, where: str, command: list[str]) -> bool:
        print(f"    $ {shlex.join(command)}")
        try:
            run = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            report.fail(where, f"{shlex.join(command)} did not finish within 120 s")
            return False
        for stream in (run.stdout, run.stderr):
            for line in stream.rstrip().splitlines()[:20]:
                print(f"    | {line}")
        return report.check(
            run.returncode == 0, where, f"{shlex.join(command)} exited {run.returncode}, expected 0"
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, host: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Host": host}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError as e:
        return 0, str(e)


@contextlib.contextmanager
def serving(binary: Path, pod: Pod):
    """The daemon, started as the image's CMD starts it but on 127.0.0.1: yields its port and
    whether to show its log at the end (set `show[0] = True`); SIGTERM on the way out."""
    port = free_port()
    command = [str(binary), "--config", str(pod.config), "--plugins", str(pod.plugins)]
    command += ["serve", "--http", f"127.0.0.1:{port}"]
    print(f"    $ {shlex.join(command)}")
    log = pod.state.parent / "serve.log"
    show = [False]
    with open(log, "w") as out:
        daemon = subprocess.Popen(command, env=pod.env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        yield port, daemon, show
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        if show[0]:
            for line in log.read_text().splitlines()[-20:]:
                print(f"    | {line}")


def serve_and_probe(
    report: Report, binary: Path, pod: Pod, where: str, container: dict, service_host: str
) -> None:
    """The daemon passes the container's own probes (each one's path and Host header, readiness
    first: /ready 200) and serves /metrics the way the documented scrape reads it."""
    probes = []
    for name in ("readinessProbe", "startupProbe", "livenessProbe"):
        get_ = dig(container, name, "httpGet", default={})
        headers = {h.get("name", "").lower(): h.get("value") for h in get_.get("httpHeaders") or []}
        probes.append((name, get_.get("path"), headers.get("host", "127.0.0.1")))
    with serving(binary, pod) as (port, daemon, show):
        deadline = time.monotonic() + 60
        status, body = 0, ""
        _, ready_path, ready_host = probes[0]
        while time.monotonic() < deadline and daemon.poll() is None:
            status, body = get(port, str(ready_path), ready_host)
            if status == 200:
                break
            time.sleep(0.2)
        show[0] = not report.check(
            status == 200,
            where,
            f"readinessProbe {ready_path} answered {status} {body.strip()!r}, expected 200",
        )
        if show[0]:
            return
        print(f"    readinessProbe GET {ready_path} (Host: {ready_host}): 200 {body.strip()}")
        for name, path, host in probes[1:]:
            status, _ = get(port, str(path), host)
            report.check(status == 200, where, f"{name} {path} (Host: {host}) answered {status}, expected 200")
            print(f"    {name} GET {path} (Host: {host}): {status}")
        report.check(
            (pod.state / "state.db").is_file() or any(pod.state.glob("*.db")),
            where,
            f"no SQLite state file under the mapped {STATE_DIR}",
        )
        token = PLACEHOLDER_ENV["TOOLHOST_TOKEN"]
        status, body = get(port, "/metrics", service_host, token)
        report.check(
            status == 200 and "toolhost_tools" in body,
            where,
            f"/metrics with the token and Host {service_host} answered {status}, expected 200",
        )
        status, _ = get(port, "/metrics", service_host)
        report.check(status == 401, where, f"/metrics without a token answered {status}, expected 401")
        # What a scrape of the pod's own address gets: this overlay allows no pod network.
        status, _ = get(port, "/metrics", f"10.0.0.7:{PORT}", token)
        report.check(status == 403, where, f"/metrics with a pod IP as Host answered {status}, expected 403")
        print(f"    /metrics: 200 with the token via {service_host}, 401 without, 403 via a pod IP")


def scrape_pods(report: Report, binary: Path, pod: Pod, where: str) -> None:
    """The fleet's daemon serves /metrics as deploy/prometheus/scrape-fleet.yaml reads it: by a pod
    IP (its allowed-hosts range), with the token; a name that begins with that IP is refused. It
    never becomes Ready here (no PostgreSQL), but /metrics does not wait for the state store."""
    token = PLACEHOLDER_ENV["TOOLHOST_TOKEN"]
    pod_host = f"{scrape.SAMPLE_POD_IP}:{PORT}"
    with serving(binary, pod) as (port, daemon, show):
        deadline = time.monotonic() + 60
        status, body = 0, ""
        while time.monotonic() < deadline and daemon.poll() is None:
            status, body = get(port, "/metrics", pod_host, token)
            if status == 200:
                break
            time.sleep(0.2)
        show[0] = not report.check(
            status == 200 and "toolhost_tools" in body,
            where,
            f"/metrics with the token and Host {pod_host} (a pod IP) answered {status}, expected 200",
        )
        rebound = f"{scrape.SAMPLE_POD_IP}.evil.example:{PORT}"
        status, _ = get(port, "/metrics", rebound, token)
        report.check(status == 403, where, f"/metrics with Host {rebound} answered {status}, expected 403")
        print(f"    /metrics: 200 via the pod IP {pod_host}, 403 via {rebound}")


def check_binary(report: Report, binary: Path, overlay: Path, objects: dict[str, dict]) -> None:
    """The overlay's toolhost.toml loads (`toolhost list`); its init containers' command lines run;
    on the embedded store, the daemon serves and becomes Ready; the fleet's serves /metrics by a
    pod IP."""
    label = overlay.relative_to(MANIFESTS).as_posix()
    if not report.check(config_text(objects) is not None, label, f"no ConfigMap with data.{CONFIG_KEY}"):
        return
    config = tomllib.loads(config_text(objects) or "")
    dep = [o for _, o in by_kind(objects, "Deployment")]
    pod_spec = dig(dep, 0, "spec", "template", "spec", default={})
    with tempfile.TemporaryDirectory(prefix="toolhost-deploy-") as tmp:
        pod = Pod(Path(tmp), objects)
        print(f"(d) {label}: {CONFIG_DIR}, {STATE_DIR} and {IMAGE_PLUGINS} mapped into {tmp}")
        for c in pod_spec.get("initContainers") or []:
            # The init container's own command line, run before the daemon as in the pod.
            pod.run(
                report,
                f"{label}: initContainer {c.get('name')}",
                [str(binary)] + pod.args(c.get("args") or []),
            )
        command = [str(binary), "--config", str(pod.config), "--plugins", str(pod.plugins), "list"]
        pod.run(report, label, command)
        if pod.cache and pod.cache.is_dir() and not any(COMPILE_CACHE.iterdir()):
            shutil.copytree(pod.cache, COMPILE_CACHE, dirs_exist_ok=True)
        if not shared_store(config):
            # /metrics as deploy/prometheus/scrape.yaml reads it: by the Service's name, with the token.
            container = dig(pod_spec, "containers", 0, default={})
            target = scrape.service_target() or f"{APP}.{NAMESPACE}.svc:{PORT}"
            serve_and_probe(report, binary, pod, label, container, target)
        else:
            scrape_pods(report, binary, pod, label)


# --- (e) registry plugins through the init container, against a real registry -------------------


class Registry:
    """Debian's docker-registry (the CNCF distribution server) on a free 127.0.0.1 port, with its
    storage under `dir`; stopped by stop()."""

    def __init__(self, binary: str, dir: Path) -> None:
        (dir / "config.yml").write_text(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {dir / 'data'}\nhttp:\n  addr: 127.0.0.1:0\n"
        )
        self.log = dir / "registry.log"
        with open(self.log, "w") as out:
            self.child = subprocess.Popen(
                [binary, "serve", str(dir / "config.yml")], stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
        self.addr = ""
        deadline = time.monotonic() + 30
        while not self.addr and time.monotonic() < deadline and self.child.poll() is None:
            m = re.search(r"listening on (127\.0\.0\.1:\d+)", self.log.read_text())
            self.addr = m.group(1) if m else ""
            time.sleep(0.05)

    def stop(self) -> None:
        self.child.terminate()
        try:
            self.child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()


def unwritable_lock(tmp: Path, pod: Pod) -> list[str]:
    """Make the pod's config folder read-only and its store writable, as the registry-plugins
    component mounts them, for an unprivileged user; returns the prefix that runs a command as one
    (setpriv to nobody when this runs as root, whom permissions would not stop)."""
    store = pod.etc / ".toolhost/store"
    store.mkdir(parents=True, exist_ok=True)
    for d in [pod.etc / ".toolhost", store]:
        d.chmod(0o777)
    for d in [tmp, pod.etc.parent]:
        d.chmod(0o755)
    pod.etc.chmod(0o555)
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []


def check_registry_plugins(report: Report, binary: Path, overlay: Path, objects: dict[str, dict]) -> None:
    """The init container's exact command line pulls a signed plugin that the committed lock names
    from a real registry, verifying its signature and digests; the daemon then lists it with the
    registry gone; a lock whose digest does not match makes the init container fail."""
    label = overlay.relative_to(MANIFESTS).as_posix()
    pod_spec = dig([o for _, o in by_kind(objects, "Deployment")], 0, "spec", "template", "spec", default={})
    pulls = [c for c in pod_spec.get("initContainers") or [] if "pull" in (c.get("args") or [])]
    if not pulls:
        return
    required = os.environ.get("TOOLHOST_REQUIRE_SERVICES") == "1"
    registry_bin = shutil.which("docker-registry") or (
        "/usr/bin/docker-registry" if Path("/usr/bin/docker-registry").exists() else None
    )
    plugin = Path(os.environ.get("TOOLHOST_PLUGINS_DIR", ROOT / "plugins")) / "echo.wasm"
    for missing, why in [
        (registry_bin is None, "docker-registry is not installed (scripts/services.sh)"),
        (not plugin.is_file(), f"{plugin} is missing (scripts/build-plugins.sh)"),
    ]:
        if missing:
            if required:
                report.fail(label, f"(e) {why}")
            else:
                print(f"SKIP (e) {label}: {why}")
            return
    key, public = ROOT / "tests/golden/cosign/signer.key", ROOT / "tests/golden/cosign/signer.pub"
    with tempfile.TemporaryDirectory(prefix="toolhost-deploy-registry-") as tmp:
        tmp = Path(tmp)
        (tmp / "registry").mkdir()
        registry = Registry(registry_bin, tmp / "registry")
        try:
            if not report.check(
                registry.addr, label, f"(e) docker-registry did not start: {registry.log.read_text()[-500:]}"
            ):
                return
            addr = registry.addr
            target = f"oci://{addr}/tools/echo:1.0"
            print(f"(e) {label}: a signed echo.wasm at {target} (docker-registry on 127.0.0.1)")
            sources = (
                f'\n[plugins.remote-echo]\nsource = "{target}"\n'
                f'\n[trust."{addr}/tools"]\nkeys = ["trust/signer.pub"]\n'
                f'\n[registries."{addr}"]\ninsecure = true\n'
            )
            # The publisher pushes and signs; the operator pulls once beside the config and commits
            # the lock; the pod's init container pulls by that lock.
            dev = Pod(tmp / "dev", objects)
            dev.config.write_text(dev.config.read_text() + sources)
            (dev.etc / "trust").mkdir()
            shutil.copy(public, dev.etc / "trust/signer.pub")
            (dev.etc / "toolhost.lock").unlink(missing_ok=True)
            cli = [str(binary), "--config", str(dev.config)]
            if not (
                dev.run(report, label, cli + ["push", str(plugin), target])
                and dev.run(report, label, cli + ["sign", target, "--key", str(key)])
                and dev.run(report, label, cli + ["pull"])
            ):
                return
            lock = (dev.etc / "toolhost.lock").read_text()
            pod = Pod(tmp / "pod", objects)
            pod.config.write_text(pod.config.read_text() + sources)
            (pod.etc / "trust").mkdir()
            shutil.copy(public, pod.etc / "trust/signer.pub")
            (pod.etc / "toolhost.lock").write_text(lock)
            as_user = unwritable_lock(tmp, pod)
            for c in pulls:
                pod.run(
                    report,
                    f"{label}: initContainer {c.get('name')}",
                    as_user + [str(binary)] + pod.args(c["args"]),
                )
            pod.etc.chmod(0o755)
            report.check(
                (pod.etc / ".toolhost/store").is_dir(),
                label,
                "(e) the init container left no store beside the config",
            )
            report.check(
                (pod.etc / "toolhost.lock").read_text() == lock,
                label,
                "(e) the init container changed the lock",
            )
            # A lock naming another component digest. pull re-resolves the locked manifest and would
            # correct the entry, but in the pod the lock is a read-only file (a ConfigMap subPath), so
            # the write fails and so does the init container: the daemon never starts on bytes the
            # committed lock does not name. Here the lock is made unwritable the same way for an
            # unprivileged user: the config folder is read-only (the store beside it stays writable),
            # as it was for the pull above, which needed no write to a lock that matched.
            bad = Pod(tmp / "bad", objects)
            bad.config.write_text(bad.config.read_text() + sources)
            (bad.etc / "trust").mkdir()
            shutil.copy(public, bad.etc / "trust/signer.pub")
            forged = re.sub(
                r'component = "sha256:[0-9a-f]{64}"', 'component = "sha256:' + "0" * 64 + '"', lock
            )
            report.check(forged != lock, label, "(e) the lock has no component digest to alter")
            (bad.etc / "toolhost.lock").write_text(forged)
            as_user = unwritable_lock(tmp, bad)
            command = as_user + [str(binary)] + bad.args(pulls[0]["args"])
            print(f"    $ {shlex.join(command)}   # a forged lock, unwritable")
            run = subprocess.run(command, env=bad.env, capture_output=True, text=True, timeout=120)
            bad.etc.chmod(0o755)
            report.check(
                run.returncode != 0
                and "toolhost.lock" in run.stderr
                and (bad.etc / "toolhost.lock").read_text() == forged,
                label,
                f"(e) the init container must fail on a lock it cannot keep; exit {run.returncode}",
            )
            print(f"    exit {run.returncode}: {(run.stderr or run.stdout).strip().splitlines()[-1:]}")
        finally:
            registry.stop()
        # Offline: the daemon loads the pulled plugin from the store, its signature verified.
        run = subprocess.run(
            [str(binary), "--config", str(pod.config), "--plugins", str(pod.plugins), "list", "--json"],
            env=pod.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        try:
            listed = json.loads(run.stdout)
        except json.JSONDecodeError:
            listed = {}
        entry = dig(listed, "plugins", "remote-echo", default={})
        report.check(
            run.returncode == 0 and dig(entry, "provenance", "signature", "status") == "verified",
            label,
            f"(e) with the registry stopped, `toolhost list` should load remote-echo, signature verified; got {entry or run.stderr.strip()}",
        )
        print(
            f"    registry stopped; list: remote-echo {dig(entry, 'status')}, signature {dig(entry, 'provenance', 'signature', 'status')}"
        )


# --- (f) the release: scripts/release.sh and .github/workflows/release.yml -----------------------

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
TRIPLE = "x86_64-unknown-linux-gnu"


def cargo_version() -> str:
    version = tomllib.loads((ROOT / "host" / "Cargo.toml").read_text())["package"]["version"]
    if isinstance(version, dict):
        version = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    return version


def check_workflow(report: Report) -> None:
    """The release workflow parses and has the steps it must: on a v* tag, release.sh with the tag,
    the example plugins, the dist binary, the archive and SHA256SUMS published, and the image from
    deploy/Dockerfile pushed to ghcr.io, told its commit."""
    w = WORKFLOW.relative_to(ROOT).as_posix()
    if not report.check(WORKFLOW.is_file(), w, "missing"):
        return
    try:
        doc = yaml.safe_load(WORKFLOW.read_text()) or {}
    except yaml.YAMLError as e:
        report.fail(w, f"not valid YAML: {e}")
        return
    trigger = doc.get("on", doc.get(True)) or {}  # YAML 1.1 reads a bare `on` as true
    report.check("v*" in (dig(trigger, "push", "tags") or []), w, "must run on push of tags v*")
    steps = [(job, s) for job, j in (doc.get("jobs") or {}).items() for s in j.get("steps") or []]
    runs = "\n".join(str(s.get("run", "")) for _, s in steps)
    for needle, why in [
        ("scripts/build-plugins.sh --langs none", "build the example plugins"),
        ("--profile dist", "build the binary with the dist profile"),
        ("scripts/release.sh", "package with scripts/release.sh"),
        ('--tag "$GITHUB_REF_NAME"', "pass the tag to release.sh (it must name host/Cargo.toml's version)"),
        ("dist/SHA256SUMS", "publish SHA256SUMS beside the archive"),
        ("gh release create", "create the GitHub release"),
    ]:
        report.check(needle in runs, w, f"a step must {why} (`{needle}`)")
    for job, s in steps:
        report.check(s.get("name"), w, f"job {job}: every step needs a name")
    pushes = [s for _, s in steps if str(s.get("uses", "")).startswith("docker/build-push-action@")]
    if report.check(pushes, w, "a step must build the image with docker/build-push-action"):
        with_ = pushes[0].get("with") or {}
        report.check(with_.get("file") == "deploy/Dockerfile", w, "the image builds from deploy/Dockerfile")
        report.check(with_.get("push") is True, w, "the image must be pushed")
        build_args = str(with_.get("build-args") or "").splitlines()
        report.check(
            "TOOLHOST_COMMIT=${{ github.sha }}" in [a.strip() for a in build_args],
            w,
            "the image build must pass `build-args: TOOLHOST_COMMIT=${{ github.sha }}`, or the image's "
            "`toolhost --version` says unknown commit",
        )
    meta = [s for _, s in steps if str(s.get("uses", "")).startswith("docker/metadata-action@")]
    report.check(
        meta and str(dig(meta[0], "with", "images")).startswith("ghcr.io/"), w, "the image goes to ghcr.io"
    )
    report.check(
        dig(doc, "jobs", "image", "permissions", "packages") == "write",
        w,
        "the image job needs packages: write",
    )


def check_release(report: Report, binary: Path) -> None:
    """scripts/release.sh packages the binary and the example plugins; the archive unpacks to the
    promised layout, its checksums hold, and the unpacked binary runs and loads the plugins."""
    plugins = Path(os.environ.get("TOOLHOST_PLUGINS_DIR", ROOT / "plugins"))
    w = "scripts/release.sh"
    missing = [p for p in EXAMPLES if not (plugins / f"{p}.wasm").is_file()]
    if missing:
        why = f"{plugins} lacks {', '.join(missing)} (scripts/build-plugins.sh)"
        if os.environ.get("TOOLHOST_REQUIRE_SERVICES") == "1":
            report.fail(w, why)
        else:
            print(f"SKIP (f) {w}: {why}")
        return
    version = cargo_version()
    name = f"toolhost-{version}-{TRIPLE}"
    with tempfile.TemporaryDirectory(prefix="toolhost-deploy-release-") as tmp:
        tmp = Path(tmp)
        # The dist profile strips its binary; a stripped copy of the release build packs in seconds
        # (the release build's line tables make it 287 MB).
        stripped = tmp / "toolhost"
        subprocess.run(["strip", "-o", str(stripped), str(binary)], check=True)
        out = tmp / "out"
        script = str(ROOT / "scripts" / "release.sh")
        command = [script, "--binary", str(stripped), "--plugins", str(plugins), "--out", str(out)]
        wrong = subprocess.run(
            command + ["--tag", "v0.0.0-not-this"], capture_output=True, text=True, timeout=60
        )
        report.check(
            wrong.returncode != 0 and "v0.0.0-not-this" in wrong.stderr,
            w,
            "accepted a tag that is not the version",
        )
        print(f"(f) $ {shlex.join(command + ['--tag', f'v{version}'])}")
        run = subprocess.run(command + ["--tag", f"v{version}"], capture_output=True, text=True, timeout=300)
        for line in (run.stdout + run.stderr).strip().splitlines():
            print(f"    | {line}")
        if not report.check(run.returncode == 0, w, f"exited {run.returncode}"):
            return
        archive = out / f"{name}.tar.gz"
        if not report.check(archive.is_file(), w, f"no {archive.name} in --out"):
            return
        sums = (out / "SHA256SUMS").read_text().split()
        report.check(
            sums == [hashlib.sha256(archive.read_bytes()).hexdigest(), archive.name],
            w,
            "SHA256SUMS beside the archive does not match it",
        )
        with tarfile.open(archive) as tar:
            members = {m.name: m for m in tar.getmembers()}
            report.check(
                all(n == name or n.startswith(name + "/") for n in members),
                w,
                f"every entry must be under {name}/",
            )
            files = {n[len(name) + 1 :] for n, m in members.items() if m.isfile()}
            expected = {"toolhost", "README.md", "SHA256SUMS"} | {f"plugins/{p}.wasm" for p in EXAMPLES}
            report.check(files == expected, w, f"archive files {sorted(files)}, expected {sorted(expected)}")
            report.check(
                all(m.uid == 0 and m.gid == 0 for m in members.values()), w, "entries must be owned by 0:0"
            )
            # Entries were checked above; the "data" filter where this Python has it (3.11.4 on).
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(tmp / "unpacked", **safe)
        top = tmp / "unpacked" / name
        listed = {}
        for line in (top / "SHA256SUMS").read_text().splitlines():
            digest, _, file = line.partition("  ")
            listed[file] = digest
        report.check(set(listed) == expected - {"SHA256SUMS"}, w, f"SHA256SUMS lists {sorted(listed)}")
        for file, digest in listed.items():
            report.check(
                hashlib.sha256((top / file).read_bytes()).hexdigest() == digest,
                w,
                f"{file}: checksum mismatch",
            )
        report.check(os.access(top / "toolhost", os.X_OK), w, "the unpacked toolhost is not executable")
        version_run = subprocess.run(
            [str(top / "toolhost"), "--version"], capture_output=True, text=True, timeout=30
        )
        report.check(
            re.fullmatch(
                rf"toolhost {re.escape(version)} \(commit [0-9a-f]{{12}}(-dirty)?, \d{{4}}-\d{{2}}-\d{{2}}\)",
                version_run.stdout.strip(),
            )
            is not None,
            w,
            f"the unpacked `toolhost --version` says {version_run.stdout.strip()!r}, "
            f"expected 'toolhost {version} (commit <12 hex>, <date>)'",
        )
        print(
            f"    unpacked: {len(files)} files, checksums ok; ./toolhost --version: {version_run.stdout.strip()}"
        )
        # The unpacked binary loads the unpacked plugins (its compile cache under the temp dir).
        (tmp / "cfg").mkdir()
        (tmp / "cfg" / "toolhost.toml").write_text(
            f'[cache]\ndir = "{tmp / "cache"}"\n[audit]\npath = "{tmp / "audit.jsonl"}"\n'
        )
        list_run = subprocess.run(
            [
                str(top / "toolhost"),
                "--config",
                str(tmp / "cfg" / "toolhost.toml"),
                "--plugins",
                str(top / "plugins"),
                "list",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        try:
            plugins_status = {k: v.get("status") for k, v in json.loads(list_run.stdout)["plugins"].items()}
        except (json.JSONDecodeError, KeyError, AttributeError):
            plugins_status = {}
        report.check(
            list_run.returncode == 0 and all(plugins_status.get(p) == "loaded" for p in EXAMPLES),
            w,
            f"the unpacked toolhost should load the unpacked plugins: {plugins_status or list_run.stderr.strip()}",
        )
        print(
            f"    ./toolhost --plugins plugins list: {', '.join(f'{k} {v}' for k, v in sorted(plugins_status.items()))}"
        )


# --- main -----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config-only",
        action="store_true",
        help="only (d) and (e): the overlays' toolhost.toml and init containers in $TOOLHOST_BIN",
    )
    args = parser.parse_args()
    report = Report()

    rendered = {overlay: render_overlay(report, overlay) for overlay in overlays()}
    report.check(rendered, "deploy/kubernetes/overlays", "no overlay found")
    if not args.config_only:
        import kubernetes_validate

        def step(title: str, run) -> None:
            print(title)
            before = len(report.failures)
            run()
            print(f"    {'ok' if len(report.failures) == before else 'FAILED'}")

        names = ", ".join(o.relative_to(MANIFESTS).as_posix() for o in rendered)
        step(
            f"(a) kubernetes-validate {kubernetes_validate.__version__}, Kubernetes {KUBERNETES} schemas, "
            f"strict, every object of {names} (rendered by tests/deploy/render.py)",
            lambda: [check_schemas(report, objects) for objects in rendered.values()],
        )
        step(
            "(b) production properties and cross-references, per overlay; the renderer against kubectl kustomize",
            lambda: (
                check_kustomizations(report),
                [check_properties(report, objects) for objects in rendered.values()],
                check_oauth_overlay(report),
                [check_against_kubectl(report, o, objects) for o, objects in rendered.items()],
            ),
        )
        every = {k: v for objects in rendered.values() for k, v in objects.items()}
        step("(c) deploy/Dockerfile", lambda: check_dockerfile(report, every))
        configs = {
            o.relative_to(MANIFESTS).as_posix(): (c, objects, shared_store(c))
            for o, objects in rendered.items()
            for c in [scrape.parse_config(config_text(objects))]
        }
        step("(c) deploy/prometheus", lambda: scrape.check(report, configs, PORT))
        step("(c) .github/workflows/release.yml", lambda: check_workflow(report))

    binary = binary_or_skip(report, required=args.config_only)
    if binary is not None:
        for overlay, objects in rendered.items():
            check_binary(report, binary, overlay, objects)
        for overlay, objects in rendered.items():
            check_registry_plugins(report, binary, overlay, objects)
        if not args.config_only:
            check_release(report, binary)

    if report.failures:
        print(f"tests/deploy: {len(report.failures)} check(s) failed")
        return 1
    print("tests/deploy: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
