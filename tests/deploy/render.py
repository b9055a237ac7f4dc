"""A small, offline kustomize: renders deploy/kubernetes/overlays/* the way `kubectl apply -k` does,
for the subset of kustomize the overlays use, and refuses everything else.

Supported in a Kustomization (or a Component): `resources` (files, or folders holding a
kustomization), `components`, `patches` with a `path` (strategic merge), `configMapGenerator` with
`files` (behavior create or replace) and `generatorOptions` with `disableNameSuffixHash: true` and
`labels`, `images` (`newName`, `newTag`) and `namespace`. Any other key is an error, so that an
overlay cannot silently use something this renderer would ignore. check.py compares the result with
`kubectl kustomize` where kubectl is installed.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

KNOWN_KEYS = {
    "apiVersion",
    "kind",
    "namespace",
    "resources",
    "components",
    "patches",
    "configMapGenerator",
    "generatorOptions",
    "images",
}
# Lists that strategic merge patches merge element by element, by this key (as the Kubernetes API
# declares them: patchMergeKey); every other list is replaced whole.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "envFrom": None,  # replaced (no merge key in the API)
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass"}


class RenderError(Exception):
    """The kustomization uses something this renderer does not do, or is broken."""


def render(directory: Path) -> list[dict]:
    """The objects `kubectl kustomize DIRECTORY` would print, in no particular order."""
    return _kustomization(directory, [], component=False)


def _load_kustomization(directory: Path, component: bool) -> dict:
    path = directory / "kustomization.yaml"
    if not path.is_file():
        raise RenderError(f"{directory}: no kustomization.yaml")
    k = yaml.safe_load(path.read_text()) or {}
    unknown = set(k) - KNOWN_KEYS
    if unknown:
        raise RenderError(f"{path}: this renderer does not support {sorted(unknown)}")
    want = "Component" if component else "Kustomization"
    if k.get("kind", "Kustomization") != want:
        raise RenderError(f"{path}: kind {k.get('kind')!r}, expected {want}")
    return k


def _kustomization(directory: Path, objects: list[dict], component: bool) -> list[dict]:
    k = _load_kustomization(directory, component)
    objects = list(objects)
    for entry in k.get("resources") or []:
        target = directory / entry
        if target.is_dir():
            objects += _kustomization(target, [], component=False)
        elif target.is_file():
            objects += [d for d in yaml.safe_load_all(target.read_text()) if d is not None]
        else:
            raise RenderError(f"{directory}/kustomization.yaml: resource {entry} does not exist")
    objects = _generate(directory, k, objects)
    for entry in k.get("components") or []:
        objects = _kustomization(directory / entry, objects, component=True)
    for patch in k.get("patches") or []:
        if set(patch) != {"path"}:
            raise RenderError(f"{directory}: only `patches: - path: FILE` is supported, got {patch}")
        body = yaml.safe_load((directory / patch["path"]).read_text())
        _apply_patch(directory, objects, body)
    for image in k.get("images") or []:
        _set_image(objects, image)
    if "namespace" in k:
        for obj in objects:
            if obj.get("kind") not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = k["namespace"]
    return objects


def _generate(directory: Path, k: dict, objects: list[dict]) -> list[dict]:
    generators = k.get("configMapGenerator") or []
    if not generators:
        return objects
    options = k.get("generatorOptions") or {}
    if options.get("disableNameSuffixHash") is not True or set(options) - {"disableNameSuffixHash", "labels"}:
        raise RenderError(f"{directory}: generatorOptions must be disableNameSuffixHash: true (and labels)")
    for gen in generators:
        if set(gen) - {"name", "files", "behavior"}:
            raise RenderError(
                f"{directory}: configMapGenerator supports name, files, behavior; got {sorted(gen)}"
            )
        data = {}
        for f in gen.get("files") or []:
            key, _, file = f.partition("=") if "=" in f else (Path(f).name, "", f)
            data[key] = (directory / file).read_text()
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": gen["name"]},
            "data": data,
        }
        if options.get("labels"):
            cm["metadata"]["labels"] = dict(options["labels"])
        behavior = gen.get("behavior", "create")
        same = [o for o in objects if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == gen["name"]]
        if behavior == "create":
            if same:
                raise RenderError(
                    f"{directory}: ConfigMap {gen['name']} exists already (use behavior: replace)"
                )
            objects = objects + [cm]
        elif behavior == "replace":
            if len(same) != 1:
                raise RenderError(
                    f"{directory}: behavior: replace, but no ConfigMap {gen['name']} to replace"
                )
            same[0]["data"] = data
        else:
            raise RenderError(f"{directory}: configMapGenerator behavior {behavior!r} is not supported")
    return objects


def _apply_patch(directory: Path, objects: list[dict], patch: dict) -> None:
    kind, name = patch.get("kind"), (patch.get("metadata") or {}).get("name")
    targets = [o for o in objects if o.get("kind") == kind and o["metadata"].get("name") == name]
    if len(targets) != 1:
        raise RenderError(f"{directory}: the patch for {kind}/{name} matches {len(targets)} objects")
    merged = merge(targets[0], patch)
    targets[0].clear()
    targets[0].update(merged)


def merge(base: object, patch: object, field: str | None = None) -> object:
    """A strategic merge of `patch` into `base` (both left unchanged): maps merge key by key, a
    None value deletes the key, lists named in MERGE_KEYS merge by their key, other lists replace."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value, key)
            else:
                out[key] = copy.deepcopy(value)
        return out
    key = MERGE_KEYS.get(field or "")
    if isinstance(base, list) and isinstance(patch, list) and key:
        out = copy.deepcopy(base)
        for item in patch:
            match = [i for i, b in enumerate(out) if isinstance(b, dict) and b.get(key) == item.get(key)]
            if match:
                out[match[0]] = merge(out[match[0]], item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def _set_image(objects: list[dict], image: dict) -> None:
    if set(image) - {"name", "newName", "newTag"}:
        raise RenderError(f"images: only name, newName, newTag are supported, got {sorted(image)}")
    for obj in objects:
        pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
            ref = c.get("image", "")
            name, tag = ref, None
            if ":" in ref.rsplit("/", 1)[-1]:
                name, tag = ref.rsplit(":", 1)
            if name != image["name"]:
                continue
            new = image.get("newName", name)
            tag = image.get("newTag", tag)
            c["image"] = f"{new}:{tag}" if tag else new


def canonical(objects: list[dict]) -> dict[str, object]:
    """Objects by kind/namespace/name, with the lists MERGE_KEYS names sorted by their key, so that
    two renderings compare equal whatever order they put merged elements in."""

    def norm(value: object, field: str | None = None) -> object:
        if isinstance(value, dict):
            return {k: norm(v, k) for k, v in value.items()}
        if isinstance(value, list):
            items = [norm(v) for v in value]
            key = MERGE_KEYS.get(field or "")
            if key and all(isinstance(i, dict) for i in items):
                items.sort(key=lambda i: str(i.get(key)))
            return items
        return value

    out = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        out[f"{obj.get('kind')}/{meta.get('namespace', '')}/{meta.get('name')}"] = norm(obj)
    return out
