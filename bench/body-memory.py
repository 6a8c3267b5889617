#!/usr/bin/env python3
"""Peak resident memory of `recall serve` under 50 concurrent large MCP calls.

usage: bench/body-memory.py BINARY [BYTES]

Starts BINARY serve on 127.0.0.1 (temporary database, no embedder, one
token), opens an MCP session, then sends 50 tools/call requests at once,
each carrying an argument of BYTES characters (default 1,900,000), and
prints the server's VmHWM (peak RSS) before and after, and the statuses
it answered. The server refuses the calls after decoding them (an unknown
argument); what is measured is what holding and decoding bodies costs.
"""
import http.client, json, os, re, subprocess, sys, tempfile, threading

binary = sys.argv[1]
pad = int(sys.argv[2]) if len(sys.argv) > 2 else 1_900_000
tok = "bodymem-0123456789-abcdefghij-KLMNOPQ"
d = tempfile.mkdtemp()
env = dict(os.environ, RECALL_DB=d + "/r.db", RECALL_TOKEN=tok, RECALL_EMBEDDER="none", HOME=d)
p = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE, text=True)
port = None
for line in p.stderr:
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if m:
        port = int(m.group(1))
        break
threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
H = {"Authorization": "Bearer " + tok, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(body, extra={}):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", "/mcp", body, {**H, **extra})
        r = c.getresponse()
        r.read()
        return r
    except OSError as e:  # a refused body may close the connection while it is sent
        return e
    finally:
        c.close()


def hwm():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmHWM"):
            return int(l.split()[1]) // 1024


r = post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bodymem", "version": "1"}}}))
sid = r.getheader("Mcp-Session-Id")
post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), {"Mcp-Session-Id": sid})
base = hwm()
big = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "search_archive", "arguments": {"query": "x", "pad": "y" * pad}}})
out = []
ts = [threading.Thread(target=lambda: out.append(post(big, {"Mcp-Session-Id": sid}))) for _ in range(50)]
[t.start() for t in ts]
[t.join() for t in ts]
statuses = sorted({getattr(x, "status", type(x).__name__) for x in out}, key=str)
print(f"{os.path.basename(binary)} body {len(big)} B: VmHWM {base} -> {hwm()} MB; answers {statuses}")
p.terminate()
p.wait()
