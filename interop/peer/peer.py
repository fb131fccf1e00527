"""The Python peer of the interop tests: the pinned BabelQueue Python SDK driven by the Go tests.

Usage: peer.py COMMAND SPEC_JSON (or @FILE holding it)

Every command reads its parameters from SPEC_JSON and writes JSON objects, one per line, to
stdout (bytes as standard base64, a null stays null). Long-running commands (the consumers and
the re-injector) stop when their count is reached, when their timeout passes, or when stdin is
closed, whichever comes first; the Go side closes stdin to stop them. Logs go to stderr.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import threading
import time
from typing import Any, Dict, List, Optional

logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="peer %(levelname)s %(name)s: %(message)s")

STOP = threading.Event()


def _watch_stdin() -> None:
    try:
        while sys.stdin.read(4096):
            pass
    except Exception:  # noqa: BLE001 - a closed stdin is the stop signal either way
        pass
    STOP.set()


def emit(obj: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def b64(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else base64.b64encode(bytes(value)).decode("ascii")


def unb64(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else base64.b64decode(value)


def now_ms() -> int:
    return int(time.time() * 1000)


class AesGcmCipher:
    """The AES-GCM cipher the SDK's gdpr module documents (nonce first, standard base64)."""

    def __init__(self, key_hex: str) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(bytes.fromhex(key_hex))

    def encrypt(self, plaintext: bytes) -> str:
        import os

        nonce = os.urandom(12)
        return base64.b64encode(nonce + self._aead.encrypt(nonce, plaintext, None)).decode("ascii")

    def decrypt(self, ciphertext: str) -> bytes:
        raw = base64.b64decode(ciphertext)
        return self._aead.decrypt(raw[:12], raw[12:], None)


def make_envelope(m: Dict[str, Any], queue: str) -> Dict[str, Any]:
    """``EnvelopeCodec.make`` of one spec message: ``meta`` entries passed through, and the data
    protected first (``gdpr.protect``) when the message has ``protect`` {key_hex, schema}."""
    import copy

    from babelqueue import EnvelopeCodec
    from babelqueue.gdpr import protect

    data = copy.deepcopy(m.get("data", {}))
    if m.get("protect"):
        protect(data, m["protect"]["schema"], AesGcmCipher(m["protect"]["key_hex"]))
    return EnvelopeCodec.make(m["urn"], data, queue=queue, meta=m.get("meta"))


def unprotected(spec: Dict[str, Any], envelope: Any) -> Any:
    """The handler's view of data: with ``unprotect`` {key_hex, schema} in the spec, a copy of
    the data after ``gdpr.unprotect`` (a DecryptError propagates, failing the handler); the
    decoded envelope itself is left as received, so a retry re-encodes the ciphertext."""
    import copy

    from babelqueue.gdpr import unprotect

    if not spec.get("unprotect") or envelope is None:
        return None
    data = copy.deepcopy(envelope.get("data"))
    unprotect(data, spec["unprotect"]["schema"], AesGcmCipher(spec["unprotect"]["key_hex"]))
    return data


def deadline(spec: Dict[str, Any]) -> float:
    return time.time() + float(spec.get("timeout", 60))


def running(until: float) -> bool:
    return not STOP.is_set() and time.time() < until


# -- Kafka -------------------------------------------------------------------


def kafka_record(message: Any) -> Dict[str, Any]:
    kind, ts = message.timestamp()
    return {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "key": b64(message.key()),
        "value": b64(message.value()),
        "headers": [[k, b64(v)] for k, v in (message.headers() or [])],
        "timestamp_type": kind,
        "timestamp": ts,
    }


def kafka_transport(spec: Dict[str, Any]) -> Any:
    from babelqueue.kafka_transport import KafkaTransport

    return KafkaTransport(
        "kafka://" + spec["brokers"],
        group_id=spec.get("group", "babelqueue"),
        retry_tiers_ms=spec.get("tiers_ms") or None,
        delivery_timeout=10.0,
    )


def cmd_kafka_publish(spec: Dict[str, Any]) -> None:
    """Publish envelopes built by the SDK (``EnvelopeCodec.make``) through ``KafkaTransport.publish``.
    ``created_at`` overrides ``meta.created_at`` (to make an old message)."""
    from babelqueue import EnvelopeCodec

    transport = kafka_transport(spec)
    for m in spec["messages"]:
        env = make_envelope(m, spec["topic"])
        if m.get("created_at") is not None:
            env["meta"]["created_at"] = m["created_at"]
        body = EnvelopeCodec.encode(env)
        transport.publish(spec["topic"], body)
        emit({"body": b64(body.encode("utf-8")), "id": env["meta"]["id"]})
    left = transport._producer_().flush(15)
    if left:
        raise SystemExit("kafka-publish: %d records not delivered" % left)


def cmd_kafka_produce_raw(spec: Dict[str, Any]) -> None:
    """Write records as given (key and value null or bytes) with a plain confluent-kafka producer."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": spec["brokers"], "message.max.bytes": 2000000})
    errors: List[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for r in spec["records"]:
        kwargs: Dict[str, Any] = {"value": unb64(r.get("value")), "on_delivery": report}
        if r.get("key") is not None or r.get("empty_key"):
            kwargs["key"] = unb64(r.get("key")) or b""
        if r.get("headers"):
            kwargs["headers"] = [(k, v.encode("utf-8")) for k, v in r["headers"]]
        producer.produce(spec["topic"], **kwargs)
    left = producer.flush(15)
    if left or errors:
        raise SystemExit("kafka-produce-raw: %d left, errors %s" % (left, errors))
    emit({"written": len(spec["records"])})


def cmd_kafka_read(spec: Dict[str, Any]) -> None:
    """Read ``count`` records of every partition of ``topic`` from the beginning, without a group."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": spec["brokers"], "group.id": "peer-read", "enable.auto.commit": False,
         "fetch.message.max.bytes": 2000000}
    )
    meta = consumer.list_topics(spec["topic"], timeout=10)
    parts = meta.topics[spec["topic"]].partitions
    consumer.assign([TopicPartition(spec["topic"], p, OFFSET_BEGINNING) for p in parts])
    until = deadline(spec)
    got = 0
    while got < int(spec["count"]) and running(until):
        message = consumer.poll(0.2)
        if message is None or message.error() is not None:
            continue
        emit(kafka_record(message))
        got += 1
    consumer.close()


def consume_with_app(spec: Dict[str, Any], transport: Any, record_of: Any, ready: Any = None) -> None:
    """Consume ``topic`` through ``transport`` with a BabelQueue app. Each delivery is reported with
    the raw record the transport read (``record_of`` its handle) and the envelope the handler got;
    ``fail`` makes the handler raise. ``ready``, when given, runs once the handlers are registered."""
    from babelqueue import BabelQueue

    app = BabelQueue(
        transport=transport,
        queue=spec["topic"],
        max_attempts=int(spec.get("max_attempts", 3)),
        dead_letter=bool(spec.get("dead_letter", False)),
    )
    seen: Dict[str, Any] = {}

    def handler(data: Any, meta: Any, envelope: Any) -> None:
        seen["envelope"] = envelope
        seen["at"] = now_ms()
        seen["clear"] = unprotected(spec, envelope)
        if spec.get("fail"):
            raise RuntimeError("python handler failed")

    for urn in spec.get("urns", []):
        app.register(urn, handler)
    if ready is not None:
        ready()
    until = deadline(spec)
    count = int(spec.get("count", 0))
    done = 0
    while (count == 0 or done < count) and running(until):
        received = transport.pop(spec["topic"], timeout=0.2)
        if received is None:
            continue
        seen.clear()
        record = record_of(received.handle)
        app.dispatch(received)
        emit({"record": record, "envelope": seen.get("envelope"), "clear": seen.get("clear"), "at": seen.get("at", now_ms()),
              "settled_at": now_ms()})
        done += 1
    transport.close()


def cmd_kafka_consume(spec: Dict[str, Any]) -> None:
    """Consume ``topic`` with a BabelQueue app (consume_with_app)."""
    consume_with_app(spec, kafka_transport(spec), kafka_record)


def cmd_kafka_reinject(spec: Dict[str, Any]) -> None:
    """Run the SDK's RetryReinjector until it wrote ``count`` records."""
    from babelqueue.kafka_retry import RetryReinjector

    reinjector = RetryReinjector(
        "kafka://" + spec["brokers"],
        work_topics=spec["topics"],
        retry_tiers_ms=spec["tiers_ms"],
        group_id=spec.get("group", "babelqueue-retry-reinject"),
        poll_interval=0.2,
    )
    until = deadline(spec)
    written = 0
    while written < int(spec["count"]) and running(until):
        n = reinjector.run_once(0.2)
        if n:
            written += n
            emit({"written": n, "at": now_ms()})
    reinjector.close()


def cmd_kafka_redrive(spec: Dict[str, Any]) -> None:
    """Run the SDK's ``redrive`` over ``dlq`` (a Kafka transport with its own group)."""
    from babelqueue.redrive import redrive

    transport = kafka_transport(spec)
    until = deadline(spec)
    # The first polls may come before the group assigned the partitions: run again until a run
    # examined something.
    result = redrive(transport, spec["dlq"], timeout=1.0)
    while not result.items and running(until):
        result = redrive(transport, spec["dlq"], timeout=1.0)
    transport.close()
    emit({
        "redriven": result.redriven,
        "skipped": result.skipped,
        "items": [{"id": i.message_id, "to": i.to, "redriven": i.redriven, "reason": i.reason} for i in result.items],
    })


# -- codec ---------------------------------------------------------------------


def cmd_poison_record(spec: Dict[str, Any]) -> None:
    """The SDK's poison dead-letter body for ``input`` with the given ``dead_letter`` block, the
    bytes exactly as its Kafka transport would read them (``surrogateescape``; null is "")."""
    from babelqueue._poison_record import build_poison_record

    out = []
    for case in spec["cases"]:
        raw = unb64(case.get("input")) or b""
        block = json.loads(case["block"])
        record = build_poison_record(raw.decode("utf-8", "surrogateescape"), block)
        out.append(b64(record.encode("utf-8")))
    emit({"records": out})


def cmd_reencode(spec: Dict[str, Any]) -> None:
    """Decode each body with the SDK's codec and encode it again (what every Python re-publish does)."""
    from babelqueue import EnvelopeCodec

    emit({"bodies": [b64(EnvelopeCodec.encode(EnvelopeCodec.decode(unb64(b).decode("utf-8"))).encode("utf-8"))
                     for b in spec["bodies"]]})


def cmd_gdpr(spec: Dict[str, Any]) -> None:
    """Run ``gdpr.protect`` or ``gdpr.unprotect`` (``op``) on ``data`` with ``schema`` and the
    AES-GCM key ``key_hex``; emit the resulting data, or the error's type and text."""
    from babelqueue.gdpr import protect, unprotect

    data = spec["data"]
    try:
        (protect if spec["op"] == "protect" else unprotect)(data, spec["schema"], AesGcmCipher(spec["key_hex"]))
    except Exception as exc:  # noqa: BLE001 - reported to the Go side
        emit({"error": type(exc).__name__, "message": str(exc)})
        return
    emit({"data": data})


# -- Pulsar ------------------------------------------------------------------


def pulsar_record(message: Any) -> Dict[str, Any]:
    return {
        "payload": b64(message.data()),
        "properties": dict(message.properties()),
        "key": message.partition_key(),
        "event_timestamp": message.event_timestamp(),
        "publish_timestamp": message.publish_timestamp(),
        "redelivery_count": message.redelivery_count(),
    }


def pulsar_transport(spec: Dict[str, Any]) -> Any:
    import pulsar
    from babelqueue.pulsar_transport import PulsarTransport

    client = pulsar.Client(spec["url"], operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    options: Dict[str, Any] = {}
    if spec.get("earliest"):
        options["initial_position"] = pulsar.InitialPosition.Earliest
    return PulsarTransport(client=client, subscription=spec.get("subscription", "babelqueue"), **options)


def cmd_pulsar_publish(spec: Dict[str, Any]) -> None:
    """Publish envelopes built by the SDK through ``PulsarTransport.publish``."""
    from babelqueue import EnvelopeCodec

    transport = pulsar_transport(spec)
    for m in spec["messages"]:
        env = make_envelope(m, spec["topic"])
        body = EnvelopeCodec.encode(env)
        transport.publish(spec["topic"], body)
        emit({"body": b64(body.encode("utf-8")), "id": env["meta"]["id"], "at": now_ms()})
    transport.close()


def cmd_pulsar_send_raw(spec: Dict[str, Any]) -> None:
    """Send payloads as given with the plain pulsar-client (the C++ client) producer."""
    import pulsar

    client = pulsar.Client(spec["url"], operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(spec["topic"], batching_enabled=False)
    for m in spec["messages"]:
        producer.send(unb64(m.get("payload")) or b"", properties=m.get("properties") or {})
    producer.close()
    client.close()
    emit({"written": len(spec["messages"])})


def cmd_pulsar_read(spec: Dict[str, Any]) -> None:
    """Read ``count`` messages of ``topic`` from the earliest with the plain client (its own subscription)."""
    import pulsar

    client = pulsar.Client(spec["url"], operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(spec["topic"], "peer-read", consumer_type=pulsar.ConsumerType.Exclusive,
                                initial_position=pulsar.InitialPosition.Earliest)
    until = deadline(spec)
    got = 0
    while got < int(spec["count"]) and running(until):
        try:
            message = consumer.receive(timeout_millis=200)
        except Exception as exc:  # noqa: BLE001 - pulsar.Timeout when nothing arrived
            if type(exc).__name__ == "Timeout":
                continue
            raise
        consumer.acknowledge(message)
        emit(pulsar_record(message))
        got += 1
    consumer.close()
    client.close()


def cmd_pulsar_consume(spec: Dict[str, Any]) -> None:
    """Consume ``topic`` with a BabelQueue app on the subscription ``subscription`` (Shared)."""
    transport = pulsar_transport(spec)

    def ready() -> None:
        # Subscribe before saying so, so the Go side publishes only once this consumer is attached.
        transport._consumer(spec["topic"])
        emit({"ready": True})

    consume_with_app(spec, transport, pulsar_record, ready)


COMMANDS = {
    "kafka-publish": cmd_kafka_publish,
    "kafka-produce-raw": cmd_kafka_produce_raw,
    "kafka-read": cmd_kafka_read,
    "kafka-consume": cmd_kafka_consume,
    "kafka-reinject": cmd_kafka_reinject,
    "kafka-redrive": cmd_kafka_redrive,
    "poison-record": cmd_poison_record,
    "reencode": cmd_reencode,
    "gdpr": cmd_gdpr,
    "pulsar-publish": cmd_pulsar_publish,
    "pulsar-send-raw": cmd_pulsar_send_raw,
    "pulsar-read": cmd_pulsar_read,
    "pulsar-consume": cmd_pulsar_consume,
}


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in COMMANDS:
        sys.exit("usage: peer.py {%s} SPEC_JSON" % ",".join(sorted(COMMANDS)))
    threading.Thread(target=_watch_stdin, daemon=True).start()
    spec = sys.argv[2]
    if spec.startswith("@"):
        with open(spec[1:], encoding="utf-8") as f:
            spec = f.read()
    COMMANDS[sys.argv[1]](json.loads(spec))


if __name__ == "__main__":
    main()
