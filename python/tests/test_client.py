"""strata_client against a real Strata server (STRATA_URL; cmd/strata/python_test.go starts one
and runs these with `python3 -m unittest`), and its retry and error handling against a stub."""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
import unittest
import uuid

from strata_client import (
    AlreadyExistsError,
    Client,
    DatagenItemId,
    DatagenStore,
    GenericStore,
    GoneError,
    InvalidRequestError,
    NotFoundError,
    QuotaExceededError,
    RemoteContext,
    RolloutStore,
    UnavailableError,
    datagen_event_id,
    delete_snapshot,
    snapshot,
)

URL = os.environ.get("STRATA_URL", "")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@unittest.skipUnless(URL, "set STRATA_URL to a running server")
class ContextStoreTest(unittest.TestCase):
    def test_agent_memory(self) -> None:
        name = unique("ctx")
        ctx = RemoteContext.connect_or_create(URL, name, embedding_dim=3, distance_metric="cosine")
        first = ctx.add("user", "the deploy runbook for payments", embedding=[1.0, 0.0, 0.0], metadata={"team": "payments"},
                        relationships=[{"target_id": "doc://runbook", "relation": "cites"}])
        ids = ctx.add_many([
            {"role": "assistant", "content": "lunch menu", "embedding": [0.0, 1.0, 0.0], "external_id": "menu"},
            {"role": "user", "content": b"\x00\x01", "embedding": [0.0, 0.0, 1.0]},
        ], flush=True)
        self.assertEqual(len(ids), 2)
        self.assertEqual(ctx.payload(ids[1]), b"\x00\x01")
        self.assertEqual(ctx.get(ids[1])["binary"], b"\x00\x01")

        hits = ctx.search([0.9, 0.1, 0.0], limit=2)
        self.assertEqual([h["id"] for h in hits], [first, ids[0]])
        self.assertGreaterEqual(hits[1]["distance"], hits[0]["distance"])
        self.assertEqual([h["text"] for h in ctx.search([0.0, 1.0, 0.0], filters={"team": "payments"})], ["the deploy runbook for payments"])
        fused = ctx.retrieve(text="payments runbook", vector=[1.0, 0.0, 0.0], limit=3)
        self.assertEqual(fused[0]["id"], first)
        self.assertEqual(sorted(fused[0]["matched_channels"]), ["text", "vector"])

        up = ctx.upsert("assistant", "dinner menu", external_id="menu", embedding=[0.0, 1.0, 0.0])
        self.assertFalse(up["inserted"])
        self.assertEqual(up["replaced_id"], ids[0])
        self.assertEqual(ctx.get_by_external_id("menu")["text"], "dinner menu")
        upd = ctx.update(external_id="menu", metadata={"rev": 2})
        self.assertTrue(upd["updated"])
        self.assertEqual(upd["record"]["metadata"], {"rev": 2})
        self.assertEqual([r["id"] for r in ctx.related("doc://runbook", "cites")], [first])
        self.assertEqual(len(ctx.list()), 3)
        self.assertEqual(len(ctx.list(include_retired=True)), 5)
        with self.assertRaises(InvalidRequestError):
            ctx.add("user", "bad", embedding=[1.0, 2.0])
        self.assertTrue(ctx.delete(external_id="menu"))
        self.assertFalse(ctx.forget(external_id="menu"))
        self.assertIsNone(ctx.get(external_id="menu"))
        self.assertIsInstance(ctx.compaction_stats()["total_fragments"], int)
        ctx.drop()
        with self.assertRaises(NotFoundError):
            RemoteContext.connect(URL, name)


@unittest.skipUnless(URL, "set STRATA_URL to a running server")
class RolloutStoreTest(unittest.TestCase):
    def test_round_trip(self) -> None:
        name = unique("rl")
        store = RolloutStore.connect_or_create(URL, name)
        resp = store.add([
            {"id": "row-0", "rollout_id": "traj-1", "problem_id": "p-1", "role": "assistant", "content": "the answer is 42", "reward": 1.0, "policy_version": "ckpt-7"},
            {"id": "row-1", "rollout_id": "traj-1", "sequence_order": 1, "role": "artifact", "content_type": "application/octet-stream", "binary_payload": b"\x00\x01\x02trace"},
        ])
        self.assertEqual(resp["count"], 2)
        self.assertEqual(sorted(resp["ids"]), ["row-0", "row-1"])
        self.assertEqual({r["id"] for r in store.list()}, {"row-0", "row-1"})
        one = store.get("row-0")
        self.assertIsNotNone(one)
        assert one is not None
        self.assertEqual(one["reward"], 1.0)
        self.assertIsNone(one.get("binary_payload"))
        self.assertEqual(store.get_blob("row-1"), b"\x00\x01\x02trace")
        self.assertIsNone(store.get("missing"))
        self.assertEqual([r["id"] for r in store.get_trajectory("traj-1")], ["row-0", "row-1"])
        store.add_one(id="only", rollout_id="traj-9", reward=0.5)
        reader = RolloutStore.connect(URL, name)  # another connection sees the write
        self.assertEqual([r["id"] for r in reader.list(filters={"rollout_id": "traj-9"})], ["only"])
        self.assertEqual([r["id"] for r in reader.list(filters="reward < 0.75")], ["only"])
        self.assertGreaterEqual(store.version(), 1)
        with self.assertRaises(AlreadyExistsError):
            RolloutStore.create(URL, name)
        with self.assertRaises(NotFoundError):
            RolloutStore.connect(URL, unique("absent"))
        with self.assertRaises(InvalidRequestError) as e:
            store.add({"rollout_id": "no id"})
        self.assertEqual(e.exception.code, "INVALID_REQUEST")

    def test_sql_and_batch_reads(self) -> None:
        store = RolloutStore.connect_or_create(URL, unique("rl-sql"))
        store.add([{"id": f"r{i:02d}", "rollout_id": f"t{i % 3}", "reward": float(i)} for i in range(12)])
        got = store.get_rows(["r05", "absent", "r01"], columns=["reward"])
        self.assertEqual([(r["id"], r["reward"]) for r in got], [("r05", 5.0), ("r01", 1.0)])
        try:
            rows = store.sql("SELECT rollout_id, count(*) AS n, max(reward) AS best FROM t GROUP BY 1 ORDER BY 1", arrow=False)
        except UnavailableError as e:  # a server built without SQL says so
            self.assertIn("without SQL", str(e))
            return
        self.assertEqual(rows, [{"rollout_id": "t0", "n": 4, "best": 9.0}, {"rollout_id": "t1", "n": 4, "best": 10.0},
                                {"rollout_id": "t2", "n": 4, "best": 11.0}])
        self.assertEqual(len(store.sql("SELECT id FROM records", limit=5, arrow=False)), 5)
        with self.assertRaises(InvalidRequestError) as e:
            store.sql("DELETE FROM t", arrow=False)
        self.assertEqual(e.exception.code, "INVALID_SQL")
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return
        table = store.sql("SELECT id, reward FROM t ORDER BY id")
        self.assertEqual(table.num_rows, 12)

    def test_change_feed_and_read_tokens(self) -> None:
        store = RolloutStore.connect_or_create(URL, unique("rl-feed"))
        store.create_consumer("trainer")  # at the feed's end: the rows added next are after it
        feed = store.changes(consumer="trainer", wait=5)
        store.add([{"id": f"r{i}", "rollout_id": f"p{i % 2}"} for i in range(4)], flush=True)
        batch = next(feed)
        self.assertEqual(sorted(r["id"] for r in batch["rows"]), ["r0", "r1", "r2", "r3"])
        self.assertEqual({r["_op"] for r in batch["rows"]}, {"upsert"})
        store.add({"id": "r9", "rollout_id": "p0"}, flush=True)
        batch = next(feed)  # the first batch was committed when this one was asked for
        self.assertEqual([r["id"] for r in batch["rows"]], ["r9"])
        feed.close()
        [consumer] = store.consumers()
        self.assertEqual(consumer["name"], "trainer")
        # Complete groups, without a consumer: nothing until a group has its two members.
        grouped = list(store.changes(start="earliest", follow=False, complete_by="rollout_id", group_size=3))
        self.assertEqual([sorted(r["id"] for r in b["rows"]) for b in grouped], [["r0", "r2", "r9"]])
        for b in grouped:
            self.assertTrue(all(r["_complete"] for r in b["rows"]))

        token = snapshot(URL, ["rollout/" + store.name])
        store.add({"id": "r10", "rollout_id": "p1"}, flush=True)
        self.assertEqual(len(list(store.iter(snapshot=token["id"]))), 5)
        self.assertEqual(len(list(store.iter())), 6)
        delete_snapshot(URL, token["id"])
        with self.assertRaises(GoneError) as e:
            list(store.iter(snapshot=token["id"]))
        self.assertEqual(e.exception.code, "SNAPSHOT_EXPIRED")

    def test_iteration_follows_keyset_pages(self) -> None:
        store = RolloutStore.connect_or_create(URL, unique("rl-pages"))
        store.add([{"id": f"r{i:04d}", "rollout_id": f"t{i % 3}"} for i in range(2500)])
        ids = [r["id"] for r in store.iter(page_size=700)]
        self.assertEqual(ids, [f"r{i:04d}" for i in range(2500)])
        self.assertEqual(len(list(store.iter("rollout_id = 't1'", page_size=100))), 833)
        self.assertEqual([r["id"] for r in store.list(limit=3, offset=10)], ["r0010", "r0011", "r0012"])
        self.assertEqual(len(store.list(limit=1200)), 1200)
        self.assertEqual(store.merge_wal() >= 0, True)


@unittest.skipUnless(URL, "set STRATA_URL to a running server")
class GenericStoreTest(unittest.TestCase):
    def test_round_trip(self) -> None:
        name = unique("gen")
        store = GenericStore.connect_or_create(URL, name, {"step": "int64", "role": "string", "blob": "binary"})
        self.assertEqual(store.schema["columns"][0], ["id", "string"])
        store.add([{"id": "a", "step": 3, "role": "user", "blob": "AQI="}, {"id": "b", "step": 7, "role": "user"}, {"id": "c", "step": 9}])
        self.assertEqual([r["id"] for r in store.list(filter="step > 5 AND role = 'user'")], ["b"])
        self.assertEqual([r["id"] for r in store.list(filter={"step": 9})], ["c"])
        self.assertEqual(store.get("a", columns=["blob"]), {"id": "a", "blob": "AQI="})
        self.assertIsNone(store.get("zzz"))
        self.assertEqual(GenericStore.connect_or_create(URL, name, {"step": "int64", "role": "string", "blob": "binary"}).name, name)
        with self.assertRaises(AlreadyExistsError):
            GenericStore.create(URL, name, {"other": "int32"})
        with self.assertRaises(InvalidRequestError):
            store.list(filter="step > 'x'")
        store.cleanup_wal()
        self.assertEqual(len(store.list()), 3)


@unittest.skipUnless(URL, "set STRATA_URL to a running server")
class DatagenStoreTest(unittest.TestCase):
    def event(self, item: DatagenItemId, seq: int, checkpoint: str, ordinal: int, event_type: str, **extra: object) -> dict:
        e = {"event_id": datagen_event_id(str(item), checkpoint, ordinal), "item_id": item, "root_item_id": item.root(),
             "item_seq": seq, "checkpoint_id": checkpoint, "event_type": event_type, "attempt": 0, "run_id": "run-1",
             "writer_epoch": "w-1", "schema_version": 2}
        if item.parent() is not None:
            e["parent_item_id"] = item.parent()
        e.update(extra)
        return e

    def test_checkpoints_fold_and_lenses(self) -> None:
        store = DatagenStore.connect_or_create(URL, unique("dg"))
        root = DatagenItemId.from_source_key("5")
        child = root.child("expand", 0)
        self.assertEqual(str(child), "5/expand:0")
        self.assertEqual(DatagenItemId.parse("5/expand:0"), child)
        step = {"step_name": "gen", "step_kind": "leaf", "step_index": 0}
        store.append([self.event(root, 0, "created", 0, "ITEM_CREATED", status="running"), self.event(child, 0, "created", 0, "ITEM_CREATED")])
        checkpoint = [
            self.event(root, 1, "gen-0", 0, "FIELD_SET", field_name="image", field_type="png", codec_version=1, value={"kind": "blob", "bytes": b"\x89PNG"}, **step),
            self.event(root, 2, "gen-0", 1, "STEP_COMPLETED", **step),
        ]
        self.assertEqual(store.append_checkpoint(checkpoint)["count"], 2)
        store.append_checkpoint(checkpoint)  # a retry is idempotent
        store.append([self.event(child, 1, "fail", 0, "FAILED", error_type="Timeout", **step), self.event(root, 3, "end", 0, "TERMINAL", status="completed")])

        folded = store.fold_item(root)
        assert folded is not None
        self.assertEqual(folded["status"], "completed")
        self.assertEqual(len(folded["trajectory"]), 1)
        self.assertEqual(store.load_blob(folded, "image"), b"\x89PNG")
        self.assertIsNone(store.fold_item("never"))
        self.assertEqual(store.item_failures(child)[0]["error_type"], "Timeout")
        self.assertEqual(len(store.item_events(root)), 4)
        self.assertEqual(len(store.root_events(root)), 6)
        self.assertEqual(store.root_item_statuses(["5", "6"]), {"5": "completed"})
        overview = store.overview()
        self.assertEqual((overview["items"], overview["completed"], overview["failures"]), (1, 1, 1))
        with self.assertRaises(InvalidRequestError):
            store.append_checkpoint(checkpoint[:1])  # no STEP_COMPLETED


class _Stub(http.server.BaseHTTPRequestHandler):
    """Answers 503 + Retry-After: 0 to the first `busy` requests, then 200."""

    busy = 0
    seen = 0
    code = "OVERLOADED"
    status = 503
    quota = ""
    auth: list = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).seen += 1
        type(self).auth.append(self.headers.get("Authorization"))
        if self.path.startswith("/redirect"):
            self.send_response(307)
            self.send_header("Location", f"http://localhost:{self.server.server_address[1]}/api/v1/rollouts/s")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if type(self).seen <= type(self).busy:
            err = {"code": type(self).code, "message": "busy"}
            if type(self).quota:
                err.update(quota=type(self).quota, tenant="team-a")
            body = json.dumps({"error": err}).encode()
            self.send_response(type(self).status)
            self.send_header("Retry-After", "0")
        else:
            body = json.dumps({"name": "s", "uri": "u", "version": 4}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class RetryTest(unittest.TestCase):
    def serve(self, busy: int, code: str = "OVERLOADED", status: int = 503, quota: str = "") -> str:
        _Stub.busy, _Stub.seen, _Stub.code, _Stub.auth = busy, 0, code, []
        _Stub.status, _Stub.quota = status, quota
        srv = http.server.HTTPServer(("127.0.0.1", 0), _Stub)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.shutdown)
        self.addCleanup(srv.server_close)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    def test_a_503_with_retry_after_is_retried(self) -> None:
        url = self.serve(busy=3)
        start = time.monotonic()
        store = RolloutStore.connect(url, "s")
        self.assertEqual(store.version(), 4)
        self.assertEqual(_Stub.seen, 5)  # 3 refused, then the connect, then version()
        self.assertLess(time.monotonic() - start, 5)

    def test_retries_are_bounded(self) -> None:
        url = self.serve(busy=100)
        with self.assertRaises(UnavailableError) as e:
            RolloutStore.connect(Client(url, max_retries=2), "s")
        self.assertEqual(e.exception.code, "OVERLOADED")
        self.assertEqual(_Stub.seen, 3)

    def test_what_may_have_taken_effect_is_not_retried(self) -> None:
        for code in ("DEADLINE_EXCEEDED", "STORAGE_UNAVAILABLE"):
            url = self.serve(busy=100, code=code)
            with self.assertRaises(UnavailableError) as e:
                RolloutStore.connect(url, "s")
            self.assertEqual(e.exception.code, code)
            self.assertEqual(_Stub.seen, 1, code)

    def test_a_rate_quota_429_is_retried_the_others_are_raised(self) -> None:
        url = self.serve(busy=2, code="QUOTA_EXCEEDED", status=429, quota="append_rows_per_second")
        self.assertEqual(RolloutStore.connect(url, "s").version(), 4)
        self.assertEqual(_Stub.seen, 4)
        url = self.serve(busy=100, code="QUOTA_EXCEEDED", status=429, quota="rows")
        with self.assertRaises(QuotaExceededError) as e:
            RolloutStore.connect(url, "s")
        self.assertEqual((e.exception.quota, e.exception.tenant, e.exception.status), ("rows", "team-a", 429))
        self.assertEqual(_Stub.seen, 1)

    def test_the_token_never_follows_a_redirect_to_another_host(self) -> None:
        url = self.serve(busy=0)
        c = Client(url, token="SECRET")
        c.request("GET", "/redirect")
        self.assertEqual(_Stub.auth, ["Bearer SECRET", None])

    def test_bad_base_url(self) -> None:
        with self.assertRaises(ValueError):
            Client("ftp://x")

    def test_no_server_is_a_typed_error(self) -> None:
        with self.assertRaises(UnavailableError) as e:
            RolloutStore.connect("http://127.0.0.1:1", "s")
        self.assertEqual(e.exception.code, "UNREACHABLE")


if __name__ == "__main__":
    unittest.main()
