"""A stand-in for a profiled process's control socket, to test the clients' bounds: it
listens on @pyprof.<its own pid> and, for each client, reads its line, then by argv[1]:
"silent" never replies (and keeps the connection open), "flood" replies with 100 KB,
"ok" replies "ok fine" and more lines, "reply" replies argv[2] (a backslash-n in it is a
newline).  Prints "ready"; runs until killed."""
import socket
import sys
import threading

mode = sys.argv[1]
held = []


def serve(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    if mode == "silent":
        held.append(conn)
        return
    if mode == "flood":
        try:
            conn.sendall(b"ok " + b"x" * 100000 + b"\n")
        except OSError:
            pass
    elif mode == "reply":
        conn.sendall(sys.argv[2].replace("\\n", "\n").encode())
    else:
        conn.sendall(b"ok fine\nrequest: " + data)
    conn.close()


s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0pyprof.%d" % __import__("os").getpid())
s.listen(8)
print("ready")
sys.stdout.flush()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
