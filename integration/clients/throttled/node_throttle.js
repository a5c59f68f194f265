// Node.js driver scenario against a server with --rate-limiting: Cosmos
// DB's 16500 TooManyRequests as the driver surfaces it (MongoServerError
// with code, codeName and errmsg; MongoBulkWriteError for insertMany),
// not retried by the driver (16500 is not a retryable error), from
// sequential and parallel load; an application retry that waits
// RetryAfterMs gets through.
//
// Not a node_*.js of clients/: TestClients runs it against its second
// server, the one with rate limiting on.
const assert = require('assert');
const { MongoClient, MongoServerError, MongoBulkWriteError } = require('mongodb');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// throttled checks e is Cosmos DB's 16500 and returns its RetryAfterMs,
// at most maxMs.
function throttled(label, e, maxMs) {
  const got = `${e && e.name} ${e && e.code} ${e && e.codeName} ${e && e.message}`;
  assert.ok(e instanceof MongoServerError, label + ': ' + got);
  assert.strictEqual(e.code, 16500, label + ': ' + got);
  assert.strictEqual(e.codeName, 'TooManyRequests', label + ': ' + got);
  assert.ok(/Request rate is large/.test(e.message), label + ': ' + got);
  const m = /^Error=16500, RetryAfterMs=(\d+), /.exec(e.message);
  assert.ok(m, label + ': no RetryAfterMs: ' + got);
  assert.ok(Number(m[1]) >= 1 && Number(m[1]) <= maxMs, label + ': RetryAfterMs=' + m[1]);
  assert.ok(!e.hasErrorLabel('RetryableWriteError'), label + ': labelled retryable');
  return Number(m[1]);
}

async function main() {
  const events = [];
  const client = new MongoClient(process.env.PARSEC_URI, { monitorCommands: true, maxPoolSize: 8, retryWrites: true, retryReads: true });
  client.on('commandStarted', (e) => events.push({ name: e.commandName, started: true }));
  client.on('commandFailed', (e) => events.push({ name: e.commandName, code: e.failure.code }));
  await client.connect();
  try {
    const db = client.db('node_throttle');
    await db.dropDatabase();
    await db.createCollection('big'); // the default 400 RU/s
    const coll = db.collection('big');
    const pad = 'x'.repeat(100 * 1024); // about 50 RU an insert

    // Sequential inserts: bounded to 200 or 20 seconds.
    let accepted = 0;
    let refused = null;
    const start = Date.now();
    while (accepted < 200 && Date.now() - start < 20000) {
      events.length = 0;
      try {
        await coll.insertOne({ _id: accepted, pad });
      } catch (e) {
        refused = e;
        break;
      }
      accepted++;
    }
    assert.ok(refused, `${accepted} inserts of 100 KB in ${Date.now() - start} ms and none refused`);
    // An insert of 100 KB costs about 50 RU: at 400 RU/s the budget can
    // pay it again within about 125 ms.
    const insertWait = 1000;
    let retryAfter = throttled('insertOne', refused, insertWait);
    assert.ok(accepted >= 1 && accepted < 100, accepted + ' inserts accepted');
    assert.strictEqual(refused.errorResponse.codeName, 'TooManyRequests');
    // Sent once: the driver's retryable writes do not retry a 16500.
    assert.deepStrictEqual(events.filter((e) => e.name === 'insert'), [{ name: 'insert', started: true }, { name: 'insert', code: 16500 }]);

    // The application's retry after RetryAfterMs.
    let stored = false;
    for (let attempt = 0; attempt < 5 && !stored; attempt++) {
      await sleep(retryAfter + 10);
      try {
        await coll.insertOne({ _id: accepted, pad });
        stored = true;
      } catch (e) {
        retryAfter = throttled('retried insertOne', e, insertWait);
      }
    }
    assert.ok(stored, 'still refused after 5 waits of RetryAfterMs');
    accepted++;
    await sleep(1100);
    assert.strictEqual(await coll.countDocuments({}), accepted, 'a refused insert stored nothing');

    // insertMany (one OP_MSG document sequence): an ordered batch stops at
    // the first refused item.
    await sleep(1100);
    const docs = Array.from({ length: 30 }, (_, i) => ({ _id: 'm' + i, pad }));
    const bulk = await coll.insertMany(docs).then(() => null, (e) => e);
    assert.ok(bulk instanceof MongoBulkWriteError, 'insertMany: ' + bulk);
    assert.strictEqual(bulk.code, 16500);
    const inserted = bulk.result.insertedCount;
    assert.ok(inserted >= 1 && inserted < 30, inserted + ' of 30 inserted');
    assert.strictEqual(bulk.writeErrors.length, 1);
    assert.strictEqual(bulk.writeErrors[0].index, inserted);
    assert.strictEqual(bulk.writeErrors[0].code, 16500);
    assert.ok(/RetryAfterMs=\d+, .*Request rate is large/.test(bulk.writeErrors[0].errmsg), bulk.writeErrors[0].errmsg);

    // Parallel reads from the pool: some served, some refused, each
    // refusal a MongoServerError 16500 sent once (retryable reads do not
    // retry it either). A query of the twenty or so 100 KB items costs some
    // 200 RU; a read is admitted for 1 RU and pays the rest when done, so
    // eight in flight may leave 1,600 RU of debt: 4 s at 400 RU/s.
    await sleep(1100);
    events.length = 0;
    let ok = 0;
    const errs = [];
    const readStart = Date.now();
    while (errs.length === 0 && Date.now() - readStart < 20000) {
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => coll.find({ pad: { $exists: true } }, { projection: { _id: 1 } }).toArray()));
      for (const r of results) {
        if (r.status === 'fulfilled') ok++;
        else errs.push(r.reason);
      }
    }
    assert.ok(errs.length > 0, `${ok} parallel queries in ${Date.now() - readStart} ms and none refused`);
    assert.ok(ok > 0, 'no query served');
    for (const e of errs) throttled('find', e, 6000);
    const finds = events.filter((e) => e.name === 'find');
    assert.strictEqual(finds.filter((e) => e.started).length, ok + errs.length, 'each find sent once');
    assert.strictEqual(finds.filter((e) => e.code === 16500).length, errs.length);

    // The partition statistics count the refusals.
    await sleep(1100);
    const ps = await db.command({ customAction: 'GetPartitionStats', collection: 'big' });
    assert.strictEqual(ps.rateLimiting, true);
    assert.ok(ps.throttledRequests >= 2 + errs.length, 'throttledRequests ' + ps.throttledRequests);
    await db.dropDatabase();
  } finally {
    await client.close();
  }
  console.log('node_throttle: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
