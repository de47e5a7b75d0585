#!/usr/bin/env python3
"""Generates the inputs of bench/http_filter.sh, deterministically (seed 42):

  --cluster FILE  a cluster file for `gpufair serve --cluster FILE`: multi-document YAML of Kubernetes
                  objects as `kubectl get -o yaml` prints them. N Nodes (status.allocatable
                  nvidia.com/gpu "8", 1% cordoned), PODS_PER_NODE Running Pods bound per node (GPU
                  requests of 4/2/1 filling 0..8 GPUs per node, the rest CPU-only), a few pending GPU
                  pods, and the quota ConfigMap (namespace gpufair-system, label
                  gpufair.io/quota-config: "true", key queues.yaml) with queues team-a..team-d.
  --body FILE     a /filter request body as kube-scheduler sends it with nodeCacheCapable: true:
                  {"Pod": <full v1.Pod JSON>, "NodeNames": [all N names], "Nodes": null}.
                  The pod is in namespace team-a (within its deserved quota) and requests --gpus GPUs.

The cluster layout matches bench/engine_bench.cc's (same shape, not the same random draws).
Only the standard library is used.
"""
import argparse
import json
import random
import sys

QUEUES = ["team-a", "team-b", "team-c", "team-d"]
NAMESPACES = QUEUES + ["research"]
T_CREATED = "2026-11-20T08:00:00Z"
T_STARTED = "2026-11-20T08:00:05Z"


def node_name(i):
    return "gpu-node-%05d" % i


def write_node(out, i):
    name = node_name(i)
    zone = "zone-b" if i % 2 else "zone-a"
    out.write(f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  uid: 6c1f0e7a-0000-4000-8000-{i:012d}
  resourceVersion: "{100000 + i}"
  creationTimestamp: "{T_CREATED}"
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: {name}
    kubernetes.io/os: linux
    node.kubernetes.io/instance-type: p4d.24xlarge
    nvidia.com/gpu.count: "8"
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
    topology.kubernetes.io/zone: {zone}
spec:
  podCIDR: 10.{(i >> 8) & 255}.{i & 255}.0/24
""")
    if i % 100 == 99:
        out.write("""  unschedulable: true
  taints:
  - effect: NoSchedule
    key: node.kubernetes.io/unschedulable
""")
    out.write(f"""status:
  capacity:
    cpu: "96"
    ephemeral-storage: 7499362Mi
    memory: 1176398208Ki
    nvidia.com/gpu: "8"
    pods: "110"
  allocatable:
    cpu: 95690m
    ephemeral-storage: "7076185076088"
    memory: 1162783104Ki
    nvidia.com/gpu: "8"
    pods: "110"
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    lastHeartbeatTime: "{T_STARTED}"
    lastTransitionTime: "{T_CREATED}"
  nodeInfo:
    architecture: amd64
    containerRuntimeVersion: containerd://1.7.11
    kubeletVersion: v1.29.3
    operatingSystem: linux
""")


def write_pod(out, seq, ns, gpus, node):
    kind = "train" if gpus else "svc"
    name = f"{kind}-{seq:06d}"
    out.write(f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  uid: 9b2d4c1e-0000-4000-8000-{seq:012d}
  resourceVersion: "{200000 + seq}"
  creationTimestamp: "{T_CREATED}"
  labels:
    app: {kind}
    pod-template-hash: 7d9f8c6b5
spec:
  schedulerName: gpufair
""")
    if node:
        out.write(f"  nodeName: {node}\n")
    out.write(f"""  restartPolicy: Always
  containers:
  - name: main
    image: nvcr.io/nvidia/pytorch:24.03-py3
    resources:
      requests:
        cpu: "4"
        memory: 32Gi
""")
    if gpus:
        out.write(f"""        nvidia.com/gpu: "{gpus}"
      limits:
        nvidia.com/gpu: "{gpus}"
""")
    if node:
        out.write(f"""status:
  phase: Running
  startTime: "{T_STARTED}"
""")
    else:
        out.write("""status:
  phase: Pending
""")


def write_quota(out, nodes):
    c = nodes * 8

    def q(name, deserved, limit):
        lim = f", limit: {limit}" if limit is not None else ""
        return (f"    - name: {name}\n      namespaces: [{name}, {name}-dev]\n"
                f"      gpu: {{deserved: {deserved}{lim}, overQuotaWeight: 1}}\n"
                f"      reclaimMinRuntime: 10m\n")

    out.write("""---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gpufair-queues
  namespace: gpufair-system
  labels:
    gpufair.io/quota-config: "true"
data:
  queues.yaml: |
    queues:
""")
    out.write(q("team-a", c * 30 // 100, c * 50 // 100))
    out.write(q("team-b", c * 25 // 100, None))
    out.write(q("team-c", c * 20 // 100, c * 30 // 100))
    out.write(q("team-d", c * 5 // 100, None))
    out.write("    defaultQueue: {gpu: {deserved: 0, overQuotaWeight: 1}}\n")


def write_cluster(path, nodes, pods_per_node):
    rng = random.Random(42)
    seq = 0
    with open(path, "w") as out:
        out.write(f"# gpufair bench cluster: {nodes} nodes x 8 GPUs, {pods_per_node} pods per node "
                  "(bench/gen_cluster.py)\n")
        write_quota(out, nodes)
        for i in range(nodes):
            write_node(out, i)
            left = rng.randint(0, 8)
            for _ in range(pods_per_node):
                gpus = 0
                if left > 0:
                    gpus = rng.choice([4, 2, 1])
                    while gpus > left:
                        gpus //= 2
                    left -= gpus
                write_pod(out, seq, rng.choice(NAMESPACES), gpus, node_name(i))
                seq += 1
            if i % 50 == 0:
                write_pod(out, seq, rng.choice(NAMESPACES), 1, None)
                seq += 1
    return seq


def filter_pod(gpus):
    """A pending pod as kube-scheduler sends it in ExtenderArgs.Pod (v1.Pod JSON, lower-case keys)."""
    uid = "3f0c9a52-7e1b-4d6a-9c3e-5b8f2a1d0e47"
    gpu = str(gpus)
    return {
        "metadata": {
            "name": "resnet50-train-7d9f8c6b5-x2k9q",
            "generateName": "resnet50-train-7d9f8c6b5-",
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": "48213377",
            "creationTimestamp": "2026-11-22T09:14:03Z",
            "labels": {"app": "resnet50-train", "pod-template-hash": "7d9f8c6b5",
                       "team": "vision"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-22T09:13:58Z"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "resnet50-train-7d9f8c6b5",
                "uid": "8e4b1f20-5c3d-4a7e-b6f9-0d2c8a1e3b54", "controller": True,
                "blockOwnerDeletion": True}],
            "managedFields": [{
                "manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-22T09:14:03Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {},
                             "f:pod-template-hash": {}, "f:team": {}}, "f:ownerReferences": {
                             ".": {}, "k:{\"uid\":\"8e4b1f20-5c3d-4a7e-b6f9-0d2c8a1e3b54\"}": {}}},
                             "f:spec": {"f:containers": {"k:{\"name\":\"trainer\"}": {
                                 ".": {}, "f:image": {}, "f:name": {}, "f:resources": {
                                     ".": {}, "f:limits": {".": {}, "f:nvidia.com/gpu": {}},
                                     "f:requests": {".": {}, "f:cpu": {}, "f:memory": {},
                                                    "f:nvidia.com/gpu": {}}}}},
                                 "f:schedulerName": {}}}}],
        },
        "spec": {
            "volumes": [
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
                {"name": "kube-api-access-7q2lm", "projected": {"sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
                    "defaultMode": 420}}],
            "containers": [{
                "name": "trainer",
                "image": "nvcr.io/nvidia/pytorch:24.03-py3",
                "command": ["torchrun"],
                "args": ["--nproc_per_node=" + gpu, "train.py", "--epochs=90", "--batch-size=256"],
                "env": [{"name": "NCCL_DEBUG", "value": "WARN"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {
                            "apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"nvidia.com/gpu": gpu},
                              "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": gpu}},
                "volumeMounts": [
                    {"name": "dshm", "mountPath": "/dev/shm"},
                    {"name": "kube-api-access-7q2lm", "readOnly": True,
                     "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "gpufair",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Pending",
            "qosClass": "Burstable",
        },
    }


def write_body(path, nodes, gpus):
    body = {"Pod": filter_pod(gpus), "NodeNames": [node_name(i) for i in range(nodes)],
            "Nodes": None}
    with open(path, "w") as out:
        json.dump(body, out, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods-per-node", type=int, default=20)
    ap.add_argument("--gpus", type=int, default=1, help="GPUs the /filter pod requests")
    ap.add_argument("--cluster", help="write the cluster file here")
    ap.add_argument("--body", help="write the /filter request body here")
    args = ap.parse_args()
    if not args.cluster and not args.body:
        ap.error("give --cluster and/or --body")
    if args.cluster:
        pods = write_cluster(args.cluster, args.nodes, args.pods_per_node)
        print(f"{args.cluster}: {args.nodes} nodes, {pods} pods, 4 queues", file=sys.stderr)
    if args.body:
        write_body(args.body, args.nodes, args.gpus)
        print(f"{args.body}: /filter body, {args.gpus}-GPU pod, {args.nodes} NodeNames",
              file=sys.stderr)


if __name__ == "__main__":
    main()
