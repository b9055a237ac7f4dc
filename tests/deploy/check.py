"""Offline checks of the deployment files in deploy/: no cluster, no Docker daemon, no network.

    tests/deploy/run.sh                  # all of it, in the repository's venv (what CI runs)
    python tests/deploy/check.py         # the same, with kubernetes-validate and PyYAML installed
    python tests/deploy/check.py --config-only   # only (d), with TOOLHOST_BIN set

(a) every manifest in deploy/kubernetes (kustomization.yaml aside) validates, strictly (unknown fields
    are errors), against the Kubernetes OpenAPI schemas kubernetes-validate ships for KUBERNETES;
(b) the production properties the manifests promise hold, and the objects refer to each other
    correctly (names, selectors, ports, the config's env vars and paths);
(c) deploy/Dockerfile is multi-stage and its runtime stage runs as a numeric non-root user;
(d) when TOOLHOST_BIN names an executable, the ConfigMap's toolhost.toml loads in that binary
    (`toolhost list`), with placeholder values for the Secret's variables.

Each violation is printed as one FAIL line naming the file, the object and the rule; the exit
status is 1 when any check failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MANIFESTS = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "Dockerfile"
# The Kubernetes release whose schemas the manifests are checked against. Every field used here
# exists since 1.27 or earlier; validating against an older supported minor than the newest keeps
# the files usable on clusters that lag behind.
KUBERNETES = "1.33.0"

NAME_LABEL = "app.kubernetes.io/name"
APP = "toolhost"
UID = 10001
STATE_DIR = "/var/lib/toolhost"
CONFIG_DIR = "/etc/toolhost"
CONFIG_KEY = "toolhost.toml"
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


def load_manifests(report: Report) -> dict[str, dict]:
    """file name -> its one object, for every manifest but kustomization.yaml."""
    objects: dict[str, dict] = {}
    for path in sorted(MANIFESTS.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except yaml.YAMLError as e:
            report.fail(path.name, f"not valid YAML: {e}")
            continue
        if report.check(len(docs) == 1, path.name, f"one object per file, found {len(docs)}"):
            objects[path.name] = docs[0]
    return objects


def where(file: str, obj: dict) -> str:
    return f"{file}: {obj.get('kind')}/{dig(obj, 'metadata', 'name')}"


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
    if report.check(len(found) == 1, "deploy/kubernetes", f"exactly one {kind}, found {len(found)}"):
        return found[0]
    return None


def selects(selector: object, labels: dict) -> bool:
    """A matchLabels selector (the only form used here) that is non-empty and matches `labels`."""
    return (
        isinstance(selector, dict) and bool(selector) and all(labels.get(k) == v for k, v in selector.items())
    )


def check_kustomization(report: Report, objects: dict[str, dict]) -> str | None:
    """Every listed file exists and every manifest is listed; returns the namespace."""
    file = "kustomization.yaml"
    path = MANIFESTS / file
    if not report.check(path.is_file(), file, "missing"):
        return None
    k = yaml.safe_load(path.read_text()) or {}
    listed = k.get("resources") or []
    for name in listed:
        report.check((MANIFESTS / name).is_file(), file, f"lists {name}, which does not exist")
    on_disk = {p.name for p in MANIFESTS.glob("*.yaml")} - {file}
    for name in sorted(on_disk - set(listed)):
        report.fail(file, f"{name} is not listed in resources, so `kubectl apply -k` skips it")
    return k.get("namespace")


def check_config(report: Report, objects: dict[str, dict]) -> tuple[dict | None, str | None]:
    """The ConfigMap holds a toolhost.toml that parses; returns it and the ConfigMap's name."""
    found = one(report, objects, "ConfigMap")
    if found is None:
        return None, None
    file, cm = found
    w = where(file, cm)
    text = dig(cm, "data", CONFIG_KEY)
    if not report.check(isinstance(text, str), w, f"data.{CONFIG_KEY} missing"):
        return None, cm["metadata"]["name"]
    try:
        return tomllib.loads(text), cm["metadata"]["name"]
    except tomllib.TOMLDecodeError as e:
        report.fail(w, f"data.{CONFIG_KEY} is not valid TOML: {e}")
        return None, cm["metadata"]["name"]


def check_properties(report: Report, objects: dict[str, dict]) -> None:
    for file, obj in objects.items():
        report.check(
            dig(obj, "metadata", "labels", NAME_LABEL) == APP,
            where(file, obj),
            f"metadata.labels must carry {NAME_LABEL}: {APP}",
        )
    namespace = check_kustomization(report, objects)
    config, configmap_name = check_config(report, objects)
    config = config or {}
    server = config.get("server") or {}

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
    for setting, var in [
        ("server.token-env", server.get("token-env")),
        ("server.state-key-env", server.get("state-key-env")),
        ("state.url-env", dig(config, "state", "url-env")),
    ]:
        if report.check(var, "configmap.yaml", f"{setting} must be set"):
            report.check(
                var in secret_keys, "secret.yaml", f"{setting} names {var}, which the Secret does not define"
            )

    # The config's paths and address fit the pod.
    for setting, value in [
        ("audit.path", dig(config, "audit", "path")),
        ("cache.dir", dig(config, "cache", "dir")),
    ]:
        report.check(
            isinstance(value, str) and value.startswith(STATE_DIR + "/"),
            "configmap.yaml",
            f"{setting} = {value!r} must be under {STATE_DIR}, the only writable path",
        )
    http = str(server.get("http", ""))
    report.check(
        http == f"0.0.0.0:{PORT}", "configmap.yaml", f"server.http = {http!r}, expected 0.0.0.0:{PORT}"
    )
    report.check(config.get("limits"), "configmap.yaml", "a [limits] block is expected")

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
    report.check((spec.get("replicas") or 0) >= 3, w, "at least 3 replicas")
    report.check(dig(spec, "strategy", "type") == "RollingUpdate", w, "strategy must be RollingUpdate")
    report.check(
        dig(spec, "strategy", "rollingUpdate", "maxUnavailable") in (0, "0%"),
        w,
        "strategy.rollingUpdate.maxUnavailable must be 0",
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
    if report.check(sa, w, f"serviceAccountName {sa_name!r} names no ServiceAccount in deploy/kubernetes"):
        report.check(
            sa[0].get("automountServiceAccountToken") is False,
            "serviceaccount.yaml",
            "automountServiceAccountToken must be false",
        )

    # Volumes, by name.
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    config_volumes = {n for n, v in volumes.items() if dig(v, "configMap", "name") == configmap_name}
    report.check(config_volumes, w, f"no volume mounts the ConfigMap {configmap_name!r}")
    for n, v in volumes.items():
        if "configMap" in v and n not in config_volumes:
            report.fail(
                w, f"volume {n} names ConfigMap {dig(v, 'configMap', 'name')!r}, which does not exist"
            )

    containers = pod.get("containers") or []
    report.check(len(containers) == 1, w, f"one container expected, found {len(containers)}")
    for c in containers:
        cw = f"{w}: container {c.get('name')}"
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
        m = mounts.get(CONFIG_DIR)
        if report.check(
            m and m.get("name") in config_volumes, cw, f"the ConfigMap must be mounted at {CONFIG_DIR}"
        ):
            report.check(m.get("readOnly") is True, cw, f"{CONFIG_DIR} must be mounted readOnly")
        for path in (STATE_DIR, "/tmp"):
            m = mounts.get(path)
            report.check(
                m and "emptyDir" in volumes.get(m.get("name"), {}),
                cw,
                f"{path} must be an emptyDir (the root is read-only)",
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
        any(
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
            report.check(
                not missing, "configmap.yaml", f"server.allowed-hosts lacks the Service's names {missing}"
            )

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


# --- (d) the config in the real binary ------------------------------------------------------------


def check_binary(report: Report, required: bool) -> None:
    bin_env = os.environ.get("TOOLHOST_BIN", "")
    binary = Path(bin_env) if bin_env else None
    if binary is None or not (binary.is_file() and os.access(binary, os.X_OK)):
        why = (
            "TOOLHOST_BIN is unset" if binary is None else f"TOOLHOST_BIN={bin_env} is not an executable file"
        )
        if required:
            report.fail("config", f"{why}: --config-only needs the binary (cargo build --release)")
        else:
            print(f"SKIP (d) the ConfigMap's toolhost.toml in the binary: {why}")
        return
    cm = [o for o in load_manifests(Report()).values() if o.get("kind") == "ConfigMap"]
    text = dig(cm[0], "data", CONFIG_KEY) if cm else None
    if not report.check(isinstance(text, str), "configmap.yaml", f"no ConfigMap with data.{CONFIG_KEY}"):
        return
    with tempfile.TemporaryDirectory(prefix="toolhost-deploy-") as tmp:
        tmp_path = Path(tmp)
        # The pod's writable state dir becomes a temp dir, so that loading creates nothing outside it;
        # everything else is the file exactly as the pods read it.
        state = tmp_path / "state"
        state.mkdir()
        config = tmp_path / CONFIG_KEY
        config.write_text(text.replace(STATE_DIR, str(state)))
        plugins = tmp_path / "plugins"
        plugins.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHOST_")}
        env.update(PLACEHOLDER_ENV)
        command = [str(binary), "--config", str(config), "--plugins", str(plugins), "list"]
        print(
            f"(d) {' '.join(f'{k}={shlex.quote(v)}' for k, v in PLACEHOLDER_ENV.items())} {shlex.join(command)}"
        )
        print(f"    ({STATE_DIR} in the config rewritten to {state})")
        try:
            run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            report.fail("config", "toolhost list did not finish within 120 s")
            return
        for stream in (run.stdout, run.stderr):
            for line in stream.rstrip().splitlines():
                print(f"    | {line}")
        if report.check(
            run.returncode == 0,
            "config",
            f"`toolhost list` with the ConfigMap's toolhost.toml exited {run.returncode}, expected 0",
        ):
            print("    ok")


# --- main -----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config-only",
        action="store_true",
        help="only (d): load the ConfigMap's toolhost.toml in $TOOLHOST_BIN",
    )
    args = parser.parse_args()
    report = Report()

    if not args.config_only:
        objects = load_manifests(report)
        import kubernetes_validate

        print(
            f"(a) kubernetes-validate {kubernetes_validate.__version__}, Kubernetes {KUBERNETES} schemas, "
            f"strict: {', '.join(objects)}"
        )
        before = len(report.failures)
        check_schemas(report, objects)
        print(f"    {'ok' if len(report.failures) == before else 'FAILED'}")

        print("(b) production properties and cross-references")
        before = len(report.failures)
        check_properties(report, objects)
        print(f"    {'ok' if len(report.failures) == before else 'FAILED'}")

        print("(c) deploy/Dockerfile")
        before = len(report.failures)
        check_dockerfile(report, objects)
        print(f"    {'ok' if len(report.failures) == before else 'FAILED'}")

    check_binary(report, required=args.config_only)

    if report.failures:
        print(f"tests/deploy: {len(report.failures)} check(s) failed")
        return 1
    print("tests/deploy: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
