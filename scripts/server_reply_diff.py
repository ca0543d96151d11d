#!/usr/bin/env python3
"""The replies of two augur-server binaries, compared byte for byte (issue 42).

  scripts/server_reply_diff.py OLD_BINARY NEW_BINARY

Sends the same raw RESP sessions to each binary (a fresh database each, on a free loopback
port): every command with its options and its errors (syntax, arity, unknown commands,
bad integers and floats, out-of-range offsets), pipelines that form runs, transactions
(queued errors, EXECABORT, nested MULTI, SAVE refused, a keyspace walk inside EXEC), inline
commands, and, on a server with a password, NOAUTH, AUTH and HELLO's option order. Prints
each reply that differs (after masking what differs between runs: client ids, times, INFO,
CLIENT LIST) and the number of differences. A restructuring of the command layer (issue 42's
parse/execute split) or a new protocol version (issue 43's RESP3) must leave RESP2's replies
as they were: build the old binary from the base commit and compare.

Each write waits up to 3 s for its first reply byte, then 0.15 s of quiet, so a write whose
command answers nothing (an empty multibulk) costs 3 s.
"""

import os
import re
import socket
import subprocess
import sys
import tempfile

def enc(*words):
    """A multibulk request of `words`."""
    out = b"*%d\r\n" % len(words)
    for w in words:
        if isinstance(w, str):
            w = w.encode()
        out += b"$%d\r\n%s\r\n" % (len(w), w)
    return out

def start(binary, extra):
    """Starts `binary` on a fresh database and a free port; returns it and its address."""
    d = tempfile.mkdtemp()
    p = subprocess.Popen([binary, "--db", d + "/db", "--port", "0"] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    m = re.search(r"ready on (\S+):(\d+)", line)
    assert m, line
    return p, (m.group(1), int(m.group(2)))

def read_all(s, quiet=0.15):
    """The replies to one write: up to 3 s for the first byte, then until 0.15 s of quiet."""
    s.settimeout(3)
    try:
        data = s.recv(1 << 20)
    except socket.timeout:
        return b""
    s.settimeout(quiet)
    while data:
        try:
            chunk = s.recv(1 << 20)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    return data

def run(binary, extra, sessions):
    """Every write's replies, in order, one connection per session."""
    p, addr = start(binary, extra)
    out = []
    try:
        for session in sessions:
            s = socket.create_connection(addr)
            for write in session:
                s.sendall(write)
                out.append(read_all(s))
            s.close()
    finally:
        p.terminate(); p.wait()
    return out

S = enc
sessions = [
  [S("PING"), S("PING","hi"), S("PING","a","b"), S("ECHO","e"), S("ECHO"), S("NOSUCH","a","b"), S(), S("get"),
   S("SET","k","v"), S("GET","k"), S("SET","k","v2","NX"), S("SET","k","v3","XX","GET"), S("SET","k","v","NX","XX"),
   S("SET","k","v","EX","10"), S("SET","k","v","BOGUS"), S("SET","k","v","KEEPTTL"), S("SET","n","v","XX"), S("SET","n2","v","GET"),
   S("SETNX","k","z"), S("SETNX","new","z"), S("GETSET","k","gs"), S("GETSET","absent","gs"),
   S("MGET","k","nope","new"), S("MSET","a","1","b"), S("MSET","a","1","b","2"), S("MSETNX","a","1","c","3"), S("MSETNX","c","3","d","4"),
   S("STRLEN","k"), S("STRLEN","nope"), S("GETDEL","a"), S("GETDEL","a"),
   S("GETRANGE","k","0","-1"), S("GETRANGE","k","x","1"), S("GETRANGE","k","1","y"), S("GETRANGE","nope","0","5"),
   S("SETRANGE","k","-1","v"), S("SETRANGE","k","x","v"), S("SETRANGE","k","10","zz"), S("SETRANGE","nope","0",""), S("SETRANGE","k","600000000","z"), S("SETRANGE","k","600000000",""),
   S("APPEND","k","more"), S("APPEND","fresh","x"),
   S("INCR","cnt"), S("INCR","k"), S("DECR","cnt"), S("INCRBY","cnt","10"), S("INCRBY","cnt","x"), S("DECRBY","cnt","-9223372036854775808"), S("DECRBY","cnt","3"),
   S("SET","max","9223372036854775807"), S("INCR","max"), S("INCRBY","cnt","+1"), S("INCRBY","cnt","01"),
   S("INCRBYFLOAT","f","1.5"), S("INCRBYFLOAT","f","x"), S("INCRBYFLOAT","k","1"), S("INCRBYFLOAT","f","1e308"), S("INCRBYFLOAT","f","1e308"),
   S("DEL","k","k","nope","b"), S("UNLINK","c"), S("EXISTS","d","d","nope"), S("TYPE","d"), S("TYPE","nope"),
   S("KEYS","*"), S("KEYS","f*"), S("DBSIZE"),
   S("SCAN","0"), S("SCAN","0","COUNT","2"), S("SCAN","0","MATCH","c*","COUNT","100"), S("SCAN","0","TYPE","hash"), S("SCAN","x"), S("SCAN","0","COUNT","0"),
   S("SCAN","0","COUNT","x"), S("SCAN","0","BOGUS","1"), S("SCAN","0","MATCH"), S("SCAN","123456789"), S("SCAN","123456789","COUNT","0"),
   S("FLUSHDB","bogus"), S("FLUSHDB","ASYNC","x"),
   S("SELECT","0"), S("SELECT","1"), S("SELECT","x"),
   S("CLIENT","SETNAME","bad name"), S("CLIENT","SETNAME","good"), S("CLIENT","GETNAME"), S("CLIENT","ID","x"), S("CLIENT","BOGUS"), S("CLIENT","HELP"), S("CLIENT","SETINFO","lib-name","x"),
   S("COMMAND","COUNT"), S("COMMAND","COUNT","x"), S("COMMAND","LIST"), S("COMMAND","INFO","get","nope","set"), S("COMMAND","DOCS","get","nope"), S("COMMAND","BOGUS"), S("COMMAND"), S("COMMAND","INFO"), S("COMMAND","DOCS"),
   S("CONFIG","GET","port*"), S("CONFIG","GET","maxclients","appendfsync","nope"), S("CONFIG","GET"), S("CONFIG","SET","a","b"),
   S("HELLO"), S("HELLO","2"), S("HELLO","3"), S("HELLO","x"), S("HELLO","2","SETNAME","bad name"), S("HELLO","2","FOO"), S("HELLO","2","AUTH","default","pw"), S("HELLO","2","SETNAME","nm"), S("HELLO","2","AUTH"),
   S("AUTH","pw"), S("AUTH","u","pw"), S("AUTH","a","b","c"),
   S("BGSAVE","x"), S("BGSAVE","SCHEDULE","y"), S("SAVE"), S("SHUTDOWN","BOGUS"),
   S("MULTI"), S("SET","t","1"), S("INCR","t"), S("GET","t"), S("INCRBY","t","x"), S("MULTI"), S("EXEC"),
   S("MULTI"), S("SET","t"), S("GET","t"), S("EXEC"),
   S("MULTI"), S("NOSUCH"), S("EXEC"),
   S("MULTI"), S("SAVE"), S("DISCARD"), S("DISCARD"), S("EXEC"),
   S("MULTI"), S("EXEC","x"), S("EXEC"),
   S("MULTI"), S("SET","a","1"), S("KEYS","*"), S("DBSIZE"), S("SCAN","0"), S("FLUSHDB"), S("DBSIZE"), S("EXEC"),
   S("get","t"), S("GeT","t"), S("QUIT"), S("PING")],
  # a pipeline: runs
  [S("SET","p1","1")+S("INCR","p1")+S("GET","p1")+S("APPEND","p1","x")+S("INCR","p1")+S("MGET","p1","p2")+S("DEL","p1")+S("EXISTS","p1")+S("SET","p2","v","GET")+S("GETRANGE","p2","0","x")+S("PING")+S("SET","p3","x")+S("MSET","q")+S("MSET","q","1"),
   S("MULTI")+S("SET","z","1")+S("GET","z")+S("EXEC")+S("GET","z"),
   S("SET","pp")+S("GET","pp")+S("NOSUCH")+S("GET","p2")],
  [b"PING\r\n", b"SET inl val\r\nGET inl\r\n", b"GET \"unbalanced\r\n"],
]
auth_sessions = [
  [S("GET","k"), S("GET"), S("NOSUCH"), S("PING"), S("AUTH","wrong"), S("AUTH","default","wrong"), S("AUTH","secret"), S("GET","k"),
   S("HELLO","2","AUTH","default","wrong")],
  [S("HELLO","2","SETNAME","nm"), S("CLIENT","GETNAME")],
  [S("HELLO","2","SETNAME","nm","AUTH","default","wrong"), S("HELLO","2","AUTH","default","secret","FOO"), S("GET","x")],
  [S("HELLO","2","AUTH","default","secret","SETNAME","bad name"), S("GET","x")],
  [S("MULTI"), S("AUTH","secret"), S("MULTI"), S("GET","x"), S("EXEC")],
]
mask = [
  (re.compile(rb":\d{9,}\r\n"), b":<n>\r\n"),
  (re.compile(rb"\$\d+\r\n\d{9,}\r\n"), b"<time>"),
  (re.compile(rb"id=\d+ [^\r]*"), b"<client>"),
  (re.compile(rb"\$\d+\r\n# Server.*", re.S), b"<info>"),
]
def norm(b):
    """`b` with what differs between runs masked."""
    for r, sub in mask:
        b = r.sub(sub, b)
    return b
if len(sys.argv) != 3:
    sys.exit(__doc__)
old, new = sys.argv[1], sys.argv[2]
password_file = os.path.join(tempfile.mkdtemp(), "password")
with open(password_file, "w") as f:
    f.write("secret\n")
fails = writes = 0
for extra, ss in [(["--enable-flush"], sessions), (["--requirepass-file", password_file], auth_sessions)]:
    a = run(old, extra, ss)
    b = run(new, extra, ss)
    flat = [w for s in ss for w in s]
    writes += len(flat)
    for i, (x, y) in enumerate(zip(a, b)):
        if norm(x) != norm(y):
            fails += 1
            print("DIFF", extra, flat[i][:120])
            print("  old:", x[:400])
            print("  new:", y[:400])
print(f"{fails} differences in the replies to {writes} writes")
