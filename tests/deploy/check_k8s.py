#!/usr/bin/env python3
"""Structural check of perfcast's Kubernetes manifests (deploy/k8s).

  check_k8s.py K8S_DIR            every kustomization and every full manifest
  check_k8s.py K8S_DIR --render   also each kustomization as `kubectl kustomize`
                                  renders it (exit 77: no kubectl here)

Not a schema validator: it checks what a typo or a half-done edit breaks and
what perfcast relies on -- kinds and API versions, required fields, selectors
that match their pod labels, containers with images, resources, probes and a
locked-down security context, volumes and env references that resolve, the
agent DaemonSet confined to GPU nodes, and SQLite's single writer (a
Deployment on a PersistentVolumeClaim has one replica and the Recreate
strategy). Prints one line per problem; exit 1 if there is any.
"""
import os
import re
import shutil
import subprocess
import sys

import yaml

API_VERSIONS = {
    "Namespace": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Service": "v1",
    "PersistentVolumeClaim": "v1",
    "Deployment": "apps/v1",
    "DaemonSet": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
}
KUSTOMIZE_KINDS = {
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
    "Component": "kustomize.config.k8s.io/v1alpha1",
}
DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
GPU_RESOURCE = "nvidia.com/gpu"


class Checker:
    def __init__(self):
        self.problems = []
        self.patches = set()

    def fail(self, where, message):
        self.problems.append(f"{where}: {message}")

    # --- kustomizations -------------------------------------------------
    def kustomization(self, path, doc):
        directory = os.path.dirname(path)
        kind = doc.get("kind")
        if KUSTOMIZE_KINDS.get(kind) != doc.get("apiVersion"):
            self.fail(path, f"kind {kind!r} with apiVersion {doc.get('apiVersion')!r} is not a kustomization")
        referenced = set()
        for field in ("resources", "components"):
            for entry in doc.get(field) or []:
                target = os.path.normpath(os.path.join(directory, entry))
                if os.path.isdir(target):
                    if not os.path.isfile(os.path.join(target, "kustomization.yaml")):
                        self.fail(path, f"{field} entry {entry!r} is a directory without kustomization.yaml")
                elif os.path.isfile(target):
                    referenced.add(target)
                else:
                    self.fail(path, f"{field} entry {entry!r} does not exist")
        for patch in doc.get("patches") or []:
            if "path" not in patch and "patch" not in patch:
                self.fail(path, "a patch has neither path nor patch")
            if "path" in patch:
                target = os.path.normpath(os.path.join(directory, patch["path"]))
                if not os.path.isfile(target):
                    self.fail(path, f"patch {patch['path']!r} does not exist")
                referenced.add(target)
        # A manifest nobody references is a forgotten edit.
        for name in sorted(os.listdir(directory)):
            full = os.path.join(directory, name)
            if name.endswith((".yaml", ".yml")) and name != "kustomization.yaml" and full not in referenced:
                self.fail(full, "not referenced by the kustomization.yaml next to it")
        patches = self.patch_targets(directory, doc)
        self.patches |= patches
        return {p for p in referenced if p not in patches}

    @staticmethod
    def patch_targets(directory, doc):
        return {os.path.normpath(os.path.join(directory, p["path"])) for p in doc.get("patches") or [] if "path" in p}

    # --- manifests --------------------------------------------------------
    def manifests(self, located):
        """Checks full manifests, (file, document) pairs, cross-checking references among them."""
        docs = [doc for _, doc in located if isinstance(doc, dict)]
        config_maps = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ConfigMap" and "metadata" in d}
        workloads = []
        for where, doc in located:
            if not isinstance(doc, dict):
                self.fail(where, "a document is not a mapping")
                continue
            kind = doc.get("kind")
            name = (doc.get("metadata") or {}).get("name")
            at = f"{where}: {kind}/{name}"
            if kind not in API_VERSIONS:
                self.fail(at, "unknown kind (the check knows " + ", ".join(sorted(API_VERSIONS)) + ")")
                continue
            if doc.get("apiVersion") != API_VERSIONS[kind]:
                self.fail(at, f"apiVersion {doc.get('apiVersion')!r}, expected {API_VERSIONS[kind]!r}")
            if not name or not DNS_NAME.match(name):
                self.fail(at, "metadata.name missing or not a DNS label")
            check = getattr(self, "check_" + kind, None)
            if check:
                check(at, doc, config_maps)
            if kind in ("Deployment", "DaemonSet"):
                workloads.append(doc)
        for where, doc in located:
            if isinstance(doc, dict) and doc.get("kind") == "Service":
                self.service_targets(f"{where}: Service/{doc['metadata'].get('name')}", doc, workloads)

    def patch(self, path, doc):
        """A strategic-merge patch that moves perfcastd onto a volume claim must make it SQLite-safe."""
        if not isinstance(doc, dict) or doc.get("kind") != "Deployment":
            return
        spec = doc.get("spec") or {}
        volumes = ((spec.get("template") or {}).get("spec") or {}).get("volumes") or []
        if any("persistentVolumeClaim" in v for v in volumes):
            if spec.get("replicas") != 1:
                self.fail(path, "puts the Deployment on a PersistentVolumeClaim without replicas: 1 (SQLite has one writer)")
            if (spec.get("strategy") or {}).get("type") != "Recreate":
                self.fail(path, "puts the Deployment on a PersistentVolumeClaim without strategy Recreate")

    def check_ConfigMap(self, at, doc, _):
        for key, value in (doc.get("data") or {}).items():
            if not isinstance(value, str):
                self.fail(at, f"data.{key} is not a string (quote it)")

    def check_Secret(self, at, doc, _):
        if not doc.get("type"):
            self.fail(at, "no type")
        values = {**(doc.get("data") or {}), **(doc.get("stringData") or {})}
        if not values:
            self.fail(at, "neither data nor stringData")
        for key, value in values.items():
            if not isinstance(value, str):
                self.fail(at, f"{key} is not a string")

    def check_PersistentVolumeClaim(self, at, doc, _):
        spec = doc.get("spec") or {}
        if not spec.get("accessModes"):
            self.fail(at, "no spec.accessModes")
        if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
            self.fail(at, "no spec.resources.requests.storage")

    def check_PodDisruptionBudget(self, at, doc, _):
        spec = doc.get("spec") or {}
        if not (spec.get("selector") or {}).get("matchLabels"):
            self.fail(at, "no spec.selector.matchLabels")
        if "minAvailable" not in spec and "maxUnavailable" not in spec:
            self.fail(at, "neither minAvailable nor maxUnavailable")

    def check_Service(self, at, doc, _):
        spec = doc.get("spec") or {}
        if not spec.get("selector"):
            self.fail(at, "no spec.selector")
        ports = spec.get("ports") or []
        if not ports:
            self.fail(at, "no spec.ports")
        for port in ports:
            if not port.get("name") or not isinstance(port.get("port"), int):
                self.fail(at, f"port {port} needs a name and a numeric port")
        annotations = (doc.get("metadata") or {}).get("annotations") or {}
        if annotations.get("prometheus.io/scrape") == "true":
            scrape = annotations.get("prometheus.io/port")
            if scrape not in {str(p.get("port")) for p in ports}:
                self.fail(at, f"prometheus.io/port {scrape!r} is not one of its ports")

    def service_targets(self, at, service, workloads):
        selector = (service.get("spec") or {}).get("selector") or {}
        matching = [w for w in workloads if self.selects(selector, self.template_labels(w))]
        if not matching:
            self.fail(at, f"selector {selector} matches no Deployment or DaemonSet here")
            return
        port_names = {p.get("name") for w in matching for c in self.containers(w) for p in c.get("ports") or []}
        port_numbers = {p.get("containerPort") for w in matching for c in self.containers(w) for p in c.get("ports") or []}
        for port in (service.get("spec") or {}).get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            if target not in port_names and target not in port_numbers:
                self.fail(at, f"targetPort {target!r} is no container port of the selected pods")

    def check_Deployment(self, at, doc, config_maps):
        self.workload(at, doc, config_maps)
        spec = doc.get("spec") or {}
        replicas = spec.get("replicas", 1)
        volumes = (spec.get("template") or {}).get("spec", {}).get("volumes") or []
        if any("persistentVolumeClaim" in v for v in volumes):
            # SQLite on a ReadWriteOnce volume: one writer, never two pods at once.
            if replicas != 1:
                self.fail(at, f"on a PersistentVolumeClaim but {replicas} replicas (SQLite has one writer)")
            if (spec.get("strategy") or {}).get("type") != "Recreate":
                self.fail(at, "on a PersistentVolumeClaim without strategy Recreate")
        for container in self.containers(doc):
            for probe in ("readinessProbe", "livenessProbe"):
                if probe not in container:
                    self.fail(at, f"container {container.get('name')} has no {probe}")
            db = next((e for e in container.get("env") or [] if e.get("name") == "PERFCAST_DB"), None)
            if db and str(db.get("value", "")).startswith("sqlite") and replicas != 1:
                self.fail(at, f"{replicas} replicas on SQLite (use PostgreSQL for more than one)")

    def check_DaemonSet(self, at, doc, config_maps):
        self.workload(at, doc, config_maps)
        pod = (doc.get("spec") or {}).get("template", {}).get("spec") or {}
        if (pod.get("nodeSelector") or {}).get("nvidia.com/gpu.present") != "true":
            self.fail(at, "no nodeSelector nvidia.com/gpu.present: \"true\"")
        if not any(t.get("key") == GPU_RESOURCE for t in pod.get("tolerations") or []):
            self.fail(at, f"no toleration for {GPU_RESOURCE}")
        for container in self.containers(doc):
            limits = (container.get("resources") or {}).get("limits") or {}
            if GPU_RESOURCE not in limits:
                self.fail(at, f"container {container.get('name')} has no {GPU_RESOURCE} limit")

    def workload(self, at, doc, config_maps):
        spec = doc.get("spec") or {}
        match = (spec.get("selector") or {}).get("matchLabels") or {}
        if not match:
            self.fail(at, "no spec.selector.matchLabels")
        elif not self.selects(match, self.template_labels(doc)):
            self.fail(at, f"selector {match} does not match the pod template labels {self.template_labels(doc)}")
        pod = (spec.get("template") or {}).get("spec") or {}
        if not (pod.get("securityContext") or {}).get("runAsNonRoot"):
            self.fail(at, "pod securityContext.runAsNonRoot is not true")
        containers = self.containers(doc)
        if not containers:
            self.fail(at, "no containers")
        volumes = {v.get("name") for v in pod.get("volumes") or []}
        mounted = set()
        for c in containers:
            where = f"{at}: container {c.get('name')}"
            if not c.get("name") or not c.get("image"):
                self.fail(where, "needs a name and an image")
            resources = c.get("resources") or {}
            for part in ("requests", "limits"):
                if not resources.get(part):
                    self.fail(where, f"no resources.{part}")
            security = c.get("securityContext") or {}
            if security.get("allowPrivilegeEscalation") is not False:
                self.fail(where, "securityContext.allowPrivilegeEscalation is not false")
            if security.get("readOnlyRootFilesystem") is not True:
                self.fail(where, "securityContext.readOnlyRootFilesystem is not true")
            for mount in c.get("volumeMounts") or []:
                mounted.add(mount.get("name"))
                if mount.get("name") not in volumes:
                    self.fail(where, f"mounts volume {mount.get('name')!r}, which the pod does not have")
            env = c.get("env") or []
            defined = {e.get("name") for e in env}
            for arg in (c.get("args") or []) + (c.get("command") or []):
                for var in VAR_REF.findall(str(arg)):
                    if var not in defined:
                        self.fail(where, f"argument {arg!r} refers to $({var}), which is not in env")
            for e in env:
                ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
                if ref and ref.get("name") in config_maps:
                    if ref.get("key") not in (config_maps[ref["name"]].get("data") or {}):
                        self.fail(where, f"env {e.get('name')} wants key {ref.get('key')!r}, "
                                         f"not in ConfigMap {ref['name']}")
                if "value" in e and "valueFrom" in e:
                    self.fail(where, f"env {e.get('name')} has both value and valueFrom")
            ports = {p.get("name") for p in c.get("ports") or []} | {p.get("containerPort") for p in c.get("ports") or []}
            for probe_name in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = c.get(probe_name)
                if not probe:
                    continue
                handlers = [h for h in ("grpc", "httpGet", "tcpSocket", "exec") if h in probe]
                if len(handlers) != 1:
                    self.fail(where, f"{probe_name} needs exactly one handler, has {handlers}")
                    continue
                port = probe[handlers[0]].get("port") if handlers[0] != "exec" else None
                if handlers[0] != "exec" and port not in ports:
                    self.fail(where, f"{probe_name} probes port {port!r}, which the container does not declare")
        for unused in sorted(volumes - mounted):
            self.fail(at, f"volume {unused!r} is mounted by no container")

    @staticmethod
    def containers(doc):
        return ((doc.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []

    @staticmethod
    def template_labels(doc):
        return ((doc.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}

    @staticmethod
    def selects(selector, labels):
        return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def load(path, checker):
    try:
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        checker.fail(path, f"not YAML: {e}")
        return []


def main(argv):
    if len(argv) < 2 or not os.path.isdir(argv[1]):
        print("usage: check_k8s.py K8S_DIR [--render]", file=sys.stderr)
        return 2
    root, render = argv[1], "--render" in argv[2:]
    checker = Checker()
    kustomizations, resources, standalone = [], set(), []
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(directory, name)
            if name == "kustomization.yaml":
                kustomizations.append(path)
            elif name.endswith((".yaml", ".yml")) and not os.path.isfile(os.path.join(directory, "kustomization.yaml")):
                standalone.append(path)  # e.g. secrets.example.yaml
    if not kustomizations:
        checker.fail(root, "no kustomization.yaml")
    for path in kustomizations:
        for doc in load(path, checker):
            resources |= checker.kustomization(path, doc)
    checker.manifests([(path, doc) for path in sorted(resources) for doc in load(path, checker)])
    for path in sorted(checker.patches):
        for doc in load(path, checker):
            checker.patch(path, doc)
    for path in standalone:
        checker.manifests([(path, doc) for doc in load(path, checker)])

    if render:
        kubectl = shutil.which("kubectl")
        if not kubectl:
            print("check_k8s: no kubectl here; rendering not checked")
            return 77
        for path in kustomizations:
            directory = os.path.dirname(path)
            docs = load(path, checker)
            if not docs or docs[0].get("kind") != "Kustomization":
                continue  # components render only inside an overlay
            result = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True)
            if result.returncode != 0:
                checker.fail(directory, "kubectl kustomize failed: " + result.stderr.strip())
                continue
            rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
            checker.manifests([(f"{directory} (rendered)", d) for d in rendered])
            namespaces = {d["metadata"]["name"] for d in rendered if d.get("kind") == "Namespace"}
            for d in rendered:
                if d.get("kind") != "Namespace" and d["metadata"].get("namespace") not in namespaces:
                    checker.fail(f"{directory} (rendered)",
                                 f"{d['kind']}/{d['metadata']['name']} is not in a namespace the kustomization creates")

    for problem in checker.problems:
        print(problem)
    print(f"check_k8s: {len(kustomizations)} kustomizations, {len(resources) + len(standalone)} manifest files, "
          f"{len(checker.problems)} problems")
    return 1 if checker.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
