"""Write a hostile-strings archive for the viewer tests.

Used only when the project's own builder (`dendro demo --hostile OUT`) is not
available: it copies a sound fixture and rewrites the strings a viewer shows
(labels, metadata including the reserved keys, a stream name, a caller-row
name) with markup and script payloads, a 1 MB string, control characters
and bidi overrides. The engine reads the result like any archive; only the
strings are hostile.

usage: python3 make_hostile.py FIXTURE OUT
"""

import json
import shutil
import sqlite3
import sys

SCRIPTY = [
    "<script>alert('label')</script>",
    '<img src=x onerror="alert(\'img\')">',
    "\"><svg onload=alert('svg')>",
    "javascript:alert('href')",
    "{{constructor.constructor('alert(1)')()}}",
]
BIDI = "admin\u202egnp.exe\u202c \u2066isolate\u2069 \u200fRTL mark"
CONTROL = "bell\u0007 nul\u0000 esc\u001b[31mred\u001b[0m tab\there\nnewline\r\u0085nel"
MEGA = "M" * (1 << 20)


def main(src: str, out: str) -> None:
    shutil.copyfile(src, out)
    db = sqlite3.connect(out)
    ts0 = 1_700_000_000_000_000_000
    labels = {
        "host": SCRIPTY[0],
        SCRIPTY[1]: "key is markup",
        "bidi": BIDI,
        "control": CONTROL,
        "huge": MEGA,
        MEGA[:70000] + "-key": "a 70 kB key",
    }
    events = {
        "events": [
            {"timestamp": ts0 + 5_000_000_000, "description": SCRIPTY[1], "kind": SCRIPTY[2], "details": {"html": SCRIPTY[0]}, "id": BIDI},
            {"timestamp": ts0 + 20_000_000_000, "description": MEGA, "kind": "deploy"},
        ]
    }
    sessions = [
        {"session": SCRIPTY[0], "clock_anchor_wall_ns": ts0, "dendro": BIDI},
        {"session": "s2", "clock_anchor_wall_ns": ts0, "dendro": "0.3.4", "resumed_after_ts": ts0 + 30_000_000_000},
    ]
    metadata = {
        "encoder": "fixturegen-i64le-utf8-v1",
        "note": SCRIPTY[2],
        "href": SCRIPTY[3],
        "template": SCRIPTY[4],
        "bidi": BIDI,
        "control": CONTROL,
        "big": MEGA,
        "events": json.dumps(events),
        "writer_sessions": json.dumps(sessions),
        "producer_epochs": json.dumps([{"epoch": SCRIPTY[0], "from_ts": ts0 + 10_000_000_000}]),
    }
    db.execute("UPDATE sources SET labels = ?, metadata = ? WHERE id = 1", (json.dumps(labels), json.dumps(metadata)))
    # Metadata of the second source is not even JSON-shaped reserved keys.
    db.execute(
        "UPDATE sources SET metadata = ? WHERE id = 2",
        (json.dumps({"events": "<b>not json</b>", "writer_sessions": "[1, 2", "producer_epochs": "{}", "k": CONTROL}),),
    )
    evil_stream = "<b>cpu</b>\u202e" + SCRIPTY[1]
    for table in ("segments", "wal"):
        db.execute(f"UPDATE {table} SET stream = ? WHERE source_id = 1 AND stream = 'cpu'", (evil_stream,))
    db.execute(
        "INSERT INTO caller_rows(source_id, stream, ts, blob) VALUES (1, ?, ?, ?)",
        (SCRIPTY[0], ts0, ("<script>alert('blob')</script>" + BIDI).encode()),
    )
    db.execute("INSERT INTO caller_rows(source_id, stream, ts, blob) VALUES (1, ?, ?, ?)", (evil_stream, ts0 + 1, bytes(range(256))))
    db.commit()
    db.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
