#!/usr/bin/env python3
"""A scheduling sequence on the real control plane (../shared/realcluster), recorded with
`kubestep record` and compared pod for pod with kubestep's replay of that recording.

Needs a running realcluster (up.sh) and KUBECONFIG pointing at it. Creates NODES fake
nodes of mixed sizes in four zones (some tainted), then waves of pods created back to back
(hostPorts, mixed sizes, anti-affinity, zone spread), waits until the real scheduler has
decided every pod, stops the recording and prints how many pods kubestep places on the
real scheduler's node (or on a node tied with it).

  tests/realcluster/sequence.py --nodes 300 --pods 640 --out /tmp/seq300
  tests/realcluster/sequence.py --profile list --waves batch --nodes 300 --pods 720 --out /tmp/batch300
  tests/realcluster/sequence.py --waves dra --nodes 120 --pods 260 --out /tmp/dra120

`--profile list` runs the real scheduler with PodTopologySpread `defaultingType: List` (no
default constraints), the profile under which OpportunisticBatching hints: pods without
constraints are then signable. The run writes OUT/scheduler-config.yaml, the same profile for
`kubestep replay --config`, and keeps the scheduler's hint lines (-v=3) in its log.

`--waves dra` gives every eighth untainted node a ResourceSlice of four GPUs (a DRA driver's,
published here as the driver would; A100s or L4s), creates a DeviceClass with a CEL selector,
and pods that claim one GPU or two A100s (each its own ResourceClaim) among ordinary pods;
more GPUs are claimed than exist, so some pods wait until four GPU nodes join after the waves.

It writes OUT/recording.jsonl.gz and OUT/kube-scheduler.log (the scheduler's "Successfully
bound pod to node" lines, with evaluatedNodes), for `kubestep replay OUT/recording.jsonl.gz
--headless --scheduler-log OUT/kube-scheduler.log`.
"""
import argparse, json, os, signal, subprocess, sys, time, urllib.request

ZONES = ["zone-a", "zone-b", "zone-c", "zone-d"]
CPUS = [4, 8, 16, 32, 48, 64]
MEMS = ["16Gi", "32Gi", "64Gi", "128Gi", "192Gi", "256Gi"]
NS = "seq"
PREFIX = ""


class Api:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code == 409 and method == "POST":
                return None
            raise SystemExit(f"{method} {path}: {e.code} {e.read()[:300]!r}")


def node(i):
    # Names that sort as they are created: the recording lists nodes by name, the
    # scheduler met them in creation order.
    name = f"{PREFIX}n{i:04d}"
    zone = ZONES[i % 4]
    cpu, mem = CPUS[i % 6], MEMS[(i // 6) % 6]
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if i % 17 == 5 else []
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "topology.kubernetes.io/zone": zone, "realcluster.io/fake": "true"}
    return name, cpu, mem, taints, labels


def add_nodes(api, n, start=0):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for i in range(start, n):
        name, cpu, mem, taints, labels = node(i)
        api.call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": name, "labels": labels}, "spec": {}})
        res = {"cpu": str(cpu), "memory": mem, "pods": "110", "ephemeral-storage": "100Gi"}
        conds = [{"type": t, "status": s, "reason": r, "lastHeartbeatTime": now, "lastTransitionTime": now}
                 for t, s, r in [("Ready", "True", "KubeletReady"), ("MemoryPressure", "False", "Ok"),
                                 ("DiskPressure", "False", "Ok"), ("PIDPressure", "False", "Ok")]]
        api.call("PATCH", f"/api/v1/nodes/{name}/status",
                 {"status": {"capacity": res, "allocatable": res, "conditions": conds}},
                 "application/merge-patch+json")
        # The node-lifecycle controller's job: the not-ready taint goes, ours stay.
        api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": taints or None}},
                 "application/merge-patch+json")


def pods(total):
    """Six waves, each a shape the sampled search and the cache's timing both matter for."""
    shapes = []
    per = total // 6
    for w in range(6):
        for j in range(per if w < 5 else total - 5 * per):
            name = f"w{w}-{j:03d}"
            cpu = ["250m", "500m", "1", "2", "3"][j % 5]
            mem = ["512Mi", "1Gi", "2Gi", "4Gi"][j % 4]
            labels = {"app": f"wave{w}"}
            spec = {"containers": [{"name": "c", "image": "x",
                                    "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}
            if w == 1:
                spec["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080 + j % 3}]
            if w == 2:
                labels["app"] = f"anti-{j % 40}"
                spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": labels["app"]}},
                     "topologyKey": "kubernetes.io/hostname"}]}}
            if w == 3:
                spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": labels}}]
            if w == 4:
                spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}}]}}
            shapes.append({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": NS, "labels": labels}, "spec": spec})
    return shapes


def batch_pods(total):
    """Waves of identical pods, the shape OpportunisticBatching serves: one pod per node
    (host ports), with and without preferred affinity, interleaved with pods that change
    the signature or leave the last node with room."""
    shapes = []
    per = total // 6
    for w in range(6):
        for j in range(per if w < 5 else total - 5 * per):
            labels = {"app": f"wave{w}"}
            c = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
            spec = {"containers": [c]}
            if w in (0, 4):
                c["ports"] = [{"containerPort": 80, "hostPort": 9000}]
            if w == 1:
                c["ports"] = [{"containerPort": 80, "hostPort": 9001}]
                spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}}]}}
            if w == 2:
                c["resources"]["requests"] = {"cpu": ["250m", "500m", "1", "2", "3"][j % 5],
                                              "memory": ["512Mi", "1Gi", "2Gi", "4Gi"][j % 4]}
            if w == 3:
                c["resources"]["requests"] = {"cpu": "3", "memory": "12Gi"}
            if w == 5:
                # Runs of five identical pods with their own port: a new signature every five.
                c["ports"] = [{"containerPort": 80, "hostPort": 9100 + j // 5}]
            shapes.append({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"b{w}-{j:03d}", "namespace": NS, "labels": labels}, "spec": spec})
    return shapes


DRIVER = "gpu.example.com"
DRA = "/apis/resource.k8s.io/v1"


def gpu_node(i):
    """Every eighth node that is not tainted has GPUs."""
    return i % 8 == 3 and i % 17 != 5


def add_gpus(api, i, model):
    name = node(i)[0]
    devices = [{"name": f"gpu-{k}", "attributes": {"model": {"string": model}},
                "capacity": {"memory": {"value": "40Gi"}}} for k in range(4)]
    api.call("POST", f"{DRA}/resourceslices", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": f"{name}-gpus"},
             "spec": {"driver": DRIVER, "nodeName": name,
                      "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})


def dra_objects(total):
    """Ordinary pods, then pods claiming one GPU, then ordinary pods among which every
    fifth claims two A100s, then ordinary pods again: (claims, pods) in creation order,
    four waves."""
    claims, shapes = [], []
    per = total // 4
    for w in range(4):
        for j in range(per if w < 3 else total - 3 * per):
            name = f"d{w}-{j:03d}"
            c = {"name": "c", "image": "x", "resources": {"requests": {
                "cpu": ["250m", "500m", "1", "2"][j % 4], "memory": ["512Mi", "1Gi", "2Gi"][j % 3]}}}
            spec = {"containers": [c]}
            if w == 1 or (w == 2 and j % 5 == 0):
                req = {"deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": w}
                if w == 2:
                    req["selectors"] = [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a100"'}}]
                claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                               "metadata": {"name": name, "namespace": NS},
                               "spec": {"devices": {"requests": [{"name": "gpu", "exactly": req}]}}})
                spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
                c["resources"]["claims"] = [{"name": "gpu"}]
            shapes.append({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": NS, "labels": {"app": f"dra{w}"}}, "spec": spec})
    return claims, shapes


LIST_PROFILE = """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
"""


def start_scheduler(rc, profile, out):
    """Restarts the real scheduler: scheduler.sh's default profile, or the List profile
    (started here, under scheduler.sh's pid file so that scheduler.sh stops it)."""
    subprocess.run([os.path.join(rc, "scheduler.sh"), "stop"], check=True, stdout=subprocess.DEVNULL)
    if profile == "default":
        subprocess.run([os.path.join(rc, "scheduler.sh"), "start"], check=True, stdout=subprocess.DEVNULL)
        return
    rc_dir = os.environ.get("RC_DIR", "/tmp/realcluster")
    rc_bin = os.environ.get("RC_BIN", os.environ.get("RC_BUILD", "/tmp/rc-build") + "/bin")
    with open(os.path.join(out, "scheduler-config.yaml"), "w") as f:
        f.write("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + LIST_PROFILE)
    cfg = os.path.join(rc_dir, "scheduler-config.yaml")
    with open(cfg, "w") as f:
        f.write("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                f"clientConnection:\n  kubeconfig: {rc_dir}/scheduler.kubeconfig\n"
                "leaderElection:\n  leaderElect: false\n" + LIST_PROFILE)
    kc = f"{rc_dir}/scheduler.kubeconfig"
    log = open(os.path.join(rc_dir, "logs", "kube-scheduler.log"), "w")
    p = subprocess.Popen([os.path.join(rc_bin, "kube-scheduler"), f"--config={cfg}",
                          f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
                          "--bind-address=127.0.0.1", "--secure-port=2459", "--v=3"],
                         stdout=log, stderr=log, start_new_session=True)
    with open(os.path.join(rc_dir, "pids", "kube-scheduler.pid"), "w") as f:
        f.write(str(p.pid))
    for _ in range(60):
        time.sleep(0.5)
        if "Starting Kubernetes Scheduler" in open(os.path.join(rc_dir, "logs", "kube-scheduler.log")).read():
            time.sleep(1)
            return
    raise SystemExit("kube-scheduler (List profile) did not start; see its log")


def decided(api):
    items = api.call("GET", f"/api/v1/namespaces/{NS}/pods")["items"]
    done = 0
    for p in items:
        conds = (p.get("status") or {}).get("conditions") or []
        if p["spec"].get("nodeName") or any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conds):
            done += 1
    return done, len(items)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--pods", type=int, default=640)
    ap.add_argument("--gap-ms", type=int, default=60, help="between two wave's starts")
    ap.add_argument("--out", required=True)
    ap.add_argument("--prefix", default="", help="for node names and the namespace, so runs can share a cluster")
    ap.add_argument("--kubestep", default=os.environ.get("KUBESTEP", "target/release/kubestep"))
    ap.add_argument("--profile", choices=["default", "list"], default="default")
    ap.add_argument("--waves", choices=["mixed", "batch", "dra"], default="mixed")
    a = ap.parse_args()
    global NS, PREFIX
    PREFIX, NS = a.prefix, a.prefix + NS
    os.makedirs(a.out, exist_ok=True)
    port = 8019 + os.getpid() % 500
    proxy = subprocess.Popen(["kubectl", "proxy", f"--port={port}"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        api = Api(port)
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        api.call("POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        # A fresh scheduler process starts its node search at index 0, as kubestep's
        # replay does (one that scheduled earlier pods is at an unknown index), and it
        # learns of the nodes in the order they are created, the recording's order. One
        # restarted after the nodes exist lists them in another order (measured: 53% of
        # pods on its node instead of 98%).
        rc = os.environ.get("RC_LIB", os.path.join(os.path.dirname(__file__), "../../../shared/realcluster"))
        start_scheduler(rc, a.profile, a.out)
        t = time.time()
        add_nodes(api, a.nodes)
        print(f"{a.nodes} nodes in {time.time() - t:.1f}s", file=sys.stderr)
        if a.waves == "dra":
            api.call("POST", f"{DRA}/deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                     "metadata": {"name": DRIVER},
                     "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
            for i in range(a.nodes):
                if gpu_node(i):
                    add_gpus(api, i, "a100" if i % 16 == 3 else "l4")
        rec = os.path.join(a.out, "recording.jsonl.gz")
        err = open(os.path.join(a.out, "record.log"), "w")
        r = subprocess.Popen([a.kubestep, "record", "-o", rec], stderr=err, stdout=err)
        for _ in range(100):
            time.sleep(0.2)
            if "initial sync done" in open(os.path.join(a.out, "record.log")).read():
                break
        if a.waves == "dra":
            claims, all_pods = dra_objects(a.pods)
            for c in claims:
                api.call("POST", f"{DRA}/namespaces/{NS}/resourceclaims", c)
            waves = 4
        else:
            all_pods = pods(a.pods) if a.waves == "mixed" else batch_pods(a.pods)
            waves = 6
        per = len(all_pods) // waves
        for w in range(waves):
            for p in all_pods[w * per:(w + 1) * per if w < waves - 1 else len(all_pods)]:
                api.call("POST", f"/api/v1/namespaces/{NS}/pods", p)
            time.sleep(a.gap_ms / 1000)
        if a.waves == "dra":
            # New GPU nodes join once the claims outnumber the GPUs: the waiting pods go
            # there when the scheduler sees the new slices.
            time.sleep(3)
            for i in range(a.nodes, a.nodes + 4):
                add_nodes(api, i + 1, start=i)
                add_gpus(api, i, "a100" if i % 2 == 0 else "l4")
        deadline = time.time() + 300
        while time.time() < deadline:
            d, n = decided(api)
            if d == n:
                break
            time.sleep(1)
        print(f"decided by the real scheduler: {d}/{n}", file=sys.stderr)
        # The scheduler's own account of each search, for replay --scheduler-log.
        log = os.environ.get("RC_DIR", "/tmp/realcluster") + "/logs/kube-scheduler.log"
        with open(log) as src, open(os.path.join(a.out, "kube-scheduler.log"), "w") as dst:
            dst.writelines(l for l in src if "Successfully bound pod to node" in l
                           or "OpportunisticBatch provided node hint" in l)
        time.sleep(2)
        r.send_signal(signal.SIGINT)
        r.wait(timeout=60)
    finally:
        proxy.terminate()


if __name__ == "__main__":
    main()
