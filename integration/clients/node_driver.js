// Node.js driver scenario: the API an application uses, checked with
// command monitoring: bulkWrite (ordered and unordered, with errors),
// cursors over several batches (getMore, killCursors on close, for await,
// streams), explicit and implicit sessions with their lsid, retryable
// writes' txnNumber, endSessions on close, findOneAnd*, distinct,
// estimatedDocumentCount, explain, a parallel load on the pool, the
// driver's error classes and transactions (withTransaction, conflicts).
const assert = require('assert');
const { MongoClient, MongoServerError, MongoBulkWriteError } = require('mongodb');

async function main() {
  const events = [];
  const client = new MongoClient(process.env.PARSEC_URI, { monitorCommands: true, maxPoolSize: 8, retryWrites: true });
  client.on('commandStarted', (e) => events.push({ name: e.commandName, cmd: e.command, requestId: e.requestId }));
  client.on('commandSucceeded', (e) => events.push({ name: e.commandName, ok: true, reply: e.reply, requestId: e.requestId }));
  client.on('commandFailed', (e) => events.push({ name: e.commandName, failed: e.failure, requestId: e.requestId }));
  const started = (name) => events.filter((e) => e.name === name && e.cmd);
  await client.connect();
  let closed = false;
  try {
    const db = client.db('node_driver');
    await db.dropDatabase();
    const coll = db.collection('things');

    // bulkWrite, ordered: every kind of model.
    const docs = Array.from({ length: 1000 }, (_, i) => ({ _id: i, group: i % 7, tags: i % 2 ? ['odd'] : ['even'] }));
    assert.strictEqual((await coll.insertMany(docs)).insertedCount, 1000);
    const bw = await coll.bulkWrite([
      { insertOne: { document: { _id: 'x', group: 99 } } },
      { updateOne: { filter: { _id: 'x' }, update: { $set: { seen: true } } } },
      { updateMany: { filter: { group: 0 }, update: { $push: { tags: 'zero' } } } },
      { updateOne: { filter: { _id: 'up' }, update: { $set: { group: 100 } }, upsert: true } },
      { replaceOne: { filter: { _id: 1 }, replacement: { group: 1, replaced: true } } },
      { deleteOne: { filter: { _id: 2 } } },
      { deleteMany: { filter: { group: 6 } } },
    ]);
    assert.strictEqual(bw.insertedCount, 1);
    assert.strictEqual(bw.matchedCount, 1 + 143 + 1);
    assert.strictEqual(bw.modifiedCount, 1 + 143 + 1);
    assert.strictEqual(bw.upsertedCount, 1);
    assert.deepStrictEqual(bw.upsertedIds, { 3: 'up' });
    assert.strictEqual(bw.deletedCount, 1 + 142);
    assert.deepStrictEqual(await coll.findOne({ _id: 1 }), { _id: 1, group: 1, replaced: true });

    // bulkWrite errors: ordered stops at the first, unordered goes on.
    await assert.rejects(coll.bulkWrite([
      { insertOne: { document: { _id: 'o1' } } },
      { insertOne: { document: { _id: 'x' } } },
      { insertOne: { document: { _id: 'o2' } } },
    ]), (e) => e instanceof MongoBulkWriteError && e.writeErrors.length === 1 && e.writeErrors[0].index === 1 &&
      e.writeErrors[0].code === 11000 && e.result.insertedCount === 1);
    assert.strictEqual(await coll.findOne({ _id: 'o2' }), null);
    await assert.rejects(coll.bulkWrite([
      { insertOne: { document: { _id: 'x' } } },
      { updateOne: { filter: { _id: 'o1' }, update: { $inc: { tags: 1 } } } },
      { insertOne: { document: { _id: 'u1' } } },
      { updateOne: { filter: { _id: 3 }, update: { $inc: { tags: 1 } } } },
    ], { ordered: false }), (e) => {
      assert.ok(e instanceof MongoBulkWriteError);
      assert.deepStrictEqual(e.writeErrors.map((w) => [w.index, w.code]), [[0, 11000], [3, 14]]);
      assert.strictEqual(e.result.insertedCount, 1);
      assert.strictEqual(e.result.modifiedCount, 1);
      return true;
    });

    // Cursors over several batches: 1000 + 2 - 1 - 142 + 1 + 1 documents.
    const total = await coll.estimatedDocumentCount();
    assert.strictEqual(total, 861);
    events.length = 0;
    const all = await coll.find({}, { batchSize: 300 }).toArray();
    assert.strictEqual(all.length, total);
    assert.strictEqual(new Set(all.map((d) => String(d._id))).size, total, 'no document twice');
    assert.strictEqual(started('find').length, 1);
    assert.strictEqual(started('getMore').length, 2, 'getMore for batches 2 and 3');
    for (const g of started('getMore')) assert.strictEqual(Number(g.cmd.batchSize), 300);
    // for await, with a sort and a limit spanning batches.
    let n = 0;
    let last = -1;
    for await (const d of coll.find({ group: { $lt: 7 }, _id: { $type: 'number' } }).sort({ _id: 1 }).batchSize(50).limit(120)) {
      assert.ok(d._id > last);
      last = d._id;
      n++;
    }
    assert.strictEqual(n, 120);
    // A cursor closed early is killed on the server.
    events.length = 0;
    const early = coll.find({}).batchSize(10);
    assert.ok(await early.next());
    await early.close();
    const kill = started('killCursors');
    assert.strictEqual(kill.length, 1, 'killCursors on close');
    const killed = events.find((e) => e.name === 'killCursors' && e.ok);
    assert.strictEqual(killed.reply.cursorsKilled.length, 1);
    // A stream.
    let streamed = 0;
    await new Promise((resolve, reject) => {
      coll.find({ tags: 'zero' }).batchSize(20).stream().on('data', () => { streamed++; }).on('end', resolve).on('error', reject);
    });
    assert.strictEqual(streamed, 143);

    // Explicit session: every command carries its lsid; writes carry a
    // txnNumber (retryable writes, as against any mongos).
    events.length = 0;
    const session = client.startSession();
    try {
      await coll.insertOne({ _id: 's1' }, { session });
      await coll.updateOne({ _id: 's1' }, { $set: { v: 1 } }, { session });
      assert.strictEqual((await coll.findOne({ _id: 's1' }, { session })).v, 1);
      const cur = coll.find({}, { session, batchSize: 100 });
      assert.strictEqual((await cur.toArray()).length, total + 1);
      const ids = new Set(events.filter((e) => e.cmd).map((e) => e.cmd.lsid.id.toString('hex')));
      assert.strictEqual(ids.size, 1, 'one lsid for the session');
      assert.strictEqual(session.id.id.toString('hex'), [...ids][0]);
      const writes = started('insert').concat(started('update'));
      const txn = writes.map((w) => Number(w.cmd.txnNumber));
      assert.ok(txn.length === 2 && txn[0] >= 1 && txn[1] === txn[0] + 1, 'txnNumbers ' + txn);
    } finally {
      await session.endSession();
    }
    // Implicit sessions too.
    events.length = 0;
    await coll.findOne({ _id: 's1' });
    assert.ok(started('find')[0].cmd.lsid, 'implicit session lsid');

    // findOneAnd*, distinct, explain, estimatedDocumentCount.
    const after = await coll.findOneAndUpdate({ _id: 's1' }, { $inc: { v: 1 } }, { returnDocument: 'after' });
    assert.deepStrictEqual(after, { _id: 's1', v: 2 });
    const replaced = await coll.findOneAndReplace({ _id: 's1' }, { v: 10 }, { returnDocument: 'before', includeResultMetadata: true });
    assert.strictEqual(replaced.ok, 1);
    assert.deepStrictEqual(replaced.value, { _id: 's1', v: 2 });
    assert.deepStrictEqual(await coll.findOneAndDelete({ _id: 's1' }), { _id: 's1', v: 10 });
    assert.deepStrictEqual((await coll.distinct('group', { _id: { $lt: 20 } })).sort(), [0, 1, 2, 3, 4, 5]);
    const plan = await coll.find({ group: 3 }).explain('executionStats');
    assert.strictEqual(Number(plan.executionStats.nReturned), 143);

    // The pool under a parallel load.
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => coll.findOne({ _id: i * 3 })));
    assert.strictEqual(results.filter(Boolean).length, 40 - 6); // 6, 27, 48, 69, 90 and 111 were in group 6

    // Errors: server errors as MongoServerError with code and codeName.
    await assert.rejects(coll.insertOne({ _id: 3 }), (e) => e instanceof MongoServerError && e.code === 11000 &&
      /E11000 duplicate key error collection: node_driver\.things index: _id_ dup key: \{ _id: 3 \}/.test(e.message) &&
      e.keyValue && e.keyValue._id === 3);
    await assert.rejects(coll.find({ $foo: 1 }).toArray(), (e) => e instanceof MongoServerError && e.code === 2 && e.codeName === 'BadValue');
    await assert.rejects(db.command({ nope: 1 }), (e) => e instanceof MongoServerError && e.code === 59 && e.codeName === 'CommandNotFound');

    // Multi-document transactions with withTransaction: the statements
    // go out with the session's txnNumber, startTransaction on the first,
    // autocommit: false on all, and the writes appear together at commit.
    const accounts = db.collection('accounts');
    await accounts.insertMany([{ _id: 'a', bal: 100 }, { _id: 'b', bal: 0 }]);
    const txn = client.startSession();
    try {
      events.length = 0;
      await txn.withTransaction(async () => {
        await accounts.updateOne({ _id: 'a' }, { $inc: { bal: -30 } }, { session: txn });
        await accounts.updateOne({ _id: 'b' }, { $inc: { bal: 30 } }, { session: txn });
        const seen = await accounts.find({}, { session: txn }).sort({ _id: 1 }).toArray();
        assert.deepStrictEqual(seen.map((d) => d.bal), [70, 30], 'the transaction does not see its own writes');
        const outside = await accounts.findOne({ _id: 'b' });
        assert.strictEqual(outside.bal, 0, 'a write was seen outside the transaction before commit');
      });
      const ups = started('update');
      assert.strictEqual(ups.length, 2);
      assert.ok(ups[0].cmd.startTransaction === true && ups[0].cmd.autocommit === false, 'first statement');
      assert.ok(ups[1].cmd.startTransaction === undefined && ups[1].cmd.autocommit === false, 'second statement');
      assert.strictEqual(started('commitTransaction').length, 1);
      assert.deepStrictEqual((await accounts.find().sort({ _id: 1 }).toArray()).map((d) => d.bal), [70, 30]);
      // An error in the callback aborts: nothing is written.
      await assert.rejects(txn.withTransaction(async () => {
        await accounts.insertOne({ _id: 'c', bal: 5 }, { session: txn });
        throw new Error('stop');
      }), /stop/);
      assert.strictEqual(await accounts.countDocuments({ _id: 'c' }), 0, 'an aborted transaction wrote');
      // Two transactions on one document: the second fails at once with a
      // WriteConflict labelled TransientTransactionError.
      const other = client.startSession();
      try {
        txn.startTransaction();
        other.startTransaction();
        await accounts.updateOne({ _id: 'a' }, { $inc: { bal: 1 } }, { session: txn });
        await assert.rejects(accounts.updateOne({ _id: 'a' }, { $inc: { bal: 1 } }, { session: other }), (e) =>
          e instanceof MongoServerError && e.code === 112 && e.hasErrorLabel('TransientTransactionError'));
        await other.abortTransaction();
        await txn.commitTransaction();
      } finally {
        await other.endSession();
      }
      assert.strictEqual((await accounts.findOne({ _id: 'a' })).bal, 71);
    } finally {
      await txn.endSession();
    }

    // Closing the client ends its sessions on the server.
    events.length = 0;
    await client.close();
    closed = true;
    const end = started('endSessions');
    assert.strictEqual(end.length, 1, 'endSessions on close');
    assert.ok(end[0].cmd.endSessions.length >= 1);
    assert.ok(events.some((e) => e.name === 'endSessions' && e.ok), 'endSessions succeeded');
  } finally {
    if (!closed) await client.close();
  }
  const cleanup = new MongoClient(process.env.PARSEC_URI);
  await cleanup.db('node_driver').dropDatabase();
  await cleanup.close();
  console.log('node_driver: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
