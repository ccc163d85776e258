#!/usr/bin/env python3
"""Loads a `kubestep bench --workload cluster --emit` dump (one List item per line) into the
loopback control plane of ../shared/realcluster (started with `up.sh --fresh --no-scheduler
--no-fake-kubelet`: the fake kubelet would patch 150,000 pods one kubectl at a time), so
`kubestep live` can be measured against a real API server with a production-shaped cluster:
namespaces and service accounts, nodes (status patched, the not-ready taint the admission
plugin adds removed), bound pods (their status patched), pending pods last.
~190 pods/s on 2 cores (13 minutes for 150,000).
Usage: load_dump.py DUMP [--threads N] [--no-status] [--skip-pending] [--only setup|bound|pending]"""
import json, ssl, sys, http.client, threading, queue, time, argparse
ap = argparse.ArgumentParser(); ap.add_argument("dump"); ap.add_argument("--threads", type=int, default=8)
ap.add_argument("--no-status", action="store_true"); ap.add_argument("--skip-pending", action="store_true")
ap.add_argument("--only", choices=["setup", "bound", "pending"], default=None)
a = ap.parse_args()
P = "/tmp/realcluster/pki"
ctx = ssl.create_default_context(cafile=f"{P}/ca.crt"); ctx.load_cert_chain(f"{P}/admin.crt", f"{P}/admin.key")
local = threading.local()
def conn():
    c = getattr(local, "c", None)
    if c is None:
        c = local.c = http.client.HTTPSConnection("127.0.0.1", 2443, context=ctx, timeout=120)
    return c
def req(method, path, body=None, ctype="application/json", ok=(200, 201, 409)):
    for attempt in range(8):
        try:
            c = conn(); c.request(method, path, body=json.dumps(body) if body is not None else None, headers={"Content-Type": ctype})
            r = c.getresponse(); data = r.read()
            if r.status in ok: return r.status
            if r.status in (429, 500, 503, 504): time.sleep(0.5 * (attempt + 1)); continue
            raise SystemExit(f"{method} {path}: {r.status} {data[:400]!r}")
        except (ConnectionError, http.client.HTTPException, OSError) as e:
            local.c = None; time.sleep(0.5 * (attempt + 1))
    raise SystemExit(f"{method} {path}: gave up")
def items():
    with open(a.dump) as f:
        for line in f:
            s = line.strip().rstrip(",")
            if s.startswith('{"apiVersion"'): yield json.loads(s)
def clean(o):
    md = o["metadata"]
    for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields"): md.pop(k, None)
    return o
def pool(work, fn):
    q = queue.Queue(maxsize=4000); done = [0]; lock = threading.Lock(); t0 = time.time()
    def worker():
        while True:
            x = q.get()
            if x is None: return
            fn(x)
            with lock:
                done[0] += 1
                if done[0] % 5000 == 0: print(f"  {done[0]} ({done[0]/(time.time()-t0):.0f}/s)", flush=True)
    ts = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in ts: t.start()
    n = 0
    for x in work: q.put(x); n += 1
    for _ in ts: q.put(None)
    for t in ts: t.join()
    print(f"  {n} in {time.time()-t0:.0f}s", flush=True)
if a.only in (None, "setup"):
    nss, sas = set(), set()
    for o in items():
        if o["kind"] == "Pod":
            ns = o["metadata"]["namespace"]; nss.add(ns)
            sas.add((ns, o["spec"].get("serviceAccountName") or "default"))
    for ns in nss: sas.add((ns, "default"))
    print(f"{len(nss)} namespaces, {len(sas)} service accounts", flush=True)
    for ns in sorted(nss): req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pool(sorted(sas), lambda s: req("POST", f"/api/v1/namespaces/{s[0]}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": s[1]}}))
    print("nodes", flush=True)
    def node(o):
        o = clean(o); st = o.pop("status", {}); name = o["metadata"]["name"]
        req("POST", "/api/v1/nodes", o)
        req("PATCH", f"/api/v1/nodes/{name}/status", {"status": st}, "application/merge-patch+json", ok=(200,))
        req("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": o["spec"].get("taints")}}, "application/merge-patch+json", ok=(200,))
    pool((o for o in items() if o["kind"] == "Node"), node)
def pod(o):
    o = clean(o); st = o.pop("status", None); md = o["metadata"]
    req("POST", f"/api/v1/namespaces/{md['namespace']}/pods", o)
    if st and not a.no_status and o["spec"].get("nodeName"):
        req("PATCH", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/status", {"status": st}, "application/merge-patch+json", ok=(200,))
if a.only in (None, "bound"):
    print("bound pods", flush=True)
    pool((o for o in items() if o["kind"] == "Pod" and o["spec"].get("nodeName")), pod)
if a.only in (None, "pending") and not a.skip_pending:
    print("pending pods", flush=True)
    pool((o for o in items() if o["kind"] == "Pod" and not o["spec"].get("nodeName")), pod)
