#!/usr/bin/env python3
"""The runtime's layering check, run by .ci/run.

Reads every `crate::`, `super::` and `self::` path of the `hrx` crate's files under src/
(in `use` items and inline), resolves each to the file that defines it (following the
crate root's and folders' `pub use` re-exports), and fails when:

- files import each other in a cycle (a strongly connected component of more than one
  file), unless every file of the cycle lies inside one folder whose `mod.rs` doc says why
  with a line `//! Import cycles: <reason>`;
- a pure backend (`src/gpu/`, `src/npu/`, and `src/kernels/`, the kernel library every backend
  loads from) imports `trace`, `runtime` or `execution` (DESIGN.md: sync/clock <- gpu, npu <-
  execution stages <- runtime).

Usage: scripts/layers.py [--baseline FILE] [SRC_DIR]   (default: src/ beside scripts/)
Exit 0 when clean, 1 with one line per violation.

With `--baseline FILE` (one known violation per line, as printed), the known violations are
tolerated while the runtime is being split into layers (issue 16), and the check fails on
any violation not in the file and on any line of the file that no longer occurs (so the
file only shrinks: remove a line when its violation is gone).
"""

import os
import re
import sys

PURE = ("trace", "runtime", "execution")
# The backends, and the kernel library they load kernels from.
FORBIDDEN = {"gpu": PURE, "npu": PURE, "kernels": PURE}
ALLOW_MARK = re.compile(r"^//!\s*Import cycles:\s*\S", re.M)


def module_files(src):
    """Module path (tuple of names) -> file, for every .rs file of the crate."""
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel == ["lib"]:
                module = ()
            elif rel[-1] == "mod":
                module = tuple(rel[:-1])
            else:
                module = tuple(rel)
            files[module] = path
    return files


def strip_comments(text):
    """Drops comments and the contents of string and char literals (a scan, not regexes:
    literals may hold `//`, quotes or `crate::` in messages)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i : i + 10]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = len(re.match(r'r(#*)"', text[i:]).group(1))
            close = '"' + "#" * hashes
            j = text.find(close, i + 2 + hashes)
            out.append('""')
            i = n if j < 0 else j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i : i + 12]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i : i + 12])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (renames and globs kept as paths)."""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix = tree[:i]
                inner = tree[i + 1 : tree.rindex("}")]
                parts, level, start = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                out = []
                for part in parts:
                    if part.strip():
                        out.extend(prefix + p for p in expand_use(part))
                return out
            depth += 1
    return [re.split(r"\s+as\s+", tree)[0].strip()]


TEST_MOD = re.compile(r"#\[cfg\([^\]]*\btest\b[^\]]*\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")


def strip_tests(text):
    """Drops inline `#[cfg(test)] mod x { .. }` blocks; returns (text, test module names
    declared as files)."""
    files = set()
    out, pos = [], 0
    for match in TEST_MOD.finditer(text):
        if match.start() < pos:
            continue
        if match.group(2) == ";":
            files.add(match.group(1))
            continue
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[pos : match.start()])
        pos = i
    out.append(text[pos:])
    return "".join(out), files


def paths_of(text):
    """Every path starting with crate/super/self, from `use` items (not `pub use`
    re-exports, which are followed instead) and inline uses."""
    found = []
    text = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", text)
    for match in re.finditer(r"\buse\s+([^;]+);", text):
        found.extend(p for p in expand_use(match.group(1)) if re.match(r"(crate|super|self)\b", p))
    body = re.sub(r"\buse\s+[^;]+;", "", text)
    found.extend(re.findall(r"\b((?:crate|super)(?:::\w+)+)", body))
    return found


def absolute(module, is_mod_file, path):
    """The path's segments from the crate root."""
    segments = [s for s in re.split(r"\s*::\s*", path) if s]
    base = list(module) if is_mod_file or not module else list(module)
    if segments[0] == "crate":
        return segments[1:]
    here = list(module)
    # In `a/b.rs` (module a::b) and in `a/b/mod.rs` (module a::b) alike, `self` is a::b and
    # `super` is a.
    del base
    while segments and segments[0] in ("super", "self"):
        if segments.pop(0) == "super":
            here = here[:-1]
    return here + segments


def reexports(files):
    """(module, name) -> absolute target path, from `pub use` / `pub(crate) use` items."""
    table = {}
    for module, path in files.items():
        text = strip_comments(open(path, encoding="utf-8").read())
        for match in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            for use in expand_use(match.group(1)):
                if use.startswith(("std", "core", "alloc")) or "::" not in use:
                    continue
                name = use.split("::")[-1].strip()
                target = use
                if not re.match(r"(crate|super|self)\b", use):
                    # `pub use child::Item` is relative to the module itself.
                    target = "self::" + use
                table[(module, name)] = absolute(module, True, target)
    return table


def resolve(segments, files, table, seen=None):
    """The file defining `segments` (longest module prefix, following re-exports)."""
    seen = seen or set()
    for cut in range(len(segments), -1, -1):
        module = tuple(segments[:cut])
        if module in files:
            rest = segments[cut:]
            if rest and (module, rest[0]) in table and (module, rest[0]) not in seen:
                seen.add((module, rest[0]))
                return resolve(table[(module, rest[0])] + rest[1:], files, table, seen)
            return module
    return None


def check(src):
    files = module_files(src)
    # Test modules (`#[cfg(test)] mod x;`) may use the whole crate: not layered.
    texts = {}
    for module, path in list(files.items()):
        text, tests = strip_tests(strip_comments(open(path, encoding="utf-8").read()))
        texts[module] = text
        for test in tests:
            files.pop(module + (test,), None)
    texts = {m: t for m, t in texts.items() if m in files}
    table = reexports(files)
    edges = {m: set() for m in files}
    for module, path in files.items():
        for p in paths_of(texts[module]):
            target = resolve(absolute(module, path.endswith("mod.rs"), p), files, table)
            if target is not None and target != module:
                edges[module].add(target)
    problems = []
    name = lambda m: os.path.relpath(files[m], os.path.dirname(src))
    for module, targets in edges.items():
        if module and module[0] in FORBIDDEN:
            for target in targets:
                if target and target[0] in FORBIDDEN[module[0]]:
                    problems.append(
                        f"{name(module)} imports {name(target)}: src/{module[0]}/ is a pure "
                        f"backend and must not import {', '.join(FORBIDDEN[module[0]])}"
                    )
    for component in components(edges):
        if len(component) < 2:
            continue
        folder = common_folder(component)
        mod_file = files.get(folder)
        if folder and mod_file and mod_file.endswith("mod.rs"):
            if ALLOW_MARK.search(open(mod_file, encoding="utf-8").read()):
                continue
        listed = ", ".join(sorted(name(m) for m in component))
        problems.append(f"import cycle between {len(component)} files: {listed}")
    return problems


def common_folder(component):
    prefix = None
    for module in component:
        folder = module[:-1] if module else ()
        if prefix is None:
            prefix = folder
        n = 0
        while n < min(len(prefix), len(folder)) and prefix[n] == folder[n]:
            n += 1
        prefix = prefix[:n]
    # A folder module itself (its mod.rs) belongs to the folder.
    for module in component:
        if module == prefix:
            continue
        if module[: len(prefix)] != prefix:
            return ()
    return prefix


def components(edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    out.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    baseline = None
    if args[:1] == ["--baseline"]:
        if len(args) < 2:
            print("error: --baseline needs a file")
            return 2
        baseline, args = args[1], args[2:]
    src = args[0] if args else os.path.join(here, "..", "src")
    src = os.path.normpath(src)
    if not os.path.isdir(src):
        print(f"error: {src} is not a directory")
        return 2
    # Paths relative to the repository, so that the output (and a baseline) is stable.
    problems = [p.replace(os.path.dirname(src) + os.sep, "") for p in check(src)]
    known = set()
    if baseline:
        with open(baseline, encoding="utf-8") as f:
            known = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    new = [p for p in problems if p not in known]
    gone = sorted(known - set(problems))
    for problem in new:
        print(f"error: {problem}")
    for line in gone:
        print(f"error: fixed, remove from {baseline}: {line}")
    if new or gone:
        print(f"layers: {len(new)} new violation(s), {len(gone)} stale baseline line(s) in {src}")
        return 1
    if problems:
        print(f"layers: only the {len(problems)} known violation(s) of {baseline}")
    else:
        print(f"layers: no import cycles in {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
