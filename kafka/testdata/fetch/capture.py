"""Capture raw Fetch responses for the batch-header tests (see README.md).

Run against a real Kafka broker on loopback:
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install confluent-kafka
    (cd produce && GOWORK=off go build -o /tmp/fixtureproduce .)
    /tmp/venv/bin/python capture.py 127.0.0.1:9092 /tmp/fixtureproduce

For each producer (kafka-go, franz-go, librdkafka via confluent-kafka) and
each message.timestamp.type it creates a one-partition topic, writes two
batches whose producer timestamps are an hour old (three records
uncompressed, then two compressed), fetches partition 0 from offset 0 with a
hand-written Fetch request over a plain socket and writes the response
frame as read (size prefix, correlation id, body) to <name>.v<N>.bin. The
expected timestamps come from a confluent-kafka consumer (librdkafka applies
the timestamp type) and go to <name>.json.
"""
import json
import socket
import struct
import subprocess
import sys
import time
import uuid

import confluent_kafka

from confluent_kafka import Consumer, Producer, TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_CREATE_TIME
from confluent_kafka.admin import AdminClient, NewTopic

BROKER, PRODUCE = sys.argv[1], sys.argv[2]
TYPES = {"LogAppendTime": "lat", "CreateTime": "ct"}


def create(topic, ts_type):
    admin = AdminClient({"bootstrap.servers": BROKER})
    fs = admin.create_topics([NewTopic(topic, 1, 1, config={"message.timestamp.type": ts_type})])
    for f in fs.values():
        f.result()
    time.sleep(1)


def produce_librdkafka(topic, ts):
    for i, (vals, codec) in enumerate(((["a0", "a1", "a2"], "none"), (["b0", "b1"], "zstd"))):
        p = Producer({"bootstrap.servers": BROKER, "compression.type": codec, "linger.ms": 1000, "acks": "all"})
        for j, v in enumerate(vals):
            p.produce(topic, v.encode(), b"k", partition=0, timestamp=ts + i * 10 + j, headers=[("h", v.encode())])
        p.flush(30)


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def fetch_request(version, corr, topic):
    body = struct.pack(">hhi", 1, version, corr) + string("fixture-capture")
    body += struct.pack(">iii", -1, 500, 1)  # replica_id, max_wait_ms, min_bytes
    if version >= 3:
        body += struct.pack(">i", 1 << 20)  # max_bytes
    if version >= 4:
        body += struct.pack(">b", 0)  # isolation_level
    if version >= 7:
        body += struct.pack(">ii", 0, -1)  # session_id, session_epoch
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">ii", 1, 0)  # one topic, one partition: 0
    if version >= 9:
        body += struct.pack(">i", -1)  # current_leader_epoch
    body += struct.pack(">q", 0)  # fetch_offset
    if version >= 5:
        body += struct.pack(">q", -1)  # log_start_offset
    body += struct.pack(">i", 1 << 20)  # partition_max_bytes
    if version >= 7:
        body += struct.pack(">i", 0)  # forgotten_topics_data
    if version >= 11:
        body += string("")  # rack_id
    return struct.pack(">i", len(body)) + body


def read_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out


def raw_fetch(topic, version):
    host, port = BROKER.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(fetch_request(version, 7, topic))
        size = read_exact(s, 4)
        return size + read_exact(s, struct.unpack(">i", size)[0])


def oracle(topic, n):
    c = Consumer({"bootstrap.servers": BROKER, "group.id": "capture-" + uuid.uuid4().hex,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    deadline = time.time() + 30
    while len(out) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None or m.error():
            continue
        kind, ts = m.timestamp()
        out.append({"offset": m.offset(), "value": m.value().decode(), "timestamp_type":
                    {TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime", TIMESTAMP_CREATE_TIME: "CreateTime"}[kind],
                    "timestamp": ts})
    c.close()
    return out


def main():
    old = int(time.time() * 1000) - 3600 * 1000
    for producer in ("kafkago", "franzgo", "librdkafka"):
        for ts_type, short in TYPES.items():
            name = f"{producer}-{short}"
            topic = f"fixture-{name}-{uuid.uuid4().hex[:8]}"
            create(topic, ts_type)
            if producer == "librdkafka":
                produce_librdkafka(topic, old)
            else:
                subprocess.run([PRODUCE, "-broker", BROKER, "-topic", topic, "-client", producer, "-ts", str(old)], check=True)
            versions = (4, 5, 10, 11) if name == "librdkafka-lat" else (10,)
            for v in versions:
                with open(f"{name}.v{v}.bin", "wb") as f:
                    f.write(raw_fetch(topic, v))
            meta = {"producer": producer, "client": {"librdkafka": "confluent-kafka %s (librdkafka %s)" % (confluent_kafka.version(), confluent_kafka.libversion()[0]),
                                                     "kafkago": "segmentio/kafka-go v0.4.51", "franzgo": "twmb/franz-go v1.21.7"}[producer],
                    "topic": topic, "message.timestamp.type": ts_type, "producer_timestamp_ms": old,
                    "fetch_versions": list(versions), "records": oracle(topic, 5)}
            with open(f"{name}.json", "w") as f:
                json.dump(meta, f, indent=1)
                f.write("\n")
            print(name, len(meta["records"]), "records")


main()
