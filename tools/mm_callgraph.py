#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/mm_callgraph.py [DIR] - the file-level call graph of mm/, checked for loops.

Reads every DIR/*.c (default mm/), finds the functions each file defines (at
brace depth 0) and the names each function body calls, and draws an edge
A -> B when a function of A calls one defined in B. Prints the graph by layer
(a file's layer is 1 + the highest layer it calls) and exits 1, naming the
files of every loop, when the graph has one (docs/mm.md, "Layers").

Function-like macros and static inline functions of DIR/*.h are expanded:
a call of S2_ASSERT() is a call of what S2_ASSERT calls. Calls through
function pointers (backend, shadow hooks) are not edges: they
are the contract with the layer above, not a dependency of the file.
"""
import os
import re
import sys

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "_Alignof",
            "__attribute__", "__typeof__", "typeof", "do", "else", "case", "goto"}


def strip(text):
    """Source without comments, strings and character literals (same length)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            j = i
            while True:  # preprocessor line, with continuations
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


IDENT_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def functions(src):
    """[(name, is_static, body)] of the function definitions at brace depth 0."""
    found, depth, i, start, name = [], 0, 0, 0, None
    for m in re.finditer(r"[{}]", src):
        if m.group() == "{":
            if depth == 0:
                head = src[i:m.start()]
                head = head[head.rfind(";") + 1:]  # after the last declaration
                calls = IDENT_CALL.findall(head)
                name = calls[0] if calls and head.rstrip().endswith(")") else None
                static = re.search(r"(^|[;}\s])static\s", head) is not None
                start = m.end()
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                if name:
                    found.append((name, static, src[start:m.start()]))
                i = m.end()
    return found


MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def header_calls(directory):
    """{macro or inline function of DIR/*.h: names its body calls}."""
    calls = {}
    for fn in sorted(os.listdir(directory)):
        if not fn.endswith(".h"):
            continue
        with open(os.path.join(directory, fn), encoding="utf-8") as f:
            text = f.read()
        for m in MACRO.finditer(text):
            calls[m.group(1)] = set(IDENT_CALL.findall(m.group(3)))
        for name, _, body in functions(strip(text)):
            calls[name] = set(IDENT_CALL.findall(body))
    return calls


def expand(names, hcalls):
    """names plus everything reached through header macros and inlines."""
    out, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(hcalls.get(n, ()))
    return out


def build(directory):
    defs, bodies = {}, {}
    hcalls = header_calls(directory)
    for fn in sorted(os.listdir(directory)):
        if not fn.endswith(".c"):
            continue
        with open(os.path.join(directory, fn), encoding="utf-8") as f:
            funcs = functions(strip(f.read()))
        bodies[fn] = funcs
        for name, static, _ in funcs:
            if not static:
                defs[name] = fn
    graph = {fn: set() for fn in bodies}
    for fn, funcs in bodies.items():
        local = {name for name, _, _ in funcs}
        for _, _, body in funcs:
            for callee in expand(IDENT_CALL.findall(body), hcalls):
                target = None if callee in local else defs.get(callee)
                if target and target != fn and callee not in KEYWORDS:
                    graph[fn].add(target)
    return graph


def loops(graph):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layers(graph):
    memo = {}

    def layer(v):
        if v not in memo:
            memo[v] = 0
            memo[v] = 1 + max((layer(w) for w in graph[v]), default=-1)
        return memo[v]

    return {v: layer(v) for v in graph}


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "mm"
    if not os.path.isdir(directory):
        print(f"mm_callgraph: no directory {directory}", file=sys.stderr)
        return 2
    graph = build(directory)
    cyc = loops(graph)
    if cyc:
        for comp in cyc:
            print("mm_callgraph: call loop between " + ", ".join(comp))
            for v in comp:
                print(f"  {v} -> {', '.join(sorted(w for w in graph[v] if w in comp))}")
        return 1
    by_layer = {}
    for v, l in layers(graph).items():
        by_layer.setdefault(l, []).append(v)
    for l in sorted(by_layer):
        for v in sorted(by_layer[l]):
            print(f"layer {l}: {v:16} -> {' '.join(sorted(graph[v])) or '-'}")
    print(f"mm_callgraph: {len(graph)} files, no call loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
