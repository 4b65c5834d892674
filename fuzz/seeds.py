#!/usr/bin/env python3
"""Seeds for the fuzz targets from real traces: `seeds.py OUT_DIR TRACE...`.

For each trace, two inputs (see src/read.rs for the input layout): the trace as recorded
(mode byte 0), and the trace with every block stored uncompressed (mode byte 1: checksums
resealed), so that mutations land in postcard records rather than in zstd frames. The
rewritten footer's index no longer matches, which the readers report.
"""
import hashlib, os, struct, subprocess, sys

def raw(trace):
    header_len = struct.unpack_from('<I', trace, 20)[0]
    out = bytearray(trace[:header_len])
    out[13] = 0  # compression: none
    at, footer_at = header_len, None
    while at + 32 <= len(trace) and trace[at:at + 4] == b'HRXB':
        kind, flags, stored, plain, count = struct.unpack_from('<HHIII', trace, at + 4)
        payload = trace[at + 32:at + 32 + stored]
        if len(payload) < stored:
            break  # a torn tail
        if flags & 1:
            payload = subprocess.run(['zstd', '-dc'], input=payload, capture_output=True,
                                     check=True).stdout
        if kind == 2:
            footer_at = len(out)
        out += struct.pack('<4sHHIII', b'HRXB', kind, 0, len(payload), len(payload), count)
        out += b'\0' * 12  # checksums: resealed by the fuzz entry (mode bit 0)
        out += payload
        at += 32 + stored
    if footer_at is not None:
        out += struct.pack('<Q', footer_at) + b'HRXTEND!'
    return bytes(out)

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
for path in sys.argv[2:]:
    trace = open(path, 'rb').read()
    for seed in (b'\0' + trace, b'\1' + raw(trace)):
        name = hashlib.sha1(seed).hexdigest()
        open(os.path.join(out_dir, name), 'wb').write(seed)
        print(name, len(seed), path)
