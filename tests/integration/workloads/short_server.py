# Thread-per-request servers (Python 2.7 and 3.x) for test_short_threads.py: a server on
# 127.0.0.1 (ephemeral port) that handles every request in a new thread, and a client in
# the main thread that sends $REQUESTS requests (default 700) one after another, then
# shuts the server down; the process then exits by itself.  $SERVER:
#
#   tcp    socketserver.ThreadingMixIn + TCPServer (SocketServer on 2.7); the handler
#          reads a line, burns $HANDLER_CPU seconds of its thread's CPU in tcp_burn() and
#          answers
#   http   http.server.ThreadingHTTPServer (3.7+; ThreadingMixIn + HTTPServer on 3.6),
#          with http.client as the client; do_GET burns $HANDLER_CPU in http_burn()
#
# phase() (main thread) holds the serving: the process CPU time it took goes to
# $SHORT_RESULT as "window_cpu" ("profiler_cpu": how much of it the profiler's own
# threads used), with "cpu" (what the burn function used, each call measured with its
# thread's CPU clock) and "calls".  stdout says only what was done.
import os
import socket
import threading

from short_common import Spent, Window, spin, wait_threads_gone, write_result

try:
    import socketserver
except ImportError:   # 2.7
    import SocketServer as socketserver

SERVER = os.environ.get("SERVER", "tcp")
REQUESTS = int(os.environ.get("REQUESTS", "700"))
HANDLER_CPU = float(os.environ.get("HANDLER_CPU", "0.0009"))

spent = Spent()


def tcp_burn(seconds):
    spent.add("tcp_burn", spin(seconds))


def http_burn(seconds):
    spent.add("http_burn", spin(seconds))


class TCPHandler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline()
        tcp_burn(HANDLER_CPU)
        self.wfile.write(b"ok " + line)


class ThreadingTCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True


def tcp_server():
    return ThreadingTCPServer(("127.0.0.1", 0), TCPHandler)


def tcp_request(addr, i):
    s = socket.create_connection(addr)
    try:
        s.sendall(("request %d\n" % i).encode("ascii"))
        got = b""
        while True:
            chunk = s.recv(256)
            if not chunk:
                break
            got += chunk
    finally:
        s.close()
    return got == ("ok request %d\n" % i).encode("ascii")


def http_server():
    from http.server import BaseHTTPRequestHandler, HTTPServer
    try:
        from http.server import ThreadingHTTPServer
    except ImportError:   # 3.6
        class ThreadingHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
            daemon_threads = True

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self):
            http_burn(HANDLER_CPU)
            body = ("ok " + self.path).encode("ascii")
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass   # no access log on stderr

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def http_request(addr, i):
    import http.client
    conn = http.client.HTTPConnection(addr[0], addr[1], timeout=30)
    try:
        conn.request("GET", "/r%d" % i)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status == 200 and body == ("ok /r%d" % i).encode("ascii")
    finally:
        conn.close()


def phase():
    make, request = {"tcp": (tcp_server, tcp_request),
                     "http": (http_server, http_request)}[SERVER]
    baseline = threading.active_count()
    w = Window().start()
    server = make()
    server.socket.settimeout(None)
    loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    loop.start()
    addr = server.server_address
    ok = 0
    for i in range(REQUESTS):
        ok += bool(request(addr, i))
    server.shutdown()
    loop.join()
    server.server_close()
    alive = wait_threads_gone(baseline)
    w.stop()
    return ok, dict(w.result(), cpu=spent.cpu, calls=spent.calls,
                threads_left=alive - baseline)


def main():
    ok, result = phase()
    write_result(result)
    print("short_server %s: %d of %d requests answered" % (SERVER, ok, REQUESTS))


if __name__ == "__main__":
    main()
