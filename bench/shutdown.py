#!/usr/bin/env python3
"""How long `recall serve` takes to stop on Ctrl-C (SIGINT) while an MCP
client holds its event stream (GET /mcp) open, and how that stream ends.

    python3 bench/shutdown.py BINARY [ROUNDS]

Each round starts BINARY serve on a fresh database (embedder none, a user
token, port 0), initializes an MCP session, opens the session's GET stream,
sends SIGINT and times until the process exits; it prints the seconds and
whether the stream reached a clean end (EOF) or was cut.
"""
import http.client, json, os, re, signal, statistics, subprocess, sys, tempfile, threading, time

def round_(binary):
    d = tempfile.mkdtemp()
    env = dict(os.environ, HOME=d, RECALL_DB=os.path.join(d, "r.db"), RECALL_EMBEDDER="none",
               RECALL_TOKEN="bench-shutdown-token-0123456789abcdef")
    p = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    host = port = None
    for line in p.stderr:
        m = re.search(r"listening on http://([0-9.]+):(\d+)", line)
        if m:
            host, port = m.group(1), int(m.group(2))
            break
    threading.Thread(target=p.stderr.read, daemon=True).start()
    auth = {"Authorization": "Bearer " + env["RECALL_TOKEN"], "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}), auth)
    r = c.getresponse()
    sid = r.getheader("Mcp-Session-Id")
    r.read()
    h = dict(auth, **{"Mcp-Session-Id": sid})
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), h)
    c.getresponse().read()
    s = http.client.HTTPConnection(host, port, timeout=60)
    s.request("GET", "/mcp", headers=dict(h, Accept="text/event-stream"))
    stream = s.getresponse()
    end = {}
    def drain():
        try:
            stream.read()
            end["how"] = "ended"
        except Exception as e:
            end["how"] = "cut (%s)" % type(e).__name__
    t = threading.Thread(target=drain)
    t.start()
    time.sleep(0.3)
    start = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    took = time.monotonic() - start
    t.join(timeout=10)
    return took, end.get("how", "open")

def main():
    binary, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    times = []
    for _ in range(rounds):
        took, how = round_(binary)
        times.append(took)
        print("%s: stopped after %.3f s, stream %s" % (os.path.basename(binary), took, how), flush=True)
    print("%s: median %.3f s" % (os.path.basename(binary), statistics.median(times)))

main()
