#!/usr/bin/env python3
"""Counts the atomic read-modify-writes (lock-prefixed and xchg instructions) a thread executed,
from a callgrind profile taken with --dump-instr=yes (BENCHMARKS.md, GPU section, session 33).

usage: callgrind-atomics.py CALLGRIND_OUT_FILE BINARY   (one line per instruction: count, address, function, instruction)
"""
import sys,re,subprocess,collections
path=sys.argv[1]; binary=sys.argv[2]
locks={}
dis=subprocess.run(['objdump','-d','--no-show-raw-insn','-C',binary],capture_output=True,text=True).stdout
fn=None
for line in dis.splitlines():
    m=re.match(r'^([0-9a-f]+) <(.*)>:',line)
    if m: fn=m.group(2); continue
    m=re.match(r'^\s+([0-9a-f]+):\s+(.*)',line)
    if m and re.search(r'\block\b|\bxchg',m.group(2)):
        locks[int(m.group(1),16)]=(fn,m.group(2))
counts=collections.Counter()
ob=None; pos=0; skip=False
obmap={}
for line in open(path):
    line=line.rstrip('\n')
    if line.startswith('ob=') : 
        m=re.match(r'ob=\((\d+)\)(?: (.*))?',line)
        if m and m.group(2): obmap[m.group(1)]=m.group(2)
        ob=obmap.get(m.group(1)) if m else line[3:]
        continue
    if line.startswith('cob='):
        # Object names may first appear on a callee's line; the ids are shared.
        m=re.match(r'cob=\((\d+)\) (.*)',line)
        if m: obmap[m.group(1)]=m.group(2)
        continue
    if line.startswith('calls='): skip=True; continue
    if not line or not (line[0] in '0123456789+-*'): continue
    tok=line.split()
    p=tok[0]
    if p.startswith('0x'): pos=int(p,16)
    elif p.startswith('+'): pos+=int(p[1:])
    elif p.startswith('-'): pos-=int(p[1:])
    elif p=='*': pass
    else: pos=int(p)
    if skip: skip=False; continue
    if ob and ob.endswith(binary.split('/')[-1]) and pos in locks :
        counts[pos]+=int(tok[2]) if len(tok)>2 else 0
for a,c in sorted(counts.items(), key=lambda x:-x[1]):
    print(c, hex(a), locks[a][0][:90], locks[a][1][:40])
