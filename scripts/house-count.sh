#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The house's counts (issue 41), for the source tree at SRC (default: this
# checkout) and, when BUILD is given, its built objects:
#   rooms        modules of launcher/ and plugins/ (foo.c and foo.h one room)
#   arrows       room -> room edges: an #include "x.h" of another room, and,
#                with BUILD, a call: an object's undefined symbol that
#                another room's object defines (nm)
#   back-arrows  arrows from a lower floor to a higher: launcher/lib (0) <
#                plugins (1) < launcher/run (2) < launcher/cli (3)
#   circles      sets of rooms that reach each other (strongly connected
#                components of more than one room), and the pairs of rooms
#                with arrows both ways
#   long functions  over 100 lines (ctags' line and end)
#   long files   over 1,500 lines
#   usage: scripts/house-count.sh [SRC [BUILD]] [--list]
set -eu
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
build=${2:-}
list=${3:-}
[ "$build" = --list ] && { build=; list=--list; }
command -v ctags >/dev/null || { echo "house-count: needs universal ctags" >&2; exit 2; }
tmp=$(mktemp -d /tmp/house-count.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$src"
ctags -R --c-kinds=f --fields=+ne -f - launcher plugins >"$tmp/tags" 2>/dev/null || true
: >"$tmp/nm"
if [ -n "$build" ]; then
    # OBJ<TAB>U|D<TAB>SYMBOL for each object of launcher/ and plugins/ (tests and .libs copies left out)
    for o in $(cd "$build" && find launcher plugins -name '*.o' ! -path '*/.libs/*' | sort); do
        nm "$build/$o" 2>/dev/null | awk -v o="$o" 'NF == 2 && $1 == "U" { print o "\tU\t" $2 }
            NF == 3 && $2 ~ /^[TDBR]$/ { print o "\tD\t" $3 }' >>"$tmp/nm"
    done
fi
python3 - "$tmp/tags" "$tmp/nm" "$list" <<'EOF'
import os, re, sys
tags, nmfile, listing = sys.argv[1], sys.argv[2], sys.argv[3] == "--list"
files = []
for top in ("launcher", "plugins"):
    for d, _, fs in os.walk(top):
        files += [os.path.join(d, f) for f in fs if f.endswith((".c", ".h"))]
room = lambda p: os.path.splitext(p)[0]
rooms = sorted({room(f) for f in files})
byname = {}
for r in rooms:
    byname.setdefault(os.path.basename(r) + ".h", []).append(r)
def floor(r):
    return 0 if r.startswith("launcher/lib") else 2 if r.startswith("launcher/run") else \
        3 if r.startswith("launcher/cli") else 1 if r.startswith("plugins") else 2
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
edges = set()
for f in files:
    for line in open(f, errors="replace"):
        m = inc.match(line)
        if not m:
            continue
        name = m.group(1)
        cand = [room(os.path.normpath(os.path.join(os.path.dirname(f), name)))]
        if cand[0] not in rooms:
            cand = byname.get(os.path.basename(name), [])
        # the same folder first, then the one floor's, then any
        cand = sorted(cand, key=lambda r: (os.path.dirname(r) != os.path.dirname(f), floor(r) != floor(room(f))))
        if cand and cand[0] != room(f):
            edges.add((room(f), cand[0]))
ninc = len(edges)
defs, undef = {}, []
for line in open(nmfile):
    o, k, s = line.rstrip("\n").split("\t")
    r = re.sub(r"^(.*/)?([a-z_]+-)?", lambda m: m.group(1) or "", room(o))  # automake's prefix_la-name.o
    r = os.path.join(os.path.dirname(o), os.path.basename(r))
    if k == "D":
        defs.setdefault(s, set()).add(r)
    else:
        undef.append((r, s))
for r, s in undef:
    for d in defs.get(s, ()):
        if d != r and r in rooms and d in rooms:
            edges.add((r, d))
back = sorted((a, b) for a, b in edges if floor(a) < floor(b))
pairs = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
# strongly connected components (Tarjan, iterative enough for this size)
sys.setrecursionlimit(10000)
adj = {r: [] for r in rooms}
for a, b in edges:
    adj[a].append(b)
index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
def sc(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in adj[v]:
        if w not in index:
            sc(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        if len(c) > 1:
            comps.append(sorted(c))
for r in rooms:
    if r not in index:
        sc(r)
longf = []
for line in open(tags):
    if line.startswith("!"):
        continue
    parts = line.rstrip("\n").split("\t")
    fl = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
    if "line" in fl and "end" in fl:
        length = int(fl["end"]) - int(fl["line"]) + 1
        if length > 100:
            longf.append((length, parts[0], parts[1]))
longf.sort(reverse=True)
bigfiles = sorted(((sum(1 for _ in open(f, errors="replace")), f) for f in files), reverse=True)
bigfiles = [(n, f) for n, f in bigfiles if n > 1500]
print("rooms                      %d (%d files)" % (len(rooms), len(files)))
print("arrows                     %d (%d by #include%s)" % (len(edges), ninc, ", the rest calls" if undef else "; no BUILD: includes only"))
print("back-arrows                %d" % len(back))
print("circles                    %d (rooms in them: %d); pairs both ways: %d" % (len(comps), sum(map(len, comps)), len(pairs)))
print("functions over 100 lines   %d%s" % (len(longf), "; longest %s %d" % (longf[0][1], longf[0][0]) if longf else ""))
print("files over 1,500 lines     %d (%s)" % (len(bigfiles), ", ".join("%s %d" % (os.path.basename(f), n) for n, f in bigfiles)))
if listing:
    for a, b in back: print("back-arrow  %s -> %s" % (a, b))
    for a, b in pairs: print("pair        %s <-> %s" % (a, b))
    for c in comps: print("circle      %s" % " ".join(c))
    for l, name, f in longf: print("long        %s %s %d" % (f, name, l))
EOF
