"""Thread per request: a TCP server that handles each connection in a thread of its own.

usage: server.py REQUESTS LOOP [OUT.json]
A socketserver.ThreadingMixIn TCP server on 127.0.0.1 (ephemeral port), served by the
main thread; a client thread sends REQUESTS requests one after another (connect, send a
line, read the answer to the end), then shuts the server down.  Each request is handled
in a new thread that does LOOP iterations of an inline loop (deep.py's) before it answers:
the bench (bench/calibrate.py) sizes LOOP to about 1.5 ms of CPU, well under one 10 ms
sampling period, so most handler threads live for less than a period.  server_close()
joins the handler threads and the process exits.  With OUT.json, writes the CPU time the
handlers' loops took (each measured with its thread's CPU clock), the requests answered
and the loop's size.  Exits 1 if an answer was missing or wrong.
"""
import json
import socket
import socketserver
import sys
import threading
import time

LOOP = 0
spent = [0.0, 0]  # handler loop CPU seconds, calls
spent_lock = threading.Lock()


def burn(n):
    # The work is inline, as in deep.py.
    s = 0
    for i in range(n):
        s += (i * i) % 7
        if i & 3 == 0:
            s ^= i
    return s


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline()
        t0 = time.thread_time()
        burn(LOOP)
        dt = time.thread_time() - t0
        with spent_lock:
            spent[0] += dt
            spent[1] += 1
        self.wfile.write(b"ok " + line)


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = False
    block_on_close = True  # server_close() joins the handler threads


def request(addr, i):
    want = b"ok request %d\n" % i
    with socket.create_connection(addr, timeout=30) as s:
        s.sendall(b"request %d\n" % i)
        got = b""
        while True:
            chunk = s.recv(256)
            if not chunk:
                break
            got += chunk
    return got == want


def main(requests, out):
    server = Server(("127.0.0.1", 0), Handler)
    answered = [0]

    def client():
        try:
            for i in range(requests):
                answered[0] += request(server.server_address, i)
        finally:
            server.shutdown()

    c = threading.Thread(target=client, name="client")
    c.start()
    server.serve_forever(poll_interval=0.05)
    c.join()
    server.server_close()
    if out:
        with open(out, "w") as fh:
            json.dump({"requests": requests, "answered": answered[0], "loop": LOOP,
                       "handler_cpu_s": spent[0], "handler_calls": spent[1]}, fh)
    return answered[0] == requests


if __name__ == "__main__":
    LOOP = int(sys.argv[2])
    sys.exit(0 if main(int(sys.argv[1]), sys.argv[3] if len(sys.argv) > 3 else None) else 1)
