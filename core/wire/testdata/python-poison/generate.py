"""Writes records.json: what babelqueue 1.24.0 (PyPI) build_poison_record
returns for each body below. See README.md; run with the wheel unpacked on
sys.path:  PYTHONPATH=/tmp/bqwheel python3 generate.py > records.json
"""
import base64
import json

from babelqueue._poison_record import build_poison_record

BLOCKS = {
    "full": {
        "reason": "poison",
        "error": "Undecodable BabelQueue body: bad \u2028 \"q\" <&> \x01",
        "exception": "BabelQueueError",
        "failed_at": 1764500001000,
        "original_queue": "orders",
        "attempts": 1,
        "lang": "go",
    },
    "nulls": {
        "reason": "poison",
        "error": None,
        "exception": None,
        "failed_at": 0,
        "original_queue": "",
        "attempts": 0,
        "lang": "go",
    },
}

BODIES = [
    ("dead-letter-member-wrapped", b'{"x":1,"dead_letter":{"reason":"failed","custom":"k"}}'),
    ("dead-letter-only-member", b'{"dead_letter":{"reason":"failed"}}'),
    ("dead-letter-null", b'{"a":1,"dead_letter":null}'),
    ("dead-letter-escaped-key", b'{"dead\\u005fletter":1}'),
    ("dead-letter-repeated", b'{"dead_letter":1,"a":2,"dead_letter":3}'),
    ("dead-letter-envelope", b'{"job":"urn:babel:orders:created","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":"x","dead_letter":{"reason":"failed","error":"boom","attempts":3}}'),
    ("nested-dead-letter-spliced", b'{"x":{"dead_letter":1},"y":[{"dead_letter":2}]}'),
    ("compact-object", b'{"trace_id":"t","data":{},"attempts":0}'),
    ("whitespace-around", b' \n{"job": "", "attempts":"x" }\t\r\n'),
    ("pretty-object", b'{\n  "job" : 42,\n  "data" : { "a" : [1, 2] }\n}\n'),
    ("empty-object", b'{}'),
    ("empty-object-spaced", b' { \n\t } '),
    ("duplicate-keys", b'{"a":1,"a":2}'),
    ("numbers-kept", b'{"big":12345678901234567890,"huge":1e400,"neg":-0.0}'),
    ("object-separators-kept", '{"s":"a\u2028b","e":"\\u2029"}'.encode()),
    ("surrogate-pair", b'{"a":"\\ud83d\\ude00"}'),
    ("surrogate-pair-upper", b'{"a":"\\uD83D\\uDE00"}'),
    ("lone-high", b'{"a":"\\ud800"}'),
    ("lone-low", b'{"a":"\\udc00x"}'),
    ("high-then-escape", b'{"a":"\\ud800\\n"}'),
    ("high-raw-low", b'{"a":"\\ud83dX\\ude00"}'),
    ("lone-high-in-key", b'{"\\ud800":1}'),
    ("escaped-backslash-u", b'{"a":"\\\\ud800"}'),
    ("array", b'[1,2]'),
    ("string", b'"just a string"'),
    ("number", b'42'),
    ("null", b'null'),
    ("true", b'true'),
    ("empty", b''),
    ("whitespace-only", b' \n'),
    ("text", b'not json <&> "q"\\ \n\t\x01\x7f'),
    ("text-separators", 'line\u2028para\u2029'.encode()),
    ("unicode-text", 'h\u00e9llo \U0001F600 \u00a0\u3000'.encode()),
    ("truncated-object", b'{"a":1'),
    ("trailing-data", b'{"a":1} x'),
    ("two-objects", b'{}{}'),
    ("nan", b'{"a":NaN}'),
    ("infinity", b'{"a":-Infinity}'),
    ("bom-object", b'\xef\xbb\xbf{"a":1}'),
    ("control-char-in-string", b'{"a":"x\ty"}'),
    ("single-quotes", b"{'a':1}"),
    ("invalid-utf8", b'ab\xff\xfe'),
    ("invalid-utf8-object", b'{"a":"\xc3"}'),
    ("encoded-surrogate", b'{"a":"\xed\xa0\x80"}'),
]

records = []
for name, body in BODIES:
    text = body.decode("utf-8", "surrogateescape")  # as the transports hand it over
    for block_name, block in BLOCKS.items():
        record = build_poison_record(text, block).encode("utf-8")
        records.append({
            "name": name + "/" + block_name,
            "block": block_name,
            "body": base64.b64encode(body).decode("ascii"),
            "record": base64.b64encode(record).decode("ascii"),
        })
print(json.dumps({"blocks": BLOCKS, "records": records}, ensure_ascii=False, indent=1))
