"""pymongo scenario: Debian's python3-pymongo (3.11, which speaks wire
versions up to 9, MongoDB 4.4) against Parsec's 0..21: handshake, catalog,
CRUD, the find language, counts, updates, findAndModify, bulk writes,
cursors over several batches, sessions, zlib compression, transactions
refused, and a sharded half: shardCollection with a hashed key, Cosmos DB's
CreateCollection with throughput for several physical partitions, reads by
shard key and GetPartitionStats.

Run with /usr/bin/python3 and $PARSEC_URI; prints "python_pymongo: ok".
"""
import datetime
import os
import sys

import pymongo
from bson.decimal128 import Decimal128
from bson.objectid import ObjectId
from pymongo import (DeleteMany, DeleteOne, InsertOne, ReplaceOne,
                     ReturnDocument, UpdateMany, UpdateOne, monitoring)
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure


class Recorder(monitoring.CommandListener):
    """Records the commands the client starts."""

    def __init__(self):
        self.events = []

    def started(self, event):
        self.events.append(event)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass

    def names(self):
        return [e.command_name for e in self.events]


def main():
    uri = os.environ["PARSEC_URI"]
    rec = Recorder()
    client = pymongo.MongoClient(uri, compressors="zlib", event_listeners=[rec],
                                 serverSelectionTimeoutMS=10000)
    # Handshake: a mongos, wire versions that overlap pymongo's.
    hello = client.admin.command("ismaster")
    assert hello["msg"] == "isdbgrid", hello
    assert hello["minWireVersion"] <= 9 <= hello["maxWireVersion"], hello
    # The pooled connection negotiated zlib (pymongo's internals: 3.11 has
    # no public API for it).
    from pymongo.server_selectors import writable_server_selector
    server = client._get_topology().select_server(writable_server_selector)
    with server.get_socket({}) as sock:
        assert sock.compression_context is not None and sock.compression_context.compressor_id == 2, "zlib not negotiated"
    assert client.server_info()["version"] == "7.0.0"
    assert client.is_mongos

    db = client.python_pymongo
    client.drop_database(db)
    coll = db.items

    # Catalog.
    db.create_collection("made")
    coll.insert_one({"_id": "first"})
    assert sorted(db.list_collection_names()) == ["items", "made"]
    assert "python_pymongo" in client.list_database_names()
    db.made.rename("renamed")
    assert sorted(db.list_collection_names()) == ["items", "renamed"]
    db.drop_collection("renamed")
    assert db.command("dbstats")["collections"] == 1

    # Inserts (OP_MSG document sequences for insert_many) and types.
    res = coll.insert_many([{"_id": i, "g": i % 10, "tags": ["t%d" % (i % 3)]} for i in range(1000)])
    assert len(res.inserted_ids) == 1000
    now = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    oid = coll.insert_one({"at": now, "price": Decimal128("9.99"), "big": 1 << 40, "bin": b"\x01\x02"}).inserted_id
    assert isinstance(oid, ObjectId)
    typed = coll.find_one({"_id": oid})
    assert typed["at"] == now and str(typed["price"]) == "9.99" and typed["big"] == 1 << 40 and typed["bin"] == b"\x01\x02", typed
    try:
        coll.insert_one({"_id": 7})
        raise AssertionError("duplicate _id accepted")
    except DuplicateKeyError as e:
        assert e.code == 11000 and "E11000 duplicate key error collection: python_pymongo.items index: _id_ dup key: { _id: 7 }" in str(e), e

    # Find language and cursors over several batches.
    del rec.events[:]
    docs = list(coll.find({"g": {"$in": [1, 2]}}).sort("_id", pymongo.DESCENDING).batch_size(30))
    assert len(docs) == 200 and docs[0]["_id"] == 992
    assert rec.names().count("getMore") == 6, rec.names()
    q = {"$expr": {"$lt": ["$_id", 100]}, "tags": {"$elemMatch": {"$regex": "^t[12]$"}}}
    page = list(coll.find(q, {"tags": 0}).skip(10).limit(50).batch_size(7))
    assert len(page) == 50 and all("tags" not in d for d in page)
    assert [d["_id"] for d in coll.find({"_id": {"$lt": 5}}, {"_id": 1}).sort("_id", -1)] == [4, 3, 2, 1, 0]
    assert coll.find_one({"nope": {"$exists": True}}) is None
    cursor = coll.find({}).batch_size(5)
    next(cursor)
    del rec.events[:]
    cursor.close()
    assert "killCursors" in rec.names(), rec.names()

    # Counts, distinct, explain.
    assert coll.estimated_document_count() == 1002
    assert db.command("count", "items", query={"g": 3})["n"] == 100
    assert sorted(coll.distinct("tags", {"_id": {"$lt": 10}})) == ["t0", "t1", "t2"]
    plan = coll.find({"g": 1}).explain()
    assert "queryPlanner" in plan, plan

    # Updates, findAndModify, bulk.
    r = coll.update_many({"g": 0}, {"$set": {"zero": True}, "$push": {"tags": "z"}})
    assert (r.matched_count, r.modified_count) == (100, 100)
    r = coll.update_one({"_id": "up"}, {"$inc": {"v": 1}}, upsert=True)
    assert r.upserted_id == "up"
    r = coll.update_one({"_id": 0}, {"$set": {"tags.$[t]": "Z"}}, array_filters=[{"t": "z"}])
    assert r.modified_count == 1 and coll.find_one({"_id": 0})["tags"] == ["t0", "Z"]
    assert coll.replace_one({"_id": 1}, {"replaced": True}).modified_count == 1
    after = coll.find_one_and_update({"_id": "up"}, {"$inc": {"v": 10}}, return_document=ReturnDocument.AFTER)
    assert after["v"] == 11
    assert coll.find_one_and_replace({"_id": "up"}, {"v": 0})["v"] == 11
    assert coll.find_one_and_delete({"_id": "up"}) == {"_id": "up", "v": 0}
    assert coll.find_one_and_delete({"_id": "up"}) is None
    br = coll.bulk_write([
        InsertOne({"_id": "b"}),
        UpdateOne({"_id": "b"}, {"$set": {"x": 1}}),
        UpdateMany({"g": 9}, {"$set": {"nine": True}}),
        ReplaceOne({"_id": "r"}, {"r": 1}, upsert=True),
        DeleteOne({"_id": 2}),
        DeleteMany({"g": 8}),
    ])
    assert (br.inserted_count, br.matched_count, br.modified_count, br.upserted_count, br.deleted_count) == (1, 101, 101, 1, 101), br.bulk_api_result
    try:
        coll.bulk_write([InsertOne({"_id": "b"}), InsertOne({"_id": "c"})], ordered=False)
        raise AssertionError("duplicate in bulk accepted")
    except BulkWriteError as e:
        errs = e.details["writeErrors"]
        assert len(errs) == 1 and errs[0]["code"] == 11000 and errs[0]["index"] == 0, e.details
        assert e.details["nInserted"] == 1
    try:
        coll.update_one({"_id": 3}, {"$inc": {"tags": 1}})
        raise AssertionError("$inc on an array accepted")
    except OperationFailure as e:
        assert e.code == 14, e

    # Sessions: one lsid for the session's commands; retryable writes carry
    # a txnNumber.
    del rec.events[:]
    with client.start_session() as s:
        coll.insert_one({"_id": "s"}, session=s)
        assert coll.find_one({"_id": "s"}, session=s) == {"_id": "s"}
    lsids = {e.command["lsid"]["id"] for e in rec.events if e.command_name in ("insert", "find")}
    assert len(lsids) == 1, rec.events
    assert any(e.command_name == "insert" and "txnNumber" in e.command for e in rec.events)

    # Errors read as MongoDB's.
    try:
        coll.find_one({"$foo": 1})
        raise AssertionError("bad operator accepted")
    except OperationFailure as e:
        assert e.code == 2 and "unknown top level operator: $foo" in str(e), e

    # Multi-document transactions: with_transaction commits both writes
    # together; an exception in the callback aborts and writes nothing.
    with client.start_session() as s:
        def transfer(sess):
            coll.insert_one({"_id": "txn", "n": 1}, session=sess)
            coll.update_one({"_id": "txn"}, {"$inc": {"n": 1}}, session=sess)
            assert coll.find_one({"_id": "txn"}, session=sess)["n"] == 2
            assert coll.find_one({"_id": "txn"}) is None, "seen before commit"
        s.with_transaction(transfer)
        assert coll.find_one({"_id": "txn"})["n"] == 2

        def fail(sess):
            coll.insert_one({"_id": "txn-aborted"}, session=sess)
            raise ValueError("stop")
        try:
            s.with_transaction(fail)
            raise AssertionError("the callback's error was lost")
        except ValueError:
            pass
    assert coll.find_one({"_id": "txn-aborted"}) is None
    coll.delete_one({"_id": "txn"})

    r = coll.delete_many({"g": {"$gte": 5}})
    assert r.deleted_count == 400, r.deleted_count
    client.drop_database(db)
    assert "python_pymongo" not in client.list_database_names()
    sharded(client, rec)
    client.close()
    print("python_pymongo: ok")


def sharded(client, rec):
    """Sharded collections as a pymongo application makes and uses them."""
    name = "python_pymongo_sharded"
    db = client[name]
    client.drop_database(db)

    # shardCollection with a hashed key, through admin commands as on any
    # mongos.
    assert client.admin.command("enableSharding", name)["ok"] == 1
    res = client.admin.command("shardCollection", name + ".orders", key={"customer": "hashed"})
    assert res["collectionsharded"] == name + ".orders", res
    res = client.admin.command("shardCollection", name + ".ranged", key={"customer": 1})
    assert res["collectionsharded"] == name + ".ranged", res
    try:
        client.admin.command("shardCollection", name + ".bad", key={"customer": -1})
        raise AssertionError("shard key {customer: -1} accepted")
    except OperationFailure as e:
        assert e.code == 2, e
    orders = db.orders
    res = orders.insert_many([{"_id": i, "customer": "c%d" % (i % 40), "total": i} for i in range(2000)])
    assert len(res.inserted_ids) == 2000
    assert orders.count_documents({"customer": "c7"}) == 50
    mine = list(orders.find({"customer": "c7", "total": {"$gte": 1000}}).sort("total", 1))
    assert [d["_id"] for d in mine] == list(range(1007, 2000, 40)), [d["_id"] for d in mine]
    one = orders.find({"customer": "c3"}).explain()["queryPlanner"]["winningPlan"]["shards"]
    assert len(one) == 1, one
    assert orders.update_one({"_id": 5, "customer": "c5"}, {"$inc": {"total": 1}}).modified_count == 1
    assert orders.find_one({"_id": 5, "customer": "c5"})["total"] == 6
    try:
        orders.insert_one({"_id": "nokey", "total": 1})
        raise AssertionError("insert without the shard key accepted")
    except OperationFailure as e:
        assert e.code == 61 and "shard key" in str(e), e
    try:
        orders.update_one({"_id": 1, "customer": "c1"}, {"$set": {"customer": "c2"}})
        raise AssertionError("update of the shard key accepted")
    except OperationFailure as e:
        assert e.code == 66, e

    # Cosmos DB's CreateCollection: a new collection of 24,000 RU/s (manual)
    # starts on ceil(24000 / 6000) = 4 physical partitions of 6,000 RU/s.
    res = db.command({"customAction": "CreateCollection", "collection": "events",
                      "shardKey": "device", "offerThroughput": 24000})
    assert res["ok"] == 1, res
    info = db.command({"customAction": "GetCollection", "collection": "events"})
    assert info["shardKeyDefinition"] == {"device": "hashed"} and info["provisionedThroughput"] == 24000, info
    events = db.events
    devices = 200
    events.insert_many([{"_id": i, "device": "d%d" % (i % devices), "n": i} for i in range(4000)])
    del rec.events[:]
    got = list(events.find({"device": "d42"}))
    assert len(got) == 20 and all(d["device"] == "d42" for d in got), got
    assert sorted(d["n"] for d in got) == list(range(42, 4000, devices))
    assert events.find_one({"_id": 42, "device": "d42"})["n"] == 42
    assert rec.names() == ["find", "find"], rec.names()

    stats = db.command({"customAction": "GetPartitionStats", "collection": "events"})
    parts = stats["partitions"]
    assert stats["partitionCount"] == 4 and len(parts) == 4, stats["partitionCount"]
    assert stats["documentCount"] == 4000 and stats["logicalPartitionCount"] == devices, stats
    assert sum(p["documentCount"] for p in parts) == 4000
    assert sum(p["logicalPartitionCount"] for p in parts) == devices
    assert all(p["documentCount"] > 0 for p in parts), [p["documentCount"] for p in parts]
    assert all(p["throughputShare"] == 6000 for p in parts), [p["throughputShare"] for p in parts]
    assert [p["partitionKeyRangeId"] for p in parts] == ["0", "1", "2", "3"]
    assert stats["ruTotal"] > 0 and stats["throttledRequests"] == 0, stats

    # Duplicate keys: _id is unique within a shard-key value (a logical
    # partition), as in Cosmos DB.
    try:
        events.insert_one({"_id": 42, "device": "d42"})
        raise AssertionError("duplicate _id in one logical partition accepted")
    except DuplicateKeyError as e:
        assert e.code == 11000 and "E11000 duplicate key error collection: %s.events index: _id_ dup key: { _id: 42 }" % name in str(e), e
    try:
        events.insert_many([{"_id": "a", "device": "d1"}, {"_id": 1, "device": "d1"}, {"_id": "b", "device": "d1"}])
        raise AssertionError("duplicate in insert_many accepted")
    except BulkWriteError as e:
        errs = e.details["writeErrors"]
        assert len(errs) == 1 and errs[0]["code"] == 11000 and errs[0]["index"] == 1 and e.details["nInserted"] == 1, e.details
    assert events.count_documents({"device": "d1"}) == 21

    client.drop_database(db)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        traceback.print_exc()
        sys.exit(1)
